"""The replay engine: recording chunks in, segment events / invocations / notes out. Sans-IO.

It wires the pipeline (decoder -> converter -> handler -> adapter, docs/recording-format.md),
picks the converter (header, then the first events, unless one is named), keeps the statistics
sinks show (chunks, bytes, events, timings, usage, finish reason, errors, quirks) and builds the
summary object that ``replay --format json`` prints.

Memory follows what the outputs hold, not the length of the stream: segment events are handed to the
caller as they come and not kept; the engine keeps only what its results need from them (the text
and the reasoning, citations, whether a text was a refusal). The segments (every segment's type,
content and metadata: :class:`~streamtool.core.pipeline.segment_log.SegmentLog`, the one fold of the
segment events) are kept with ``transcript=True``, or in the log given as ``segments`` (one that
keeps no content, for a reader of sizes only); readers read ``engine.segments`` (what changed since
their last look: ``engine.segments.changes(cursor)``) instead of folding the events again. The
handler's whole event log is kept with ``keep_events=True``. With ``string_pieces=True`` (for a
caller that only writes the summary with ``iter_json``), a long string in a tool call's arguments is
kept in the pieces it was decoded in (``TextPieces``), never joined: a call that writes a large file
is held once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypedDict, cast

from ..converters import (
    converter_names,
    detect_from_event,
    detect_from_header,
    is_converter,
    make_converter,
)
from ..converters.base import Converter
from ..handlers import make_handler
from ..model import ChunkResponse, Quirk, SegmentEvent, StreamError, ToolInvocation
from ..model.finish import finish_class
from ..model.records import Chunk, Control, End, Header, Message
from ..model.textbuf import TextBuffer, TextPieces
from ..model.usage import merge_latest
from ..model.vocabulary import ErrorKind, SegmentEventType, SegmentType
from ..pipeline.coalesce import join_argument_runs
from ..pipeline.segment_log import SegmentLog
from ..wire import fastjson
from ..wire.framing import open_decoder
from ..wire.sse import SSEEvent, SSEItem
from .wire_watch import WireWatch, offered_tools, tool_call_faults

if TYPE_CHECKING:
    from .session import SessionLog

Item = SegmentEvent | ToolInvocation | Quirk | StreamError
_CONTENT = SegmentEventType.CONTENT
_START = SegmentEventType.START
_TEXT = SegmentType.TEXT
_REASONING = SegmentType.REASONING
DETECT_LIMIT = 64  # SSE items to look at before giving up on auto-detection
BATCH_CHARS = 64 * 1024  # text of the reads that feed_chunks feeds at once


class DetectionError(ValueError):
    """The stream does not say which wire API it speaks."""


class EngineOptions(TypedDict, total=False):
    """What a stage built on an engine (the inspector) passes on to it: the engine's keyword
    arguments of the same names, their defaults the engine's."""

    converter: str
    parser: str
    source: str
    handler_options: dict[str, Any] | None


class ReplayEngine:
    def __init__(
        self,
        header: Header | None = None,
        *,
        converter: str = "auto",
        parser: str = "api_tool_call",
        source: str = "",
        handler_options: dict[str, Any] | None = None,
        transcript: bool = False,
        keep_events: bool = False,
        string_pieces: bool = False,
        segments: SegmentLog | None = None,
    ) -> None:
        self.header = header or Header(raw_body=True)
        self.source = source
        self.parser = parser
        options = dict(handler_options or {})
        if keep_events:
            options["keep_events"] = True
        self.handler = make_handler(parser, **options)
        # only the summary is wanted, written by iter_json: a long string argument stays in
        # pieces (see StreamingResponseHandler.string_pieces)
        self.handler.string_pieces = string_pieces
        self.converter_name: str | None = None
        self.converter: Converter | None = None
        if converter != "auto":
            self._use_converter(converter)
        else:
            detected = detect_from_header(self.header)
            if detected is not None:
                self._use_converter(detected, detected_by="header")
        self.decoder: Any = None
        self._framing: Any = None  # the decoder's take_errors, when it has one
        self._binary = False  # bytes that are not text were seen while detecting the API
        self._head = b""  # the stream's first bytes: what kind of binary data it is
        self._pending: list[SSEItem] = []
        # statistics and stream-level results
        self.chunks = 0
        self.bytes = 0
        self.sse_events = 0
        self.comments = 0
        self.first_t: float | None = None
        self.last_t: float | None = None
        self.ttft: float | None = None
        self.now: float | None = None
        self.usage: dict[str, int] | None = None
        self.finish_reason: str | None = None
        self.model: str | None = self.header.model
        self.errors: list[StreamError] = []
        self.quirks: list[Quirk] = []
        self._quirk_ids: set[str] = set()
        self._server_side: set[str] = set()  # segments of tools the provider runs itself
        self.wire = WireWatch()  # how the bytes arrived (read boundaries, framing)
        self._offered: frozenset[str] | None = offered_tools(self.header.request.get("body"))
        self._n_invocations = 0
        self.end: End | None = None
        self.finished = False
        # converters take runs of hot events as one chunk (Converter.feed_many): only when
        # nobody sees the events one by one (feed_chunks)
        self._runs = False
        # what the results need from the segment events, kept as they pass
        self.segment_events = 0
        self._text = TextBuffer()
        self._reasoning = TextBuffer()
        self._refusal_text = TextBuffer()  # text segments that are a refusal, kept apart
        self._content_to: dict[str, TextBuffer | None] = {}  # segment id -> its text's buffer
        self._cited: list[tuple[str, list[Any]]] = []  # (segment id, END metadata citations)
        self._refusal = False
        if segments is None and transcript:
            segments = SegmentLog()
        self.segments: SegmentLog | None = segments
        # a WebSocket session's log (feed_message), and the client's messages that came while
        # the API was not known yet
        self.session: SessionLog | None = None
        self._client_pending: list[Any] = []

    # -- setup -----------------------------------------------------------------------------
    def _use_converter(self, name: str, detected_by: str | None = None) -> None:
        if not is_converter(name):
            how = f" (detected from the {detected_by})" if detected_by else ""
            raise DetectionError(
                f"the stream speaks {name}{how}, but no converter for it is available; "
                f"valid: {', '.join(converter_names())}"
            )
        self.converter = make_converter(name)
        self.converter.use_header(self.header)
        self.converter_name = name

    # -- input -----------------------------------------------------------------------------
    def feed_chunk(self, chunk: Chunk) -> list[Item]:
        """Feed one recorded network read; returns what it produced, in order."""
        data = chunk.data
        self.chunks += 1
        if isinstance(data, bytes) or data.isascii():
            self.bytes += len(data)
        else:
            self.bytes += len(data.encode("utf-8"))
        t = chunk.t
        if t is not None:
            if self.first_t is None:
                self.first_t = t
            self.last_t = t
        self.now = t
        self.wire.read(data)
        if self.decoder is None:
            self.decoder = open_decoder(data)
            # a decoder that reports framing errors (AWS event-stream): their taker
            self._framing = getattr(self.decoder, "take_errors", None)
        if self.converter is None and isinstance(data, bytes) and len(self._head) < 4:
            self._head += data[: 4 - len(self._head)]
        if self.converter is None and not self._binary and isinstance(data, bytes):
            # while the API is unknown: is this text at all? (said when no event is found)
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as exc:
                self._binary = exc.reason != "unexpected end of data"
            self._binary = self._binary or b"\x00" in data
        out: list[Item] = []
        self._items(self.decoder.feed(data), out)
        if self._framing is not None:
            self._framing_errors(out)
        return out

    def feed_message(self, record: Message | Control) -> list[Item]:
        """Feed one record of a WebSocket session (:attr:`Header.websocket`): a server's text
        message is one event for the converter, a client's message and a control frame are
        told to it beside the events (see :mod:`.session`). Returns what it produced."""
        session = self.session
        if session is None:
            from .session import SessionLog, session_outline  # a session's replay only

            session = self.session = SessionLog(outline=session_outline(self.header))
        t = record.t
        self.now = t
        if t is not None:
            if self.first_t is None:
                self.first_t = t
            self.last_t = t
        out: list[Item] = []
        converter = self.converter
        if type(record) is Control:
            session.control(record)
            if converter is not None:
                converter.now = t
                self._chunks(
                    converter.control(record.kind, record.direction, record.code, record.reason),
                    out,
                )
            return out
        assert type(record) is Message
        data = record.data
        self.chunks += 1
        self.bytes += len(data) if isinstance(data, bytes) else len(data.encode("utf-8"))
        obj: Any = None
        if isinstance(data, str):
            try:
                obj = fastjson.loads(data)
            except ValueError:
                obj = None
        session.message(record, obj)
        if record.direction == "client":
            if converter is None:
                self._client_pending.append(obj)
            else:
                self._chunks(converter.client_message(obj), out)
            return out
        if isinstance(data, bytes):
            return out  # a binary message is counted (the outline, the events), not read
        if converter is not None:
            converter.now = t
        self._items([SSEEvent(data)], out)
        if self._client_pending and self.converter is not None:
            pending, self._client_pending = self._client_pending, []
            for held in pending:
                self._chunks(self.converter.client_message(held), out)
        return out

    def feed_chunks(self, chunks: Iterable[Chunk], batch_chars: int = BATCH_CHARS) -> None:
        """Feed a whole recording's reads, many at a time, for a caller that reads only the
        finished replay (its summary, its transcript); :meth:`feed_batches` is the same replay
        for a caller that also wants the items. The caller then calls :meth:`finish`."""
        for _ in self.feed_batches(chunks, batch_chars):
            pass

    def feed_batches(
        self, chunks: Iterable[Chunk], batch_chars: int = BATCH_CHARS
    ) -> Iterator[tuple[float | None, list[Item]]]:
        """Feed a whole recording's reads, many at a time, yielding ``(t, items)`` for every
        batch that produced something (``t``: the time of its last read), for a caller that
        shows nothing as it plays read by read: a summary, or a tree drawn unpaced.

        Text reads are gathered up to about ``batch_chars`` characters and fed as one once the
        API is known and the first output has come (its time, ``ttft``, belongs to one read);
        the others are fed one by one. The converters take runs of their commonest events as
        one chunk (``Converter.feed_many``). What a replay means does not depend on where its
        reads were cut, so the summary, the transcript and the items taken together are those
        of feeding every read by itself: only the handler's events are fewer (a run of text or
        fragments is one CONTENT event, its deltas joined). The caller then calls
        :meth:`finish`."""
        return self.feed_block_batches((((chunk,), False) for chunk in chunks), batch_chars)

    def feed_block_batches(
        self,
        blocks: Iterable[tuple[Sequence[Chunk], bool]],
        batch_chars: int = BATCH_CHARS,
    ) -> Iterator[tuple[float | None, list[Item]]]:
        """:meth:`feed_batches` of reads that come in lists, ``(chunks, texts)``, ``texts``
        true when all of them are text (``Source.chunk_blocks``): such a list is gathered
        whole into the batch, the others read by read."""
        self._runs = True
        feed = self.feed_chunk
        feed_reads = self._feed_reads
        ready = False
        batch: list[Chunk] = []
        size = 0

        def flush() -> Iterator[tuple[float | None, list[Item]]]:
            nonlocal batch, size
            out = feed_reads(batch)
            batch = []
            size = 0
            if out:
                yield self.now, out

        for chunks, texts in blocks:
            if texts and ready:
                n = sum(map(len, [chunk.data for chunk in chunks]))
                if batch and size + n > batch_chars:
                    # a batch stays within batch_chars where it can (what it holds is copied)
                    yield from flush()
                batch += chunks
                size += n
                if size >= batch_chars:
                    yield from flush()
                continue
            for chunk in chunks:
                data = chunk.data
                if not ready:
                    ready = self.ttft is not None and self.converter is not None
                if ready and type(data) is str:
                    batch.append(chunk)
                    size += len(data)
                    if size >= batch_chars:
                        yield from flush()
                    continue
                if batch:
                    yield from flush()
                out = feed(chunk)
                if out:
                    yield chunk.t, out
        if batch:
            yield from flush()

    def _feed_reads(self, chunks: list[Chunk]) -> list[Item]:
        """Several text reads fed as one, after the first output (see :meth:`feed_batches`);
        the statistics count every read."""
        texts = cast("list[str]", [chunk.data for chunk in chunks])  # text reads only
        text = "".join(texts)
        self.wire.read_texts(texts, text)
        if text.isascii():
            nbytes = len(text)
        else:
            try:
                nbytes = len(text.encode("utf-8"))
            except UnicodeEncodeError:  # a lone surrogate: the error of the read that holds it
                nbytes = sum(len(data.encode("utf-8")) for data in texts)
        times = [chunk.t for chunk in chunks]
        t = times[-1]
        last_t = next((t for t in reversed(times) if t is not None), None)
        if last_t is not None:
            if self.first_t is None:
                self.first_t = next(t for t in times if t is not None)
            self.last_t = last_t
        self.chunks += len(chunks)
        self.bytes += nbytes
        self.now = t
        out: list[Item] = []
        self._items(self.decoder.feed(text), out)
        if self._framing is not None:
            self._framing_errors(out)
        return out

    def finish(self, end: End | None) -> list[Item]:
        """End of the recording (``end`` is ``None`` when it was cut off before its end record)."""
        if self.finished:
            return []
        self.finished = True
        self.end = end
        out: list[Item] = []
        if self.decoder is not None:
            self._items(self.decoder.finish(), out)
            if self._framing is not None:
                self._framing_errors(out)
        if self.converter is None:
            self._detect_now(final=True)
            self._drain_pending(out)
        if self.converter is not None:
            self._chunks(self.converter.finish(), out)
        self._events(self.handler.finalize(), out)
        self.wire.finish(
            self.decoder, self.chunks, self.sse_events + self.comments, self.converter_name
        )
        if end is None:
            self._error(
                StreamError(
                    ErrorKind.RECORDING_CUT_OFF, "the recording has no end record (cut off)"
                ),
                out,
            )
        elif end.reason != "complete":
            message = f"the recording ended: {end.reason}"
            if end.error:
                message += f" ({end.error})"
            self._error(StreamError(ErrorKind.recording(end.reason), message, end.error), out)
        if end is not None and end.t is not None:
            self.last_t = end.t if self.last_t is None else max(self.last_t, end.t)
        return out

    # -- pipeline --------------------------------------------------------------------------
    def _items(self, items: list[SSEItem], out: list[Item]) -> None:
        if not items:
            return
        converter = self.converter
        if converter is None:
            self._pending.extend(items)
            self._detect_now(final=False)
            if self.converter is None:
                return
            self._drain_pending(out)
            return
        if self._runs:
            comments = converter.comments
            batch = converter.feed_many(items)
            comments = converter.comments - comments  # every item not an event is a comment
            self.comments += comments
            self.sse_events += len(items) - comments
        else:
            # read by read, every event gives its own chunks (a sink that shows them, --format
            # jsonl, sees each one), but argument fragments of one read are joined below
            batch = []
            for item in items:
                if type(item) is SSEEvent:
                    self.sse_events += 1
                else:
                    self.comments += 1
                crs = converter.feed(item)
                if crs:
                    batch += crs
        if batch:
            # fragments that arrived in the same read reach the handler joined (same text)
            self._chunks(join_argument_runs(batch), out)

    def _framing_errors(self, out: list[Item]) -> None:
        """The framing errors the decoder met (a binary frame failing its CRC, cut off...)."""
        for kind, message, offset in self._framing():
            self._error(StreamError(ErrorKind(kind), message, {"offset": offset}), out)

    def _detect_now(self, final: bool) -> None:
        # every pending event asked of the built-in APIs before any of the plugins (whose
        # entry points are read only when the built-ins cannot tell)
        for plugins in (False, True):
            for item in self._pending:
                if type(item) is SSEEvent:
                    name = detect_from_event(item, plugins=plugins)
                    if name is not None:
                        self._use_converter(name, detected_by="first events")
                        return
        events = sum(1 for i in self._pending if type(i) is SSEEvent)
        if final or events >= DETECT_LIMIT:
            if not events:
                # no converter can read what is not there: --converter would not help
                if not self.bytes:
                    raise DetectionError("the stream is empty: there is nothing to replay")
                if self._pending:
                    raise DetectionError(
                        "the stream holds only SSE comments, no events: there is nothing to replay"
                    )
                if self._binary:
                    raise DetectionError(binary_text(self.bytes, self._head))
                raise DetectionError(
                    f"no server-sent events in its {self.bytes:,} bytes "
                    "(nor NDJSON, nor a JSON array): there is nothing to replay"
                )
            raise DetectionError(
                "cannot tell which API this stream speaks; pass --converter "
                f"({', '.join(converter_names())})"
            )

    def _drain_pending(self, out: list[Item]) -> None:
        pending, self._pending = self._pending, []
        if self.converter is not None and pending:
            self._items(pending, out)

    def _chunks(self, crs: list[ChunkResponse], out: list[Item]) -> None:
        handler = self.handler
        for cr in crs:
            if cr.usage:
                self.usage = merge_latest(self.usage, cr.usage)
            if cr.finish_reason is not None and self.finish_reason is None:
                self.finish_reason = cr.finish_reason
            if cr.model and self.model != cr.model:
                self.model = cr.model
            if cr.quirks:
                for q in cr.quirks:
                    self._quirk(q, out)
            if cr.errors:
                for e in cr.errors:
                    self._error(e, out)
            events = handler.feed(cr)
            if events:
                if self.ttft is None:
                    self.ttft = self.now
                self._events(events, out)
            elif handler.quirks:
                # right after the chunk that raised it, not at the end of the read: where the
                # reads were cut (or batched) must not move it past later errors and quirks
                for q in handler.take_quirks():
                    self._quirk(q, out)

    def _events(self, events: list[SegmentEvent], out: list[Item]) -> None:
        """Append events in order; after each END, its error (if any) and new invocations."""
        self.segment_events += len(events)
        content_to = self._content_to
        segments = self.segments
        for ev in events:
            out.append(ev)
            kind = ev.event_type
            if kind is _CONTENT:
                buffer = content_to.get(ev.segment_id)
                if buffer is not None and ev.delta:
                    buffer.append(ev.delta)
            elif kind is _START:
                segment_type = ev.segment_type
                if ev.metadata and ev.metadata.get("server_side"):
                    self._server_side.add(ev.segment_id)
                refused = ev.metadata is not None and ev.metadata.get("refusal") is True
                content_to[ev.segment_id] = (
                    (self._refusal_text if refused else self._text)
                    if segment_type is _TEXT
                    else self._reasoning
                    if segment_type is _REASONING
                    else None
                )
            else:
                metadata = ev.metadata
                if metadata:
                    if "error" in metadata:
                        err = StreamError(ErrorKind.SEGMENT, str(metadata["error"]), ev.segment_id)
                        self._error(err, out)
                    cited = metadata.get("citations")
                    if isinstance(cited, list):
                        self._cited.append((ev.segment_id, cited))
                    if metadata.get("refusal") is True:
                        self._refusal = True
                    if "tool_name" in metadata and ev.segment_id not in self._server_side:
                        for q in tool_call_faults(
                            metadata, self.converter_name, self._offered, self.finish_reason
                        ):
                            self._quirk(q, out)
                invocations = self.handler.invocations
                n = self._n_invocations
                if n < len(invocations) and invocations[n].id == ev.segment_id:
                    out.append(invocations[n])
                    self._n_invocations = n + 1
            if segments is not None:
                segments.add(ev)
        if self.handler.quirks:
            for q in self.handler.take_quirks():
                self._quirk(q, out)

    def _quirk(self, quirk: Quirk, out: list[Item]) -> None:
        if quirk.id not in self._quirk_ids:
            self._quirk_ids.add(quirk.id)
            self.quirks.append(quirk)
            out.append(quirk)

    def _error(self, error: StreamError, out: list[Item]) -> None:
        self.errors.append(error)
        out.append(error)

    # -- results ---------------------------------------------------------------------------
    @property
    def pending(self) -> Sequence[SSEItem]:
        """The decoded items held back while the API is not known yet (fed once it is)."""
        return self._pending

    def argument_fragments(self) -> dict[str, int]:
        """How many argument fragments the provider sent per tool call id (arrival, not meaning)."""
        if self.converter is None:
            return {}
        return {c.call_id: c.fragments for c in self.converter.tracker.calls if c.call_id}

    def invocations(self) -> list[ToolInvocation]:
        return self.handler.get_all_invocations()

    def finish_class(self) -> str:
        """The normalized finish class (:mod:`streamtool.core.model.finish`) of the replay so
        far. In a session, a call the client has answered asks nothing more of it."""
        answered = self.converter.answered_calls if self.converter is not None else set()
        client_calls = any(
            not inv.server_side and inv.id not in answered for inv in self.handler.invocations
        )
        refusal = self._refusal and self.finish_reason is not None and not client_calls
        return finish_class(
            self.finish_reason,
            client_calls=client_calls,
            refusal=refusal,
            errors=bool(self.errors),
        )

    def citations(self) -> list[dict[str, Any]]:
        """Every text segment's citations (:mod:`streamtool.core.model.citations`), with its id."""
        out: list[dict[str, Any]] = []
        for segment_id, cited in self._cited:
            out.extend({"segment": segment_id, **c} for c in cited if isinstance(c, dict))
        return out

    def texts(self) -> tuple[str, str]:
        """The concatenated text and reasoning of all segments (a refusal is not text: see
        :meth:`refusal`)."""
        return self._text.text(), self._reasoning.text()

    def refusal(self) -> str:
        """The text of the segments that are a refusal (Chat ``delta.refusal``, a Responses
        ``refusal`` part), kept apart from the text as the SDKs keep ``message.refusal``."""
        return self._refusal_text.text()

    def stats(self) -> dict[str, Any]:
        duration = None
        if self.last_t is not None:
            duration = round(self.last_t, 6)
        return {
            "chunks": self.chunks,
            "bytes": self.bytes,
            "sse_events": self.sse_events,
            "comments": self.comments,
            "duration_s": duration,
            "ttft_s": None if self.ttft is None else round(self.ttft, 6),
            "crlf": bool(getattr(self.decoder, "saw_cr", False)),
            "wire_quirks": list(self.wire.found),
        }

    def _invocation_dicts(self, joined: bool) -> list[dict[str, Any]]:
        """The invocations as dicts; ``joined``: a long string argument kept in pieces
        (``string_pieces``) is one string again, for a writer that is not ``iter_json``."""
        out = [inv.to_dict() for inv in self.invocations()]
        if joined and self.handler.string_pieces:
            out = [_join_pieces(d) for d in out]
        return out

    def summary(self, *, pieces: bool = False) -> dict[str, Any]:
        """The summary (``replay --format json``). ``pieces=True``: the text and the reasoning are
        :class:`~streamtool.core.model.textbuf.TextPieces` (the blocks they are kept in,
        not joined), for a writer that streams them (``iter_json``) without holding them twice,
        and so are the long string arguments of a replay made with ``string_pieces=True``
        (joined in the summary without ``pieces``)."""
        if pieces:
            text: Any = TextPieces(self._text.blocks())
            reasoning: Any = TextPieces(self._reasoning.blocks())
        else:
            text, reasoning = self.texts()
        out = {
            "source": self.source,
            "converter": self.converter_name,
            "parser": self.parser,
            "text": text,
            "refusal": self.refusal(),
            "reasoning": reasoning,
            "invocations": self._invocation_dicts(joined=not pieces),
            "citations": self.citations(),
            "finish_reason": self.finish_reason,
            "finish_class": self.finish_class(),
            "usage": self.usage,
            "errors": [e.to_dict() for e in self.errors],
            "quirks": [q.to_dict() for q in self.quirks],
            "stats": self.stats(),
        }
        imported = self.header.extra.get("imported")
        if imported is not None:
            # where an imported recording came from: its read boundaries and timing are unknown
            out["imported"] = imported
        if self.session is not None:
            # a session: each call's call_id said outright, and every message in order
            for inv in out["invocations"]:
                inv["call_id"] = inv["id"]
            out.update(self.session.summary())
        if self.converter is not None:
            self.converter.amend_summary(out)  # the API's own fields, if it has any
        return out


def _join_pieces(value: Any) -> Any:
    """``value`` with every ``TextPieces`` in it joined (the containers holding one copied)."""
    if type(value) is TextPieces:
        return value.joined()
    if isinstance(value, dict):
        return {k: _join_pieces(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_join_pieces(v) for v in value]
    return value


# the first bytes of what is often saved instead of a stream's text, and what to do about it
_MAGIC = (
    (b"\x1f\x8b", "gzip-compressed (decompress it first: gunzip, or curl --compressed)"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed (decompress it first: zstd -d)"),
    (b"\xff\xfe", "UTF-16 text (convert it to UTF-8 first: iconv -f UTF-16 -t UTF-8)"),
    (b"\xfe\xff", "UTF-16 text (convert it to UTF-8 first: iconv -f UTF-16 -t UTF-8)"),
)


def is_binary(data: bytes) -> bool:
    """Whether a whole body is not text (not UTF-8, or holding NUL), as the replay judges it."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return b"\x00" in data


def binary_text(size: int, head: bytes) -> str:
    """What the replay says of a body of ``size`` bytes starting ``head`` that is not text."""
    return f"not a stream: its {size:,} bytes are {_binary_kind(head) or 'binary data, not text'}"


def _binary_kind(head: bytes) -> str | None:
    """What a stream's first bytes say it is, when it is not UTF-8 text."""
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    # UTF-16 without a byte order mark: ASCII text with every other byte zero
    if len(head) >= 4 and head[1] == 0 and head[3] == 0 and head[0] and head[2]:
        return "UTF-16 text (little-endian; convert it to UTF-8 first: iconv -f UTF-16LE -t UTF-8)"
    if len(head) >= 4 and head[0] == 0 and head[2] == 0 and head[1] and head[3]:
        return "UTF-16 text (big-endian; convert it to UTF-8 first: iconv -f UTF-16BE -t UTF-8)"
    return None
