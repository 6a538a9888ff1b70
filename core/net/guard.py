"""The connection guard: what every listener holds its connections to.

:class:`ConnectionLimits` (``--max-connections``, ``--header-timeout``) says how many connections a
server keeps open and how long a request head may take; :func:`connection_limit` derives the
default from the open-file limit; :func:`guarded` gives the uvicorn settings that enforce them
(uvicorn's h11 protocol wrapped, through its public configuration), with
:class:`ConnectionGuard` keeping the count. uvicorn is imported only inside :func:`guarded`.
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


def guarded(limits: ConnectionLimits, app: Any, *, websockets: bool = False) -> dict[str, Any]:
    """``uvicorn.Config`` settings that run ``app`` held to ``limits``:
    ``Config(**guarded(limits, app), ...)``.

    uvicorn's h11 protocol does the HTTP; it is wrapped, through uvicorn's public ``http``
    setting (a protocol class) and an ASGI middleware, never reaching into uvicorn's own state:

    - a header timeout: a connection whose request head is not complete ``header_timeout``
      seconds after it opened, or after the first byte that followed a response on a kept-alive
      connection (the idle wait before it is uvicorn's ``timeout_keep_alive``), is closed, with
      a 408 when bytes of a head came. A head is complete when uvicorn hands the request to the
      app (the middleware sees it, and finds the connection by the client's address);
    - a connection limit, ``max_connections``: at the limit, a new connection closes the oldest
      one still without a complete request head to take its place; if every connection is busy
      with a request, the new one is answered 503 and closed at once.

    The asyncio event loop is used (the listening socket of :func:`.listen.bind` paces its
    accepts there). ``websockets``: upgrades to WebSocket are taken (uvicorn's
    ``websockets-sansio`` protocol); an upgraded connection counts as busy until its session
    ends (its protocol is no longer the guard's once upgraded); else no WebSockets.
    """
    import asyncio

    from uvicorn.protocols.http.h11_impl import H11Protocol

    guard = ConnectionGuard(limits)
    timeout = limits.header_timeout
    by_address: dict[tuple[str, int], GuardedProtocol] = {}

    class GuardedProtocol(asyncio.Protocol):
        """uvicorn's h11 protocol, with the connection counted and its request heads timed."""

        def __init__(self, **settings: Any) -> None:
            self.http = H11Protocol(**settings)
            self.transport: asyncio.Transport | None = None
            self.address: tuple[str, int] | None = None
            self.head_timer: asyncio.TimerHandle | None = None
            self.head_bytes = 0  # bytes received while waiting for a head
            self.admitted = False  # uvicorn's protocol has the connection (not refused)

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            assert isinstance(transport, asyncio.Transport)
            self.transport = transport
            if not guard.admit(self):
                guard.note("refused")
                transport.write(_REFUSED)
                transport.close()
                return
            peer = transport.get_extra_info("peername")
            if isinstance(peer, tuple) and len(peer) >= 2:
                self.address = (str(peer[0]), int(peer[1]))
                by_address[self.address] = self
            self.admitted = True
            self.http.connection_made(transport)
            self.start_head_timer()

        def data_received(self, data: bytes) -> None:
            if not self.admitted:
                return  # refused: closing
            if self in guard.waiting:
                self.head_bytes += len(data)
                if self.head_timer is None:
                    # a kept-alive connection: the head's clock starts with its first byte
                    self.start_head_timer()
            self.http.data_received(data)

        def eof_received(self) -> None:
            if self.admitted:
                self.http.eof_received()

        def connection_lost(self, exc: Exception | None) -> None:
            guard.forget(self)
            self.stop_head_timer()
            if self.address is not None and by_address.get(self.address) is self:
                del by_address[self.address]
            if self.admitted:
                self.http.connection_lost(exc)

        def pause_writing(self) -> None:
            if self.admitted:
                self.http.pause_writing()

        def resume_writing(self) -> None:
            if self.admitted:
                self.http.resume_writing()

        # the guard's side
        def head_done(self) -> None:
            guard.busy(self)
            self.stop_head_timer()

        def answered(self) -> None:
            """The app is done with a request: waiting for the next head from now on."""
            if self.transport is None or self.transport.is_closing():
                return
            guard.wait(self)
            self.stop_head_timer()
            self.head_bytes = 0

        def evict(self) -> None:
            """Closed to make room for a new connection."""
            self.stop_head_timer()
            assert self.transport is not None
            if self.transport.get_write_buffer_size():
                self.transport.abort()  # what a kept-alive client has not read is not waited for
            else:
                self.transport.close()

        def start_head_timer(self) -> None:
            if timeout != float("inf"):
                loop = asyncio.get_running_loop()
                self.head_timer = loop.call_later(timeout, self.head_timed_out)

        def stop_head_timer(self) -> None:
            if self.head_timer is not None:
                self.head_timer.cancel()
                self.head_timer = None

        def head_timed_out(self) -> None:
            self.head_timer = None
            transport = self.transport
            if transport is None or transport.is_closing() or self not in guard.waiting:
                return
            guard.forget(self)
            guard.note("timed out")
            if self.head_bytes:
                transport.write(_TIMED_OUT)
            transport.close()

    async def guarded_app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":
            await session_app(scope, receive, send)
            return
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        client = scope.get("client")
        conn = by_address.get((str(client[0]), int(client[1]))) if client else None
        if conn is not None:
            conn.head_done()
        try:
            await app(scope, receive, send)
        finally:
            if conn is not None:
                conn.answered()

    async def session_app(scope: Any, receive: Any, send: Any) -> None:
        """A WebSocket session: busy while it lasts, then no longer counted (the upgraded
        connection's protocol is uvicorn's, which the guard does not see close)."""
        client = scope.get("client")
        conn = by_address.get((str(client[0]), int(client[1]))) if client else None
        if conn is not None:
            conn.head_done()
        try:
            await app(scope, receive, send)
        finally:
            if conn is not None:
                guard.forget(conn)
                if conn.address is not None and by_address.get(conn.address) is conn:
                    del by_address[conn.address]

    ws = "websockets-sansio" if websockets else "none"
    return {"app": guarded_app, "http": GuardedProtocol, "ws": ws, "loop": "asyncio"}
