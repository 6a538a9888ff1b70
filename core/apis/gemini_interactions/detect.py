"""How a stream shows it is Google's Interactions API by its JSON: the ``event_type`` its events
name (its SSE event names are its row's ``event_names``, told without this part): the steps,
and the older content events.
"""

from __future__ import annotations

from ...converters.sniffing import by_type_field
from . import API

# where this API's JSON sniffing comes among the APIs' (lower first; see ``detect_from_event``):
# first, an ``event_type`` names the event whatever its ``type`` says
RANK = 10

# the API's event names, as its row lists them
EVENTS = frozenset(API.event_names)

# the converter an event's JSON ``event_type`` points to, when it is one of this API's events
sniff_json = by_type_field("gemini-interactions", EVENTS, "event_type")
