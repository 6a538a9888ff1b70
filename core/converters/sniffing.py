"""The sniffers of an API's ``detect`` part whose events are named by a set of names: as SSE
event names, or in a field of their JSON objects. Light, as the detect parts are."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any


def by_event_names(
    converter: str, events: Collection[str], key: str = "type"
) -> tuple[Callable[[str], str | None], Callable[[dict[str, Any]], str | None]]:
    """``(sniff_event, sniff_json)``: ``converter`` for an SSE event name among ``events``, and
    for an event's JSON object whose ``key`` names one of them."""

    def sniff_event(name: str) -> str | None:
        return converter if name in events else None

    def sniff_json(obj: dict[str, Any]) -> str | None:
        kind = obj.get(key)
        return converter if isinstance(kind, str) and kind in events else None

    return sniff_event, sniff_json
