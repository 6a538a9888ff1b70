"""How a stream shows it is OpenAI Responses by its JSON: a ``response.*`` type (its SSE events,
named ``response.*``, are told by its row's ``event_names``, without this part)."""

from __future__ import annotations

from typing import Any

# where this API's JSON sniffing comes among the APIs' (lower first; see ``detect_from_event``)
RANK = 20


def sniff_json(obj: dict[str, Any]) -> str | None:
    """The converter an event's JSON object points to, when it is one of this API's: a
    ``response.*`` type, or an error event numbered in the stream (``sequence_number``)."""
    kind = obj.get("type")
    if isinstance(kind, str) and (
        kind.startswith("response.") or (kind == "error" and "sequence_number" in obj)
    ):
        return "openai-responses"
    return None
