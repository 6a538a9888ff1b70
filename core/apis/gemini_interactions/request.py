"""Gemini Interactions requests: the body ``record`` sends, its tools in the Responses shape and
its tool choice in ``generation_config``. The key goes in ``x-goog-api-key``.
"""

from __future__ import annotations

from typing import Any

from ...exchange.requests import RequestOptions
from ..openai_responses.request import format_tools

KEY_HEADER = "x-goog-api-key"
KEY_PREFIX = ""


def format_tool_choice(choice: str) -> Any:
    """``auto|required|none|NAME`` as ``generation_config.tool_choice``."""
    modes = {"auto": "auto", "required": "any", "none": "none"}
    if choice in modes:
        return modes[choice]
    return {"allowed_tools": {"mode": "any", "tools": [choice]}}


def build_body(
    opts: RequestOptions, system: str | None, messages: list[dict[str, Any]], stream_usage: bool
) -> dict[str, Any]:
    turns: Any = opts.prompt
    if opts.messages is not None:
        turns = [
            {
                "role": "model" if m["role"] in ("assistant", "model") else "user",
                "content": m.get("content"),
            }
            for m in messages
        ]
    body: dict[str, Any] = {"model": opts.model, "input": turns, "stream": True}
    if system is not None:
        body["system_instruction"] = system
    if opts.max_tokens is not None:
        body["generation_config"] = {"max_output_tokens": opts.max_tokens}
    if opts.tools:
        body["tools"] = format_tools(opts.tools)
    if opts.tool_choice is not None:
        choice = format_tool_choice(opts.tool_choice)
        body.setdefault("generation_config", {})["tool_choice"] = choice
    return body
