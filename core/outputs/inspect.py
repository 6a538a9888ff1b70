"""How a stream arrived: per-read facts, timing figures, stalls and the quirk lint. Sans-IO.

:class:`Inspector` wraps a :class:`~streamtool.core.engine.replay.ReplayEngine`: feed it the
recording's chunks (one per network read) and its end record, then :meth:`Inspector.result` gives
one object (what ``streamtool inspect --format json`` prints, documented in docs/inspect.md):

- ``facts``: provider, API, model, endpoint, status, recorded at, end reason, converter, parser;
- ``timing``: TTFB, TTFT, duration, reads, bytes, events, comments, inter-read gaps (p50, p95,
  max), stalls (gaps over the threshold, with what came right after), time to the first tool-call
  fragment, tokens (or characters) per second over the generating part only;
- ``reads``: every read with its time, gap, bytes, events and what it produced, and the cuts it
  made (an event, a UTF-8 character or a CRLF line end split between it and the next read);
- ``quirks`` and ``errors``: where each was first met (read index and time), with the quirk
  catalogue's severity, explanation and reference;
- ``summary``: the replay summary (``replay --format json``).

Memory stays bounded however many reads a recording holds: the inspector keeps each read's time,
gap and size (24 bytes a read, for the gap quantiles and the timelines), the figures it sums as it
goes, the first :data:`MAX_STALLS` stalls, and of the reads' facts only the first ``keep_reads``
(all of them by default). A :class:`ReadStore` given to it gets every read's facts as each is
final, for a caller that writes them elsewhere and reads them back (:meth:`Inspector.read_rows`);
:func:`json_pieces` writes the result with its reads from there, piece by piece.
"""

from __future__ import annotations

import codecs
import json
import math
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, Unpack

from ..engine.replay import EngineOptions, Item, ReplayEngine
from ..model import Quirk, SegmentEvent, SegmentEventType, SegmentType, StreamError, ToolInvocation
from ..model.quirks import Severity, lookup, severity_rank
from ..model.records import Chunk, Control, End, Header, Message
from ..pipeline.segment_log import SegmentLog
from ..wire.sse import SSEEvent

DEFAULT_STALL = 1.0
PREVIEW = 400  # characters of a read kept for the views (the HTML report shows them)
MAX_STALLS = 10_000  # stalls listed (``stalls_total`` counts them all)
_NONE = float("nan")  # a read without a time, in the arrays of times and gaps

_TOOL_SEGMENTS = {
    SegmentType.TOOL_CALL,
    SegmentType.WRITE_FILE,
    SegmentType.PATCH_FILE,
    SegmentType.RUN_BASH,
}


@dataclass(slots=True)
class ReadFact:
    """One network read and what it produced."""

    index: int
    t: float | None
    gap: float | None  # seconds since the previous read (the first: since the request was sent)
    bytes: int
    events: int = 0
    comments: int = 0
    text: int = 0  # characters of text produced
    reasoning: int = 0  # characters of reasoning produced
    calls: dict[str, int] = field(default_factory=dict)  # tool call id -> argument characters
    opened: list[str] = field(default_factory=list)  # tool call ids that started here
    errors: list[str] = field(default_factory=list)  # error kinds met here
    quirks: list[str] = field(default_factory=list)  # quirk ids first met here
    cuts: list[str] = field(default_factory=list)  # "event", "utf8", "crlf"
    preview: str = ""
    frames: list[str] = field(default_factory=list)  # binary frames decoded here (AWS event-stream)

    @property
    def produced(self) -> bool:
        return bool(self.text or self.reasoning or self.calls or self.opened)

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "t": self.t,
            "gap": self.gap,
            "bytes": self.bytes,
            "events": self.events,
            "comments": self.comments,
            "text_chars": self.text,
            "reasoning_chars": self.reasoning,
            "tool_args": dict(self.calls),
            "tool_calls_opened": list(self.opened),
            "errors": list(self.errors),
            "quirks": list(self.quirks),
            "cuts": list(self.cuts),
            "preview": self.preview,
            "frames": list(self.frames),
        }

    def describe(self, names: dict[str, str] | None = None) -> str:
        """What the read produced, in a few words (``text 12, call get_weather +40``)."""
        parts: list[str] = []
        if self.reasoning:
            parts.append(f"reasoning {self.reasoning}")
        if self.text:
            parts.append(f"text {self.text}")
        for call_id in self.opened:
            if call_id not in self.calls:
                parts.append(f"{_call_name(call_id, names)} opened")
        for call_id, n in self.calls.items():
            parts.append(f"{_call_name(call_id, names)} +{n}")
        if self.comments:
            parts.append(f"{self.comments} comment{'s' if self.comments > 1 else ''}")
        if self.errors:
            parts.append("error " + ", ".join(self.errors))
        if not parts:
            parts.append(f"{self.events} event{'s' if self.events != 1 else ''}, no output")
        return ", ".join(parts)


def _call_name(call_id: str, names: dict[str, str] | None) -> str:
    name = (names or {}).get(call_id)
    return f"{name} ({call_id})" if name else call_id


class ReadStore(Protocol):
    """Where every read's facts go once they are final (the next read has come, or the end),
    and come back from, in order: as :meth:`ReadFact.to_dict` gives them (``rows``), or as
    :func:`row_json` writes those (``texts``)."""

    def add(self, fact: ReadFact) -> None: ...

    def rows(self) -> Iterable[dict[str, Any]]: ...

    def texts(self) -> Iterable[str]: ...


def row_json(fact: ReadFact) -> str:
    """A read's facts as the JSON result writes them."""
    return json.dumps(fact.to_dict(), ensure_ascii=False)


class ReadPoints:
    """Every read's time, gap (``None`` when the read has no time) and size, kept compact."""

    __slots__ = ("gaps", "sizes", "times")

    def __init__(self) -> None:
        self.times = array("d")
        self.gaps = array("d")
        self.sizes = array("q")

    def add(self, t: float | None, gap: float | None, size: int) -> None:
        self.times.append(_NONE if t is None else t)
        self.gaps.append(_NONE if gap is None else gap)
        self.sizes.append(size)

    def __len__(self) -> int:
        return len(self.sizes)

    def __iter__(self) -> Iterator[tuple[float | None, int, float | None]]:
        """``(t, bytes, gap)`` per read."""
        for t, size, gap in zip(self.times, self.sizes, self.gaps, strict=True):
            yield (None if t != t else t), size, (None if gap != gap else gap)

    def timed(self) -> bool:
        """Every read has a time (and there is one at least)."""
        return bool(self.times) and not any(t != t for t in self.times)


class Inspector:
    """Feed chunks and the end record; read :meth:`result`."""

    def __init__(
        self,
        header: Header | None = None,
        *,
        stall: float = DEFAULT_STALL,
        keep_items: bool = False,
        keep_reads: int | None = None,
        items_limit: int | None = None,
        store: ReadStore | None = None,
        **engine: Unpack[EngineOptions],
    ) -> None:
        """``keep_reads``: the reads whose facts are kept in :attr:`reads` (the first ones;
        ``None``: all). ``keep_items``: keep the engine's items, with the read that brought
        each (the report's player and tree), those of the first ``items_limit`` reads only when
        given (and the end's only when the stream has no more reads). ``store``: every read's
        facts, for :meth:`read_rows`. The others (``converter``, ``parser``, ``source``,
        ``handler_options``) are the engine's (:class:`EngineOptions`)."""
        self.header = header or Header(raw_body=True)
        self.engine = ReplayEngine(
            self.header,
            # the segments' types and names (their content too for the report's tree)
            segments=SegmentLog(keep_content=keep_items),
            **engine,
        )
        self.stall = stall
        self.reads: list[ReadFact] = []
        self.keep_reads = keep_reads
        self.store = store
        self.points = ReadPoints()
        self.quirks: list[dict[str, Any]] = []
        self.errors: list[dict[str, Any]] = []
        self.call_names: dict[str, str] = {}
        self.items: list[tuple[int | None, Item]] | None = [] if keep_items else None
        self.items_limit = items_limit
        # what the timing figures sum as the reads come
        self.stalls: list[ReadFact] = []  # the first MAX_STALLS (their previews left out)
        self.stall_count = 0
        self.first_tool: tuple[float | None] | None = None  # the first read with a tool call
        self.producing: list[float] = []  # the times of the first and last producing reads
        self.out_chars = 0
        self.call_chars: dict[str, int] = {}  # argument characters by tool call id
        self._last: ReadFact | None = None  # the latest read: final once the next one comes
        self._prev_t: float | None = None
        self._utf8 = codecs.getincrementaldecoder("utf-8")("replace")
        self._utf8_tail = False  # the last read ended inside a UTF-8 character
        self._prev_cr = False  # the last read ended with CR
        self._end: End | None = None
        self._first_server: float | None = None  # a session's first record from the server

    # -- input -----------------------------------------------------------------------------
    @property
    def count(self) -> int:
        """Reads fed so far."""
        return len(self.points)

    def _fact(self, t: float | None, nbytes: int) -> ReadFact:
        """The next read's facts: its index, time, gap since the read before it, bytes."""
        gap = None
        if t is not None:
            gap = t - self._prev_t if self._prev_t is not None else t
            self._prev_t = t
        return ReadFact(len(self.points), t, None if gap is None else round(gap, 6), nbytes)

    def _keep(self, fact: ReadFact) -> None:
        """``fact`` is the latest read: its time and size counted, its facts kept (the first
        ``keep_reads``)."""
        self._last = fact
        self.points.add(fact.t, fact.gap, fact.bytes)
        if self.keep_reads is None or fact.index < self.keep_reads:
            self.reads.append(fact)

    def feed(self, chunk: Chunk) -> list[Item]:
        engine = self.engine
        data = chunk.data
        fact = self._fact(chunk.t, chunk.nbytes)
        prev = self._last
        if prev is not None:
            starts_lf = data[:1] in ("\n", b"\n")
            if self._prev_cr and starts_lf:
                prev.cuts.append("crlf")
            self._done(prev)
        if isinstance(data, bytes):
            self._utf8.decode(data)
            self._utf8_tail = bool(self._utf8.getstate()[0])
            fact.preview = data[:PREVIEW].decode("utf-8", "replace")
            self._prev_cr = data[-1:] == b"\r"
        else:
            if self._utf8_tail:
                self._utf8.decode(data.encode("utf-8"))
                self._utf8_tail = bool(self._utf8.getstate()[0])
            fact.preview = data[:PREVIEW]
            self._prev_cr = data[-1:] == "\r"
        events, comments = _counts(engine)
        self._keep(fact)
        items = engine.feed_chunk(chunk)
        decoder = engine.decoder
        recent = getattr(getattr(decoder, "inner", None) or decoder, "recent", None)
        if recent is not None:  # a binary framing: name the frames, not their bytes
            fact.frames = list(recent)
            fact.preview = " ".join(fact.frames)
        events_after, comments_after = _counts(engine)
        fact.events = events_after - events
        fact.comments = comments_after - comments
        if items:
            self._attribute(fact, items)
        if self._utf8_tail:
            fact.cuts.append("utf8")
        if getattr(engine.decoder, "mid_event", False):
            fact.cuts.append("event")
        self._sum(fact)
        return items

    def feed_message(self, record: Message | Control) -> list[Item]:
        """A record of a WebSocket session (a message either way, or a control frame), taken
        as one read: its time, the gap since the record before it, its bytes, its one frame
        named by its direction (``→`` the client's, ``←`` the server's) and its event type (a
        control frame: its kind, code and reason), a text message's first characters as its
        preview."""
        t = record.t
        arrow = "→" if record.direction == "client" else "←"
        engine = self.engine
        counted = engine.bytes
        items = engine.feed_message(record)  # (a message's bytes counted there, once)
        nbytes = engine.bytes - counted if isinstance(record, Message) else len(record.data)
        fact = self._fact(t, nbytes)
        if self._last is not None:
            self._done(self._last)
        self._keep(fact)
        if isinstance(record, Message):
            fact.events = 1
            session = engine.session
            entry = session.events[-1] if session is not None and session.events else {}
            kind = entry.get("type") or ("binary" if isinstance(record.data, bytes) else "text")
            fact.frames = [f"{arrow} {kind}"]
            if isinstance(record.data, str):  # a binary message's bytes are counted, not shown
                fact.preview = record.data[:PREVIEW]
        else:
            said = "" if record.code is None else f" {record.code}"
            fact.frames = [f"{arrow} {record.kind}{said} {record.reason}".rstrip()]
        if self._first_server is None and record.direction == "server" and t is not None:
            self._first_server = t
        if items:
            self._attribute(fact, items)
        self._sum(fact)
        return items

    def _sum(self, fact: ReadFact) -> None:
        """Add a read to the timing figures (what it produced is known once it is fed)."""
        if fact.gap is not None and fact.gap > self.stall:
            self.stall_count += 1
            if len(self.stalls) < MAX_STALLS:
                self.stalls.append(replace(fact, preview="", frames=[]))
        if self.first_tool is None and (fact.calls or fact.opened):
            self.first_tool = (fact.t,)
        if fact.t is not None and fact.produced:
            if self.producing:
                self.producing[1:] = [fact.t]
            else:
                self.producing.append(fact.t)
        if fact.calls:
            totals = self.call_chars
            for call_id, n in fact.calls.items():
                totals[call_id] = totals.get(call_id, 0) + n
            self.out_chars += sum(fact.calls.values())
        self.out_chars += fact.text + fact.reasoning

    def _done(self, fact: ReadFact) -> None:
        """A read's facts are final: to the store."""
        if self.store is not None:
            self.store.add(fact)

    def finish(self, end: End | None) -> list[Item]:
        self._end = end
        items = self.engine.finish(end)
        if items:
            self._attribute(None, items)
        if self._last is not None:
            self._done(self._last)
            self._last = None
        return items

    def _attribute(self, fact: ReadFact | None, items: list[Item]) -> None:
        where = None if fact is None else fact.index
        t = fact.t if fact is not None else (self._end.t if self._end is not None else None)
        log = self.engine.segments
        assert log is not None  # made in __init__
        if self.items is not None:
            limit = self.items_limit
            if limit is None or (len(self.points) <= limit if where is None else where < limit):
                self.items.extend((where, item) for item in items)
        for item in items:
            cls = type(item)
            if cls is SegmentEvent:
                assert isinstance(item, SegmentEvent)
                etype = item.event_type
                if etype is SegmentEventType.CONTENT:
                    if fact is None:
                        continue
                    seg = log.get(item.segment_id)
                    kind = None if seg is None else seg.type
                    n = len(item.delta or "")
                    if kind is SegmentType.TEXT:
                        fact.text += n
                    elif kind is SegmentType.REASONING:
                        fact.reasoning += n
                    elif kind in _TOOL_SEGMENTS:
                        calls = fact.calls
                        calls[item.segment_id] = calls.get(item.segment_id, 0) + n
                elif etype is SegmentEventType.START and item.segment_type in _TOOL_SEGMENTS:
                    name = (item.metadata or {}).get("tool_name")
                    if not name and item.segment_type is not SegmentType.TOOL_CALL:
                        name = item.segment_type.value
                    if name:
                        self.call_names[item.segment_id] = str(name)
                    if fact is not None:
                        fact.opened.append(item.segment_id)
            elif cls is Quirk:
                assert isinstance(item, Quirk)
                info = lookup(item.id)
                self.quirks.append(
                    {
                        **info.to_dict(),
                        "detail": item.detail,
                        "read": where,
                        "t": t,
                    }
                )
                if fact is not None:
                    fact.quirks.append(item.id)
            elif cls is StreamError:
                assert isinstance(item, StreamError)
                self.errors.append({**item.to_dict(), "read": where, "t": t})
                if fact is not None:
                    fact.errors.append(item.kind)
            elif cls is ToolInvocation:
                assert isinstance(item, ToolInvocation)
                self.call_names.setdefault(item.id, item.name)

    # -- results ---------------------------------------------------------------------------
    def facts(self) -> dict[str, Any]:
        engine = self.engine
        header = self.header
        end = engine.end
        return {
            "source": engine.source,
            "raw_body": header.raw_body,
            "provider": header.provider,
            "api": header.api,
            "model": engine.model,
            "endpoint": _endpoint(header),
            "status": header.response.get("status"),
            "recorded_at": header.recorded_at,
            "end_reason": None if end is None else end.reason,
            "end_error": None if end is None else end.error,
            "converter": engine.converter_name,
            "parser": engine.parser,
            "finish_reason": engine.finish_reason,
            # an imported recording: where it came from (its reads and timing unknown)
            "imported": header.extra.get("imported"),
            # a WebSocket session: its "reads" are its messages, both ways, and its control frames
            "websocket": header.websocket,
        }

    def timing(self) -> dict[str, Any]:
        engine = self.engine
        points = self.points
        # the gaps between timed reads (the first timed read's is the wait for it, not a gap),
        # in order of size
        gaps = sorted(g for g in points.gaps if g == g)
        if gaps:
            gaps.remove(next(g for g in points.gaps if g == g))
        stalls = [
            {"read": r.index, "t": r.t, "gap": r.gap, "after": r.describe(self.call_names)}
            for r in self.stalls
        ]
        first_tool = self.first_tool[0] if self.first_tool is not None else None
        gen_s = None
        if len(self.producing) >= 2:
            gen_s = self.producing[-1] - self.producing[0]
        usage = engine.usage or {}
        tokens = usage.get("output_tokens")
        ttfb = next((t for t in points.times if t == t), None)
        if self.header.websocket:  # a session's first byte is its server's first record's
            ttfb = self._first_server
        return {
            "ttfb_s": ttfb,
            "ttft_s": None if engine.ttft is None else round(engine.ttft, 6),
            "duration_s": None if engine.last_t is None else round(engine.last_t, 6),
            "reads": len(points),
            "bytes": engine.bytes,
            "sse_events": engine.sse_events,
            "comments": engine.comments,
            "gap_p50_s": _quantile(gaps, 0.5),
            "gap_p95_s": _quantile(gaps, 0.95),
            "gap_max_s": round(gaps[-1], 6) if gaps else None,
            "stall_threshold_s": self.stall,
            "stalls": stalls,
            "stalls_total": self.stall_count,
            "first_tool_fragment_s": first_tool,
            "generating_s": None if gen_s is None else round(gen_s, 6),
            "output_tokens": tokens,
            "tokens_per_s": _rate(tokens, gen_s),
            "output_chars": self.out_chars,
            "chars_per_s": _rate(self.out_chars, gen_s),
        }

    def lint(self) -> list[dict[str, Any]]:
        """Quirks met, most severe first, then in stream order."""
        return sorted(self.quirks, key=lambda q: severity_rank(q["severity"]))

    def read_rows(self) -> Iterator[dict[str, Any]]:
        """Every read's facts (:meth:`ReadFact.to_dict`), in order: from the store when there
        is one, else the reads kept (all of them unless ``keep_reads`` said fewer)."""
        if self.store is not None:
            yield from self.store.rows()
        else:
            for r in self.reads:
                yield r.to_dict()

    def read_texts(self) -> Iterator[str]:
        """:meth:`read_rows` as JSON texts (:func:`row_json`)."""
        if self.store is not None:
            yield from self.store.texts()
        else:
            for r in self.reads:
                yield row_json(r)

    def result(self, *, with_reads: bool = True) -> dict[str, Any]:
        """The whole result; ``with_reads=False`` leaves ``reads`` out (see
        :func:`json_pieces`)."""
        engine = self.engine
        out: dict[str, Any] = {
            "source": engine.source,
            "facts": self.facts(),
            "timing": self.timing(),
            "quirks": self.lint(),
            "errors": list(self.errors),
            "tool_calls": [
                {
                    "id": inv.answer_id,
                    "name": inv.name,
                    "arguments_chars": self.call_chars.get(inv.id, 0),
                    "fragments": engine.argument_fragments().get(inv.id),
                }
                for inv in engine.invocations()
            ],
        }
        if with_reads:
            out["reads"] = list(self.read_rows())
        out["summary"] = engine.summary()
        return out


def json_pieces(result: dict[str, Any], texts: Iterable[str]) -> Iterator[str]:
    """The JSON text of ``result`` (made ``with_reads=False``) with the reads ``texts`` holds
    (:meth:`Inspector.read_texts`), in pieces, one line in all: ``json.dumps`` of the whole
    result, without holding the reads."""
    head = {k: v for k, v in result.items() if k != "summary"}
    text = json.dumps(head, ensure_ascii=False)
    yield text[:-1] + ', "reads": ['
    batch: list[str] = []
    sep = ""
    for row in texts:
        batch.append(row)
        if len(batch) == 1000:
            yield sep + ", ".join(batch)
            batch = []
            sep = ", "
    if batch:
        yield sep + ", ".join(batch)
    yield '], "summary": ' + json.dumps(result.get("summary"), ensure_ascii=False) + "}\n"


def findings_failing(result: dict[str, Any], fail_on: set[str]) -> list[str]:
    """The quirk ids / error kinds of ``result`` that ``--fail-on`` names.

    ``fail_on`` holds severities (``error``: also any stream error; ``warn``: warn and error;
    ``info``: everything) and/or quirk ids and error kinds.
    """
    hits: list[str] = []
    levels = [s for s in Severity if s in fail_on]
    worst = max((severity_rank(s) for s in levels), default=-1)
    for q in result["quirks"]:
        if q["id"] in fail_on or severity_rank(q["severity"]) <= worst:
            hits.append(q["id"])
    for e in result["errors"]:
        if e["kind"] in fail_on or worst >= 0:
            hits.append(e["kind"])
    return hits


def _counts(engine: ReplayEngine) -> tuple[int, int]:
    """Events and comments decoded so far, those still held for API detection included."""
    events, comments = engine.sse_events, engine.comments
    pending = engine.pending
    if pending:
        held = sum(1 for item in pending if type(item) is SSEEvent)
        events += held
        comments += len(pending) - held
    return events, comments


def _endpoint(header: Header) -> str | None:
    url = header.url
    if not url:
        return None
    method = header.request.get("method")
    return f"{method} {url}" if isinstance(method, str) else url


def _quantile(ordered: list[float], q: float) -> float | None:
    """The ``q`` quantile of values in order of size."""
    if not ordered:
        return None
    k = (len(ordered) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    value = ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)
    return round(value, 6)


def _rate(amount: int | None, seconds: float | None) -> float | None:
    if amount is None or not seconds or seconds <= 0:
        return None
    return round(amount / seconds, 1)
