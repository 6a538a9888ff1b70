"""A reply as an OpenAI Chat Completions stream (``chat.completion.chunk`` events). Sans-IO.

As OpenAI streams: a first chunk with the assistant role, text (``content``) one token per
chunk, a refusal as ``refusal`` deltas, each tool call opened by a chunk with its ``index``,
``id``, ``type`` and ``name`` (and empty arguments) followed by its arguments a token or so per
chunk, a closing chunk with the finish reason, then ``data: [DONE]``. Usage rides on the
closing chunk (the way most servers send it; a separate usage chunk with empty ``choices`` is a
catalogued quirk). Reasoning, which OpenAI's own API does not stream, is sent as
``reasoning_content`` (DeepSeek, vLLM): replaying it reports that one field's quirk. An error
the provider reported in the stream is sent as an ``error`` object where it happened; when it
came in the middle of a tool call, the stream ends after it (no finish chunk, no ``[DONE]``:
either would close the call) and the usage rides on that call's last chunk.
"""

from __future__ import annotations

from typing import Any

from ...finish import OPENAI_CHAT_REASONS
from ..emit_openai import openai_usage
from .base import Emitted, Out, data_event, error_response
from .pieces import cut
from .reply import ERROR, REASONING, REFUSAL, TEXT, TOOL_CALL, Reply, error_message

INHERENT_QUIRKS = {"reasoning_field_reasoning_content"}  # only when the reply has reasoning
_FIELDS = {TEXT: "content", REFUSAL: "refusal", REASONING: "reasoning_content"}


def call_id(reply: Reply, part_id: str | None, n: int) -> str:
    """The call's own id (OpenAI-compatible servers use ids of every shape), else a new one."""
    if part_id:
        return part_id
    return reply.ident("call_", f"{n}:{part_id}")


def stream_stops_in(reply: Reply) -> int | None:
    """The index of the last call the stream ended inside before an error came, if any."""
    found = None
    for n, part in enumerate(reply.parts):
        if part.kind == TOOL_CALL and part.cut:
            found = n
        elif part.kind == ERROR and found is not None:
            return found
    return None


def emit(reply: Reply) -> Emitted:
    if reply.status >= 400:
        return error_response(reply, "openai")
    out = Out(reply)
    completion_id = reply.seed if reply.seed.startswith("chatcmpl-") else reply.ident("chatcmpl-")

    def chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> str:
        obj: dict[str, Any] = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": reply.created,
            "model": reply.model,
            "system_fingerprint": None,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if usage is not None:
            obj["usage"] = usage
        return data_event(obj)

    # the first chunk opens the field the message starts with: a refusal's has content null
    first = next((p.kind for p in reply.parts if p.kind in _FIELDS), TEXT)
    opening = (
        {"content": None, "refusal": ""} if first == REFUSAL else {"content": "", "refusal": None}
    )
    out.opening(chunk({"role": "assistant", **opening}))
    usage = openai_usage(reply.usage) if reply.usage else None
    # an error in the middle of a call ends the stream after it: a finish reason or [DONE] would
    # close the call, as if the model had finished it; the usage so far rides on the last chunk
    # of that call (as on the chunks of servers that send usage on every chunk)
    stops_in = None if reply.truncated else stream_stops_in(reply)
    calls = 0
    for n, part in enumerate(reply.parts):
        if part.kind in _FIELDS:
            field = _FIELDS[part.kind]
            for piece in cut(part.text, 1, part.pieces):
                out.send(chunk({field: piece}), advance=len(piece))
        elif part.kind == TOOL_CALL:
            head = {
                "index": calls,
                "id": call_id(reply, part.call_id, calls),
                "type": "function",
                "function": {"name": part.name, "arguments": ""},
            }
            deltas = [(head, 0)] + [
                ({"index": calls, "function": {"arguments": piece}}, len(piece))
                for piece in cut(part.text, 1, part.pieces)
            ]
            for i, (delta, size) in enumerate(deltas):
                last = n == stops_in and i == len(deltas) - 1
                out.send(
                    chunk({"tool_calls": [delta]}, usage=usage if last else None), advance=size
                )
            calls += 1
        elif part.kind == ERROR:
            error = part.error or {}
            body = {k: error[k] for k in ("type", "code") if k in error}
            out.send(data_event({"error": {"message": error_message(error), **body}}))
    if reply.truncated:
        return out.done(complete=False)
    if stops_in is not None:
        return out.done()
    reason = OPENAI_CHAT_REASONS.get(reply.finish_class)
    if reason is not None:
        out.closing(chunk({}, reason, usage or None))
    out.closing("data: [DONE]\n\n")
    return out.done()
