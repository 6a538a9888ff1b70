"""The JSON sniffer of an API's ``detect`` part whose events name their type in a field of
their objects, among the names its row lists (``event_names``). Light, as the detect parts are."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any


def by_type_field(
    converter: str, events: Collection[str], key: str = "type"
) -> Callable[[dict[str, Any]], str | None]:
    """``sniff_json``: ``converter`` for an event's JSON object whose ``key`` names one of
    ``events``."""

    def sniff_json(obj: dict[str, Any]) -> str | None:
        kind = obj.get(key)
        return converter if isinstance(kind, str) and kind in events else None

    return sniff_json
