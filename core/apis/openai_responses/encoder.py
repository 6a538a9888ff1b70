"""A reply as an OpenAI Responses stream. Sans-IO.

As the Responses API streams: ``response.created`` and ``response.in_progress``, then one output
item per part, each opened by ``response.output_item.added`` and closed by
``response.output_item.done`` — a ``reasoning`` item (a summary part, its
``reasoning_summary_text.delta``\\ s and ``.done``), a ``message`` (a content part,
``output_text.delta``\\ s one token each and ``output_text.done``; a refusal as ``refusal``
deltas), a ``function_call`` (its ``fc_`` item id, ``call_id`` and name on the item, the
arguments in ``function_call_arguments.delta``\\ s and ``.done``) — every event with its
``sequence_number``; then ``response.completed`` (or ``response.incomplete`` with its reason)
carrying the whole response and its usage. An in-band error is an ``error`` event followed by
``response.failed`` (a call it cut is never done, nor in the failed response's output).
"""

from __future__ import annotations

from typing import Any

from ...model.quirk_ids import QuirkId
from ...outputs.emit.base import Emitted, Out, error_kind, error_response, named_event
from ...outputs.emit.pieces import cut
from ...outputs.emit.reply import ERROR, REASONING, REFUSAL, TEXT, TOOL_CALL, Reply, error_message
from ..openai_chat.errors import error_shape

INHERENT_QUIRKS: set[QuirkId] = set()
INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}


def responses_usage(usage: dict[str, int] | None) -> dict[str, Any] | None:
    if not usage:
        return None
    inp = usage.get("input_tokens", 0)
    outp = usage.get("output_tokens", 0)
    return {
        "input_tokens": inp,
        "input_tokens_details": {"cached_tokens": usage.get("cached_input_tokens", 0)},
        "output_tokens": outp,
        "output_tokens_details": {"reasoning_tokens": usage.get("reasoning_tokens", 0)},
        "total_tokens": usage.get("total_tokens", inp + outp),
    }


class _Stream:
    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.out = Out(reply)
        self.seq = 0
        self.response_id = "resp_" + reply.ident("", "resp", 48)

    def event(
        self, name: str, obj: dict[str, Any], *, advance: int = 0, t: float | None = None
    ) -> None:
        body = {"type": name, "sequence_number": self.seq, **obj}
        self.seq += 1
        self.out.send(named_event(name, body), advance=advance, t=t)

    def response(self, status: str, output: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
        reply = self.reply
        obj: dict[str, Any] = {
            "id": self.response_id,
            "object": "response",
            "created_at": reply.created,
            "status": status,
            "background": False,
            "error": None,
            "incomplete_details": None,
            "instructions": None,
            "max_output_tokens": None,
            "model": reply.model,
            "output": output,
            "parallel_tool_calls": True,
            "previous_response_id": None,
            "reasoning": {"effort": None, "summary": None},
            "store": True,
            "temperature": 1.0,
            "text": {"format": {"type": "text"}},
            "tool_choice": "auto",
            "tools": [],
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": None,
            "metadata": {},
        }
        obj.update(more)
        return obj


def emit(reply: Reply) -> Emitted:
    if reply.status >= 400:
        return error_response(reply, error_shape(reply.status, reply.error_message()))
    s = _Stream(reply)
    t0 = s.out.clock.t_first
    s.event("response.created", {"response": s.response("in_progress", [])}, t=t0)
    s.event("response.in_progress", {"response": s.response("in_progress", [])}, t=t0)
    output: list[dict[str, Any]] = []
    calls = 0
    unfinished = 0  # calls the stream ended inside: each holds an output index, in no output
    for part in reply.parts:
        index = len(output) + unfinished
        if part.kind == ERROR:
            error = part.error or {}
            code = error_kind(error, "server_error")
            message = error_message(error)
            s.event("error", {"code": code, "message": message, "param": None})
            failed = s.response("failed", output, error={"code": code, "message": message})
            s.event("response.failed", {"response": failed})
            return s.out.done()
        if part.kind == REASONING:
            item_id = "rs_" + reply.ident("", f"rs{index}", 48)
            item: dict[str, Any] = {"id": item_id, "type": "reasoning", "summary": []}
            s.event("response.output_item.added", {"output_index": index, "item": item})
            at = {"item_id": item_id, "output_index": index, "summary_index": 0}
            empty = {"type": "summary_text", "text": ""}
            s.event("response.reasoning_summary_part.added", {**at, "part": empty})
            for piece in cut(part.text, 1, part.pieces):
                s.event(
                    "response.reasoning_summary_text.delta",
                    {**at, "delta": piece},
                    advance=len(piece),
                )
            s.event("response.reasoning_summary_text.done", {**at, "text": part.text})
            whole = {"type": "summary_text", "text": part.text}
            s.event("response.reasoning_summary_part.done", {**at, "part": whole})
            item = {"id": item_id, "type": "reasoning", "summary": [whole]}
        elif part.kind in (TEXT, REFUSAL):
            item_id = "msg_" + reply.ident("", f"msg{index}", 48)
            item = {
                "id": item_id,
                "type": "message",
                "status": "in_progress",
                "content": [],
                "role": "assistant",
            }
            s.event("response.output_item.added", {"output_index": index, "item": item})
            at = {"item_id": item_id, "output_index": index, "content_index": 0}
            if part.kind == TEXT:
                content: dict[str, Any] = {
                    "type": "output_text",
                    "annotations": [],
                    "logprobs": [],
                    "text": "",
                }
                s.event("response.content_part.added", {**at, "part": content})
                for piece in cut(part.text, 1, part.pieces):
                    delta = {**at, "delta": piece, "logprobs": []}
                    s.event("response.output_text.delta", delta, advance=len(piece))
                s.event("response.output_text.done", {**at, "text": part.text, "logprobs": []})
                content = {**content, "text": part.text}
            else:
                content = {"type": "refusal", "refusal": ""}
                s.event("response.content_part.added", {**at, "part": content})
                for piece in cut(part.text, 1, part.pieces):
                    s.event("response.refusal.delta", {**at, "delta": piece}, advance=len(piece))
                s.event("response.refusal.done", {**at, "refusal": part.text})
                content = {"type": "refusal", "refusal": part.text}
            s.event("response.content_part.done", {**at, "part": content})
            item = {**item, "status": "completed", "content": [content]}
        elif part.kind == TOOL_CALL:
            item_id = "fc_" + reply.ident("", f"fc{index}", 48)
            cid = part.call_id if part.call_id and part.call_id.startswith("call_") else None
            item = {
                "id": item_id,
                "type": "function_call",
                "status": "in_progress",
                "arguments": "",
                "call_id": cid or reply.ident("call_", f"{calls}:{part.call_id}", 24),
                "name": part.name,
            }
            calls += 1
            s.event("response.output_item.added", {"output_index": index, "item": item})
            at = {"item_id": item_id, "output_index": index}
            for piece in cut(part.text, 1, part.pieces):
                s.event(
                    "response.function_call_arguments.delta",
                    {**at, "delta": piece},
                    advance=len(piece),
                )
            if part.cut:
                # the stream ended inside this call: it is never done, and no response lists it
                # (a final output that held it would close it)
                unfinished += 1
                continue
            s.event("response.function_call_arguments.done", {**at, "arguments": part.text})
            item = {**item, "status": "completed", "arguments": part.text}
        else:
            continue
        output.append(item)
        s.event("response.output_item.done", {"output_index": index, "item": item})
    if reply.truncated:
        return s.out.done(complete=False)
    t_end = s.out.clock.t_end
    usage = responses_usage(reply.usage)
    reason = INCOMPLETE.get(reply.finish_class)
    if reason is not None:
        final = s.response("incomplete", output, usage=usage, incomplete_details={"reason": reason})
        s.event("response.incomplete", {"response": final}, t=t_end)
    else:
        s.event(
            "response.completed",
            {"response": s.response("completed", output, usage=usage)},
            t=t_end,
        )
    return s.out.done()
