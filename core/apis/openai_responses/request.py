"""OpenAI Responses requests: the body ``record`` sends (tools and tool choice in the Responses
shape) and a conversation read from, and written as, a Responses request body.

The key goes in ``authorization: Bearer`` (the default of a request part).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...drive.conversation import ASSISTANT, SYSTEM, TOOL, USER, numbered, text_of, turns
from ...exchange.requests import TOOL_CHOICES, RequestOptions, ToolDef, add_tools

if TYPE_CHECKING:
    from ...drive.conversation import Builder, Conversation

# the content part types that hold text
_TEXT = ("input_text", "output_text", "text")


def format_tools(tools: Sequence[ToolDef]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "name": t.name,
            "description": t.description,
            "parameters": t.parameters,
        }
        for t in tools
    ]


def format_tool_choice(choice: str) -> Any:
    """``auto|required|none|NAME`` in the Responses shape."""
    if choice in TOOL_CHOICES:
        return choice
    return {"type": "function", "name": choice}


def build_body(
    opts: RequestOptions, system: str | None, messages: list[dict[str, Any]], stream_usage: bool
) -> dict[str, Any]:
    body: dict[str, Any] = {"model": opts.model, "input": messages, "stream": True}
    if system is not None:
        body["instructions"] = system
    if opts.max_tokens is not None:
        body["max_output_tokens"] = opts.max_tokens
    return add_tools(body, opts, format_tools, format_tool_choice)


# -- a request's conversation ----------------------------------------------------------------
def read_conversation(body: dict[str, Any], out: Builder) -> None:
    instructions = body.get("instructions")
    if isinstance(instructions, str):
        out.add(SYSTEM, instructions)
    for item in turns(body.get("input"), out):
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            text = text_of(item.get("content"), _TEXT)
            if role in ("system", "developer"):
                out.add(SYSTEM, text)
            elif role == "user":
                out.add(USER, text)
            elif role == "assistant":
                out.add(ASSISTANT, text)
        elif kind == "function_call":
            call = (item.get("call_id"), str(item.get("name", "")), item.get("arguments", ""))
            out.add(ASSISTANT, calls=[call])
        elif kind == "function_call_output":
            output = item.get("output")
            text = output if isinstance(output, str) else text_of(output, _TEXT)
            out.add(TOOL, results=[(item.get("call_id"), None, text)])


def request_body(conversation: Conversation, model: str) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    for m, calls, results in numbered(conversation, "call_"):
        if m.role == TOOL:
            items.extend(
                {"type": "function_call_output", "call_id": cid, "output": r.text}
                for r, cid, _ in results
            )
            continue
        if m.text or not calls:
            kind = "output_text" if m.role == ASSISTANT else "input_text"
            items.append(
                {
                    "type": "message",
                    "role": m.role,
                    "content": [{"type": kind, "text": m.text}],
                }
            )
        for c, cid in calls:
            items.append(
                {"type": "function_call", "call_id": cid, "name": c.name, "arguments": c.arguments}
            )
    return {"model": model, "input": items, "stream": True}
