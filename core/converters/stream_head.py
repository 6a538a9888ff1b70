"""What a payload says about the whole stream (its model, its usage), put on the chunk that
carries it: the one way every decoder passes them on."""

from __future__ import annotations

from typing import Any

from ..model import ChunkResponse
from ..model.usage import normalize_usage


def take_head(chunk: ChunkResponse, model: Any, usage: Any, known: str | None) -> str | None:
    """The stream's model once a payload named ``model`` and ``usage``: ``chunk`` gets the model
    when it is a name other than ``known`` (the stream's model so far), and the usage when
    ``usage`` normalizes to any."""
    if isinstance(model, str) and model and model != known:
        known = chunk.model = model
    normalized = normalize_usage(usage)
    if normalized:
        chunk.usage = normalized
    return known
