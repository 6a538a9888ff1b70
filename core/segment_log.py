"""Segments coalesced as their events pass: what a transcript shows of them, without the events.

:class:`SegmentLog` takes a handler's segment events one by one and keeps each segment's type, id,
content (joined, kept compact by :class:`~streamtool.core.textbuf.TextBuffer`) and metadata (the
START metadata updated by the END metadata), and how many content fragments each segment id got.
The events themselves are not kept. Sans-IO.
"""

from __future__ import annotations

from typing import Any

from .model import SegmentEvent, SegmentEventType
from .textbuf import TextBuffer

_CONTENT = SegmentEventType.CONTENT
_START = SegmentEventType.START


class _Segment:
    __slots__ = ("type", "id", "metadata", "ended")

    def __init__(self, segment_type: str, segment_id: str, metadata: dict[str, Any]) -> None:
        self.type = segment_type
        self.id = segment_id
        self.metadata = metadata
        self.ended = False


class SegmentLog:
    """Segments in order of their START (see :meth:`coalesced`), built event by event."""

    def __init__(self) -> None:
        self._segments: list[_Segment] = []
        self._by_id: dict[str, _Segment] = {}
        self._content: dict[str, TextBuffer] = {}  # by segment id: a later START of it restarts it
        self.fragments: dict[str, int] = {}  # CONTENT events with text, by segment id

    def add(self, event: SegmentEvent) -> None:
        kind = event.event_type
        segment_id = event.segment_id
        if kind is _CONTENT:
            if event.delta:
                content = self._content.get(segment_id)
                if content is not None:
                    content.append(event.delta)
                fragments = self.fragments
                fragments[segment_id] = fragments.get(segment_id, 0) + 1
        elif kind is _START:
            assert event.segment_type is not None
            seg = _Segment(event.segment_type.value, segment_id, dict(event.metadata or {}))
            self._segments.append(seg)
            self._by_id[segment_id] = seg
            self._content[segment_id] = TextBuffer()
        else:
            ended = self._by_id.get(segment_id)
            if ended is not None:
                ended.metadata.update(event.metadata or {})
                ended.ended = True
                self._content[segment_id].seal()

    def coalesced(self) -> list[dict[str, Any]]:
        """Segments in order of their START: ``{type, id, content, metadata}``.

        ``content`` is every CONTENT delta joined; ``metadata`` is the START metadata updated by
        the END metadata (the END value of a key wins). A segment that never got its END event
        carries ``"ended": false``. Each call returns new dicts.
        """
        out: list[dict[str, Any]] = []
        for seg in self._segments:
            item: dict[str, Any] = {
                "type": seg.type,
                "id": seg.id,
                "content": self._content[seg.id].text(),
                "metadata": dict(seg.metadata),
            }
            if not seg.ended:
                item["ended"] = False
            out.append(item)
        return out
