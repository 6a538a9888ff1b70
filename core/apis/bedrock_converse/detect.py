"""How a stream shows it is Bedrock's ConverseStream: the names of its event-stream frames."""

from __future__ import annotations

# ConverseStream's event types (the members of ConverseStreamOutput that are events)
CONVERSE_EVENTS = frozenset(
    {
        "messageStart",
        "contentBlockStart",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
    }
)


def sniff_event(name: str) -> str | None:
    """The converter an event-stream frame's ``:event-type`` points to, when it is one of this
    API's."""
    return "bedrock-converse" if name in CONVERSE_EVENTS else None
