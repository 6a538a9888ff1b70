"""``passthrough``: text (and reasoning) only; tool calls are not interpreted."""

from __future__ import annotations

from ..model import ChunkResponse, SegmentEvent
from ..model.quirk_ids import QuirkId
from .base import StreamingResponseHandler


class PassThroughStreamingResponseHandler(StreamingResponseHandler):
    name = "passthrough"

    def feed(self, chunk: ChunkResponse) -> list[SegmentEvent]:
        self._check_open()
        out: list[SegmentEvent] = []
        self._prose(chunk, out)
        if chunk.tool_calls:
            self.note_quirk(
                QuirkId.TOOL_CALLS_IGNORED_BY_PARSER,
                "the stream carries API tool_calls, which the passthrough parser does not read",
            )
        return out
