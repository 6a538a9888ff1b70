"""The shape of an Anthropic Messages error body (the ``anthropic`` error style)."""

from __future__ import annotations

from typing import Any

# the error's "type" by status (Anthropic's error types)
KINDS = {
    400: "invalid_request_error",
    404: "not_found_error",
    405: "invalid_request_error",
    409: "conflict_error",
}


def error_shape(status: int, message: str) -> dict[str, Any]:
    """``{"type": "error", "error": {"type", "message"}}``: where the SDK reads the message."""
    return {"type": "error", "error": {"type": KINDS.get(status, "api_error"), "message": message}}
