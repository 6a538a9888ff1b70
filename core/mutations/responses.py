"""Mutations of OpenAI Responses streams (catalogue section G)."""

from __future__ import annotations

from typing import Any

from . import mutation
from .stream import Stream

RESPONSES = ("openai-responses",)


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


@mutation(RESPONSES)
def args_done_only(s: Stream) -> bool:
    return _drop_all(s, "response.function_call_arguments.delta")


@mutation(RESPONSES)
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


@mutation(RESPONSES)
def args_suffix_in_done(s: Stream) -> bool:
    return _drop_last(s, "response.function_call_arguments.delta", "delta")


@mutation(RESPONSES)
def text_suffix_in_done(s: Stream) -> bool:
    return _drop_last(s, "response.output_text.delta", "delta")


@mutation(RESPONSES, changes=("errors",))
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


@mutation(RESPONSES)
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


@mutation(RESPONSES)
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
