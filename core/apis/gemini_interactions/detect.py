"""How a stream shows it is Google's Interactions API: its event names, or the ``event_type``
its events name.

Light on purpose: auto-detection imports every API's ``detect`` part
(:func:`streamtool.core.converters.detect_from_event`).
"""

from __future__ import annotations

from typing import Any

# where this API's JSON sniffing comes among the APIs' (lower first; see ``detect_from_event``):
# first, an ``event_type`` names the event whatever its ``type`` says
RANK = 10

# the events of the API: the steps, and the older content events
STEP_EVENTS = frozenset(
    {
        "interaction.created",
        "interaction.completed",
        "interaction.status_update",
        "step.start",
        "step.delta",
        "step.stop",
    }
)
CONTENT_EVENTS = frozenset(
    {"interaction.start", "interaction.complete", "content.start", "content.delta", "content.stop"}
)
EVENTS = STEP_EVENTS | CONTENT_EVENTS


def sniff_event(name: str) -> str | None:
    """The converter an SSE event name points to, when it is one of this API's."""
    return "gemini-interactions" if name in EVENTS else None


def sniff_json(obj: dict[str, Any]) -> str | None:
    """The converter an event's JSON object points to, when its ``event_type`` is one of this
    API's."""
    kind = obj.get("event_type")
    return "gemini-interactions" if isinstance(kind, str) and kind in EVENTS else None
