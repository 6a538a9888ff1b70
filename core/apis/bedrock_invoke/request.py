"""Amazon Bedrock InvokeModel requests: Claude's native body (the model is in the path, the
version in the body), its tools and tool choice in Anthropic's shape. The stream comes in AWS's
binary event-stream framing; with no key the request is signed with SigV4 at the edge.
"""

from __future__ import annotations

from typing import Any

from ...exchange.requests import RequestOptions
from ..anthropic.request import DEFAULT_MAX_TOKENS, with_tools

ACCEPT = "application/vnd.amazon.eventstream"
SIGV4 = True


def build_body(
    opts: RequestOptions, system: str | None, messages: list[dict[str, Any]], stream_usage: bool
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": opts.max_tokens if opts.max_tokens is not None else DEFAULT_MAX_TOKENS,
        "messages": messages,
    }
    if system is not None:
        body["system"] = system
    return with_tools(body, opts)
