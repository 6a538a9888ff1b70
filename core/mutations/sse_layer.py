"""Mutations of the SSE layer that every API shares (catalogue section A)."""

from __future__ import annotations

from ..model.quirk_ids import QuirkId
from . import Scope, mutation, rules_of
from .stream import Stream


@mutation(QuirkId.SSE_COMMENT_KEEPALIVE, Scope.SSE)
def comment_keepalive(s: Stream) -> bool:
    """SSE comments between events, as OpenRouter sends while the model works: one before the
    first event, then one every few events."""
    if s.framing != "sse" or not s.events:
        return False
    eol = s.events[0].eol
    comment = b": OPENROUTER PROCESSING" + eol + eol
    for i in range(len(s.events) - 1, -1, -4):
        s.insert(i, comment)
    s.insert(0, comment)
    return True


@mutation(QuirkId.UNKNOWN_EVENT, Scope.SSE, rule="UNKNOWN_EVENT")
def unknown_event(s: Stream) -> bool:
    """An event of a type newer than the converter (a provider's new feature), right after the
    stream's first event (the APIs whose mutations part has an ``UNKNOWN_EVENT``: the type of
    the event it follows, and the event)."""
    rules = rules_of(s.api)
    assert rules is not None, s.api
    after, obj = rules.UNKNOWN_EVENT
    for i, ev in enumerate(s.events):
        found = ev.json()
        if isinstance(found, dict) and found.get("type") == after:
            s.insert_json(i + 1, obj, like=i, name=str(obj["type"]))
            return True
    return False
