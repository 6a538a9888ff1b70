"""How a stream shows it is Google's Interactions API: its event names, or the ``event_type``
its events name.
"""

from __future__ import annotations

from ...converters.sniffing import by_event_names

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


# the converter an SSE event name, or an event's JSON ``event_type``, points to, when it is this
# API's
sniff_event, sniff_json = by_event_names("gemini-interactions", EVENTS, "event_type")
