"""Faults of the model's output, and an error inside a 200 stream, cut into a real stream
(catalogue section I, and ``provider_error``, ``tool_id_reused``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..faults import offered_tools
from . import chat, mutation
from .stream import Stream

TOOL_APIS = ("openai-chat", "anthropic", "openai-responses")
_FN_ARGS = "response.function_call_arguments"


def _mid_string(text: str) -> int | None:
    """A cut inside the last string value of a JSON text (after at least one character of it)."""
    starts: list[tuple[int, int]] = []  # (opening quote, closing quote) of every string
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            starts.append((i, j))
            i = j + 1
        else:
            i += 1
    values = [(a, b) for a, b in starts if b - a > 2 and text[b + 1 : b + 2] != ":"]
    if not values:
        return None
    a, b = values[-1]
    cut = a + 1 + (b - a - 1) // 2
    if text[cut - 1] == "\\":
        cut -= 1
    return cut


# -- per API: the calls, as (their argument fragments) -------------------------------------------
def _truncate_chat(s: Stream, c: chat._Call, keep: int) -> None:
    """Keep the first ``keep`` characters of a chat call's arguments."""
    edits: dict[tuple[int, int], Any] = {}
    so_far = 0
    for ref, frag in zip(c.refs, c.fragments, strict=True):
        if not frag:
            continue
        if so_far >= keep:
            edits[ref] = lambda e: chat._fn(e).__setitem__("arguments", "")
        elif so_far + len(frag) > keep:
            edits[ref] = lambda e, v=frag[: keep - so_far]: chat._fn(e).__setitem__("arguments", v)
        so_far += len(frag)
    chat._edit_entries(s, edits)


def _typed(s: Stream, kind: str) -> list[tuple[int, Any]]:
    return [(i, o) for i, o in s.data_events() if isinstance(o, dict) and o.get("type") == kind]


def _anthropic_tools(s: Stream) -> list[tuple[int, Any, list[tuple[int, Any]]]]:
    """(start event, start, [(delta event, delta)]) of every tool_use block."""
    out = []
    for i, start in _typed(s, "content_block_start"):
        block = start.get("content_block")
        if isinstance(block, dict) and block.get("type") == "tool_use":
            deltas = [
                (k, o)
                for k, o in _typed(s, "content_block_delta")
                if o.get("index") == start.get("index")
                and isinstance(o.get("delta"), dict)
                and o["delta"].get("type") == "input_json_delta"
                and k > i
            ]
            out.append((i, start, deltas))
    return out


def _responses_calls(s: Stream) -> list[tuple[str, list[tuple[int, Any]]]]:
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


def _set_item_args(o: dict[str, Any], item_id: str, fix: Callable[[dict[str, Any]], None]) -> None:
    item = o.get("item")
    if isinstance(item, dict) and item.get("id") == item_id:
        fix(item)
    response = o.get("response")
    if isinstance(response, dict):
        for out in response.get("output") or []:
            if isinstance(out, dict) and out.get("id") == item_id:
                fix(out)


def _responses_args(s: Stream, item_id: str, events: list[tuple[int, Any]], text: str) -> None:
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
            _set_item_args(o, item_id, lambda it: it.__setitem__("arguments", text))
            s.set_json(i, o)
    for i in sorted(drop, reverse=True):
        s.remove(i)


def _responses_full(events: list[tuple[int, Any]]) -> str:
    for _, o in events:
        if o.get("type") == f"{_FN_ARGS}.done" and isinstance(o.get("arguments"), str):
            return str(o["arguments"])
    return "".join(
        str(o.get("delta") or "") for _, o in events if o.get("type") == f"{_FN_ARGS}.delta"
    )


# -- the faults --------------------------------------------------------------------------------
@mutation(TOOL_APIS, changes=("all",))
def args_invalid_json(s: Stream) -> bool:
    """The last call's arguments cut in the middle of a string; the call and the stream end
    normally after it."""
    if s.api == "openai-chat":
        for c in reversed(chat._calls(s)):
            cut = _mid_string(c.arguments)
            if cut is not None:
                _truncate_chat(s, c, cut)
                return True
        return False
    if s.api == "anthropic":
        for _, _, deltas in reversed(_anthropic_tools(s)):
            text = "".join(str(o["delta"].get("partial_json") or "") for _, o in deltas)
            cut = _mid_string(text)
            if cut is None:
                continue
            so_far = 0
            for k, o in deltas:
                frag = str(o["delta"].get("partial_json") or "")
                if so_far >= cut:
                    o["delta"]["partial_json"] = ""
                elif so_far + len(frag) > cut:
                    o["delta"]["partial_json"] = frag[: cut - so_far]
                else:
                    so_far += len(frag)
                    continue
                so_far += len(frag)
                s.set_json(k, o)
            return True
        return False
    for item_id, events in reversed(_responses_calls(s)):
        full = _responses_full(events)
        cut = _mid_string(full)
        if cut is not None:
            _responses_args(s, item_id, events, full[:cut])
            return True
    return False


@mutation(("openai-chat", "openai-responses"), changes=("all",))
def args_empty(s: Stream) -> bool:
    """The last call's arguments sent as an empty string."""
    if s.api == "openai-chat":
        calls = chat._calls(s)
        if not calls or not calls[-1].arguments:
            return False
        _truncate_chat(s, calls[-1], 0)
        return True
    items = _responses_calls(s)
    if not items or not _responses_full(items[-1][1]):
        return False
    _responses_args(s, items[-1][0], items[-1][1], "")
    return True


@mutation(("openai-chat", "anthropic", "gemini"), changes=("all",))
def tool_not_offered(s: Stream) -> bool:
    """The first call names a tool the request did not offer."""
    offered = offered_tools(s.header.request.get("body"))
    if offered is None:
        return False

    def other(name: str) -> str:
        new = name + "_v2"
        while new in offered:
            new += "_v2"
        return new

    if s.api == "openai-chat":
        calls = [c for c in chat._calls(s) if c.name in offered]
        if not calls:
            return False
        new = other(calls[0].name)

        def rename(e: dict[str, Any]) -> None:
            if chat._fn(e).get("name"):
                chat._fn(e)["name"] = new

        chat._edit_entries(s, {ref: rename for ref in calls[0].refs})
        return True
    if s.api == "anthropic":
        for i, start, _ in _anthropic_tools(s):
            if start["content_block"].get("name") in offered:
                start["content_block"]["name"] = other(start["content_block"]["name"])
                s.set_json(i, start)
                return True
        return False
    if s.api == "gemini":
        for i, obj in s.data_events():
            for part in chat_free_parts(obj):
                fc = part.get("functionCall")
                if isinstance(fc, dict) and fc.get("name") in offered:
                    fc["name"] = other(fc["name"])
                    s.set_json(i, obj)
                    return True
        return False
    return False


def chat_free_parts(obj: Any) -> list[dict[str, Any]]:
    from .gemini import _parts

    return _parts(obj)


@mutation(TOOL_APIS, changes=("all",))
def stream_cut_mid_call(s: Stream) -> bool:
    """The stream ends (cleanly) in the middle of the last call's arguments."""
    at: int | None = None
    if s.api == "openai-chat":
        for c in reversed(chat._calls(s)):
            frags = [ref for ref, f in zip(c.refs, c.fragments, strict=True) if f]
            if len(frags) >= 2:
                at = frags[len(frags) // 2 - 1][0]
                break
    elif s.api == "anthropic":
        for _, _, deltas in reversed(_anthropic_tools(s)):
            if len(deltas) >= 2:
                at = deltas[len(deltas) // 2 - 1][0]
                break
    else:
        for _, events in reversed(_responses_calls(s)):
            deltas = [i for i, o in events if o.get("type") == f"{_FN_ARGS}.delta"]
            if len(deltas) >= 2:
                at = deltas[len(deltas) // 2 - 1]
                break
    if at is None:
        return False
    s.truncate(at + 1)
    return True


@mutation(("anthropic", "openai-responses"), changes=("ids",))
def call_id_duplicate(s: Stream) -> bool:
    """The second tool call comes with the first one's id."""
    if s.api == "openai-chat":
        calls = chat._calls(s)
        if len(calls) < 2:
            return False
        first = calls[0].id
        chat._edit_entries(s, {calls[1].refs[0]: lambda e: e.__setitem__("id", first)})
        return True
    if s.api == "anthropic":
        tools = _anthropic_tools(s)
        if len(tools) < 2:
            return False
        i, start, _ = tools[1]
        start["content_block"]["id"] = tools[0][1]["content_block"].get("id")
        s.set_json(i, start)
        return True
    items = _responses_calls(s)
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
        _set_item_args(o, item_id, lambda it: it.__setitem__("call_id", first_call_id))
        s.set_json(i, o)
    return True


_ERRORS = {
    "openai-chat": {"error": {"message": "Upstream provider error", "code": 502}},
    "anthropic": {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    "openai-responses": {
        "type": "error",
        "code": "server_error",
        "message": "The server had an error while processing your request.",
        "param": None,
    },
    "gemini": {
        "error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}
    },
}


@mutation(changes=("all",))
def provider_error(s: Stream) -> bool:
    """Halfway through, an error event in the provider's shape, then the stream ends."""
    datas = [i for i, _ in s.data_events()]
    if len(datas) < 3:
        return False
    at = datas[len(datas) // 2]
    s.truncate(at)
    s.insert_json(at, _ERRORS[s.api], like=datas[0], name="error")
    return True
