"""How a stream shows it is Anthropic Messages by its JSON: the ``type`` its events name (its
SSE event names are its row's ``event_names``, told without this part)."""

from __future__ import annotations

from typing import Any

from ...converters.sniffing import by_type_field
from . import API

# where this API's JSON sniffing comes among the APIs' (lower first; see ``detect_from_event``)
RANK = 30

# the API's event names, as its row lists them
EVENTS = frozenset(API.event_names)

# the converter an event's JSON ``type`` points to, when it is one of this API's events
_sniff_type = by_type_field("anthropic", EVENTS)


def sniff_json(obj: dict[str, Any]) -> str | None:
    """The converter an event's JSON object points to, when it is one of this API's: an event
    type of the API, or an error event (``{"type": "error", "error": {"type": ...}}``)."""
    if obj.get("type") == "error" and isinstance(obj.get("error"), dict) and "type" in obj["error"]:
        return "anthropic"
    return _sniff_type(obj)
