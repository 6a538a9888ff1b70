"""What every emitter shares: the timed output, SSE framing, HTTP error bodies. Sans-IO."""

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
    """Collects an emitter's events with their times (never earlier than the one before)."""

    def __init__(self, reply: Reply) -> None:
        self.clock = Clock(reply)
        self.offset = 0  # how much of the reply's meaning the events so far carry
        self.emitted = Emitted()
        self._t = 0.0

    def send(self, text: str, *, advance: int = 0, t: float | None = None) -> None:
        self.offset += advance
        when = self.clock.at(self.offset) if t is None else t
        when = max(when, self._t)
        self._t = when
        reads = self.emitted.reads
        if reads and reads[-1][0] == when:
            reads[-1] = (when, reads[-1][1] + text)  # one read, as a server flushes them
        else:
            reads.append((when, text))

    def opening(self, text: str) -> None:
        self.send(text, t=self.clock.t_first)

    def closing(self, text: str) -> None:
        self.send(text, t=self.clock.t_end)

    def done(self, *, complete: bool = True) -> Emitted:
        self.emitted.t_end = max(self.clock.t_end, self._t)
        self.emitted.complete = complete
        return self.emitted


def dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def data_event(obj: Any) -> str:
    return f"data: {dumps(obj)}\n\n"


def named_event(name: str, obj: Any) -> str:
    return f"event: {name}\ndata: {dumps(obj)}\n\n"


_OPENAI_TYPES = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error"}
_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    429: "rate_limit_error",
    529: "overloaded_error",
}
_GEMINI_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    503: "UNAVAILABLE",
}


def error_response(reply: Reply, style: str) -> Emitted:
    """A reply that is an HTTP error: its status and the error body in the API's shape."""
    status = reply.status
    message = reply.error_message()
    obj: dict[str, Any]
    if style == "anthropic":
        kind = _ANTHROPIC_TYPES.get(status, "api_error")
        obj = {"type": "error", "error": {"type": kind, "message": message}}
    elif style == "gemini":
        obj = {
            "error": {
                "code": status,
                "message": message,
                "status": _GEMINI_STATUS.get(status, "INTERNAL"),
            }
        }
    else:
        kind = _OPENAI_TYPES.get(
            status, "server_error" if status >= 500 else "invalid_request_error"
        )
        obj = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return Emitted(
        status=status,
        content_type="application/json",
        reads=[(reply.t_first, json.dumps(obj, ensure_ascii=False))],
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
