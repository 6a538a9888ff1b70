"""Mutations of Anthropic Messages streams (catalogue section E), and the API's rules for the
shared ones (the model's faults, an error inside the stream, an unknown event:
:mod:`streamtool.core.mutations` calls them)."""

from __future__ import annotations

import json
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


def _block_events(s: Stream, index: int) -> list[tuple[int, Any]]:
    return [
        (i, o)
        for i, o in s.data_events()
        if isinstance(o, dict)
        and o.get("index") == index
        and o.get("type") in ("content_block_start", "content_block_delta", "content_block_stop")
    ]


@mutation(QuirkId.ANTHROPIC_TOOL_INPUT_IN_START, changes=("args_text",))
def tool_input_in_start(s: Stream) -> bool:
    """Each tool_use block's input given whole in its content_block_start, no input_json_delta."""
    done = False
    for i, start in reversed(_typed(s, "content_block_start")):
        block = start.get("content_block")
        if not isinstance(block, dict) or block.get("type") != "tool_use":
            continue
        deltas = [
            (k, o)
            for k, o in _block_events(s, start.get("index"))
            if o["type"] == "content_block_delta"
            and isinstance(o.get("delta"), dict)
            and o["delta"].get("type") == "input_json_delta"
        ]
        text = "".join(str(o["delta"].get("partial_json") or "") for _, o in deltas)
        try:
            value = json.loads(text)
        except ValueError:
            continue
        if not isinstance(value, dict) or not value:
            continue
        for k, _ in reversed(deltas):
            s.remove(k)
        block["input"] = value
        s.set_json(i, start)
        done = True
    return done


@mutation(QuirkId.ANTHROPIC_CONTENT_IN_MESSAGE_START)
def content_in_message_start(s: Stream) -> bool:
    """The first block, when it is text, delivered whole inside message_start."""
    starts = _typed(s, "message_start")
    blocks = _typed(s, "content_block_start")
    if not starts or not blocks:
        return False
    first_i, first = blocks[0]
    block = first.get("content_block")
    if not isinstance(block, dict) or block.get("type") != "text":
        return False
    events = _block_events(s, first.get("index"))
    text = "".join(
        str(o["delta"].get("text") or "")
        for _, o in events
        if o["type"] == "content_block_delta" and isinstance(o.get("delta"), dict)
    )
    if not text or events[-1][1]["type"] != "content_block_stop":
        return False
    i, msg = starts[0]
    message = msg.get("message")
    if not isinstance(message, dict) or message.get("content"):
        return False
    message["content"] = [{"type": "text", "text": text}]
    for k, _ in reversed(events):
        s.remove(k)
    s.set_json(i, msg)
    return True


@mutation(QuirkId.ANTHROPIC_UNKNOWN_DELTA)
def unknown_delta(s: Stream) -> bool:
    blocks = _typed(s, "content_block_start")
    if not blocks:
        return False
    i, start = blocks[0]
    delta = {
        "type": "content_block_delta",
        "index": start.get("index"),
        "delta": {"type": "annotation_delta", "annotation": {}},
    }
    s.insert_json(i + 1, delta, like=i, name="content_block_delta")
    return True


# -- the API's rules for the shared mutations (streamtool.core.mutations.faults, sse) ----------
ERROR_EVENT = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
# an event newer than the converter: right after the event of this type
UNKNOWN_EVENT = ("message_start", {"type": "message_annotation", "annotation": {}})


def _tools(s: Stream) -> list[tuple[int, Any, list[tuple[int, Any]]]]:
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


def args_invalid_json(s: Stream) -> bool:
    """The last tool_use block whose input holds a string value, cut in the middle of it."""
    for _, _, deltas in reversed(_tools(s)):
        text = "".join(str(o["delta"].get("partial_json") or "") for _, o in deltas)
        cut = mid_string(text)
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


def tool_not_offered(s: Stream, offered: frozenset[str], other: Callable[[str], str]) -> bool:
    """The first tool_use block of an offered tool renamed ``other(name)``."""
    for i, start, _ in _tools(s):
        if start["content_block"].get("name") in offered:
            start["content_block"]["name"] = other(start["content_block"]["name"])
            s.set_json(i, start)
            return True
    return False


def stream_cut_mid_call(s: Stream) -> int | None:
    """The event after which the stream ends inside the last tool_use block's input."""
    for _, _, deltas in reversed(_tools(s)):
        if len(deltas) >= 2:
            return int(deltas[len(deltas) // 2 - 1][0])
    return None


def call_id_duplicate(s: Stream) -> bool:
    """The second tool_use block given the first one's id."""
    tools = _tools(s)
    if len(tools) < 2:
        return False
    i, start, _ = tools[1]
    start["content_block"]["id"] = tools[0][1]["content_block"].get("id")
    s.set_json(i, start)
    return True
