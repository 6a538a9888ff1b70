"""``api_tool_call``: tool calls from the provider's structured ``tool_calls``.

Each call becomes a ``tool_call`` segment whose id is the provider's call id; argument fragments
stream as CONTENT; the END metadata carries the parsed ``arguments``. Arguments that do not parse
give ``arguments: None`` with the raw text kept and an ``error`` (never ``{}``). A call the
provider never closed (the stream was cut) ends ``unclosed``; its arguments count only when they
form a whole JSON value, so a cut-off call never runs with repaired arguments.

File tools (``file_tools``, by default ``write_file`` -> ``content`` and ``patch_file`` ->
``patch``) become ``write_file`` / ``patch_file`` segments instead: their CONTENT is the decoded
text of that one string argument as it streams (see
:mod:`streamtool.core.wire.json_fields`), with the
``__START_CONTENT__`` / ``__END_CONTENT__`` (``_PATCH_``) markers stripped; the END metadata
carries ``path`` and the whole parsed ``arguments`` (the streamed field as the segment shows it).

The path does not wait for the END: as soon as a top-level string argument of a file call is
complete (``path`` first among them), the CONTENT event of that fragment carries metadata
``{"path": ..., "known_arguments": {every string argument complete so far but the file field}}``
(its delta is empty when the fragment brought no file text). START metadata has the path only
when the first fragment already completed it. Sinks that draw the call (the tree) merge this
metadata; the transcript, the adapter and the emitters read the END metadata as before, so the
golden transcripts do not depend on where the fragments were cut.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from ..model import (
    ArgumentsSource,
    ChunkResponse,
    SegmentEvent,
    SegmentEventType,
    SegmentType,
    ToolCallDelta,
)
from ..model.quirk_ids import QuirkId
from ..model.textbuf import TextBuffer, TextPieces
from ..pipeline.adapter import TextArgumentParser
from ..wire import fastjson
from ..wire.json_fields import JsonStringFields, MarkerStripper, strip_markers
from .base import SegmentCallback, StreamingResponseHandler
from .long_arguments import NOT_HERE, parse_blocks

_CONTENT = SegmentEventType.CONTENT
_T = TypeVar("_T")
# with ``string_pieces``: argument text from this long on is parsed from its blocks
PIECES_FROM = 1 << 18
DEFAULT_FILE_TOOLS: dict[str, str] = {"write_file": "content", "patch_file": "patch"}
PATH_FIELD = "path"
# CONTENT metadata of a file segment: the top-level string arguments complete so far
KNOWN_ARGUMENTS = "known_arguments"
MARKERS: dict[SegmentType, tuple[str, str]] = {
    SegmentType.WRITE_FILE: ("__START_CONTENT__", "__END_CONTENT__"),
    SegmentType.PATCH_FILE: ("__START_PATCH__", "__END_PATCH__"),
}


class FileToolsError(ValueError):
    """A ``--file-tools`` value that cannot be used."""


def parse_file_tools(spec: str) -> dict[str, str]:
    """``"write_file=content,patch_file=patch"`` -> ``{"write_file": "content", ...}``.

    An empty value (or ``none``) turns file streaming off: every call stays a ``tool_call``.
    """
    text = spec.strip()
    if not text or text.lower() == "none":
        return {}
    out: dict[str, str] = {}
    for item in text.split(","):
        name, eq, field = (part.strip() for part in item.partition("="))
        if not eq or not name or not field:
            raise FileToolsError(
                f"--file-tools: {item.strip()!r} is not TOOL=FIELD "
                "(e.g. write_file=content,patch_file=patch)"
            )
        if name in out:
            raise FileToolsError(f"--file-tools: tool {name!r} is named twice")
        if field == PATH_FIELD:
            raise FileToolsError(f"--file-tools: {name}={field}: {PATH_FIELD!r} is the path field")
        out[name] = field
    return out


def file_segment_type(tool_name: str, field: str) -> SegmentType:
    """``patch_file`` for a ``patch`` field or a tool whose name says patch, else ``write_file``."""
    if field == "patch" or "patch" in tool_name.lower():
        return SegmentType.PATCH_FILE
    return SegmentType.WRITE_FILE


class _ToolState:
    __slots__ = ("segment_id", "name", "source", "parts", "metadata", "late", "done")

    def __init__(
        self,
        segment_id: str,
        name: str,
        metadata: dict[str, Any] | None,
        source: ArgumentsSource | None,
    ) -> None:
        self.segment_id = segment_id
        self.name = name
        # the whole argument text is read at the end from the tracker that keeps it (the
        # source); the handler keeps the fragments itself only for deltas that come without one
        self.source = source
        self.parts: TextBuffer | None = None if source is not None else TextBuffer()
        self.metadata = metadata  # the START's, until the START is emitted (then None)
        self.late: dict[str, Any] | None = None  # metadata of later deltas (a server tool's result)
        self.done = False


# what is kept of a call the provider closed: that it is finished (later deltas are ignored);
# thousands of short calls do not each keep their state
_FINISHED = _ToolState("", "", None, None)
_FINISHED.done = True
_FINISHED.parts = None


class _FileState(_ToolState):
    __slots__ = ("field", "kind", "extractor", "stripper", "parts_of", "known", "news", "streamed")

    def __init__(
        self,
        segment_id: str,
        name: str,
        metadata: dict[str, Any],
        source: ArgumentsSource | None,
        field: str,
        kind: SegmentType,
    ) -> None:
        super().__init__(segment_id, name, metadata, source)
        self.field = field
        self.kind = kind
        self.extractor = JsonStringFields((field, PATH_FIELD), every_string=True)
        self.stripper = MarkerStripper(*MARKERS[kind])
        self.parts_of: dict[str, list[str]] = {}  # other string arguments still streaming
        self.known: dict[str, str] = {}  # other string arguments complete so far (path...)
        self.news = False  # ``known`` changed since the last event that carried it
        self.streamed = False  # some content reached the segment

    @property
    def path(self) -> str | None:
        return self.known.get(PATH_FIELD)


class ApiToolCallStreamingResponseHandler(StreamingResponseHandler):
    name = "api_tool_call"

    def __init__(
        self,
        on_segment_event: SegmentCallback | None = None,
        segment_id_prefix: str = "",
        text_argument_parser: TextArgumentParser | None = None,
        file_tools: Mapping[str, str] | None = None,
        keep_events: bool = False,
    ) -> None:
        self.file_tools: dict[str, str] = dict(
            DEFAULT_FILE_TOOLS if file_tools is None else file_tools
        )
        super().__init__(on_segment_event, segment_id_prefix, text_argument_parser, keep_events)

    def reset(self) -> None:
        super().reset()
        self._tools: dict[int, _ToolState] = {}

    def feed(self, chunk: ChunkResponse) -> list[SegmentEvent]:
        self._check_open()
        out: list[SegmentEvent] = []
        self._prose(chunk, out)
        if chunk.tool_calls:
            for delta in chunk.tool_calls:
                self._tool_delta(delta, out)
        return out

    def _tool_delta(self, delta: ToolCallDelta, out: list[SegmentEvent]) -> None:
        state = self._tools.get(delta.index)
        if state is None:
            self._close_prose(out)
            segment_id = delta.call_id or f"{self._prefix}call_{delta.index}"
            metadata: dict[str, Any] = {"tool_name": delta.name or ""}
            if delta.metadata:
                metadata.update(delta.metadata)
            name = delta.name or ""
            field = self.file_tools.get(name)
            if field is not None:
                kind = file_segment_type(name, field)
                file_state = _FileState(
                    segment_id, name, metadata, delta.arguments_source, field, kind
                )
                self._tools[delta.index] = file_state
                self._file_delta(file_state, delta, out, first=True)
                return
            state = _ToolState(segment_id, name, None, delta.arguments_source)
            self._tools[delta.index] = state
            self._emit(SegmentEvent.start(segment_id, SegmentType.TOOL_CALL, metadata), out)
            self._adapter.arguments_at_end(segment_id)
        elif state.done:
            return
        else:
            if delta.metadata:  # metadata after the start (a server-side tool's result)
                state.late = {**(state.late or {}), **delta.metadata}
            if type(state) is _FileState:
                self._file_delta(state, delta, out, first=False)
                return
        if delta.arguments_delta:
            if state.parts is not None:
                state.parts.append(delta.arguments_delta)
            self._emit(SegmentEvent.content(state.segment_id, delta.arguments_delta), out)
        if delta.is_complete:
            self._end_tool(state, out, closed=True)
            self._tools[delta.index] = _FINISHED

    @staticmethod
    def _raw(state: _ToolState) -> str:
        """The call's whole argument text, at its end (nothing is kept for it afterwards)."""
        return _taken(state, lambda source: source.arguments, TextBuffer.text)

    @staticmethod
    def _blocks(state: _ToolState) -> list[str]:
        """The call's whole argument text as the blocks it is kept in, at its end (the list
        returned is then their only holder, unless the tracker keeps finished calls' text)."""
        return _taken(state, lambda source: source.argument_blocks(), TextBuffer.blocks)

    def _parsed(self, state: _ToolState) -> tuple[str | None, Any, str | None]:
        """``(raw, arguments, error)`` of a finished call; with :attr:`string_pieces`, a long
        string in long arguments is ``TextPieces`` and ``raw`` is None (it was not joined)."""
        if not self.string_pieces:
            raw = self._raw(state)
            return (raw, *parse_arguments(raw))
        blocks = self._blocks(state)
        # text in one block is held twice either way (the block, then the value)
        if len(blocks) > 1 and sum(map(len, blocks)) >= PIECES_FROM:
            arguments = parse_blocks(blocks, parse_arguments)
            if arguments is not NOT_HERE:
                return None, arguments, None
        raw = "".join(blocks)
        blocks.clear()
        return (raw, *parse_arguments(raw))

    def _end_tool(self, state: _ToolState, out: list[SegmentEvent], *, closed: bool) -> None:
        raw, arguments, error = self._parsed(state)
        no_args = error is None and arguments == {} and raw is not None and not raw.strip()
        extra = {"no_arguments": True} if no_args else None
        metadata = self._end_metadata(state, raw, arguments, error, closed=closed, extra=extra)
        self._emit(SegmentEvent.end(state.segment_id, metadata), out)

    @staticmethod
    def _end_metadata(
        state: _ToolState,
        raw: str | None,
        arguments: Any,
        error: str | None,
        *,
        closed: bool,
        extra: dict[str, Any] | None = None,
        error_note: str = "",
    ) -> dict[str, Any]:
        """A call's END metadata: its parsed arguments, or the raw text and why it did not parse."""
        metadata: dict[str, Any] = dict(state.late) if state.late else {}
        metadata["tool_name"] = state.name
        if extra:
            metadata.update(extra)
        metadata["arguments"] = arguments
        if not closed:
            # the provider never closed the call (the converter reports the truncation); the
            # arguments are kept only if they form a whole JSON value: nothing is repaired
            metadata["unclosed"] = True
        if error is not None:
            metadata["raw_arguments"] = raw
            name = state.name or "unnamed"
            metadata["error"] = f"tool call {state.segment_id} ({name}): {error}{error_note}"
        return metadata

    def _finalize_segments(self, out: list[SegmentEvent]) -> None:
        for state in self._tools.values():
            if not state.done:
                if type(state) is _FileState:
                    self._end_file(state, out, closed=False)
                else:
                    self._end_tool(state, out, closed=False)

    # -- file tools ------------------------------------------------------------------------
    def _file_delta(
        self, state: _FileState, delta: ToolCallDelta, out: list[SegmentEvent], *, first: bool
    ) -> None:
        text = ""
        fragment = delta.arguments_delta
        if fragment:
            if state.parts is not None:
                state.parts.append(fragment)
            pieces = state.extractor.feed(fragment)
            if pieces:
                name, text, closed = pieces[0]
                if len(pieces) == 1 and name == state.field and not closed:
                    if state.stripper.mode != 2:  # plain text needs no stripping
                        text = state.stripper.feed(text)
                else:
                    text = self._file_pieces(state, pieces)
        if first:
            metadata = state.metadata or {}
            state.metadata = None  # the START's own: an open call keeps no copy
            if state.path is not None:
                metadata[PATH_FIELD] = state.path
            self._emit(SegmentEvent.start(state.segment_id, state.kind, metadata), out)
            self._adapter.arguments_at_end(state.segment_id)
        if state.news and (text or not first or len(state.known) > (state.path is not None)):
            # a string argument (the path...) just completed: the sinks learn it now, on this
            # CONTENT event (its delta may be empty), not only at the END; a path the START
            # already carried needs no event of its own
            state.news = False
            update: dict[str, Any] = {KNOWN_ARGUMENTS: dict(state.known)}
            if state.path is not None:
                update[PATH_FIELD] = state.path
            if text:
                state.streamed = True
            self._emit(SegmentEvent(_CONTENT, state.segment_id, None, text, update), out)
        else:
            state.news = False
            if text:
                state.streamed = True
                self._emit(SegmentEvent(_CONTENT, state.segment_id, None, text, None), out)
        if delta.is_complete:
            self._end_file(state, out, closed=True)
            self._tools[delta.index] = _FINISHED

    def _file_pieces(self, state: _FileState, pieces: list[tuple[str, str, bool]]) -> str:
        """Route decoded pieces: the file field through the marker stripper, the path aside."""
        texts: list[str] = []
        field = state.field
        for name, text, closed in pieces:
            if name == field:
                stripper = state.stripper
                if stripper.finished:
                    # the field again (a duplicate key): json.loads keeps the last value
                    self.note_quirk(
                        QuirkId.TOOL_ARGS_DUPLICATE_KEY,
                        f"call {state.segment_id}: the {field!r} argument appears twice",
                    )
                    stripper = state.stripper = MarkerStripper(*MARKERS[state.kind])
                if text:
                    texts.append(stripper.feed(text))
                if closed:
                    texts.append(stripper.finish(closed=True))
            elif closed:
                parts = state.parts_of.pop(name, None)
                state.known[name] = "".join(parts) + text if parts else text
                state.news = True
            else:
                state.parts_of.setdefault(name, []).append(text)
        return "".join(texts)

    def _end_file(self, state: _FileState, out: list[SegmentEvent], *, closed: bool) -> None:
        tail = "" if state.stripper.finished else state.stripper.finish(closed=False)
        raw, arguments, error = self._parsed(state)
        path = state.path
        if error is None and isinstance(arguments, dict):
            if type(arguments.get(state.field)) is TextPieces:
                if state.extractor.seen.get(state.field):
                    _strip_pieces(arguments, state.field, *MARKERS[state.kind])
                else:  # not streamed: the tail below needs it whole
                    arguments[state.field] = arguments[state.field].joined()
            value = arguments.get(state.field)
            if isinstance(value, str):
                stripped = strip_markers(value, *MARKERS[state.kind])
                if not state.extractor.seen.get(state.field):
                    # the field was not streamed (arguments double-encoded as a JSON string)
                    tail += stripped
                if stripped != value:
                    arguments = dict(arguments)
                    arguments[state.field] = stripped
            if isinstance(arguments.get(PATH_FIELD), str):
                path = arguments[PATH_FIELD]
        if tail:
            state.streamed = True
            self._emit(SegmentEvent.content(state.segment_id, tail), out)
        shown = "; the file content shown is what arrived" if state.streamed else ""
        extra = {PATH_FIELD: path} if path is not None else None
        note = f"{shown}; the invocation keeps the raw arguments"
        metadata = self._end_metadata(
            state, raw, arguments, error, closed=closed, extra=extra, error_note=note
        )
        self._emit(SegmentEvent.end(state.segment_id, metadata), out)


def _strip_pieces(arguments: dict[str, Any], field: str, start: str, end: str) -> None:
    """:func:`strip_markers` of the ``TextPieces`` of ``arguments[field]``, in place and in
    pieces (each let go once read: the text is not held twice when the markers are there)."""
    stripper = MarkerStripper(start, end)
    rest = list(arguments[field])
    arguments[field] = None  # the key keeps its place
    rest.reverse()
    out: list[str] = []
    while rest:
        text = stripper.feed(rest.pop())
        if text:
            out.append(text)
    tail = stripper.finish(closed=True)
    if tail:
        out.append(tail)
    arguments[field] = TextPieces(out)


def _taken(
    state: _ToolState,
    from_source: Callable[[ArgumentsSource], _T],
    from_parts: Callable[[TextBuffer], _T],
) -> _T:
    """The call's argument text at its end, read from the tracker's call that keeps it (the
    source), else from the fragments kept here; neither keeps it for the call afterwards."""
    state.done = True
    source, parts = state.source, state.parts
    state.source = state.parts = None
    if source is not None:
        taken = from_source(source)
        source.release_arguments()
        return taken
    assert parts is not None
    return from_parts(parts)


def parse_arguments(raw: str) -> tuple[Any, str | None]:
    """Parse a tool call's argument text: ``(arguments, None)`` or ``(None, reason)``.

    Empty text means a tool without parameters: ``{}``. A JSON string holding a JSON object
    (double-encoded arguments) is decoded once more.
    """
    text = raw.strip()
    if not text:
        return {}, None
    try:
        value = fastjson.loads(text)
    except fastjson.NestingError:
        return None, "arguments are nested too deeply to parse"
    except ValueError as exc:
        return None, f"arguments are not valid JSON ({exc})"
    if isinstance(value, str):
        inner = value.strip()
        if inner[:1] == "{":
            try:
                return fastjson.loads(inner), None
            except (ValueError, RecursionError):
                pass
    return value, None
