"""Mutations of Anthropic Messages streams (catalogue section E)."""

from __future__ import annotations

import json
from typing import Any

from . import mutation
from .stream import Stream

ANTHROPIC = ("anthropic",)


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


@mutation(ANTHROPIC, changes=("args_text",))
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


@mutation(ANTHROPIC)
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


@mutation(ANTHROPIC)
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
