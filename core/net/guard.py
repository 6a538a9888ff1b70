"""The connection guard: what every listener holds its connections to.

:class:`ConnectionLimits` (``--max-connections``, ``--header-timeout``) says how many connections a
server keeps open and how long a request head may take; :func:`connection_limit` derives the
default from the open-file limit; :func:`guarded` makes the uvicorn HTTP protocol that enforces
them, with :class:`ConnectionGuard` keeping the count. uvicorn and h11 are imported only inside
:func:`guarded`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

HEADER_TIMEOUT = 10.0  # seconds a request head may take to arrive (--header-timeout)
# descriptors the connection limit leaves to the rest of the process (this many, or an eighth of
# the open-file limit if more): stdio, the event loop, recordings, upstream connections, and the
# connections accepted but not counted yet (at most ACCEPT_BURST per turn of the event loop)
FD_RESERVE = 64
ACCEPT_BURST = 8
REPORT_EVERY = 10.0  # seconds between two log lines about connections closed or refused
_UNLIMITED = 1 << 20  # the open-file limit taken when the system sets none
_server_log = logging.getLogger("uvicorn.error")


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """How many connections a server holds open, and how long a request head may take."""

    max_connections: int
    header_timeout: float = HEADER_TIMEOUT


def _open_file_limits() -> tuple[int, int]:
    """RLIMIT_NOFILE (soft, hard)."""
    try:
        import resource
    except ImportError:  # no such limit (Windows)
        return _UNLIMITED, _UNLIMITED
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    infinity = resource.RLIM_INFINITY
    return (_UNLIMITED if soft == infinity else soft), (_UNLIMITED if hard == infinity else hard)


def _connections_for(files: int, fds_each: int) -> int:
    """The connections ``files`` descriptors hold, the reserve kept back."""
    return max(0, files - max(FD_RESERVE, files // 8)) // fds_each


def connection_limit(requested: int | None = None, fds_each: int = 1) -> int:
    """The connection limit (``--max-connections``).

    By default, as many connections as the open-file limit (RLIMIT_NOFILE) holds with a reserve
    kept back, each counted as ``fds_each`` descriptors (a proxied exchange also holds its
    upstream connection and its recording). A ``requested`` limit the soft open-file limit is too
    low for raises it, up to the hard one; beyond that it is a ``ValueError`` with a sentence.
    """
    soft, hard = _open_file_limits()
    if requested is None:
        return max(1, _connections_for(soft, fds_each))
    if requested < 1:
        raise ValueError(f"--max-connections must be at least 1, not {requested}")
    if requested <= _connections_for(soft, fds_each):
        return requested
    need = requested * fds_each
    files = max(need + FD_RESERVE, -(-need * 8 // 7))  # the fewest that hold them
    if files <= hard and _raise_open_file_limit(files, hard):
        return requested
    raise ValueError(
        f"--max-connections {requested}: the open-file limit (ulimit -n) of {hard} holds at "
        f"most {max(1, _connections_for(hard, fds_each))}"
    )


def _raise_open_file_limit(files: int, hard: int) -> bool:
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_NOFILE, (files, hard))
    except (ImportError, ValueError, OSError):
        return False
    return True


def header_timeout(seconds: float) -> float:
    """``--header-timeout``: more than 0 seconds (``inf``: none); ``ValueError`` otherwise."""
    if not seconds > 0:  # also NaN
        raise ValueError(
            f"--header-timeout must be a number of seconds more than 0 (inf: none), not {seconds:g}"
        )
    return seconds


class ConnectionGuard:
    """The connections of one server, counted against its limit (the bookkeeping; the protocol
    made by :func:`guarded` acts on it).

    ``waiting`` holds, oldest first, the connections without a complete request head: new ones,
    and kept-alive ones between two requests. At the limit a new connection closes the oldest of
    them to take its place, so connections that never finish a head (slowloris) cannot keep a
    client out; when every connection is busy with a request, the new one gets a 503 at once.
    """

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limit = limits.max_connections
        self.header_timeout = limits.header_timeout
        self.open: set[Any] = set()
        self.waiting: dict[Any, None] = {}
        self.counts = {"evicted": 0, "refused": 0, "timed out": 0}
        self._reports: dict[str, Any] = {}  # kind -> the timer of its next log line

    def admit(self, conn: Any) -> bool:
        """Count a new connection in, closing the oldest waiting one at the limit; ``False``
        when it is to be refused."""
        if len(self.open) >= self.limit:
            victim = next(iter(self.waiting), None)
            if victim is None:
                return False
            self.forget(victim)
            victim.evict()
            self.note("evicted")
        self.open.add(conn)
        self.waiting[conn] = None
        return True

    def wait(self, conn: Any) -> None:
        """``conn`` waits for a request head from now on (the newest waiting)."""
        if conn in self.open:
            self.waiting.pop(conn, None)
            self.waiting[conn] = None

    def busy(self, conn: Any) -> None:
        """``conn`` got a complete request head."""
        self.waiting.pop(conn, None)

    def forget(self, conn: Any) -> None:
        self.open.discard(conn)
        self.waiting.pop(conn, None)

    def note(self, what: str) -> None:
        """Count a connection closed or refused (``evicted``, ``refused``, ``timed out``) for
        the log: the first of a kind at once, the next ones summed, at most one line per kind
        every :data:`REPORT_EVERY` seconds."""
        self.counts[what] += 1
        if what not in self._reports:
            self._report(what)

    def _report(self, what: str) -> None:
        import asyncio

        count = self.counts[what]
        self.counts[what] = 0
        if not count:
            self._reports.pop(what, None)
            return
        if what == "evicted":
            line = (
                f"closed {_n(count, 'connection')} still without a request head to make room"
                f" (--max-connections {self.limit})"
            )
        elif what == "refused":
            line = (
                f"answered {_n(count, 'new connection')} 503: all {self.limit} are busy with"
                " requests (--max-connections)"
            )
        else:
            line = (
                f"closed {_n(count, 'connection')} whose request head took longer than"
                f" {self.header_timeout:g} s (--header-timeout)"
            )
        _server_log.warning("%s", line)
        loop = asyncio.get_running_loop()
        self._reports[what] = loop.call_later(REPORT_EVERY, self._report, what)


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' if count != 1 else ''}"


def _plain_response(status: str, text: str, *headers: str) -> bytes:
    """A whole HTTP/1.1 response closing its connection, written without a request read."""
    body = text.encode()
    head = [
        f"HTTP/1.1 {status}",
        "content-type: text/plain; charset=utf-8",
        f"content-length: {len(body)}",
        *headers,
        "connection: close",
    ]
    return "\r\n".join(head).encode() + b"\r\n\r\n" + body


_REFUSED = _plain_response(
    "503 Service Unavailable", "every connection the server takes is busy", "retry-after: 1"
)
_TIMED_OUT = _plain_response("408 Request Timeout", "the request head took too long to arrive")


def guarded(limits: ConnectionLimits) -> dict[str, Any]:
    """``uvicorn.Config`` settings that hold a server to ``limits``: ``Config(app, **guarded(l))``.

    The HTTP protocol is uvicorn's h11 one, plus:

    - a header timeout: a connection whose request head is not complete ``header_timeout``
      seconds after it opened, or after the head's first byte on a kept-alive connection (the
      idle wait before it is uvicorn's ``timeout_keep_alive``), is closed, with a 408 when part
      of a head came;
    - a connection limit, ``max_connections``: at the limit, a new connection closes the oldest
      one still without a complete request head to take its place; if every connection is busy
      with a request, the new one is answered 503 and closed at once.

    The asyncio event loop is used (the listening socket of :func:`.listen.bind` paces its accepts
    there), and no WebSockets.
    """
    import asyncio

    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    guard = ConnectionGuard(limits)
    timeout = limits.header_timeout

    class GuardedH11Protocol(H11Protocol):
        _head_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if not guard.admit(self):
                guard.note("refused")
                self.transport.write(_REFUSED)
                self.transport.close()
                return
            self._start_head_timer()

        def data_received(self, data: bytes) -> None:
            if self._head_timer is None and self in guard.waiting:
                # a kept-alive connection: the head's clock starts with its first byte
                self._start_head_timer()
            super().data_received(data)

        def handle_events(self) -> None:
            cycle = self.cycle
            super().handle_events()
            if self.cycle is not cycle:
                self._head_done()
            elif (
                self.cycle is not None
                and self.cycle.response_complete
                and self.conn.our_state is h11.IDLE
                and self.conn.their_state is h11.IDLE
                and self not in guard.waiting
            ):
                # the rest of a body answered early has arrived: waiting for the next request
                self._waiting()

        def on_response_complete(self) -> None:
            if not self.transport.is_closing() and self.conn.their_state is h11.DONE:
                self._waiting()
            super().on_response_complete()  # may go on with a request already received

        def connection_lost(self, exc: Exception | None) -> None:
            guard.forget(self)
            self._stop_head_timer()
            super().connection_lost(exc)

        def evict(self) -> None:
            """Closed to make room for a new connection."""
            self._stop_head_timer()
            if self.transport.get_write_buffer_size():
                self.transport.abort()  # what a kept-alive client has not read is not waited for
            else:
                self.transport.close()

        def _waiting(self) -> None:
            guard.wait(self)
            self._stop_head_timer()
            if self.conn.trailing_data[0]:  # part of the next head is here already
                self._start_head_timer()

        def _head_done(self) -> None:
            guard.busy(self)
            self._stop_head_timer()

        def _start_head_timer(self) -> None:
            if timeout != float("inf"):
                self._head_timer = self.loop.call_later(timeout, self._head_timed_out)

        def _stop_head_timer(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_timed_out(self) -> None:
            self._head_timer = None
            if self.transport.is_closing() or self not in guard.waiting:
                return
            guard.forget(self)
            guard.note("timed out")
            if self.conn.trailing_data[0]:
                self.transport.write(_TIMED_OUT)
            self.transport.close()

    return {"http": GuardedH11Protocol, "ws": "none", "loop": "asyncio"}
