"""How a stream shows it is Cohere's v2 chat: its event names, or the ``type`` its events name."""

from __future__ import annotations

from ...converters.sniffing import by_event_names

# where this API's JSON sniffing comes among the APIs' (lower first; see ``detect_from_event``)
RANK = 40

EVENTS = frozenset(
    {
        "message-start",
        "content-start",
        "content-delta",
        "content-end",
        "tool-plan-delta",
        "tool-call-start",
        "tool-call-delta",
        "tool-call-end",
        "citation-start",
        "citation-end",
        "message-end",
    }
)


# the converter an SSE event name, or an event's JSON ``type``, points to, when it is this API's
sniff_event, sniff_json = by_event_names("cohere", EVENTS)
