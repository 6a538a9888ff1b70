"""Mutations of OpenAI Responses streams (catalogue section G), and the API's rules for the
shared ones (the model's faults, an error inside the stream, an unknown event:
:mod:`streamtool.core.mutations` calls them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...model.quirk_ids import QuirkId
from ...mutations import ApiMutations
from ...mutations.faults import mid_string
from ...mutations.stream import Stream
from . import API

mutation = ApiMutations(API.id)


def _typed(s: Stream, kind: str) -> list[tuple[int, Any]]:
    return [(i, o) for i, o in s.data_events() if isinstance(o, dict) and o.get("type") == kind]


def _consistent(s: Stream, kind: str) -> bool:
    """Whether every ``.done`` of ``kind`` states what its deltas carried."""
    key = "text" if "output_text" in kind else "arguments"
    streamed: dict[Any, str] = {}
    for _, o in _typed(s, kind):
        where = (o.get("output_index"), o.get("content_index"))
        streamed[where] = streamed.get(where, "") + str(o.get("delta") or "")
    for _, o in _typed(s, kind.replace(".delta", ".done")):
        where = (o.get("output_index"), o.get("content_index"))
        if streamed.get(where, "") != o.get(key):
            return False
    return True


def _drop_all(s: Stream, kind: str) -> bool:
    found = _typed(s, kind)
    if not found or not _typed(s, kind.replace(".delta", ".done")) or not _consistent(s, kind):
        return False
    for i, _ in reversed(found):
        s.remove(i)
    return True


@mutation(QuirkId.RESPONSES_ARGS_DONE_ONLY)
def args_done_only(s: Stream) -> bool:
    return _drop_all(s, "response.function_call_arguments.delta")


@mutation(QuirkId.RESPONSES_TEXT_DONE_ONLY)
def text_done_only(s: Stream) -> bool:
    return _drop_all(s, "response.output_text.delta")


def _drop_last(s: Stream, kind: str, key: str) -> bool:
    done = False
    last: dict[Any, int] = {}
    if not _consistent(s, kind):
        return False
    for i, o in _typed(s, kind):
        if o.get(key):
            last[(o.get("output_index"), o.get("content_index"))] = i
    for i in sorted(last.values(), reverse=True):
        s.remove(i)
        done = True
    return done and bool(_typed(s, kind.replace(".delta", ".done")))


@mutation(QuirkId.RESPONSES_ARGS_SUFFIX_IN_DONE)
def args_suffix_in_done(s: Stream) -> bool:
    return _drop_last(s, "response.function_call_arguments.delta", "delta")


@mutation(QuirkId.RESPONSES_TEXT_SUFFIX_IN_DONE)
def text_suffix_in_done(s: Stream) -> bool:
    return _drop_last(s, "response.output_text.delta", "delta")


@mutation(QuirkId.TEXT_MISMATCH, changes=("errors",))
def text_mismatch(s: Stream) -> bool:
    """``output_text.done`` states a text that contradicts the streamed one."""
    done = False
    for i, o in _typed(s, "response.output_text.done"):
        text = o.get("text")
        if isinstance(text, str) and len(text) > 1:
            o["text"] = text[::-1] if text[::-1] != text else text + "!"
            s.set_json(i, o)
            done = True
    return done


@mutation(QuirkId.RESPONSES_ITEM_ID_ROTATION)
def item_id_rotation(s: Stream) -> bool:
    """The second half of an item's deltas come under a new item id."""
    for kind in ("response.function_call_arguments.delta", "response.output_text.delta"):
        found = _typed(s, kind)
        if len(found) < 2:
            continue
        item = found[0][1].get("item_id")
        mine = [(i, o) for i, o in found if o.get("item_id") == item]
        if len(mine) < 2 or not isinstance(item, str):
            continue
        for i, o in mine[len(mine) // 2 :]:
            o["item_id"] = item + "_2"
            s.set_json(i, o)
        return True
    return False


@mutation(QuirkId.RESPONSES_SEQUENCE_GAP)
def sequence_gap(s: Stream) -> bool:
    numbered = [
        (i, o)
        for i, o in s.data_events()
        if isinstance(o, dict) and isinstance(o.get("sequence_number"), int)
    ]
    if len(numbered) < 3:
        return False
    for i, o in numbered[len(numbered) // 2 :]:
        o["sequence_number"] += 1
        s.set_json(i, o)
    return True


# -- the API's rules for the shared mutations (streamtool.core.mutations.faults, sse) ----------
ERROR_EVENT = {
    "type": "error",
    "code": "server_error",
    "message": "The server had an error while processing your request.",
    "param": None,
}
# an event newer than the converter: right after the event of this type
UNKNOWN_EVENT = ("response.created", {"type": "response.annotation.added"})
_FN_ARGS = "response.function_call_arguments"


def _function_calls(s: Stream) -> list[tuple[str, list[tuple[int, Any]]]]:
    """(item id, [(event, object)] that mention it) of every function call item."""
    ids = []
    for _, o in _typed(s, "response.output_item.added"):
        item = o.get("item")
        if isinstance(item, dict) and item.get("type") == "function_call" and item.get("id"):
            ids.append(item["id"])
    out = []
    for item_id in ids:
        mine = []
        for i, o in s.data_events():
            if isinstance(o, dict) and (
                o.get("item_id") == item_id
                or (isinstance(o.get("item"), dict) and o["item"].get("id") == item_id)
                or o.get("type") == "response.completed"
            ):
                mine.append((i, o))
        out.append((item_id, mine))
    return out


def _set_item(o: dict[str, Any], item_id: str, fix: Callable[[dict[str, Any]], None]) -> None:
    item = o.get("item")
    if isinstance(item, dict) and item.get("id") == item_id:
        fix(item)
    response = o.get("response")
    if isinstance(response, dict):
        for out in response.get("output") or []:
            if isinstance(out, dict) and out.get("id") == item_id:
                fix(out)


def _set_args(s: Stream, item_id: str, events: list[tuple[int, Any]], text: str) -> None:
    """Make a call's arguments ``text`` everywhere: its deltas cut to it, its final copies."""
    so_far = 0
    deltas = [(i, o) for i, o in events if o.get("type") == f"{_FN_ARGS}.delta"]
    drop = []
    for i, o in deltas:
        frag = str(o.get("delta") or "")
        if so_far >= len(text):
            drop.append(i)
        elif so_far + len(frag) > len(text):
            o["delta"] = frag[: len(text) - so_far]
            s.set_json(i, o)
        so_far += len(frag)
    for i, o in events:
        if o.get("type") == f"{_FN_ARGS}.done":
            o["arguments"] = text
            s.set_json(i, o)
        elif o.get("type") in ("response.output_item.done", "response.completed"):
            _set_item(o, item_id, lambda it: it.__setitem__("arguments", text))
            s.set_json(i, o)
    for i in sorted(drop, reverse=True):
        s.remove(i)


def _full_args(events: list[tuple[int, Any]]) -> str:
    for _, o in events:
        if o.get("type") == f"{_FN_ARGS}.done" and isinstance(o.get("arguments"), str):
            return str(o["arguments"])
    return "".join(
        str(o.get("delta") or "") for _, o in events if o.get("type") == f"{_FN_ARGS}.delta"
    )


def args_invalid_json(s: Stream) -> bool:
    """The last call whose arguments hold a string value, cut in the middle of it."""
    for item_id, events in reversed(_function_calls(s)):
        full = _full_args(events)
        cut = mid_string(full)
        if cut is not None:
            _set_args(s, item_id, events, full[:cut])
            return True
    return False


def args_empty(s: Stream) -> bool:
    """The last call's arguments made an empty string."""
    items = _function_calls(s)
    if not items or not _full_args(items[-1][1]):
        return False
    _set_args(s, items[-1][0], items[-1][1], "")
    return True


def stream_cut_mid_call(s: Stream) -> int | None:
    """The event after which the stream ends inside the last call's arguments."""
    for _, events in reversed(_function_calls(s)):
        deltas = [i for i, o in events if o.get("type") == f"{_FN_ARGS}.delta"]
        if len(deltas) >= 2:
            return deltas[len(deltas) // 2 - 1]
    return None


def call_id_duplicate(s: Stream) -> bool:
    """The second call given the first one's call_id."""
    items = _function_calls(s)
    if len(items) < 2:
        return False
    first_call_id = None
    for _, o in items[0][1]:
        if isinstance(o.get("item"), dict):
            first_call_id = o["item"].get("call_id")
            break
    if not first_call_id:
        return False
    item_id, events = items[1]
    for i, o in events:
        _set_item(o, item_id, lambda it: it.__setitem__("call_id", first_call_id))
        s.set_json(i, o)
    return True


# a recording that reports this keeps its events: its call is a wrapper whose arguments hold the
# real calls, so quirks of the calls' events are not generated on it (only the framing and the
# reads are)
EVENTS_KEPT_WHEN = frozenset({QuirkId.RESPONSES_PARALLEL_WRAPPER})
