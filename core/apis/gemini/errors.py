"""The shape of a Gemini error body (the ``gemini`` error style, the Interactions API's too):
streamtool's own refusals and a replayed provider error alike."""

from __future__ import annotations

from typing import Any

# Google's canonical status names by HTTP status
STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    405: "NOT_FOUND",
    409: "ABORTED",
    413: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    503: "UNAVAILABLE",
}


def error_shape(status: int, message: str) -> dict[str, Any]:
    """``{"error": {"code", "message", "status"}}``: Google's error body."""
    name = STATUSES.get(status, "INTERNAL")
    return {"error": {"code": status, "message": message, "status": name}}
