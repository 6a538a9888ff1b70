"""A reply as a Gemini ``streamGenerateContent`` stream (``alt=sse``). Sans-IO.

As Gemini streams: ``data:`` lines, each a ``GenerateContentResponse`` whose one candidate holds
the parts of that chunk — text in long pieces (a few dozen tokens each), thoughts as parts with
``thought: true``, each function call whole (``functionCall`` with its ``id``, ``name`` and
``args``: Gemini does not stream arguments) — with ``usageMetadata``, ``modelVersion`` and
``responseId`` on every chunk and ``finishReason`` on the last. Gemini ends a turn with tool
calls on ``STOP`` (replaying that reports its catalogued quirk, ``finish_stop_with_tools``) and
has no refusal ending: a refusal is text that ends on ``STOP``. A call whose argument text is
not JSON (cut off by an error) cannot be said and is left out (never sent as ``{}``). An
in-band error is an ``error`` object, which ends the stream.
"""

from __future__ import annotations

import json
from typing import Any

from ...model.quirk_ids import QuirkId
from ...outputs.emit.base import Emitted, Out, data_event, error_response
from ...outputs.emit.pieces import cut
from ...outputs.emit.reply import ERROR, REASONING, REFUSAL, TEXT, TOOL_CALL, Reply, error_message
from .errors import error_shape

INHERENT_QUIRKS = {QuirkId.FINISH_STOP_WITH_TOOLS}  # only when the reply has tool calls
TOKENS_PER_CHUNK = 24
FINISH_REASONS = {
    "stop": "STOP",
    "tool_calls": "STOP",
    # Gemini has no refusal of the model's own (SAFETY and its kin are the provider's filters,
    # the content_filter class): a model that declines says so in text and ends on STOP
    "refusal": "STOP",
    "length": "MAX_TOKENS",
    "content_filter": "SAFETY",
}
_CODES = {"INTERNAL": 500, "UNAVAILABLE": 503, "RESOURCE_EXHAUSTED": 429}  # in-band errors


def usage_metadata(usage: dict[str, int] | None) -> dict[str, Any] | None:
    if not usage:
        return None
    out: dict[str, Any] = {}
    reasoning = usage.get("reasoning_tokens", 0)
    if "input_tokens" in usage:
        out["promptTokenCount"] = usage["input_tokens"]
    if "output_tokens" in usage:
        out["candidatesTokenCount"] = max(usage["output_tokens"] - reasoning, 0)
    if reasoning:
        out["thoughtsTokenCount"] = reasoning
    if "input_tokens" in usage and "output_tokens" in usage:
        out["totalTokenCount"] = usage["input_tokens"] + usage["output_tokens"]
    if "cached_input_tokens" in usage:
        out["cachedContentTokenCount"] = usage["cached_input_tokens"]
    return out


def emit(reply: Reply) -> Emitted:
    if reply.status >= 400:
        return error_response(reply, error_shape(reply.status, reply.error_message()))
    out = Out(reply)
    response_id = reply.ident("", "gemini", 22)
    usage = usage_metadata(reply.usage)
    # every chunk: (its parts, how much meaning it completes)
    chunks: list[tuple[list[dict[str, Any]], int]] = []
    error: dict[str, Any] | None = None
    calls = 0
    for part in reply.parts:
        if part.kind == ERROR:
            error = part.error or {"message": "error"}
            break
        if part.kind in (TEXT, REFUSAL, REASONING):
            for piece in cut(part.text, TOKENS_PER_CHUNK, part.pieces):
                gp: dict[str, Any] = {"text": piece}
                if part.kind == REASONING:
                    gp["thought"] = True
                chunks.append(([gp], len(piece)))
        elif part.kind == TOOL_CALL:
            try:
                args = json.loads(part.text) if part.text else {}
            except ValueError:
                continue  # Gemini sends arguments as an object: a call cut mid-way is not sent
            call_id = part.call_id or reply.ident("call_", calls, 12)
            calls += 1
            fc = {"functionCall": {"id": call_id, "name": part.name, "args": args}}
            chunks.append(([fc], len(part.text)))

    def message(parts: list[dict[str, Any]], finish: str | None) -> str:
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if finish is not None:
            candidate["finishReason"] = finish
        obj: dict[str, Any] = {"candidates": [candidate]}
        if usage is not None:
            obj["usageMetadata"] = usage
        obj["modelVersion"] = reply.model
        obj["responseId"] = response_id
        return data_event(obj)

    finish = None
    if not reply.truncated and error is None:
        finish = FINISH_REASONS.get(reply.finish_class)
    for i, (parts, size) in enumerate(chunks):
        last = i == len(chunks) - 1
        out.send(message(parts, finish if last else None), advance=size)
    if error is not None:
        given = error.get("status")
        status: str = given if isinstance(given, str) else "INTERNAL"
        code = error.get("code") if isinstance(error.get("code"), int) else _CODES.get(status, 500)
        body = {"error": {"code": code, "message": error_message(error), "status": status}}
        out.send(data_event(body))
    elif not chunks and finish is not None:
        out.closing(message([{"text": ""}], finish))
    return out.done(complete=not reply.truncated)
