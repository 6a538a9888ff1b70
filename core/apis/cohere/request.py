"""Cohere v2 chat requests: the body ``record`` sends, its tools in Chat Completions' shape and
its tool choice as Cohere's modes.

The key goes in ``authorization: Bearer`` (the default of a request part).
"""

from __future__ import annotations

from typing import Any

from ...exchange.requests import RequestError, RequestOptions
from ..openai_chat.request import chat_body


def format_tool_choice(choice: str) -> str | None:
    """``auto|required|none`` as Cohere's mode (None: auto, the default, sent as nothing)."""
    modes = {"auto": None, "required": "REQUIRED", "none": "NONE"}
    if choice in modes:
        return modes[choice]
    raise RequestError("Cohere's tool_choice is auto, required or none; not a tool name")


def build_body(
    opts: RequestOptions, system: str | None, messages: list[dict[str, Any]], stream_usage: bool
) -> dict[str, Any]:
    # Chat's body, never with stream_options (not a Cohere field)
    return chat_body(opts, system, messages, False, format_tool_choice)
