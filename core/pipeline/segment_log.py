"""Segments folded as their events pass: the one place a START / CONTENT / END fold is written.

:class:`SegmentLog` takes a handler's segment events one by one and keeps one :class:`Segment` per
START: its type, id, content (joined, kept compact by
:class:`~streamtool.core.model.textbuf.TextBuffer`; not kept at all with ``keep_content=False``, for
a reader of the structure and the sizes only), its metadata (the START metadata updated by the END
metadata; what CONTENT events learnt is kept apart, in ``learnt``), whether it has ended, and how
many content fragments each segment id got. The events themselves are not kept.

A reader that looks now and then asks what changed since its last look: :meth:`SegmentLog.changes`
with the cursor the previous call gave (0 the first time) gives the segments opened, appended to
(content or metadata) and closed since. A replay engine keeps such a log (``ReplayEngine(...,
segments=True)``, or ``transcript=True``): its readers read the engine's segments instead of
folding the events again. Sans-IO.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..model import SegmentEvent, SegmentEventType, SegmentType
from ..model.textbuf import SEAL, TextBuffer

_CONTENT = SegmentEventType.CONTENT
_START = SegmentEventType.START
_TEXT = SegmentType.TEXT


class Segment:
    """One segment as it stands (see the module docstring).

    ``metadata`` is the START metadata updated by the END metadata; ``learnt`` what CONTENT
    events said on the way (a file call's path), ``None`` when nothing; ``closing`` the END
    metadata (``None`` before the END). ``chars`` counts the content's characters (kept or not).
    ``opened_at``, ``changed_at`` and ``closed_at`` are the log's cursor when the segment was
    opened, last changed (content or metadata) and closed (-1: not yet); ``meta_at`` when its
    metadata last changed.
    """

    __slots__ = (
        "type",
        "id",
        "start_metadata",
        "metadata",
        "learnt",
        "closing",
        "ended",
        "content",
        "chars",
        "opened_at",
        "changed_at",
        "meta_at",
        "closed_at",
    )

    def __init__(
        self,
        segment_type: SegmentType,
        segment_id: str,
        metadata: dict[str, Any] | None,
        at: int = 0,
        keep_content: bool = True,
    ) -> None:
        self.type = segment_type
        self.id = segment_id
        self.start_metadata = metadata
        self.metadata: dict[str, Any] = dict(metadata or {})
        self.learnt: dict[str, Any] | None = None
        self.closing: dict[str, Any] | None = None
        self.ended = False
        self.content: TextBuffer | None = TextBuffer() if keep_content else None
        self.chars = 0
        self.opened_at = at
        self.changed_at = at
        self.meta_at = at
        self.closed_at = -1

    def append(self, delta: str) -> None:
        """Content added (what :meth:`SegmentLog.add` does for a CONTENT event, inline)."""
        if delta:
            content = self.content
            if content is not None:
                content.append(delta)
            self.chars += len(delta)

    @property
    def text(self) -> str:
        """The content so far (empty when the log keeps no content)."""
        content = self.content
        return "" if content is None else content.text()

    def tail(self, max_chars: int) -> str:
        """The last ``max_chars`` characters of the content, without joining all of it."""
        content = self.content
        if content is None or max_chars <= 0:
            return ""
        if self.chars <= max_chars:
            return content.text()
        need = max_chars
        pieces: list[str] = []
        for block in reversed([*content.blocks(), *content.tail]):
            if len(block) >= need:
                pieces.append(block[len(block) - need :])
                break
            pieces.append(block)
            need -= len(block)
        pieces.reverse()
        return "".join(pieces)

    def merged_metadata(self) -> dict[str, Any]:
        """Every metadata the segment's events carried, merged in their order (START, what
        CONTENT learnt, END): a new dict when CONTENT learnt something, else ``metadata``."""
        learnt = self.learnt
        if learnt is None:
            return self.metadata
        out = dict(self.start_metadata or {})
        out.update(learnt)
        if self.closing:
            out.update(self.closing)
        return out

    def coalesced(self) -> dict[str, Any]:
        """``{type, id, content, metadata}`` (and ``"ended": false`` before its END)."""
        item: dict[str, Any] = {
            "type": self.type.value,
            "id": self.id,
            "content": self.text,
            "metadata": dict(self.metadata),
        }
        if not self.ended:
            item["ended"] = False
        return item


class SegmentChanges(msgspec.Struct, frozen=True):
    """What changed in a log between two looks (each list in order of START)."""

    cursor: int  # to give to the next call
    opened: list[Segment]
    appended: list[Segment]  # opened before the last look, changed since (content, metadata)
    closed: list[Segment]


class SegmentLog:
    """Segments in order of their START (see :meth:`coalesced`), built event by event."""

    def __init__(self, keep_content: bool = True) -> None:
        self.keep_content = keep_content
        self.segments: list[Segment] = []  # in order of START
        self._by_id: dict[str, Segment] = {}  # the latest START of each id
        self._open: dict[int, Segment] = {}  # segments without their END, by identity
        self._closed: list[Segment] = []  # in order of END
        self._late: list[tuple[int, Segment]] = []  # (cursor, segment) changed after its END
        self.fragments: dict[str, int] = {}  # CONTENT events with text, by segment id
        self.cursor = 0  # events added so far
        self.chars = 0  # content characters of every segment so far

    def get(self, segment_id: str) -> Segment | None:
        """The segment of that id (the latest one, when a START came again)."""
        return self._by_id.get(segment_id)

    def open_segments(self) -> list[Segment]:
        """The segments that have not had their END yet, in order of START."""
        return list(self._open.values())

    def add(self, event: SegmentEvent) -> None:
        at = self.cursor
        self.cursor = at + 1
        kind = event.event_type
        segment_id = event.segment_id
        if kind is _CONTENT:
            seg = self._by_id.get(segment_id)
            delta = event.delta
            if delta:
                if seg is not None:
                    content = seg.content
                    if content is not None:
                        tail = content.tail  # TextBuffer.append, inline
                        tail.append(delta)
                        if len(tail) >= SEAL:
                            content.seal()
                    n = len(delta)
                    seg.chars += n
                    self.chars += n
                    seg.changed_at = at
                    if seg.ended:
                        self._late.append((at, seg))
                fragments = self.fragments
                fragments[segment_id] = fragments.get(segment_id, 0) + 1
            if event.metadata and seg is not None:
                if seg.learnt is None:
                    seg.learnt = {}
                seg.learnt.update(event.metadata)
                seg.changed_at = seg.meta_at = at
                if seg.ended:
                    self._late.append((at, seg))
        elif kind is _START:
            seg = Segment(
                event.segment_type or _TEXT, segment_id, event.metadata, at, self.keep_content
            )
            self.segments.append(seg)
            self._by_id[segment_id] = seg
            self._open[id(seg)] = seg
        else:
            ended = self._by_id.get(segment_id)
            if ended is not None and not ended.ended:
                if event.metadata:
                    ended.metadata.update(event.metadata)
                    ended.closing = event.metadata
                    ended.meta_at = at
                ended.ended = True
                ended.changed_at = ended.closed_at = at
                del self._open[id(ended)]
                self._closed.append(ended)
                if ended.content is not None:
                    ended.content.seal()
            elif ended is not None and event.metadata:  # a second END: its metadata still counts
                ended.metadata.update(event.metadata)
                ended.closing = {**(ended.closing or {}), **event.metadata}
                ended.changed_at = ended.meta_at = at
                self._late.append((at, ended))

    def changes(self, since: int = 0) -> SegmentChanges:
        """The segments opened, appended to and closed since the cursor ``since`` (the cursor a
        previous call gave; 0: since the start). Costs the segments still open and those that
        changed, not the whole log."""
        segments = self.segments
        i = len(segments)
        while i and segments[i - 1].opened_at >= since:
            i -= 1
        opened = segments[i:]
        done = self._closed
        j = len(done)
        while j and done[j - 1].closed_at >= since:
            j -= 1
        closed = sorted(done[j:], key=_opened_at)
        late = self._late
        k = len(late)
        while k and late[k - 1][0] >= since:
            k -= 1
        changed = {id(s): s for s in (*self._open.values(), *closed, *(s for _, s in late[k:]))}
        appended = [s for s in changed.values() if s.opened_at < since <= s.changed_at]
        appended.sort(key=_opened_at)
        return SegmentChanges(self.cursor, opened, appended, closed)

    def coalesced(self) -> list[dict[str, Any]]:
        """Segments in order of their START: ``{type, id, content, metadata}``.

        ``content`` is every CONTENT delta joined; ``metadata`` is the START metadata updated by
        the END metadata (the END value of a key wins). A segment that never got its END event
        carries ``"ended": false``. Each call returns new dicts.
        """
        return [seg.coalesced() for seg in self.segments]


def _opened_at(seg: Segment) -> int:
    return seg.opened_at
