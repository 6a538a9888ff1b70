"""How a stream shows it is Anthropic Messages: its event names, or the ``type`` its events name.

Light on purpose: auto-detection imports every API's ``detect`` part
(:func:`streamtool.core.converters.detect_from_event`).
"""

from __future__ import annotations

from typing import Any

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


def sniff_event(name: str) -> str | None:
    """The converter an SSE event name points to, when it is one of this API's."""
    return "anthropic" if name in EVENTS else None


def sniff_json(obj: dict[str, Any]) -> str | None:
    """The converter an event's JSON object points to, when it is one of this API's: an event
    type of the API, or an error event (``{"type": "error", "error": {"type": ...}}``)."""
    kind = obj.get("type")
    if not isinstance(kind, str):
        return None
    if kind in EVENTS:
        return "anthropic"
    if kind == "error" and isinstance(obj.get("error"), dict) and "type" in obj["error"]:
        return "anthropic"
    return None
