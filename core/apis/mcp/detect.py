"""Which requests and streams are MCP: a JSON-RPC 2.0 body, or MCP's own headers.

Light on purpose: the proxy asks :func:`claim_request` about every request no API's path
claims, and auto-detection imports every API's ``detect`` part
(:func:`streamtool.core.converters.detect_from_event`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# where this API's JSON sniffing comes among the APIs' (lower first): first, an object that
# says ``"jsonrpc": "2.0"`` is nothing else
RANK = 5
# request headers only MCP clients send (lower case): the session, the protocol version, and
# the 2026-07-28 routing headers
HEADERS = ("mcp-session-id", "mcp-protocol-version", "mcp-method")


def is_message(obj: Any) -> bool:
    """A JSON-RPC 2.0 message: an object with ``"jsonrpc": "2.0"``."""
    return isinstance(obj, dict) and obj.get("jsonrpc") == "2.0"


def is_jsonrpc(body: Any) -> bool:
    """A JSON-RPC 2.0 body: one message, or a batch (a non-empty list) of them."""
    if isinstance(body, list):
        return bool(body) and all(is_message(m) for m in body)
    return is_message(body)


def label(body: Any) -> str:
    """What names a POSTed body in a tape: the request's method and, for a call of a tool or a
    prompt, its name (``tools/call get_weather``); ``response`` for the client's answer to a
    server request; ``batch`` for several messages."""
    if isinstance(body, list):
        return "batch"
    method = body.get("method")
    if not isinstance(method, str):
        return "response"
    params = body.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    return f"{method} {name}" if isinstance(name, str) and name else method


def claim_request(method: str, headers: Mapping[str, str], body: Any) -> str | None:
    """The name of an MCP request (see :func:`label`; ``stream`` for a GET, ``delete`` for a
    DELETE), or ``None`` when the request is not MCP's. A POST is MCP when its body is JSON-RPC
    2.0; a GET or a DELETE when it carries an MCP header (``headers``: lower-case names)."""
    verb = method.upper()
    if verb == "POST":
        return label(body) if is_jsonrpc(body) else None
    if verb in ("GET", "DELETE") and any(h in headers for h in HEADERS):
        return "stream" if verb == "GET" else "delete"
    return None


def sniff_json(obj: dict[str, Any]) -> str | None:
    """The converter an event's JSON object points to, when it is a JSON-RPC message."""
    return "mcp" if obj.get("jsonrpc") == "2.0" else None
