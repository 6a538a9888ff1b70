"""The shape of an Amazon Bedrock runtime error body (the ``bedrock`` error style, InvokeModel's
too)."""

from __future__ import annotations

from typing import Any

# botocore reads the error code from "__type" when no x-amzn-ErrorType header is sent
TYPES = {
    400: "ValidationException",
    404: "ResourceNotFoundException",
    405: "ValidationException",
    409: "ConflictException",
    413: "ValidationException",
    429: "ThrottlingException",
}


def error_shape(status: int, message: str) -> dict[str, Any]:
    """``{"__type", "message"}``: the exception botocore raises, and its message."""
    return {"__type": TYPES.get(status, "InternalServerException"), "message": message}
