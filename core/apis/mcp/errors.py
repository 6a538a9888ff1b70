"""The shape of an error streamtool answers on an MCP endpoint (the ``jsonrpc`` error style):
a JSON-RPC 2.0 error response without an id (the request it answers is not known), as the
SDKs' servers answer a refused HTTP request (``Session not found``: 404 and -32600)."""

from __future__ import annotations

from typing import Any

INVALID_REQUEST = -32600  # JSON-RPC 2.0: the request is not valid (any refusal of the transport)
INTERNAL_ERROR = -32603  # JSON-RPC 2.0: the server failed (a 5xx)


def error_shape(status: int, message: str) -> dict[str, Any]:
    """``{"jsonrpc": "2.0", "id": null, "error": {"code", "message"}}``."""
    code = INTERNAL_ERROR if status >= 500 else INVALID_REQUEST
    return {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
