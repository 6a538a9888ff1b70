"""OpenAI legacy Completions requests: one prompt, no messages, no tools.

The key goes in ``authorization: Bearer`` (the default of a request part).
"""

from __future__ import annotations

from typing import Any

from ...exchange.requests import RequestError, RequestOptions


def build_body(
    opts: RequestOptions, system: str | None, messages: list[dict[str, Any]], stream_usage: bool
) -> dict[str, Any]:
    if opts.messages is not None or system is not None:
        raise RequestError("legacy completions take one --prompt (no --system, --messages)")
    if opts.tools or opts.tool_choice is not None:
        raise RequestError("legacy completions take no tools (no --tools, --tool-choice)")
    body: dict[str, Any] = {"model": opts.model, "prompt": opts.prompt, "stream": True}
    if stream_usage:
        body["stream_options"] = {"include_usage": True}
    if opts.max_tokens is not None:
        body["max_tokens"] = opts.max_tokens
    return body
