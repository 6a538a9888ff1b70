"""Cohere v2 chat requests: the body ``record`` sends, its tools in Chat Completions' shape and
its tool choice as Cohere's modes.

The key goes in ``authorization: Bearer`` (the default of a request part).
"""

from __future__ import annotations

from typing import Any

from ...exchange.requests import RequestError, RequestOptions
from ..openai_chat.request import format_tools


def format_tool_choice(choice: str) -> str | None:
    """``auto|required|none`` as Cohere's mode (None: auto, the default, sent as nothing)."""
    modes = {"auto": None, "required": "REQUIRED", "none": "NONE"}
    if choice in modes:
        return modes[choice]
    raise RequestError("Cohere's tool_choice is auto, required or none; not a tool name")


def build_body(
    opts: RequestOptions, system: str | None, messages: list[dict[str, Any]], stream_usage: bool
) -> dict[str, Any]:
    if system is not None:
        messages = [{"role": "system", "content": system}, *messages]
    body: dict[str, Any] = {"model": opts.model, "messages": messages, "stream": True}
    if opts.max_tokens is not None:
        body["max_tokens"] = opts.max_tokens
    if opts.tools:
        body["tools"] = format_tools(opts.tools)
    if opts.tool_choice is not None:
        choice = format_tool_choice(opts.tool_choice)
        if choice is not None:
            body["tool_choice"] = choice
    return body
