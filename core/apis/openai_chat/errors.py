"""The shape of an OpenAI error body (the ``openai`` error style, every OpenAI-compatible API's)."""

from __future__ import annotations

from typing import Any

# the error's "type" by status, as OpenAI's SDK and the compatible servers know them
KINDS = {
    400: "invalid_request_error",
    404: "not_found_error",
    405: "invalid_request_error",
    409: "conflict_error",
}


def error_shape(status: int, message: str) -> dict[str, Any]:
    """``{"error": {"message", "type", "param", "code"}}``: where the SDK reads the message."""
    code = {404: "not_found"}.get(status)
    kind = KINDS.get(status, "api_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}
