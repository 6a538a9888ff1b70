"""How a stream shows it is OpenAI Responses: events named ``response.*``."""

from __future__ import annotations

from typing import Any

# where this API's JSON sniffing comes among the APIs' (lower first; see ``detect_from_event``)
RANK = 20


def sniff_event(name: str) -> str | None:
    """The converter an SSE event name points to, when it is one of this API's."""
    return "openai-responses" if name.startswith("response.") else None


def sniff_json(obj: dict[str, Any]) -> str | None:
    """The converter an event's JSON object points to, when it is one of this API's: a
    ``response.*`` type, or an error event numbered in the stream (``sequence_number``)."""
    kind = obj.get("type")
    if isinstance(kind, str) and (
        kind.startswith("response.") or (kind == "error" and "sequence_number" in obj)
    ):
        return "openai-responses"
    return None
