"""How a stream shows it is Cohere's v2 chat: its event names, or the ``type`` its events name.

Light on purpose: auto-detection imports every API's ``detect`` part
(:func:`streamtool.core.converters.detect_from_event`).
"""

from __future__ import annotations

from typing import Any

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


def sniff_event(name: str) -> str | None:
    """The converter an SSE event name points to, when it is one of this API's."""
    return "cohere" if name in EVENTS else None


def sniff_json(obj: dict[str, Any]) -> str | None:
    """The converter an event's JSON object points to, when its ``type`` is one of this API's."""
    kind = obj.get("type")
    return "cohere" if isinstance(kind, str) and kind in EVENTS else None
