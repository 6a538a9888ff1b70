"""What a response means, whatever wire API carried it: the input of every emitter. Sans-IO.

A :class:`Reply` is the ordered parts of one response (text, reasoning, a refusal, tool calls
with their whole argument text, in-band errors), its finish class, usage and model, and when
each part's characters arrived (``marks``): an emitter cuts the parts the way its provider
chunks and reads the time of every event it writes off the :class:`Clock`, so the original's
timing is scaled onto the new events.

A reply comes from a replay (:class:`ReplyBuilder`, fed the engine's items) or from a script of
turns (``streamtool.core.net.script``).
"""

from __future__ import annotations

import hashlib
import json
from bisect import bisect_left
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ...model import SegmentEvent, SegmentEventType, SegmentType, StreamError, ToolInvocation
from ...model.records import Header
from ...model.vocabulary import ErrorKind
from ...pipeline.segment_log import Segment, SegmentLog

TEXT = "text"
REASONING = "reasoning"
REFUSAL = "refusal"
TOOL_CALL = "tool_call"
ERROR = "error"

_TOOL_SEGMENTS = (
    SegmentType.TOOL_CALL,
    SegmentType.WRITE_FILE,
    SegmentType.PATCH_FILE,
    SegmentType.RUN_BASH,
)


@dataclass(slots=True)
class Part:
    """One part of a reply, in the order the response gave it.

    ``text`` is the text of a text, reasoning or refusal part, or the whole argument text (JSON)
    of a tool call. ``pieces``, when set, is how the part must be cut (a script that borrows a
    real recording's chunk sizes, or asks for the part whole); else the emitter cuts it the way
    its provider does. ``error`` is an error part's object (``message``, ``type``, ``code``).
    ``cut`` marks a tool call the stream ended in the middle of (the provider never closed it,
    an error came instead): an emitter sends it without its closing events, as the original.
    """

    kind: str
    text: str = ""
    call_id: str | None = None
    name: str | None = None
    error: dict[str, Any] | None = None
    pieces: list[str] | None = None
    cut: bool = False


@dataclass(slots=True)
class Reply:
    parts: list[Part] = field(default_factory=list)
    finish_class: str = "stop"  # a class of core/model/finish.py
    usage: dict[str, int] | None = None  # normalized keys (core/model/usage.py)
    model: str = ""
    truncated: bool = False  # the stream was cut off: no finish, no closing events
    status: int = 200  # an HTTP error status: the reply is one error body, not a stream
    seed: str = ""  # what the deterministic ids are derived from
    created: int = 0  # Unix seconds, for the fields that carry a creation time
    # timing: (meaning offset, seconds) marks, the time of the first byte and of the end
    marks: list[tuple[int, float]] = field(default_factory=list)
    t_first: float = 0.0
    t_end: float = 0.0

    def client_calls(self) -> list[Part]:
        return [p for p in self.parts if p.kind == TOOL_CALL]

    def error_message(self) -> str:
        for part in self.parts:
            if part.kind == ERROR and part.error:
                return error_message(part.error)
        return "error"

    def ident(self, prefix: str, salt: str | int = "", length: int = 24) -> str:
        """A deterministic id: ``prefix`` and a hash of the reply's seed and ``salt``."""
        digest = hashlib.sha256(f"{self.seed}\x00{prefix}\x00{salt}".encode()).hexdigest()
        return prefix + digest[:length]


def error_message(error: dict[str, Any] | None) -> str:
    """An error part's message ("error" when its object has none)."""
    message = (error or {}).get("message")
    return message if isinstance(message, str) and message else "error"


class Clock:
    """The time of an event from how much of the reply's meaning has been written by then.

    The reply's marks say when each offset of its meaning (every part's characters, in order)
    arrived in the original; an event that completes offset ``n`` is given the time the
    original reached ``n``, interpolated between marks. Opening events come at ``t_first``,
    closing ones at ``t_end``.
    """

    def __init__(self, reply: Reply) -> None:
        marks = sorted(reply.marks)
        self.offsets = [m[0] for m in marks]
        self.times = [m[1] for m in marks]
        self.t_first = reply.t_first
        self.t_end = max(reply.t_end, self.times[-1] if self.times else reply.t_first)

    def at(self, offset: int) -> float:
        offsets, times = self.offsets, self.times
        if not offsets:
            return self.t_first
        i = bisect_left(offsets, offset)
        if i >= len(offsets):
            return times[-1]
        if offsets[i] == offset or i == 0:
            if i == 0 and offset < offsets[0] and offsets[0] > 0:
                span = times[0] - self.t_first
                return self.t_first + span * offset / offsets[0]
            return times[i]
        o0, o1 = offsets[i - 1], offsets[i]
        t0, t1 = times[i - 1], times[i]
        return t0 + (t1 - t0) * (offset - o0) / (o1 - o0)


def arguments_text(invocation: ToolInvocation) -> str:
    """A call's argument text as JSON: the parsed arguments, else the raw text as received."""
    if invocation.arguments is not None:
        return json.dumps(invocation.arguments, ensure_ascii=False)
    return invocation.raw_arguments or ""


class ReplyBuilder:
    """Engine items in (``feed(engine, t, items)``), a :class:`Reply` out (``build(engine)``).

    Text, reasoning and refusal segments become parts (their text is the engine's segment's:
    the engine keeps the segments, ``ReplayEngine(segments=...)``; their deltas are marked with
    the time of the read that brought them); a client tool call becomes a part where its segment
    started, filled in when its invocation is whole (calls the provider ran itself are not the
    client's and are left out); a provider error becomes an error part; a cut-off stream stays
    cut off.
    """

    def __init__(self) -> None:
        self.reply = Reply()
        self._offset = 0
        self._open: dict[str, Part] = {}  # segment id -> its part
        self._calls: dict[str, Part] = {}  # tool segment id -> its (not yet filled) part
        self._texts: list[tuple[Part, Segment]] = []  # text parts and the segment of each
        self._taken = 0  # the engine's segments seen (one per START)
        self._last_t: float | None = None

    def feed(self, engine: Any, t: float | None, items: list[Any]) -> None:
        if t is not None:
            self._last_t = t
        now = self._last_t if self._last_t is not None else 0.0
        parts = self.reply.parts
        log: SegmentLog | None = engine.segments
        if log is None:
            raise ValueError("a reply is built from the engine's segments: keep them")
        for item in items:
            if isinstance(item, SegmentEvent):
                kind = item.event_type
                if kind is SegmentEventType.CONTENT:
                    part = self._open.get(item.segment_id)
                    if part is not None and item.delta and part.kind != TOOL_CALL:
                        self._offset += len(item.delta)
                        self.reply.marks.append((self._offset, now))
                elif kind is SegmentEventType.START:
                    source = log.segments[self._taken]
                    self._taken += 1
                    seg = item.segment_type
                    if seg is SegmentType.TEXT:
                        refusal = bool(item.metadata and item.metadata.get("refusal") is True)
                        part = Part(REFUSAL if refusal else TEXT)
                        self._texts.append((part, source))
                    elif seg is SegmentType.REASONING:
                        part = Part(REASONING)
                        self._texts.append((part, source))
                    elif seg in _TOOL_SEGMENTS:
                        part = Part(TOOL_CALL)
                        self._calls[item.segment_id] = part
                    else:
                        continue
                    self._open[item.segment_id] = part
                    parts.append(part)
                else:
                    part = self._open.pop(item.segment_id, None)
                    metadata = item.metadata or {}
                    if part is None:
                        continue
                    if part.kind == TEXT and metadata.get("refusal") is True:
                        part.kind = REFUSAL
                    elif part.kind == TOOL_CALL and metadata.get("unclosed") is True:
                        part.cut = True
            elif isinstance(item, ToolInvocation):
                part = self._calls.pop(item.id, None)
                if part is None:
                    continue
                if item.server_side:
                    parts.remove(part)
                    continue
                part.call_id = item.answer_id
                part.name = item.name
                part.text = arguments_text(item)
                self._offset += len(part.text)
                self.reply.marks.append((self._offset, now))
            elif isinstance(item, StreamError):
                if item.kind == ErrorKind.PROVIDER_ERROR:
                    parts.append(Part(ERROR, error=_error_object(item)))
                elif item.kind == ErrorKind.TRUNCATED:
                    self.reply.truncated = True

    def build(self, engine: Any) -> Reply:
        """The reply, completed from the finished engine (finish, usage, model, times)."""
        reply = self.reply
        for part, segment in self._texts:
            part.text = segment.text
        # calls whose invocation never came (a stream cut mid-call) are not sent
        unfilled = {id(p) for p in self._calls.values()}
        reply.parts = [p for p in reply.parts if id(p) not in unfilled]
        reply.finish_class = engine.finish_class()
        reply.usage = dict(engine.usage) if engine.usage else None
        reply.model = engine.model or engine.header.model or ""
        status = engine.header.response.get("status")
        if isinstance(status, int) and status >= 400:
            reply.status = status
        seed, created = stream_identity(engine.header)
        reply.seed = seed
        reply.created = created
        reply.t_first = engine.first_t or 0.0
        reply.t_end = engine.last_t or reply.t_first
        if reply.truncated:
            reply.finish_class = "unknown"
        return reply


def _error_object(error: StreamError) -> dict[str, Any]:
    """A provider error as an error part's object: the provider's own message when its detail
    has one (``message``, or ``error.message``), else the error's own message (a detail without
    one: Cohere's message-end says ``error`` as a bare string), and its type, code, status."""
    detail = error.detail
    out: dict[str, Any] = {"message": error.message}
    if isinstance(detail, dict):
        nested = detail.get("error")
        inner: dict[str, Any] = nested if isinstance(nested, dict) else detail
        message = inner.get("message")
        if isinstance(message, str) and message:
            out["message"] = message
        for key in ("type", "code", "status"):
            if isinstance(inner.get(key), (str, int)):
                out[key] = inner[key]
    return out


def stream_identity(header: Header | None) -> tuple[str, int]:
    """A deterministic completion id and ``created`` time for a recording.

    The id hashes the header (the same recording always gets the same id); ``created`` is the
    header's ``recorded_at`` as Unix seconds, or 0 when unknown.
    """
    record = header.to_record() if header is not None else {}
    digest = hashlib.sha256(
        json.dumps(record, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8")
    ).hexdigest()
    created = 0
    recorded_at = header.recorded_at if header is not None else None
    if isinstance(recorded_at, str):
        try:
            created = int(datetime.fromisoformat(recorded_at.replace("Z", "+00:00")).timestamp())
        except ValueError:
            created = 0
    return f"chatcmpl-st{digest[:24]}", created
