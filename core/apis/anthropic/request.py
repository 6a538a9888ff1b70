"""Anthropic Messages requests: the body ``record`` sends (tools and tool choice in the Messages
shape), the key's header and the version header, and a conversation read from, and written as, a
Messages request body.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...drive.conversation import ASSISTANT, SYSTEM, TOOL, USER, call_arguments, numbered, text_of
from ...exchange.requests import RequestOptions, ToolDef, add_tools

if TYPE_CHECKING:
    from ...drive.conversation import Builder, Conversation

KEY_HEADER = "x-api-key"
KEY_PREFIX = ""
HEADERS = {"anthropic-version": "2023-06-01"}
# what a body asks for when the options name no limit (the API requires one)
DEFAULT_MAX_TOKENS = 1024


def format_tools(tools: Sequence[ToolDef]) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
    ]


def format_tool_choice(choice: str) -> dict[str, Any]:
    """``auto|required|none|NAME`` in the Messages shape."""
    kinds = {"auto": "auto", "required": "any", "none": "none"}
    if choice in kinds:
        return {"type": kinds[choice]}
    return {"type": "tool", "name": choice}


def with_tools(body: dict[str, Any], opts: RequestOptions) -> dict[str, Any]:
    """``body`` with the options' tools and tool choice in the Messages shape."""
    return add_tools(body, opts, format_tools, format_tool_choice)


def build_body(
    opts: RequestOptions, system: str | None, messages: list[dict[str, Any]], stream_usage: bool
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": opts.model,
        "max_tokens": opts.max_tokens if opts.max_tokens is not None else DEFAULT_MAX_TOKENS,
        "messages": messages,
        "stream": True,
    }
    if system is not None:
        body["system"] = system
    return with_tools(body, opts)


# -- a request's conversation ----------------------------------------------------------------
def read_conversation(body: dict[str, Any], out: Builder) -> None:
    out.add(SYSTEM, text_of(body.get("system")))
    for m in body.get("messages") or []:
        if not isinstance(m, dict):
            continue
        role, content = m.get("role"), m.get("content")
        if isinstance(content, str):
            out.add(USER if role == "user" else ASSISTANT, content)
            continue
        blocks = [b for b in content or [] if isinstance(b, dict)]
        if role == "assistant":
            calls = [
                (b.get("id"), str(b.get("name", "")), b.get("input", {}))
                for b in blocks
                if b.get("type") == "tool_use"
            ]
            out.add(ASSISTANT, text_of(blocks), calls)
            continue
        results = [
            (b.get("tool_use_id"), None, text_of(b.get("content")))
            for b in blocks
            if b.get("type") == "tool_result"
        ]
        if results:
            out.add(TOOL, results=results)
        out.add(USER, text_of(blocks))


def request_body(conversation: Conversation, model: str) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "max_tokens": DEFAULT_MAX_TOKENS, "stream": True}
    msgs: list[dict[str, Any]] = []
    for m, calls, results in numbered(conversation, "toolu_"):
        if m.role == SYSTEM:
            body["system"] = m.text
        elif m.role == ASSISTANT:
            blocks: list[dict[str, Any]] = [{"type": "text", "text": m.text}] if m.text else []
            blocks += (
                {"type": "tool_use", "id": cid, "name": c.name, "input": call_arguments(c)}
                for c, cid in calls
            )
            msgs.append({"role": "assistant", "content": blocks})
        elif m.role == TOOL:
            answers = [
                {"type": "tool_result", "tool_use_id": cid, "content": r.text}
                for r, cid, _ in results
            ]
            msgs.append({"role": "user", "content": answers})
        else:
            msgs.append({"role": "user", "content": m.text})
    body["messages"] = msgs
    return body
