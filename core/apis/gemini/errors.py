"""The shape of a Gemini error body (the ``gemini`` error style, the Interactions API's too)."""

from __future__ import annotations

from typing import Any

# Google's canonical status names by HTTP status
STATUSES = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 405: "NOT_FOUND", 409: "ABORTED"}


def error_shape(status: int, message: str) -> dict[str, Any]:
    """``{"error": {"code", "message", "status"}}``: Google's error body."""
    return {"error": {"code": status, "message": message, "status": STATUSES.get(status)}}
