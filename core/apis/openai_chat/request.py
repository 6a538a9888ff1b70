"""OpenAI Chat Completions requests: the body ``record`` sends (tools and tool choice in Chat's
shape) and a conversation read from, and written as, a Chat request body.

The key goes in ``authorization: Bearer`` (the default of a request part).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ...drive.conversation import ASSISTANT, SYSTEM, TOOL, USER, numbered, text_of
from ...exchange.requests import TOOL_CHOICES, RequestOptions, ToolDef, add_tools

if TYPE_CHECKING:
    from ...drive.conversation import Builder, Conversation


def format_tools(tools: Sequence[ToolDef]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


def format_tool_choice(choice: str) -> Any:
    """``auto|required|none|NAME`` in Chat's shape."""
    if choice in TOOL_CHOICES:
        return choice
    return {"type": "function", "function": {"name": choice}}


def build_body(
    opts: RequestOptions, system: str | None, messages: list[dict[str, Any]], stream_usage: bool
) -> dict[str, Any]:
    return chat_body(opts, system, messages, stream_usage, format_tool_choice)


def chat_body(
    opts: RequestOptions,
    system: str | None,
    messages: list[dict[str, Any]],
    stream_usage: bool,
    tool_choice: Callable[[str], Any],
) -> dict[str, Any]:
    """A body in Chat's shape, its tool choice as ``tool_choice`` formats it (Chat's own, or
    that of an API with Chat's body and its own tool choice)."""
    if system is not None:
        messages = [{"role": "system", "content": system}, *messages]
    body: dict[str, Any] = {"model": opts.model, "messages": messages, "stream": True}
    if stream_usage:
        body["stream_options"] = {"include_usage": True}
    if opts.max_tokens is not None:
        body["max_tokens"] = opts.max_tokens
    return add_tools(body, opts, format_tools, tool_choice)


# -- a request's conversation ----------------------------------------------------------------
def read_conversation(body: dict[str, Any], out: Builder) -> None:
    for m in body.get("messages") or []:
        if not isinstance(m, dict):
            continue
        role = m.get("role")
        content = m.get("content")
        if role in ("system", "developer"):
            out.add(SYSTEM, text_of(content))
        elif role == "user":
            out.add(USER, text_of(content))
        elif role == "assistant":
            calls = []
            for c in m.get("tool_calls") or []:
                fn = c.get("function") if isinstance(c, dict) else None
                if isinstance(fn, dict):
                    calls.append((c.get("id"), str(fn.get("name", "")), fn.get("arguments", "")))
            legacy = m.get("function_call")
            if isinstance(legacy, dict):
                calls.append((None, str(legacy.get("name", "")), legacy.get("arguments", "")))
            out.add(ASSISTANT, text_of(content), calls)
        elif role in ("tool", "function"):
            call_id = m.get("tool_call_id")
            name = m.get("name") if role == "function" else None
            out.add(TOOL, results=[(call_id, name, text_of(content))])


def request_body(conversation: Conversation, model: str) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for m, calls, results in numbered(conversation, "call_"):
        if m.role == TOOL:
            messages.extend(
                {"role": "tool", "tool_call_id": cid, "content": r.text} for r, cid, _ in results
            )
        elif m.role == ASSISTANT:
            msg: dict[str, Any] = {"role": "assistant", "content": m.text or None}
            if calls:
                msg["tool_calls"] = [
                    {
                        "id": cid,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments},
                    }
                    for c, cid in calls
                ]
            messages.append(msg)
        else:
            messages.append({"role": m.role, "content": m.text})
    return {"model": model, "messages": messages, "stream": True}
