"""Amazon Bedrock ConverseStream requests: the body ``record`` sends, its tools and tool choice
in ``toolConfig``. The stream comes in AWS's binary event-stream framing; with no key the request
is signed with SigV4 at the edge.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...exchange.requests import RequestError, RequestOptions, ToolDef, text_parts

ACCEPT = "application/vnd.amazon.eventstream"
SIGV4 = True


def format_tools(tools: Sequence[ToolDef]) -> dict[str, Any]:
    """The ``toolConfig`` holding the tools."""
    return {
        "tools": [
            {
                "toolSpec": {
                    "name": t.name,
                    "description": t.description,
                    "inputSchema": {"json": t.parameters},
                }
            }
            for t in tools
        ]
    }


def format_tool_choice(choice: str) -> dict[str, Any]:
    """``auto|required|NAME`` as ``toolConfig.toolChoice`` (there is no ``none``)."""
    if choice == "none":
        raise RequestError("Bedrock Converse has no tool_choice none: leave --tools out")
    shapes: dict[str, Any] = {"auto": {"auto": {}}, "required": {"any": {}}}
    return shapes.get(choice, {"tool": {"name": choice}})


def build_body(
    opts: RequestOptions, system: str | None, messages: list[dict[str, Any]], stream_usage: bool
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "messages": [{"role": m["role"], "content": text_parts(m.get("content"))} for m in messages]
    }
    if system is not None:
        body["system"] = [{"text": system}]
    if opts.max_tokens is not None:
        body["inferenceConfig"] = {"maxTokens": opts.max_tokens}
    if opts.tools:
        body["toolConfig"] = format_tools(opts.tools)
    if opts.tool_choice is not None:
        body.setdefault("toolConfig", {})["toolChoice"] = format_tool_choice(opts.tool_choice)
    return body
