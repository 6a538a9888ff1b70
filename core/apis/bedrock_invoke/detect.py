"""How a stream shows it is Bedrock's InvokeModelWithResponseStream: ``chunk`` frames."""

from __future__ import annotations


def sniff_event(name: str) -> str | None:
    """The converter an event-stream frame's ``:event-type`` points to, when it is this API's
    ``chunk``."""
    return "bedrock-invoke" if name == "chunk" else None
