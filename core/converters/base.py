"""The converter contract: SSE items in, normalized ``ChunkResponse``s out."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import msgspec

from ..model import ChunkResponse, Quirk, StreamError, ToolCallDelta
from ..model.quirk_ids import QuirkId
from ..model.records import Header
from ..model.vocabulary import ErrorKind
from ..pipeline.tracker import ToolCallTracker, TrackedCall
from ..wire import fastjson
from ..wire.fastjson import MAX_DEPTH, loads, too_deep_text
from ..wire.sse import SSEComment, SSEEvent, SSEItem
from .prose_runs import REASONING, TEXT

# an entry of a converter's event table: the name of the method that handles the event type,
# or a tuple of that name and the arguments the method takes after the payload
EventEntry = str | tuple[Any, ...]
_Handler = tuple[Callable[..., list[ChunkResponse]], tuple[Any, ...]]


class Converter:
    """Base class: one instance per stream, ``feed(item) -> list[ChunkResponse]``, ``finish()``.

    Subclasses whose events are JSON objects named by a type declare :attr:`events`, the table
    of event type -> handler method (and :attr:`ignored_events`): the base parses each event,
    splits several payloads of one event and dispatches each by its ``type`` (or the SSE event
    name) through the table, built once per class. Others override :meth:`on_payload` (one
    JSON object), :meth:`on_object` (the parsed data) or :meth:`on_event` itself; any may
    override :meth:`on_comment` and :meth:`on_finish`. Quirks and errors noted while handling an
    item are attached to the chunks that item produced (or to an extra empty chunk), so that
    sinks see them in order. Each quirk id is reported once per stream.
    """

    name = "base"
    # the converter reads a tool call's argument text after the call is complete
    keeps_completed_arguments = False
    # event type -> its handler: a method name, or (method name, arguments after the payload);
    # the method is called as ``method(payload, *arguments)`` and returns the event's chunks
    events: ClassVar[Mapping[str, EventEntry]] = {}
    # the payload field that names its event type (else the SSE event name names it)
    type_key: ClassVar[str] = "type"
    # event types that carry nothing the converter needs (no chunk, not unknown either)
    ignored_events: ClassVar[frozenset[str]] = frozenset()
    # the table of events and ignored_events, resolved: built by __init_subclass__
    _handlers: ClassVar[dict[str, _Handler]] = {}
    # the hot path's argument fragments are taken by the tracker when their run ends, joined
    # (one take per run), not one by one: for converters whose hot checks read no state that a
    # take changes (the arguments' length)
    defers_takes: ClassVar[bool] = False
    # a msgspec decoder of the commonest events' shape (a Struct), whose values :meth:`hot_struct`
    # reads in feed_many; an event that does not decode as one is parsed as JSON
    hot_decoder: ClassVar[msgspec.json.Decoder[Any] | None] = None
    # a converter with a :meth:`hot_event` reads every event as feed_many does, read by read
    # too (:meth:`feed`: a batch of one): its handlers hold only what the hot path does not
    # take. False: only feed_many reads the hot path (one that holds text back for a run:
    # kimi-k2), feed reads every event with :meth:`on_event`
    reads_hot_first: ClassVar[bool] = True
    # resolved by __init_subclass__: the class has a hot path; the event path reads it first
    _has_hot: ClassVar[bool] = False
    _hot_first: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        handlers: dict[str, _Handler] = dict.fromkeys(cls.ignored_events, (_ignore, ()))
        for kind, entry in cls.events.items():
            name, *args = (entry,) if isinstance(entry, str) else entry
            handlers[kind] = (getattr(cls, name), tuple(args))
        cls._handlers = handlers
        if "hot_event" in cls.__dict__ and "hot_struct" not in cls.__dict__:
            cls.hot_decoder = None  # a hot_event of its own: no inherited Struct reads for it
        cls._has_hot = cls.hot_event is not Converter.hot_event
        cls._hot_first = cls._has_hot and cls.reads_hot_first

    def __init__(self) -> None:
        self.tracker = ToolCallTracker(self.quirk, keep_completed=self.keeps_completed_arguments)
        self._quirks: list[Quirk] = []
        self._errors: list[StreamError] = []
        self._seen_quirks: set[str] = set()
        self.comments = 0
        self.unknown_events: dict[str, int] = {}  # event types not known, and how many came
        self.http_error = False  # the recorded answer is an HTTP error body, not a stream
        self.path_model: str | None = None  # the model the request named in its URL path
        # a WebSocket session's: the time of the message being read, and the tool calls the
        # client has answered (its function outputs: it is not asked to run them any more)
        self.now: float | None = None
        self.answered_calls: set[str] = set()

    def use_header(self, header: Header) -> None:
        """The recording's header (the request, its tools), given before the first item.

        Subclasses that read more of it call ``super().use_header(header)``."""
        status = header.response.get("status")
        self.http_error = isinstance(status, int) and status >= 400

    # -- notes -----------------------------------------------------------------------------
    def quirk(self, quirk_id: QuirkId, detail: str = "") -> None:
        if quirk_id not in self._seen_quirks:
            self._seen_quirks.add(quirk_id)
            self._quirks.append(Quirk(quirk_id, detail))

    def unknown_event(self, kind: str) -> None:
        """An event type this converter does not know: counted, listed once at the end."""
        self.unknown_events[kind] = self.unknown_events.get(kind, 0) + 1

    def report_unknown_events(self) -> None:
        """The ``unknown_event`` quirk naming every unknown event type and how many came."""
        if self.unknown_events:
            listed = ", ".join(
                f"{kind!r} ({n} event{'s' if n > 1 else ''})"
                for kind, n in self.unknown_events.items()
            )
            self.quirk(QuirkId.UNKNOWN_EVENT, f"event types this converter does not know: {listed}")

    def error(self, kind: ErrorKind, message: str, detail: Any = None) -> None:
        self._errors.append(StreamError(kind, message, detail))

    def _attach(self, chunks: list[ChunkResponse]) -> list[ChunkResponse]:
        if self._quirks or self._errors:
            if not chunks:
                chunks = [ChunkResponse()]
            target = chunks[0]
            if self._quirks:
                target.quirks = (target.quirks or []) + self._quirks
                self._quirks = []
            if self._errors:
                target.errors = (target.errors or []) + self._errors
                self._errors = []
        return chunks

    # -- the contract ----------------------------------------------------------------------
    def feed(self, item: SSEItem) -> list[ChunkResponse]:
        """One item's chunks. A converter with a hot path reads it as :meth:`feed_many` reads
        an item (a run of one): one piece of code for an event, read by read or batched."""
        if self._hot_first:
            return self._feed_items([item])
        return self._feed_one(item)

    def _feed_one(self, item: SSEItem) -> list[ChunkResponse]:
        """One item through :meth:`on_event` (or :meth:`on_comment`), its notes attached."""
        if type(item) is SSEEvent:
            out = self.on_event(item)
        else:
            assert isinstance(item, SSEComment)
            self.comments += 1
            out = self.on_comment(item)
        if self._quirks or self._errors:
            return self._attach(out)
        return out

    def finish(self) -> list[ChunkResponse]:
        return self._attach(self.on_finish())

    # -- a WebSocket session: what comes beside the server's events ---------------------------
    def client_message(self, obj: Any) -> list[ChunkResponse]:
        """One of the client's messages (its JSON, or ``None`` when it is not JSON)."""
        return self._attach(self.on_client_message(obj))

    def control(
        self, kind: str, direction: str, code: int | None = None, reason: str = ""
    ) -> list[ChunkResponse]:
        """A control frame: ``ping``, ``pong`` or ``close`` (``code`` ``None``: the connection
        ended without a close frame)."""
        return self._attach(self.on_control(kind, direction, code, reason))

    def call_answered(self, call_id: Any) -> None:
        """The client answered the call ``call_id`` (its function output came): it is not asked
        to run it any more."""
        if isinstance(call_id, str) and call_id:
            self.answered_calls.add(call_id)

    def on_client_message(self, obj: Any) -> list[ChunkResponse]:
        """Hook: a client's message (the converters of session APIs read what they need)."""
        return []

    def on_control(
        self, kind: str, direction: str, code: int | None, reason: str
    ) -> list[ChunkResponse]:
        """Hook: a control frame of the session."""
        return []

    def feed_many(self, items: list[SSEItem]) -> list[ChunkResponse]:
        """:meth:`feed` each item in turn; their chunks in one list.

        The engine feeds items this way when nobody watches the stream play (a batched replay,
        ``ReplayEngine.feed_chunks``). A converter with a :meth:`hot_event` hook takes the
        commonest events without a chunk each: a run of argument fragments of one call, of
        text or of reasoning comes out as one chunk holding the run joined, which the handler
        reads as it would read the chunks one by one (the same text, the same order).
        Everything else, and every event that notes a quirk or an error, is fed as by
        :meth:`feed`.
        """
        return self._feed_items(items)

    def _feed_items(self, items: list[SSEItem]) -> list[ChunkResponse]:
        """:meth:`feed_many`, and :meth:`feed` of one item for a converter whose event path
        reads the hot path first."""
        out: list[ChunkResponse] = []
        if not self._has_hot:
            feed = self._feed_one
            for item in items:
                crs = feed(item)
                if crs:
                    out += crs
            return out
        run: list[str] = []  # the texts of the run being collected
        key: Any = None  # what it continues: a TrackedCall, TEXT or REASONING
        decoder = self.hot_decoder
        hot_decode = None if decoder is None else decoder.decode
        hot_struct = self.hot_struct
        hot = self.hot_event
        for item in items:
            if type(item) is SSEEvent:
                found: Any = None
                shaped_read = False  # the Struct path read it: the dict path would say the same
                if hot_decode is not None:
                    data = item.data
                    size = len(data)
                    # JSON nested too deeply is no event's shape, even in a field it skips; a
                    # long event is read as a dict at once (a Struct decode scans it all first)
                    if size <= _SHALLOW or (size <= _HOT_MAX and not too_deep_text(data)):
                        try:
                            shaped = hot_decode(data)
                        except _NotShaped:
                            pass
                        else:
                            found = hot_struct(shaped)  # None: read as a dict below
                            shaped_read = True
                parsed = True
                if found is None:
                    try:
                        obj = loads(item.data)
                    except ValueError:
                        parsed = False  # not JSON: feed() says what it is
                    else:
                        # hot_event of a dict of the Struct's shape is hot_struct: not asked again
                        found = None if shaped_read else hot(obj)
                        if found is None:
                            if run:  # the run is whole before anything else is read
                                out.append(self._run_chunk(key, run))
                                run = []
                            found = self.on_object(obj, item)
                if parsed:
                    if isinstance(found, tuple):
                        if found:
                            if found[0] is not key:
                                if run:
                                    out.append(self._run_chunk(key, run))
                                    run = []
                                key = found[0]
                            run.append(found[1])
                        continue
                    crs = found
                    if run:
                        out.append(self._run_chunk(key, run))
                        run = []
                    if self._quirks or self._errors:
                        crs = self._attach(crs)
                    if crs:
                        out += crs
                    continue
            if run:
                out.append(self._run_chunk(key, run))
                run = []
            crs = self._feed_one(item)
            if crs:
                out += crs
        if run:
            out.append(self._run_chunk(key, run))
        return out

    def _run_chunk(self, key: Any, texts: list[str]) -> ChunkResponse:
        """The one chunk of a run of :meth:`feed_many` (its fragments taken by the tracker now,
        joined, for a converter that :attr:`defers_takes`)."""
        text = texts[0] if len(texts) == 1 else "".join(texts)
        if key is TEXT:
            return ChunkResponse(content=text)
        if key is REASONING:
            return ChunkResponse(reasoning=text)
        if self.defers_takes:
            self.tracker.take_run(key, texts, text)
        return ChunkResponse(tool_calls=[ToolCallDelta(key.index, None, None, text)])

    def hot_struct(self, shaped: Any) -> tuple[Any, ...] | list[ChunkResponse] | None:
        """:meth:`hot_event` for an event that decoded as the class's :attr:`hot_decode` Struct:
        for every such event, exactly what :meth:`hot_event` does with the event parsed as a
        dict (the same result, the same bookkeeping), or ``None`` having changed nothing."""
        return None

    def hot_event(self, obj: Any) -> tuple[Any, ...] | list[ChunkResponse] | None:
        """The hot path of :meth:`feed_many`, for converters that have one.

        ``obj`` is an event's data parsed as JSON (by ``fastjson.loads``, as converters parse
        it). For an event of the commonest shapes the hook does all of the event's bookkeeping
        (the tracker takes a fragment, or the run's fragments at the run's end for a converter
        that :attr:`defers_takes`; a text is noted for reconciliation...) and returns
        ``(key, text)``: ``text`` continues ``key``, a tracked call's arguments (taken by the
        tracker already) or the prose of kind ``TEXT`` / ``REASONING``; or ``()`` when the event
        gives nothing; or the event's own chunks when it needs them (it noted a quirk). For any
        other event it returns ``None`` having changed nothing, and :meth:`on_object` reads it.
        """
        return None

    def on_event(self, event: SSEEvent) -> list[ChunkResponse]:
        """An event: its data parsed as JSON (:meth:`not_json` says what else it is), then
        :meth:`on_object`."""
        try:
            obj = loads(event.data)
        except ValueError as exc:
            obj = self.not_json(event, exc)
            if obj is None:
                return []
        return self.on_object(obj, event)

    def on_object(self, obj: Any, event: SSEEvent) -> list[ChunkResponse]:
        """An event whose data parsed as ``obj``, which :meth:`hot_event` did not take (a JSON
        object; the objects of several payloads are each asked first): each JSON object in it
        to :meth:`on_payload`."""
        if type(obj) is dict:
            return self.on_payload(obj, event)
        return self.each_payload(obj, lambda payload: self._hot_or_payload(payload, event))

    def _hot_or_payload(self, obj: dict[str, Any], event: SSEEvent) -> list[ChunkResponse]:
        """One JSON object of several in an event, read as an event's object is read: the hot
        path first (a run of one), else :meth:`on_payload`."""
        found = self.hot_event(obj) if self._hot_first else None
        if found is None:
            return self.on_payload(obj, event)
        if isinstance(found, tuple):
            return [self._run_chunk(found[0], [found[1]])] if found else []
        return found

    def on_payload(self, obj: dict[str, Any], event: SSEEvent) -> list[ChunkResponse]:
        """One JSON object of an event, dispatched by its ``type`` (else the SSE event name)
        through the class's event table; a type the table lacks goes to :meth:`other_event`.
        The field that names the type is the class's ``type_key``."""
        kind = obj.get(self.type_key)
        if type(kind) is not str or not kind:
            kind = event.event
            if kind is None:
                return self.other_event(None, obj)
        handler = self._handlers.get(kind)
        if handler is None:
            return self.other_event(kind, obj)
        method, args = handler
        return method(self, obj, *args)

    def other_event(self, kind: str | None, obj: dict[str, Any]) -> list[ChunkResponse]:
        """An event type that is not in the table (``None``: the event has no type and no name):
        counted, and listed once in the ``unknown_event`` quirk."""
        self.unknown_event(str(kind))
        return []

    def on_comment(self, comment: SSEComment) -> list[ChunkResponse]:
        self.quirk(
            QuirkId.SSE_COMMENT_KEEPALIVE, f"SSE comment lines such as {comment.text[:40]!r}"
        )
        return []

    def on_finish(self) -> list[ChunkResponse]:
        return []

    def amend_summary(self, summary: dict[str, Any]) -> None:
        """Add what this API's streams say beyond the shared model to the replay's summary
        (``replay --format json``), in place: its own fields, or more about an invocation
        (MCP: each tool call's result, every JSON-RPC message). The default adds nothing."""

    def on_unparsed(self, event: SSEEvent) -> bool:
        """Hook: data that is not JSON, which a converter may take as its own (``[DONE]``, an
        object cut off by the end of the stream); ``True`` when it did (the event gives nothing).
        """
        return False

    # -- helpers ---------------------------------------------------------------------------
    def truncated(self, missing: str, cut: str = "were cut off") -> None:
        """Note that the stream ended without ``missing``, naming the tool calls still open.

        An HTTP error answer is not a stream: it cannot be cut short."""
        if self.http_error:
            return
        open_calls = [str(c.call_id) for c in self.tracker.open_calls()]
        self.error(
            ErrorKind.TRUNCATED,
            f"the stream ended without {missing}"
            + (f"; tool calls {', '.join(open_calls)} {cut}" if open_calls else ""),
        )

    def restated_name(self, call: TrackedCall, name: Any) -> list[ToolCallDelta]:
        """The delta of a call's name as an event that ends its arguments restates it (none when
        it is no name, or not news)."""
        if isinstance(name, str) and name:
            delta = self.tracker.update(call, name=name)
            if delta is not None:
                return [delta]
        return []

    def not_json(self, event: SSEEvent, exc: ValueError) -> Any:
        """The slow path of parsing an event's data, after ``loads(event.data)`` raised ``exc``.

        Empty data is a quirk, :meth:`on_unparsed` may take the data, and anything else is what
        :meth:`load_json` makes of it; ``None`` when the event gives nothing.
        """
        data = event.data
        if not data.strip():
            self.quirk(QuirkId.SSE_EMPTY_EVENT_AFTER_COMMENT, "an event with empty data")
            return None
        if self.on_unparsed(event):
            return None
        return self._split_payloads(data, exc)

    def each_payload(
        self, obj: Any, handle: Callable[[dict[str, Any]], list[ChunkResponse]]
    ) -> list[ChunkResponse]:
        """``handle`` each JSON object of an event's data; anything else is a ``bad_payload``."""
        if isinstance(obj, MultiPayload):
            out: list[ChunkResponse] = []
            for payload in obj:
                if isinstance(payload, dict):
                    out.extend(handle(payload))
                else:
                    self.error(ErrorKind.BAD_PAYLOAD, "event data is not a JSON object", payload)
            return out
        if isinstance(obj, dict):
            return handle(obj)
        if obj is not None:
            self.error(ErrorKind.BAD_PAYLOAD, "event data is not a JSON object", obj)
        return []

    def load_json(self, event: SSEEvent) -> Any:
        """Parse an event's data as JSON; on failure note an error and return ``None``.

        Two JSON documents separated by a single newline (emitters that end events with one
        ``\\n``, which a spec decoder merges into one multi-line data field) are split and
        returned as a list marked by :class:`MultiPayload`.
        """
        data = event.data
        try:
            return loads(data)
        except ValueError as exc:
            return self._split_payloads(data, exc)

    def _split_payloads(self, data: str, exc: ValueError) -> Any:
        if "\n" in data:
            parts = []
            for line in data.split("\n"):
                line = line.removeprefix("data:").strip()
                if not line:
                    continue
                try:
                    parts.append(fastjson.loads(line))
                except ValueError:
                    break
            else:
                self.quirk(
                    QuirkId.SSE_SINGLE_NEWLINE_SEPARATOR,
                    "several JSON payloads in one event (events separated by a single LF)",
                )
                return MultiPayload(parts)
        self.error(ErrorKind.BAD_JSON, f"event data is not JSON: {exc}", data[:200])
        return None


# text this short holds no JSON nested deeper than MAX_DEPTH (fastjson.check_depth)
_SHALLOW = 2 * MAX_DEPTH
# the longest event data feed_many tries as a Struct: hot events are small, and the dict path
# reads every event as the Struct path does (hot_struct is hot_event of the same event)
_HOT_MAX = 64 * 1024
# what a Struct decoder raises for data of another shape (ValidationError is a DecodeError),
# for a str holding a lone surrogate, for deep nesting
_NotShaped = (msgspec.DecodeError, UnicodeError, RecursionError)


def _ignore(converter: Converter, obj: dict[str, Any]) -> list[ChunkResponse]:
    """The handler of an ignored event type."""
    return []


class MultiPayload(list[Any]):
    """Several JSON payloads that arrived in one SSE event."""
