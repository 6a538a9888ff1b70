"""The connection guard: what every listener holds its connections to.

:class:`ConnectionLimits` (``--max-connections``, ``--header-timeout``) says how many connections a
server keeps open and how long a request head may take; :func:`connection_limit` derives the
default from the open-file limit; :func:`guarded` gives the uvicorn settings that enforce them
(uvicorn's httptools protocol wrapped, through its public configuration), with
:class:`ConnectionGuard` keeping the count, and cutting the requests in progress when the server
stops (:func:`stop_requests`). uvicorn is imported only inside :func:`guarded`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from typing import Any
from urllib.parse import unquote

HEADER_TIMEOUT = 10.0  # seconds a request head may take to arrive (--header-timeout)
# descriptors the connection limit leaves to the rest of the process (this many, or an eighth of
# the open-file limit if more): stdio, the event loop, recordings, upstream connections, and the
# connections accepted but not counted yet (at most ACCEPT_BURST per turn of the event loop)
FD_RESERVE = 64
ACCEPT_BURST = 8
REPORT_EVERY = 10.0  # seconds between two log lines about connections closed or refused
# seconds a connection the guard answered itself (503, 408) stays open after the answer, what
# its client still sends read and dropped, so that the answer is read rather than lost to a reset
LINGER = 2.0
MAX_LINGERING = FD_RESERVE // 2  # connections lingering at once: beyond, closed at once
# seconds a request body may arrive before it can be closed to make room (the slowest first)
BODY_GRACE = 0.5
# seconds a request the server's stop cut (its task cancelled) may take to end before its
# client's connection is dropped all the same
CUT_WAIT = 0.5
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
    and kept-alive ones between two requests. ``receiving`` holds, oldest first, those whose
    request head came and whose body is still arriving. At the limit a new connection takes the
    place of the oldest waiting one, else of the one whose body has come slowest (the fewest
    bytes per second since its head, once it has been arriving for :data:`BODY_GRACE`
    seconds), so that neither heads nor bodies sent a byte at a time (slowloris) can keep a
    client out; when every connection is busy with a request otherwise, the new one gets a 503.
    ``lingering`` holds the connections the guard has answered itself and is closing.
    """

    def __init__(self, limits: ConnectionLimits, clock: Callable[[], float] = time.monotonic):
        self.limit = limits.max_connections
        self.header_timeout = limits.header_timeout
        self.clock = clock
        self.open: set[Any] = set()
        self.waiting: dict[Any, None] = {}
        self.receiving: dict[Any, None] = {}
        self.lingering: set[Any] = set()
        self.counts = dict.fromkeys(_REPORTS, 0)
        self._reports: dict[str, Any] = {}  # kind -> the timer of its next log line

    def admit(self, conn: Any) -> bool:
        """Count a new connection in, making room at the limit (closing the oldest waiting
        connection, else the slowest body); ``False`` when it is to be refused."""
        if len(self.open) >= self.limit:
            kind = "evicted"
            victim = next(iter(self.waiting), None)
            if victim is None:
                kind, victim = "evicted body", self.slowest_body()
            if victim is None:
                return False
            self.forget(victim)
            victim.evict()
            self.note(kind)
        self.open.add(conn)
        self.waiting[conn] = None
        return True

    def slowest_body(self) -> Any:
        """The connection whose request body has come slowest (bytes per second since its head
        came), among those receiving one for :data:`BODY_GRACE` seconds or more; ``None``."""
        now = self.clock()
        slowest, lowest = None, float("inf")
        for conn in self.receiving:  # oldest first: the rest are younger still
            age = now - conn.body_since
            if age < BODY_GRACE:
                break
            rate = conn.body_bytes / age
            if rate < lowest:
                slowest, lowest = conn, rate
        return slowest

    def wait(self, conn: Any) -> None:
        """``conn`` waits for a request head from now on (the newest waiting)."""
        if conn in self.open:
            self.waiting.pop(conn, None)
            self.receiving.pop(conn, None)
            self.waiting[conn] = None

    def busy(self, conn: Any, body: bool = False) -> None:
        """``conn`` got a complete request head; ``body``: a request body is to come."""
        self.waiting.pop(conn, None)
        if body and conn in self.open:
            self.receiving[conn] = None

    def body_done(self, conn: Any) -> None:
        """The request body of ``conn`` has come whole."""
        self.receiving.pop(conn, None)

    def forget(self, conn: Any) -> None:
        self.open.discard(conn)
        self.waiting.pop(conn, None)
        self.receiving.pop(conn, None)

    def stop(self) -> int:
        """The server stops: every request in progress is cut at once (its client's connection
        dropped, its task cancelled), every connection the guard is closing closed. Returns
        how many requests were cut."""
        for conn in list(self.lingering):
            conn.cut()
        return sum(conn.cut() for conn in list(self.open))

    def note(self, what: str) -> None:
        """Count a connection closed or refused (``evicted``, ``evicted body``, ``refused``,
        ``timed out``) for the log: the first of a kind at once, the next ones summed, at most
        one line per kind every :data:`REPORT_EVERY` seconds."""
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
        _server_log.warning("%s", _REPORTS[what](count, self))
        loop = asyncio.get_running_loop()
        self._reports[what] = loop.call_later(REPORT_EVERY, self._report, what)


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' if count != 1 else ''}"


_REPORTS: dict[str, Callable[[int, ConnectionGuard], str]] = {
    "evicted": lambda n, g: (
        f"closed {_n(n, 'connection')} still without a request head to make room"
        f" (--max-connections {g.limit})"
    ),
    "evicted body": lambda n, g: (
        f"answered {_n(n, 'connection')} 503 and closed {'them' if n != 1 else 'it'} to make"
        f" room: {'their request bodies' if n != 1 else 'its request body'} came slowest"
        f" (--max-connections {g.limit})"
    ),
    "refused": lambda n, g: (
        f"answered {_n(n, 'new connection')} 503: all {g.limit} are busy with"
        " requests (--max-connections)"
    ),
    "timed out": lambda n, g: (
        f"closed {_n(n, 'connection')} whose request head took longer than"
        f" {g.header_timeout:g} s (--header-timeout)"
    ),
}


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
_EVICTED = _plain_response(
    "503 Service Unavailable",
    "the connection was closed to make room for another: its request body came too slowly",
    "retry-after: 1",
)
_TIMED_OUT = _plain_response("408 Request Timeout", "the request head took too long to arrive")

# the connection whose bytes uvicorn's protocol is handling, set around each call into it: the
# task of a request it starts there copies the current context (asyncio's rule for a new task),
# so the request knows its own connection whatever its client address says
_CONNECTION: ContextVar[Any] = ContextVar("streamtool_connection", default=None)


def body_evicted() -> bool:
    """Whether the request being handled (in its own task) lost its connection to the guard
    while its body was arriving: closed to make room, its client answered 503."""
    conn = _CONNECTION.get()
    return bool(getattr(conn, "evicted", False))


def connection_socket() -> Any:
    """The socket of the connection the request (or WebSocket session) running in this task
    came on (asyncio's transport's ``socket``), ``None`` outside the guard."""
    transport = getattr(_CONNECTION.get(), "transport", None)
    return None if transport is None else transport.get_extra_info("socket")


def stop_requests(protocol: Any) -> int:
    """Cut every request in progress on the server whose ``http`` setting is ``protocol`` (the
    class :func:`guarded` gave; see :meth:`ConnectionGuard.stop`): how many were cut."""
    guard = getattr(protocol, "guard", None)
    return guard.stop() if isinstance(guard, ConnectionGuard) else 0


def _has_body(headers: Any) -> bool:
    for key, value in headers:
        if key == b"transfer-encoding" or (key == b"content-length" and value.strip() != b"0"):
            return True
    return False


@cache
def _target_keeping() -> type:
    """uvicorn's httptools protocol, keeping each request's target as it came, in the order the
    requests came (``streamtool_targets``), for :func:`_as_received`.

    uvicorn hands the application what ``httptools.parse_url`` makes of the target: the path of
    an absolute-form target (``http://host/path``) without its scheme and authority, a path
    without its fragment. The proxy refuses a target naming another authority, or holding a
    fragment, as it did with uvicorn's h11 protocol, which hands the target over as it came.
    The target is taken from httptools' own parser callbacks (``on_url``), the request's scope
    left to uvicorn."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class TargetKeepingProtocol(HttpToolsProtocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.streamtool_targets: deque[bytes] = deque()
            self.streamtool_url = b""

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self.streamtool_url = b""

        def on_url(self, url: bytes) -> None:
            super().on_url(url)
            self.streamtool_url += url

        def on_headers_complete(self) -> None:
            # kept before uvicorn starts the request (or queues it, pipelined); an upgrade's,
            # or one uvicorn refuses, is passed over by the path it does not match
            self.streamtool_targets.append(self.streamtool_url)
            super().on_headers_complete()

    return TargetKeepingProtocol


def _as_received(scope: Any, targets: deque[bytes]) -> None:
    """``scope``'s ``raw_path`` and ``path`` as its request's target came (its part before
    ``?``), where uvicorn's parse of it changed them: the scheme and authority of an
    absolute-form target, a fragment. ``targets``: the targets of the connection's requests not
    yet handed over, the oldest first; those before this request's (an upgrade's) are dropped."""
    raw_path = scope["raw_path"]
    while targets:
        target = targets.popleft()
        raw = target.partition(b"?")[0]
        if raw == raw_path:
            return  # origin-form: as uvicorn gave it
        import httptools

        try:
            parsed = httptools.parse_url(target).path
        except httptools.HttpParserInvalidURLError:
            continue
        if parsed == raw_path:
            scope["raw_path"] = raw
            scope["path"] = unquote(raw.decode("latin-1"))
            return


class GuardedProtocol(asyncio.Protocol):
    """uvicorn's httptools protocol (``http_class``, keeping its targets), with the connection
    counted against ``guard`` and its request heads timed. :func:`guarded` makes a subclass per
    server, naming both."""

    guard: ConnectionGuard
    http_class: Any

    def __init__(self, **settings: Any) -> None:
        self.http = self.http_class(**settings)
        self.transport: asyncio.Transport | None = None
        self.head_timer: asyncio.TimerHandle | None = None
        self.linger_timer: asyncio.TimerHandle | None = None
        self.head_bytes = 0  # bytes received while waiting for a head
        self.admitted = False  # uvicorn's protocol has the connection (not refused)
        self.released = False  # uvicorn's protocol was told it is gone (the guard closes it)
        self.tasks: set[asyncio.Task[Any]] = set()  # the requests the app is handling on it
        self.body_since = 0.0  # when the request head whose body is arriving came
        self.body_bytes = 0  # bytes of that body the app has received
        self.evicted = False  # closed to make room while its request body was arriving
        self.stopped = False  # its request was cut because the server stops

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if not self.guard.admit(self):
            self.guard.note("refused")
            self.close_with(_REFUSED)
            return
        self.admitted = True
        self.http.connection_made(transport)
        self.start_head_timer()

    def data_received(self, data: bytes) -> None:
        if not self.admitted or self.released:
            return  # answered by the guard: what still comes is dropped
        if self in self.guard.waiting:
            self.head_bytes += len(data)
            if self.head_timer is None:
                # a kept-alive connection: the head's clock starts with its first byte
                self.start_head_timer()
        token = _CONNECTION.set(self)
        try:
            self.http.data_received(data)
        finally:
            _CONNECTION.reset(token)

    def eof_received(self) -> bool | None:
        if self.admitted and not self.released:
            self.http.eof_received()
        # the transport closes (after a guard's answer: the client has read it)
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.forget(self)
        self.guard.lingering.discard(self)
        self.stop_head_timer()
        if self.linger_timer is not None:
            self.linger_timer.cancel()
        if self.admitted and not self.released:
            self.released = True
            self.http.connection_lost(exc)

    def pause_writing(self) -> None:
        if self.admitted and not self.released:
            self.http.pause_writing()

    def resume_writing(self) -> None:
        if self.admitted and not self.released:
            self.http.resume_writing()

    # the guard's side
    def request_started(self, task: asyncio.Task[Any], body: bool) -> None:
        self.tasks.add(task)
        self.guard.busy(self, body)
        if body:
            self.body_since = self.guard.clock()
            self.body_bytes = 0
        self.stop_head_timer()

    def request_ended(self, task: asyncio.Task[Any]) -> None:
        """The app is done with a request: waiting for the next head from now on."""
        self.tasks.discard(task)
        if self.tasks or self.released or self.transport is None:
            return
        if self.transport.is_closing():
            return
        self.guard.wait(self)
        self.stop_head_timer()
        self.head_bytes = 0

    def evict(self) -> None:
        """Closed to make room for a new connection."""
        self.stop_head_timer()
        assert self.transport is not None
        if self.tasks:  # a request whose body is still arriving: it is told why
            self.evicted = True
            self.close_with(_EVICTED)
        elif self.transport.get_write_buffer_size():
            self.transport.abort()  # what a kept-alive client has not read is not waited for
        else:
            self.transport.close()

    def cut(self) -> bool:
        """The server stops: a request in progress ends now (``True``): its task is
        cancelled (what it records is finished), then its client's connection dropped
        (at the latest :data:`CUT_WAIT` seconds later); a connection being closed is
        closed."""
        assert self.transport is not None
        if self in self.guard.lingering or self.released:
            self.transport.abort()
            return False
        if not self.tasks:
            return False  # uvicorn closes the connections without a request
        self.stopped = True
        for task in list(self.tasks):
            task.cancel()
        asyncio.get_running_loop().call_later(CUT_WAIT, self.drop)
        return True

    def drop(self) -> None:
        """Drop the connection now, uvicorn's protocol told first (for it the client has
        gone: a response left unfinished is nothing to report)."""
        self.release()
        if self.transport is not None:
            self.transport.abort()

    def release(self) -> None:
        """uvicorn's protocol is done with the connection (the guard closes it)."""
        if self.admitted and not self.released:
            self.released = True
            self.http.connection_lost(ConnectionAbortedError("closed by the connection guard"))

    def close_with(self, response: bytes) -> None:
        """Answer ``response`` and close: the end of what the server sends follows it, and
        the connection stays open :data:`LINGER` seconds for the client to read it, what
        it still sends read and dropped (at most :data:`MAX_LINGERING` at once)."""
        self.stop_head_timer()
        transport = self.transport
        assert transport is not None
        self.release()
        transport.write(response)
        if len(self.guard.lingering) >= MAX_LINGERING or not transport.can_write_eof():
            transport.close()
            return
        transport.write_eof()
        self.guard.lingering.add(self)
        loop = asyncio.get_running_loop()
        self.linger_timer = loop.call_later(LINGER, self.end_linger)

    def end_linger(self) -> None:
        self.linger_timer = None
        self.guard.lingering.discard(self)
        if self.transport is not None:
            self.transport.abort()  # still unread after LINGER: not waited for

    def start_head_timer(self) -> None:
        timeout = self.guard.header_timeout
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
        if transport is None or transport.is_closing() or self not in self.guard.waiting:
            return
        self.guard.forget(self)
        self.guard.note("timed out")
        if self.head_bytes:
            self.close_with(_TIMED_OUT)
        else:
            transport.close()


def _guarded_app(app: Any, protocol: type[GuardedProtocol]) -> Any:
    """``app`` behind the guard's middleware: each request tells its connection (of
    ``protocol``) that its head came, how much of its body the app took, and that it ended."""
    guard = protocol.guard

    async def guarded_app(scope: Any, receive: Any, send: Any) -> None:
        conn = _CONNECTION.get()
        if scope["type"] == "websocket" and isinstance(conn, protocol):
            await session_app(conn, scope, receive, send)
            return
        if scope["type"] != "http" or not isinstance(conn, protocol):
            await app(scope, receive, send)
            return
        targets = getattr(conn.http, "streamtool_targets", None)
        if targets:
            _as_received(scope, targets)
        task = asyncio.current_task()
        assert task is not None
        body = _has_body(scope["headers"])
        conn.request_started(task, body)
        if body:
            receive = _counting(conn, receive)
        try:
            await app(scope, receive, send)
        except asyncio.CancelledError:
            if not conn.stopped:
                raise
            conn.drop()  # cut because the server stops: nothing to report
        finally:
            conn.request_ended(task)

    async def session_app(conn: GuardedProtocol, scope: Any, receive: Any, send: Any) -> None:
        """A WebSocket session: its connection is busy while it lasts, then no longer counted
        (once upgraded, the connection's protocol is uvicorn's, whose close the guard does not
        see)."""
        task = asyncio.current_task()
        assert task is not None
        conn.request_started(task, False)
        try:
            await app(scope, receive, send)
        finally:
            conn.tasks.discard(task)
            conn.stop_head_timer()
            guard.forget(conn)

    def _counting(conn: GuardedProtocol, receive: Any) -> Any:
        """``receive``, counting the request body's bytes as the app takes them."""

        async def counted() -> Any:
            message = await receive()
            if message["type"] == "http.request" and conn in guard.receiving:
                conn.body_bytes += len(message.get("body", b""))
                if not message.get("more_body", False):
                    guard.body_done(conn)
            return message

        return counted

    return guarded_app


def guarded(limits: ConnectionLimits, app: Any, *, websockets: bool = False) -> dict[str, Any]:
    """``uvicorn.Config`` settings that run ``app`` held to ``limits``:
    ``Config(**guarded(limits, app), ...)``.

    uvicorn's httptools protocol does the HTTP (each request's target kept as it came, see
    :func:`_target_keeping`); it is wrapped, through uvicorn's public ``http``
    setting (a protocol class) and an ASGI middleware, never reaching into uvicorn's own state:

    - a header timeout: a connection whose request head is not complete ``header_timeout``
      seconds after it opened, or after the first byte that followed a response on a kept-alive
      connection (the idle wait before it is uvicorn's ``timeout_keep_alive``), is closed, with
      a 408 when bytes of a head came. A head is complete when uvicorn hands the request to the
      app: the middleware sees it and knows its connection through a context variable the
      protocol sets while uvicorn reads the connection's bytes (never by the client's address;
      uvicorn's ``reset_contextvars`` must stay off, as it is by default);
    - a connection limit, ``max_connections``: at the limit, a new connection closes the oldest
      one still without a complete request head, else the one whose request body has come
      slowest (answered 503), to take its place; if every connection is busy with a request
      otherwise, the new one is answered 503 and closed;
    - a response the guard writes itself (503, 408) is followed by the end of what the server
      sends, and the connection stays open :data:`LINGER` seconds more, what still comes read
      and dropped: a connection closed with bytes unread is reset, and its client may lose
      the response before reading it.

    ``X-Forwarded-For`` and ``X-Forwarded-Proto`` are not trusted (uvicorn's ``proxy_headers``
    off): a request's client is the address its connection came from. The asyncio event loop
    is used (the listening socket of :func:`.listen.bind` paces its accepts there).
    ``websockets``: upgrades to WebSocket are taken (uvicorn's ``websockets-sansio`` protocol);
    an upgraded connection counts as busy until its session ends; else no WebSockets.
    :func:`stop_requests` cuts the requests in progress when the server stops.
    """
    protocol = type(
        "GuardedHttpProtocol",
        (GuardedProtocol,),
        {"guard": ConnectionGuard(limits), "http_class": _target_keeping()},
    )
    return {
        "app": _guarded_app(app, protocol),
        "http": protocol,
        "ws": "websockets-sansio" if websockets else "none",
        "loop": "asyncio",
        "proxy_headers": False,
    }
