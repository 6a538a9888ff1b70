"""How a stream shows it is Anthropic Messages: its event names, or the ``type`` its events name."""

from __future__ import annotations

from typing import Any

from ...converters.sniffing import by_event_names

# where this API's JSON sniffing comes among the APIs' (lower first; see ``detect_from_event``)
RANK = 30

EVENTS = frozenset(
    {
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "ping",
    }
)


# the converter an SSE event name, or an event's JSON ``type``, points to, when it is this API's
sniff_event, _sniff_type = by_event_names("anthropic", EVENTS)


def sniff_json(obj: dict[str, Any]) -> str | None:
    """The converter an event's JSON object points to, when it is one of this API's: an event
    type of the API, or an error event (``{"type": "error", "error": {"type": ...}}``)."""
    if obj.get("type") == "error" and isinstance(obj.get("error"), dict) and "type" in obj["error"]:
        return "anthropic"
    return _sniff_type(obj)
