"""The shape of an OpenAI error body (the ``openai`` error style, every OpenAI-compatible API's):
streamtool's own refusals and a replayed provider error alike."""

from __future__ import annotations

from typing import Any

# the error's "type" by status, as OpenAI's API sends them (a 404 is an invalid request there)
KINDS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "invalid_request_error",
    405: "invalid_request_error",
    409: "conflict_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
}


def error_shape(status: int, message: str) -> dict[str, Any]:
    """``{"error": {"message", "type", "param", "code"}}``: where the SDK reads the message."""
    kind = KINDS.get(status, "server_error" if status >= 500 else "invalid_request_error")
    code = {404: "not_found"}.get(status)
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}
