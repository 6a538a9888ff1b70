"""streamtool's library: sans-IO protocol stages (decoder, converters, handlers, adapter)."""

from .model import (
    ChunkResponse,
    Quirk,
    SegmentEvent,
    SegmentEventType,
    SegmentType,
    StreamError,
    ToolCallDelta,
    ToolInvocation,
)

__all__ = [
    "ChunkResponse",
    "Quirk",
    "SegmentEvent",
    "SegmentEventType",
    "SegmentType",
    "StreamError",
    "ToolCallDelta",
    "ToolInvocation",
]
