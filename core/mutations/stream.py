"""A recorded SSE body as a list of events that a mutation edits, keeping the read boundaries.

:func:`parse` cuts the body (every read joined) into its events, byte-exact: each
:class:`Event` holds its raw bytes, blank line included, and the read boundaries that fell inside
it or at its end (``cuts``: offset into the event, and the time of the read that ended there).
An NDJSON body (one JSON object per line) is cut into its lines, each an event whose data is the
line itself (``bare``), so that a mutation edits it as it edits an SSE event's data.
A mutation edits events (:meth:`Stream.set_json`, :meth:`Stream.insert`, :meth:`Stream.remove`);
an edited event keeps its boundaries, moved in proportion to its new length (never inside a
UTF-8 character or a CRLF, which would add a quirk of its own), and a removed event hands its
boundaries to the event before it. :meth:`Stream.reads` joins the events again and cuts them at
the boundaries: a stream no mutation touched gives back exactly the reads it came from. Sans-IO.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..model.records import Header
from ..wire import fastjson
from ..wire.framing import sniff

_LINE = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
Cut = tuple[int, float | None]  # (offset into the event, time of the read that ended there)


def render_json(obj: Any) -> str:
    """JSON as the providers send it: compact, UTF-8 as it is."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


@dataclass(slots=True)
class Event:
    raw: bytes
    cuts: list[Cut] = field(default_factory=list)
    bare: bool = False  # a line of an NDJSON body: its data alone, no SSE fields
    _obj: Any = field(default=None, repr=False)
    _parsed: bool = field(default=False, repr=False)

    # -- reading ---------------------------------------------------------------------------
    def lines(self) -> list[tuple[bytes, bytes]]:
        """``(content, line end)`` of every line, the blank line that ends the event included."""
        out = []
        for m in _LINE.finditer(self.raw):
            line = m.group()
            body = line.rstrip(b"\r\n")
            out.append((body, line[len(body) :]))
        return out

    def field(self, name: bytes) -> str | None:
        if self.bare:
            return self.raw.strip().decode("utf-8", errors="replace") if name == b"data" else None
        values = [
            body[len(name) + 1 :].removeprefix(b" ")
            for body, _ in self.lines()
            if body.startswith(name + b":")
        ]
        if not values:
            return None
        return b"\n".join(values).decode("utf-8", errors="replace")

    @property
    def data(self) -> str | None:
        return self.field(b"data")

    @property
    def name(self) -> str | None:
        return self.field(b"event")

    @property
    def terminated(self) -> bool:
        if self.bare:
            return self.raw.endswith((b"\n", b"\r"))
        lines = self.lines()
        return len(lines) >= 2 and lines[-1][0] == b"" and bool(lines[-1][1])

    @property
    def eol(self) -> bytes:
        lines = self.lines()
        return lines[0][1] if lines and lines[0][1] else b"\n"

    def json(self) -> Any:
        """The data parsed as JSON (a fresh copy to edit), or None: data that is not JSON, or
        JSON nested deeper than a replay reads (:data:`~streamtool.core.wire.fastjson.MAX_DEPTH`:
        such an event is kept as it is, as a replay reports it)."""
        if not self._parsed:
            self._parsed = True
            data = self.data
            try:
                self._obj = fastjson.loads(data) if data else None
            except ValueError:
                self._obj = None
        return copy.deepcopy(self._obj)

    # -- writing ---------------------------------------------------------------------------
    def with_data(self, data: str) -> bytes:
        """This event's bytes with its data replaced by ``data`` (one line), other fields kept."""
        if self.bare:  # the line replaced, the blank space around it kept
            lead = self.raw[: len(self.raw) - len(self.raw.lstrip())]
            trail = self.raw[len(self.raw.rstrip()) :]
            return lead + data.encode("utf-8") + (trail or b"\n")
        out: list[bytes] = []
        wrote = False
        eol = self.eol
        for body, end in self.lines():
            if body.startswith(b"data:"):
                if wrote:
                    continue
                wrote = True
                space = b" " if body.startswith(b"data: ") or body == b"data:" else b""
                out.append(b"data:" + space + data.encode("utf-8") + (end or eol))
            elif body == b"" and not wrote:
                out.append(b"data: " + data.encode("utf-8") + eol)
                wrote = True
                out.append(end)
            else:
                out.append(body + end)
        if not wrote:
            out.append(b"data: " + data.encode("utf-8") + eol + eol)
        return b"".join(out)


def _snap(raw: bytes, at: int) -> int:
    """``at`` moved back to the start of a UTF-8 character and out of a CRLF."""
    while 0 < at < len(raw) and (raw[at] & 0xC0) == 0x80:
        at -= 1
    if 0 < at < len(raw) and raw[at - 1 : at + 1] == b"\r\n":
        at += 1
    return at


def _scaled(cuts: list[Cut], old: int, raw: bytes) -> list[Cut]:
    new = len(raw)
    out: list[Cut] = []
    for at, t in cuts:
        moved = new if at >= old else _snap(raw, round(at * new / old)) if old else new
        moved = max(1, min(moved, new)) if new else 0
        if new and (not out or out[-1][0] != moved):
            out.append((moved, t))
        elif out:
            out[-1] = (moved, t)
    return out


@dataclass(slots=True)
class Stream:
    """A recording's body as events, with the read boundaries, and its header."""

    events: list[Event]
    header: Header
    api: str  # the wire API: openai-chat, openai-responses, anthropic, gemini
    converter: str  # the converter a replay picked (kimi-k2 for Kimi streams on openai-chat)
    framing: str = "sse"
    tail_t: float | None = None  # the time of the last read (reads after every event)

    # -- edits -----------------------------------------------------------------------------
    def set_raw(self, i: int, raw: bytes) -> None:
        ev = self.events[i]
        if raw == ev.raw:
            return
        self.events[i] = Event(raw, _scaled(ev.cuts, len(ev.raw), raw), bare=ev.bare)

    def set_json(self, i: int, obj: Any) -> None:
        self.set_raw(i, self.events[i].with_data(render_json(obj)))

    def insert(self, i: int, raw: bytes) -> None:
        """A new event before event ``i`` (it joins the read of what follows it)."""
        self.events.insert(i, Event(raw, bare=self.framing == "ndjson"))

    def insert_json(self, i: int, obj: Any, like: int, name: str | None = None) -> None:
        """A new event before ``i``, shaped like event ``like`` (its line ends and ``event:``
        line; ``name`` replaces the event name)."""
        raw = self.events[like].with_data(render_json(obj))
        if name is not None:
            lines = [
                (b"event: " + name.encode() + end) if body.startswith(b"event:") else body + end
                for body, end in Event(raw).lines()
            ]
            raw = b"".join(lines)
        self.insert(i, raw)

    def remove(self, i: int) -> None:
        ev = self.events.pop(i)
        if not ev.cuts:
            return
        t = ev.cuts[-1][1]
        if i > 0:
            prev = self.events[i - 1]
            end = len(prev.raw)
            prev.cuts = [c for c in prev.cuts if c[0] != end] + [(end, t)]
        elif self.events:
            self.tail_t = self.tail_t if self.tail_t is not None else t

    def truncate(self, i: int) -> None:
        """Drop every event from ``i`` on; the read boundaries at their end stay."""
        while len(self.events) > i:
            self.remove(len(self.events) - 1)

    # -- queries ---------------------------------------------------------------------------
    def data_events(self) -> list[tuple[int, Any]]:
        """``(position, parsed JSON)`` of every event whose data is JSON."""
        out = []
        for i, ev in enumerate(self.events):
            obj = ev.json()
            if obj is not None:
                out.append((i, obj))
        return out

    def reads(self) -> list[tuple[float | None, bytes]]:
        """The body cut into reads again."""
        out: list[tuple[float | None, bytes]] = []
        pending: list[bytes] = []
        last_t: float | None = None
        for ev in self.events:
            start = 0
            for at, t in ev.cuts:
                pending.append(ev.raw[start:at])
                out.append((t, b"".join(pending)))
                pending = []
                start = at
                last_t = t
            pending.append(ev.raw[start:])
        rest = b"".join(pending)
        if rest:
            out.append((self.tail_t if self.tail_t is not None else last_t, rest))
        return [(t, data) for t, data in out if data]

    def global_cuts(self) -> list[Cut]:
        """Every read boundary as an offset into the whole body."""
        out: list[Cut] = []
        base = 0
        for ev in self.events:
            out.extend((base + at, t) for at, t in ev.cuts)
            base += len(ev.raw)
        return out

    def recut(self, cuts: list[Cut]) -> None:
        """Replace the read boundaries by ``cuts`` (offsets into the whole body, ascending)."""
        base = 0
        k = 0
        for ev in self.events:
            end = base + len(ev.raw)
            mine = []
            while k < len(cuts) and cuts[k][0] <= end:
                if cuts[k][0] > base:
                    mine.append((cuts[k][0] - base, cuts[k][1]))
                k += 1
            ev.cuts = mine
            base = end
        self.tail_t = cuts[-1][1] if cuts else self.tail_t


def parse(
    chunks: list[tuple[float | None, bytes]], header: Header, api: str, converter: str
) -> Stream:
    """The events of a recorded SSE body, or the lines of an NDJSON one (``chunks``: its reads),
    boundaries kept."""
    body = b"".join(data for _, data in chunks)
    bounds: list[Cut] = []
    at = 0
    for t, data in chunks:
        at += len(data)
        bounds.append((at, t))
    if sniff(body) == "ndjson":
        return _with_cuts(_lines(body), bounds, Stream([], header, api, converter, "ndjson"))
    events: list[Event] = []
    start = 0
    pos = 0
    has_field = False
    for m in _LINE.finditer(body):
        line = m.group()
        pos = m.end()
        if line.strip(b"\r\n"):
            has_field = True
            continue
        if not line.endswith((b"\n", b"\r")):
            continue
        if has_field:  # a blank line ends the event; blank lines between events stay with it
            events.append(Event(body[start:pos]))
            start = pos
            has_field = False
        elif events:
            events[-1] = Event(events[-1].raw + body[start:pos])
            start = pos
        else:
            has_field = False
    if start < len(body):
        events.append(Event(body[start:]))
    return _with_cuts(events, bounds, Stream([], header, api, converter))


def _lines(body: bytes) -> list[Event]:
    """The lines of an NDJSON body, each an event (blank lines stay with the line before)."""
    events: list[Event] = []
    lead = b""
    for m in _LINE.finditer(body):
        line = m.group()
        if not line.strip():
            if events:
                events[-1].raw += line
            else:
                lead += line
            continue
        events.append(Event(lead + line, bare=True))
        lead = b""
    return events


def _with_cuts(events: list[Event], bounds: list[Cut], stream: Stream) -> Stream:
    """``stream`` holding ``events``, the read boundaries handed to the events they fall in."""
    base = 0
    k = 0
    for ev in events:
        end = base + len(ev.raw)
        while k < len(bounds) and bounds[k][0] <= end:
            if bounds[k][0] > base:
                ev.cuts.append((bounds[k][0] - base, bounds[k][1]))
            k += 1
        base = end
    stream.events = events
    stream.tail_t = bounds[-1][1] if bounds else None
    return stream
