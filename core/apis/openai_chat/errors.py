"""The shape of an OpenAI error body (the ``openai`` error style, every OpenAI-compatible API's):
streamtool's own refusals and a replayed provider error alike."""

from __future__ import annotations

from typing import Any

# the error's "type", and the statuses that take it, as OpenAI's API sends them (a 404 is an
# invalid request there)
KINDS = {
    "invalid_request_error": (400, 404, 405, 413),
    "authentication_error": (401,),
    "permission_error": (403,),
    "conflict_error": (409,),
    "rate_limit_error": (429,),
}
_BY_STATUS = {status: kind for kind, statuses in KINDS.items() for status in statuses}


def error_shape(status: int, message: str) -> dict[str, Any]:
    """``{"error": {"message", "type", "param", "code"}}``: where the SDK reads the message."""
    kind = _BY_STATUS.get(status, "server_error" if status >= 500 else "invalid_request_error")
    code = {404: "not_found"}.get(status)
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}
