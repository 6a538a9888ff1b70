"""What every encoder shares: the timed output, SSE framing, the HTTP error response. Sans-IO."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .reply import Clock, Reply


@dataclass(slots=True)
class Emitted:
    """A reply as one API's HTTP response: status, content type and the body's reads, each at
    the time (seconds since the request) it is sent. ``complete`` is false for a stream that
    was cut off (it ends without its closing events)."""

    status: int = 200
    content_type: str = "text/event-stream; charset=utf-8"
    reads: list[tuple[float, str]] = field(default_factory=list)
    t_end: float = 0.0
    complete: bool = True

    @property
    def body(self) -> str:
        return "".join(text for _, text in self.reads)


class Out:
    """Collects an emitter's events with their times (never earlier than the one before).

    Events at one time make one read, as a server flushes them. Each read, once whole, is kept
    in the :class:`Emitted` or, when the reply has a ``sink``, handed to it (and not kept)."""

    def __init__(self, reply: Reply) -> None:
        self.clock = Clock(reply)
        self.offset = 0  # how much of the reply's meaning the events so far carry
        self.emitted = Emitted()
        self._t = 0.0
        self._sink = reply.sink
        self._held: list[str] = []  # the events of the read at ``_t``, not yet handed on

    def send(self, text: str, *, advance: int = 0, t: float | None = None) -> None:
        self.offset += advance
        when = self.clock.at(self.offset) if t is None else t
        if when > self._t:
            self._flush()
            self._t = when
        self._held.append(text)

    def _flush(self) -> None:
        if not self._held:
            return
        text = "".join(self._held)
        self._held = []
        if self._sink is not None:
            self._sink(self._t, text)
        else:
            self.emitted.reads.append((self._t, text))

    def opening(self, text: str) -> None:
        self.send(text, t=self.clock.t_first)

    def closing(self, text: str) -> None:
        self.send(text, t=self.clock.t_end)

    def done(self, *, complete: bool = True) -> Emitted:
        self._flush()
        self.emitted.t_end = max(self.clock.t_end, self._t)
        self.emitted.complete = complete
        return self.emitted


def dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def data_event(obj: Any) -> str:
    return f"data: {dumps(obj)}\n\n"


def named_event(name: str, obj: Any) -> str:
    return f"event: {name}\ndata: {dumps(obj)}\n\n"


def error_response(reply: Reply, body: dict[str, Any]) -> Emitted:
    """A reply that is an HTTP error: its status and ``body``, the error in the API's shape
    (each encoder shapes its own)."""
    return Emitted(
        status=reply.status,
        content_type="application/json",
        reads=[(reply.t_first, json.dumps(body, ensure_ascii=False))],
        t_end=reply.t_end,
    )


def error_kind(reply_error: dict[str, Any] | None, default: str) -> str:
    """An in-band error's type, when the original named one."""
    if reply_error:
        for key in ("type", "code", "status"):
            value = reply_error.get(key)
            if isinstance(value, str) and value:
                return value
    return default
