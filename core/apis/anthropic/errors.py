"""The shape of an Anthropic Messages error body (the ``anthropic`` error style): streamtool's
own refusals and a replayed provider error alike."""

from __future__ import annotations

from typing import Any

# the error's "type" by status (Anthropic's error types)
KINDS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    409: "conflict_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def error_shape(status: int, message: str) -> dict[str, Any]:
    """``{"type": "error", "error": {"type", "message"}}``: where the SDK reads the message."""
    return {"type": "error", "error": {"type": KINDS.get(status, "api_error"), "message": message}}
