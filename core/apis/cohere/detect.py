"""How a stream shows it is Cohere's v2 chat by its JSON: the ``type`` its events name (its SSE
event names are its row's ``event_names``, told without this part)."""

from __future__ import annotations

from ...converters.sniffing import by_type_field
from . import API

# where this API's JSON sniffing comes among the APIs' (lower first; see ``detect_from_event``)
RANK = 40

# the API's event names, as its row lists them
EVENTS = frozenset(API.event_names)

# the converter an event's JSON ``type`` points to, when it is one of this API's events
sniff_json = by_type_field("cohere", EVENTS)
