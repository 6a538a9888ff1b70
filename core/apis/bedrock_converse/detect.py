"""ConverseStream's event types: the names of its event-stream frames, as its row lists them
(``event_names``: a frame so named is told to be this API's from the row). Bedrock's
InvokeModel decoder reads them too, in the objects a model's ``chunk`` may wrap."""

from __future__ import annotations

from . import API

# ConverseStream's event types (the members of ConverseStreamOutput that are events)
CONVERSE_EVENTS = frozenset(API.event_names)
