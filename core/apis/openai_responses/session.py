"""A Responses session over WebSocket (``client.responses.connect()``) as ``replay`` draws it and
``serve`` matches a client against it: the same shapes as a Realtime session's (``response.create``
in, ``response.*`` events out), so the same outline and the same matching rules."""

from ..openai_realtime.session import (
    MISMATCH_CLOSE,
    Outline,
    mismatch_event,
    normalize_client_event,
)

__all__ = ["MISMATCH_CLOSE", "Outline", "mismatch_event", "normalize_client_event"]
