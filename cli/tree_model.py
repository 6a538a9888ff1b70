"""What the live tree shows, built from the replay engine's items. No rendering here (no rich).

``TreeState.feed(items)`` keeps, in stream order, one :class:`Segment` per segment (the segment of a
:class:`~streamtool.core.pipeline.segment_log.SegmentLog`: its content, metadata merged from START
and END; and the errors that concern it) and one :class:`Note` per error or quirk where it happened;
invocations are collected apart (the tree shows them at the end). ``clip`` cuts long content to a
number of lines and of characters per line, saying what it cut. All work per item is O(1) amortized:
content is kept in blocks, joined when read.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal, NamedTuple

from streamtool.core.model import Quirk, SegmentEvent, StreamError, ToolInvocation
from streamtool.core.model.vocabulary import ErrorKind, SegmentEventType, SegmentType
from streamtool.core.pipeline.segment_log import Segment as LogSegment
from streamtool.core.pipeline.segment_log import SegmentLog

_MISSING: Any = object()


class Segment:
    """One segment as the tree shows it: a segment of the replay's log (kind, merged metadata,
    content, whether it has ended) and what the tree adds (its errors, its invocation)."""

    __slots__ = (
        "source",
        "errors",
        "invocation",
        "_newlines",
        "_counted",
        "_pretty",
        "_pretty_lines",
    )

    def __init__(
        self,
        seg_id: str,
        kind: SegmentType,
        meta: dict[str, Any] | None,
        source: LogSegment | None = None,
    ) -> None:
        # a segment of a log, or one of its own (filled with append)
        self.source = source if source is not None else LogSegment(kind, seg_id, meta)
        self.errors: list[StreamError] = []
        self.invocation: ToolInvocation | None = None
        self._newlines = 0
        self._counted = 0  # characters whose newlines are counted in _newlines
        self._pretty: str | None = None
        self._pretty_lines = 0

    def append(self, delta: str) -> None:
        self.source.append(delta)

    @property
    def id(self) -> str:
        return self.source.id

    @property
    def kind(self) -> SegmentType:
        return self.source.type

    @property
    def meta(self) -> dict[str, Any]:
        return self.source.merged_metadata()

    @property
    def closed(self) -> bool:
        return self.source.ended

    @property
    def chars(self) -> int:
        return self.source.chars

    @property
    def newlines(self) -> int:
        """The content's newlines (counted in what came since the last time asked)."""
        source = self.source
        if self._counted < source.chars:
            self._newlines += source.tail(source.chars - self._counted).count("\n")
            self._counted = source.chars
        return self._newlines

    @property
    def ends_with_newline(self) -> bool:
        return self.source.tail(1) == "\n"

    @property
    def text(self) -> str:
        return self.source.text

    def tail(self, max_chars: int) -> str:
        """The last ``max_chars`` characters of the content, without joining all of it."""
        return self.source.tail(max_chars)

    @property
    def lines(self) -> int:
        """Number of lines of the content (a final line without a newline counts)."""
        if not self.chars:
            return 0
        return self.newlines + (0 if self.ends_with_newline else 1)

    @property
    def name(self) -> str:
        name = self.meta.get("tool_name")
        if not name and self.invocation is not None:
            name = self.invocation.name
        return str(name or "")

    @property
    def path(self) -> str | None:
        path = self.meta.get("path")
        if not path and self.invocation is not None and isinstance(self.invocation.arguments, dict):
            path = self.invocation.arguments.get("path")
        return str(path) if path else None

    @property
    def problem(self) -> str | None:
        """``incomplete`` / ``unclosed`` when the segment ended without being finished."""
        if self.meta.get("incomplete"):
            return "incomplete"
        if self.meta.get("unclosed"):
            return "unclosed"
        return None

    def arguments(self) -> Any:
        """The parsed arguments of a finished tool call (``None``: they do not parse), or
        ``_MISSING`` while it is unfinished or they are not known."""
        if not self.closed:
            return _MISSING
        if "arguments" in self.meta:
            return self.meta["arguments"]
        if self.invocation is not None:
            return self.invocation.arguments
        return _MISSING

    def pretty_arguments(self) -> str | None:
        """The finished call's arguments as indented JSON (``None`` while unknown or unparsed)."""
        if self._pretty is None:
            args = self.arguments()
            if args is _MISSING or args is None:
                return None
            self._pretty = json.dumps(args, ensure_ascii=False, indent=2)
            self._pretty_lines = self._pretty.count("\n") + 1
        return self._pretty

    @property
    def pretty_lines(self) -> int:
        return self._pretty_lines if self.pretty_arguments() is not None else 0

    @property
    def raw_arguments(self) -> str | None:
        raw = self.meta.get("raw_arguments")
        if raw is None and self.invocation is not None:
            raw = self.invocation.raw_arguments
        return None if raw is None else str(raw)


class Note(NamedTuple):
    """An error or a quirk, shown where it happened in the stream."""

    kind: Literal["error", "quirk"]
    name: str
    message: str
    detail: Any = None


Node = Segment | Note


class Stats(NamedTuple):
    """What the root line and the footer show, read off the engine."""

    source: str = ""
    provider: str | None = None
    converter: str | None = None
    parser: str = ""
    model: str | None = None
    chunks: int = 0
    bytes: int = 0
    sse_events: int = 0
    comments: int = 0
    now: float | None = None
    duration: float | None = None
    ttft: float | None = None
    usage: dict[str, int] | None = None
    finish_reason: str | None = None
    finish_class: str | None = None  # known once the replay has finished
    finished: bool = False
    end_reason: str | None = None
    status: int | None = None  # the recorded HTTP status
    imported: str | None = None  # an imported recording: where from (its timing is unknown)

    @classmethod
    def of(cls, engine: Any) -> Stats:
        end = getattr(engine, "end", None)
        return cls(
            source=engine.source,
            provider=engine.header.provider,
            converter=engine.converter_name,
            parser=engine.parser,
            model=engine.model,
            chunks=engine.chunks,
            bytes=engine.bytes,
            sse_events=engine.sse_events,
            comments=engine.comments,
            now=engine.now,
            duration=engine.last_t,
            ttft=engine.ttft,
            usage=engine.usage,
            finish_reason=engine.finish_reason,
            finish_class=engine.finish_class() if engine.finished else None,
            finished=engine.finished,
            end_reason=None if end is None else end.reason,
            status=_status(engine.header.response),
            imported=imported_line(engine.header.extra.get("imported")),
        )


def imported_line(imported: Any) -> str | None:
    """What the tree says of an imported recording: where it came from, and what it lacks."""
    if not isinstance(imported, dict):
        return None
    lacks = (
        "timed by the archive, each message"
        if imported.get("timing") == "archive"
        else "reads and timing unknown"
    )
    where = f"{imported.get('from')} {imported.get('file')}, {imported.get('entry')}"
    return f"imported from {where}: {lacks}"


def _status(response: Any) -> int | None:
    status = response.get("status") if isinstance(response, dict) else None
    return status if isinstance(status, int) else None


class TreeState:
    """The tree's model: nodes in stream order, invocations, counters.

    The segments are those of the engine's :class:`~streamtool.core.pipeline.segment_log.SegmentLog`
    (``log``: the engine has added the items' segment events to it before they are fed here; a
    live tree is drawn on another thread, so the engine is fed under the sink's lock), or, without
    one, of a log of the tree's own, fed the items' segment events.
    """

    def __init__(self, log: SegmentLog | None = None) -> None:
        self.nodes: list[Node] = []
        self.segments: dict[str, Segment] = {}
        self.invocations: list[ToolInvocation] = []
        self.errors = 0
        self.quirks = 0
        self.provider_errors = 0
        self.http_end_errors = 0  # "the recording ended: error (HTTP 429: ...)"
        self.interrupted = False
        self.view_cache: dict[Any, Any] = {}  # what a view computed once and draws every frame
        # told the path of every file whose code the tree will show, when it is learnt
        self.on_path: Callable[[str], None] | None = None
        self._own = log is None  # the tree adds the events itself
        self.log = SegmentLog() if log is None else log
        self._taken = 0  # the log's segments the tree has a node for

    def use(self, log: SegmentLog | None) -> None:
        """Read the engine's log from now on (before anything was fed; else nothing changes)."""
        if log is not None and self._own and self.log.cursor == 0 and not self.nodes:
            self.log = log
            self._own = False

    @property
    def generated_chars(self) -> int:
        """Text, reasoning and tool content so far (a live rate)."""
        return self.log.chars

    def feed(self, items: list[Any]) -> None:
        segments = self.segments
        log = self.log
        add = log.add if self._own else None
        start = SegmentEventType.START
        for item in items:
            if type(item) is SegmentEvent:
                if add is not None:
                    add(item)
                if item.event_type is start:  # the log's next segment
                    source = log.segments[self._taken]
                    self._taken += 1
                    node = Segment(source.id, source.type, None, source)
                    segments[item.segment_id] = node
                    self.nodes.append(node)
                    if item.metadata:
                        self._learnt(node)
                elif item.metadata:  # what the segment learnt (a file call's path), or its END
                    shown = segments.get(item.segment_id)
                    if shown is not None:
                        self._learnt(shown)
            elif type(item) is ToolInvocation:
                self.invocations.append(item)
                seg = segments.get(item.id)
                if seg is not None:
                    seg.invocation = item
            elif type(item) is StreamError:
                self.errors += 1
                seg = segments.get(item.detail) if isinstance(item.detail, str) else None
                if item.kind == ErrorKind.SEGMENT and seg is not None:
                    seg.errors.append(item)
                else:
                    if item.kind == ErrorKind.PROVIDER_ERROR:
                        self.provider_errors += 1
                    elif item.kind == ErrorKind.RECORDING_ERROR and str(item.detail).startswith(
                        "HTTP "
                    ):
                        self.http_end_errors += 1
                    self.nodes.append(Note("error", item.kind, item.message, item.detail))
            elif type(item) is Quirk:
                self.quirks += 1
                self.nodes.append(Note("quirk", item.id, item.detail))

    def _learnt(self, seg: Segment) -> None:
        """``seg``'s metadata changed: tell ``on_path`` a file's path seen for the first time."""
        if self.on_path is not None and seg.kind is SegmentType.WRITE_FILE:
            path = seg.meta.get("path")
            if path:
                self.on_path(str(path))


# -- cutting long content ------------------------------------------------------------------------
Keep = Literal["head", "tail", "both"]


class Part:
    """A kept run of whole lines; ``first_line`` is its 1-based line number in the content."""

    __slots__ = ("text", "first_line")

    def __init__(self, text: str, first_line: int) -> None:
        self.text = text
        self.first_line = first_line

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Part):
            return NotImplemented
        return (self.text, self.first_line) == (other.text, other.first_line)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"Part(text={self.text!r}, first_line={self.first_line!r})"


class Cut(NamedTuple):
    """``lines`` lines left out here."""

    lines: int


def clip(
    text: str,
    max_lines: int | None,
    keep: Keep = "head",
    max_line_chars: int | None = None,
) -> list[Part | Cut]:
    """Cut ``text`` to at most ``max_lines`` lines (keeping the head, the tail or both ends).

    Lines longer than ``max_line_chars`` are shortened in place with a marker saying how many
    characters went (their end is kept in ``tail`` mode, their start otherwise). The work is
    proportional to what is kept, plus one C-speed count of the newlines.
    """
    if not text:
        return []
    body = text[:-1] if text.endswith("\n") else text
    total = body.count("\n") + 1
    if max_lines is None or total <= max_lines:
        out: list[Part | Cut] = [Part(body, 1)]
    elif max_lines <= 0:
        out = [Cut(total)]
    elif keep == "head":
        out = [Part(body[: _nth_newline(body, max_lines)], 1), Cut(total - max_lines)]
    elif keep == "tail":
        start = _nth_newline_from_end(body, max_lines) + 1
        out = [Cut(total - max_lines), Part(body[start:], total - max_lines + 1)]
    else:
        head = (max_lines + 1) // 2
        tail = max_lines - head
        out = [Part(body[: _nth_newline(body, head)], 1), Cut(total - max_lines)]
        if tail:
            start = _nth_newline_from_end(body, tail) + 1
            out.append(Part(body[start:], total - tail + 1))
    if max_line_chars is not None:
        for piece in out:
            if isinstance(piece, Part):
                piece.text = cut_long_lines(piece.text, max_line_chars, keep_end=keep == "tail")
    return out


def _nth_newline(text: str, n: int) -> int:
    """Index of the ``n``-th newline (1-based) of ``text``."""
    pos = -1
    for _ in range(n):
        pos = text.find("\n", pos + 1)
    return pos


def _nth_newline_from_end(text: str, n: int) -> int:
    pos = len(text)
    for _ in range(n):
        pos = text.rfind("\n", 0, pos)
    return pos


def cut_long_lines(text: str, max_chars: int, *, keep_end: bool = False) -> str:
    """Shorten every line longer than ``max_chars`` with a marker: keeping its start, the marker
    gives the characters cut; keeping its end (a growing stream's tail), it is a bare ``…``."""
    if len(text) <= max_chars:
        return text
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if len(line) > max_chars:
            cut = len(line) - max_chars
            if keep_end:
                lines[i] = "… " + line[-max_chars:]
            else:
                lines[i] = line[:max_chars] + f" … (+{cut:,} chars)"
    return "\n".join(lines)
