"""The shape of a Cohere v2 error body (the ``cohere`` error style)."""

from __future__ import annotations

from typing import Any


def error_shape(status: int, message: str) -> dict[str, Any]:
    """``{"message"}``: all Cohere's SDK reads."""
    return {"message": message}
