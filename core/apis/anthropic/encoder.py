"""A reply as an Anthropic Messages stream. Sans-IO.

As Anthropic streams: ``message_start`` (the message id, model, input tokens), a ``ping``, then
one content block per part — ``thinking`` (``thinking_delta``\\ s, then a ``signature_delta``),
``text`` (``text_delta``\\ s), ``tool_use`` (its ``toolu_`` id and name at
``content_block_start``, an empty ``input_json_delta`` and the input a few tokens at a time) —
each closed by ``content_block_stop``; then ``message_delta`` (stop reason, output tokens) and
``message_stop``. Text comes a few tokens per delta. An in-band error is an ``error`` event,
which ends the stream, as Anthropic's do (a call it cut has no ``content_block_stop``). A
refusal is text with ``stop_reason: refusal``; a content filter, which Anthropic reports the
same way, becomes a refusal too.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from ...model.quirk_ids import QuirkId
from ...outputs.emit.base import Emitted, Out, error_kind, error_response, named_event
from ...outputs.emit.pieces import cut
from ...outputs.emit.reply import ERROR, REASONING, REFUSAL, TEXT, TOOL_CALL, Reply, error_message
from .errors import error_shape

INHERENT_QUIRKS: set[QuirkId] = set()
TOKENS_PER_DELTA = 3
STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "refusal": "refusal",
    "content_filter": "refusal",
}


def tool_use_id(reply: Reply, part_id: str | None, n: int) -> str:
    if part_id and part_id.startswith("toolu_"):
        return part_id
    return "toolu_01" + reply.ident("", f"{n}:{part_id}", 22)


def emit(reply: Reply) -> Emitted:
    if reply.status >= 400:
        return error_response(reply, error_shape(reply.status, reply.error_message()))
    out = Out(reply)
    usage = reply.usage or {}
    start_usage: dict[str, Any] = {
        "input_tokens": usage.get("input_tokens", 0),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": usage.get("cached_input_tokens", 0),
        "output_tokens": 1,
    }
    message: dict[str, Any] = {
        "id": "msg_01" + reply.ident("", "msg", 22),
        "type": "message",
        "role": "assistant",
        "model": reply.model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": start_usage,
    }
    out.opening(named_event("message_start", {"type": "message_start", "message": message}))
    out.opening(named_event("ping", {"type": "ping"}))
    index = 0
    calls = 0
    failed = False
    for part in reply.parts:
        if part.kind == ERROR:
            kind = error_kind(part.error, "api_error")
            body = {"type": kind, "message": error_message(part.error)}
            out.send(named_event("error", {"type": "error", "error": body}))
            failed = True
            break
        if part.kind in (TEXT, REFUSAL):
            block: dict[str, Any] = {"type": "text", "text": ""}
            delta_type, field = "text_delta", "text"
        elif part.kind == REASONING:
            block = {"type": "thinking", "thinking": "", "signature": ""}
            delta_type, field = "thinking_delta", "thinking"
        elif part.kind == TOOL_CALL:
            block = {
                "type": "tool_use",
                "id": tool_use_id(reply, part.call_id, calls),
                "name": part.name,
                "input": {},
            }
            delta_type, field = "input_json_delta", "partial_json"
            calls += 1
        else:
            continue
        start = {"type": "content_block_start", "index": index, "content_block": block}
        out.send(named_event("content_block_start", start))
        pieces = cut(part.text, TOKENS_PER_DELTA, part.pieces)
        if part.kind == TOOL_CALL:
            pieces = ["", *pieces]
        for piece in pieces:
            delta = {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": delta_type, field: piece},
            }
            out.send(named_event("content_block_delta", delta), advance=len(piece))
        if part.kind == REASONING:
            signature = base64.b64encode(
                hashlib.sha256(f"{reply.seed}:{index}".encode()).digest() * 3
            ).decode("ascii")
            sig = {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "signature_delta", "signature": signature},
            }
            out.send(named_event("content_block_delta", sig))
        if not part.cut:  # a call the stream ended inside has no content_block_stop
            stop = {"type": "content_block_stop", "index": index}
            out.send(named_event("content_block_stop", stop))
        index += 1
    if reply.truncated:
        return out.done(complete=False)
    if not failed:
        reason = STOP_REASONS.get(reply.finish_class)
        if reason is not None:
            end_usage: dict[str, Any] = {"output_tokens": usage.get("output_tokens", 0)}
            delta = {
                "type": "message_delta",
                "delta": {"stop_reason": reason, "stop_sequence": None},
                "usage": end_usage,
            }
            out.closing(named_event("message_delta", delta))
        out.closing(named_event("message_stop", {"type": "message_stop"}))
    return out.done()
