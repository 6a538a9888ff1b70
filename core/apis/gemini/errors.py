"""The shape of a Gemini error body (the ``gemini`` error style, the Interactions API's too):
streamtool's own refusals and a replayed provider error alike."""

from __future__ import annotations

from typing import Any

# Google's canonical status names, and the HTTP statuses each answers
STATUSES = {
    "INVALID_ARGUMENT": (400, 413),
    "UNAUTHENTICATED": (401,),
    "PERMISSION_DENIED": (403,),
    "NOT_FOUND": (404, 405),
    "ABORTED": (409,),
    "RESOURCE_EXHAUSTED": (429,),
    "UNAVAILABLE": (503,),
}
_BY_STATUS = {status: name for name, statuses in STATUSES.items() for status in statuses}


def error_shape(status: int, message: str) -> dict[str, Any]:
    """``{"error": {"code", "message", "status"}}``: Google's error body."""
    name = _BY_STATUS.get(status, "INTERNAL")
    return {"error": {"code": status, "message": message, "status": name}}
