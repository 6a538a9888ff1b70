"""An MCP response body as its events, with where each lies in the recorded bytes (sans-IO).

A served MCP answer is the recorded body with a few values changed (the JSON-RPC ids and
progress tokens of the client that asks now, a fresh session id): :func:`events_of` cuts a body
into its SSE events (or takes a JSON body as one), each with its byte span, fields and parsed
message; :func:`splice` writes edits into the recorded reads, keeping every other byte, the read
boundaries and their times.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...wire import fastjson
from ...wire.sse import SSEDecoder, SSEEvent

# the blank line that ends an SSE event: two line ends in a row (CRLF, LF or CR)
_EVENT_END = re.compile(rb"(?:\r\n|\n|\r)(?:\r\n|\n|\r)")
_LINE_END = re.compile(rb"\r\n|\n|\r")

Reads = list[tuple[float | None, bytes]]


@dataclass(slots=True)
class Event:
    """One event of a body (an SSE event, or a whole JSON body) and where it lies."""

    start: int
    end: int  # just past its blank line
    raw: bytes
    data: str | None = None  # None: no data field (a comment, or a field-only block)
    id: str | None = None
    retry: int | None = None
    message: Any = None  # the data parsed as JSON (one message, or a batch), else None

    @property
    def priming(self) -> bool:
        """An event with empty data (2025-11-25: the cursor a stream can be resumed from)."""
        return self.data is not None and not self.data.strip()


def is_sse(headers: Sequence[tuple[str, str]] | dict[str, Any]) -> bool:
    """A response whose content type is ``text/event-stream``."""
    items = headers.items() if isinstance(headers, dict) else headers
    return any(k.lower() == "content-type" and "event-stream" in str(v) for k, v in items)


def _parse(data: str) -> Any:
    try:
        return fastjson.loads(data)
    except ValueError:
        return None


def events_of(body: bytes, sse: bool) -> list[Event]:
    """The events of a body: each SSE event with its span, or a JSON body as one event."""
    if not sse:
        if not body.strip():
            return []
        text = body.decode("utf-8", "replace")
        return [Event(0, len(body), body, text, message=_parse(text))]
    out: list[Event] = []
    start = 0
    for m in _EVENT_END.finditer(body):
        out.append(_event(body, start, m.end()))
        start = m.end()
    if start < len(body):  # a last event without its blank line (the stream was cut)
        out.append(_event(body, start, len(body)))
    return out


def _event(body: bytes, start: int, end: int) -> Event:
    raw = body[start:end]
    decoder = SSEDecoder()
    items = decoder.feed(raw) + decoder.finish()
    found = next((i for i in items if type(i) is SSEEvent), None)
    event = Event(start, end, raw)
    if found is not None:
        event.data = found.data
        event.id = found.id
        event.retry = found.retry
        event.message = _parse(found.data) if found.data.strip() else None
    else:  # no data: an id or retry field alone still sets the stream's cursor
        for line in _LINE_END.split(raw):
            name, _, value = line.decode("utf-8", "replace").partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "id":
                event.id = value
            elif name == "retry" and value.isdigit():
                event.retry = int(value)
    return event


def dumps(message: Any) -> str:
    """A message as MCP servers write it: compact JSON, the characters as they are."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":"))


def with_data(event: Event, data: str, sse: bool) -> bytes:
    """An event's bytes with its data replaced (its other fields and line ends kept)."""
    if not sse:
        return data.encode("utf-8")
    found = _LINE_END.search(event.raw)
    newline = found.group() if found else b"\n"
    lines = _LINE_END.split(event.raw)
    ended = event.raw.endswith((b"\n", b"\r"))
    out: list[bytes] = []
    wrote = False
    # an event ended by its line end: the last piece follows it (empty)
    for line in lines[:-1] if ended else lines:
        if line.startswith(b"data:"):
            if not wrote:
                out.append(b"data: " + data.encode("utf-8"))
                wrote = True
            continue
        out.append(line)
    return newline.join(out) + (newline if ended else b"")


def splice(reads: Reads, edits: Sequence[tuple[int, int, bytes]]) -> Reads:
    """``reads`` with ``edits`` (``(start, end, new bytes)`` over the joined body, in order,
    not overlapping) written in. Unchanged bytes stay in the read they came in, with its time;
    an edited span goes with the read that held its end."""
    if not edits:
        return list(reads)
    body = b"".join(data for _, data in reads)
    new_parts: list[bytes] = []
    pos = 0
    for start, end, data in edits:
        new_parts += [body[pos:start], data]
        pos = end
    new_parts.append(body[pos:])
    new_body = b"".join(new_parts)

    def moved(offset: int) -> int:
        shift = 0
        for start, end, data in edits:
            if offset <= start:
                break
            if offset < end:  # inside an edit: to its new end
                return end + shift + len(data) - (end - start)
            shift += len(data) - (end - start)
        return offset + shift

    out: Reads = []
    offset = 0
    begin = 0
    for t, data in reads:
        offset += len(data)
        stop = moved(offset)
        if stop > begin:
            out.append((t, new_body[begin:stop]))
        begin = max(begin, stop)
    if begin < len(new_body):  # edits past the last read (cannot happen; kept whole)
        out.append((reads[-1][0] if reads else None, new_body[begin:]))
    return out
