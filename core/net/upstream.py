"""The forwarding edge's HTTP/1.1 client: asyncio for the sockets, h11 for the protocol.

Its unit is the socket read. :meth:`Response.read` returns, per ``recv`` that brought body
bytes, the body bytes that read carried as one ``bytes`` (chunked transfer-encoding removed,
any content-encoding kept), however many HTTP chunks they were. A connection stops reading while
a read waits to be taken, so a consumer that falls behind lets the kernel gather what arrives
into the next, larger read rather than queueing many small ones; against a paced upstream each
read is still one event, as it came.

What it does: keep-alive connections pooled per origin (a connection goes back to the pool only
after its response was read to the end), TLS with certificate verification (the ``certifi``
bundle when it is installed, as httpx has it, else the system's), a connect timeout, a stall
timeout for every read and write, no redirects, nothing taken from the environment, no
decompression. An idempotent request (a GET, not a POST) sent on a pooled connection that the
upstream had closed meanwhile (nothing of a response received) is sent once more on a new
connection; a pooled connection the upstream closed while idle is never used.

Errors are :class:`UpstreamError` subclasses named as httpx names its own (``ConnectError``,
``ConnectTimeout``, ``ReadTimeout``, ``WriteTimeout``, ``ReadError``, ``WriteError``,
``RemoteProtocolError``) and derived from the matching built-in (``TimeoutError``,
``ConnectionError``), so that :func:`~streamtool.core.recording.recorder.classify` words an end
record the same way for both.

The protocol itself is sans-IO, in :mod:`.http11`; this module owns the sockets.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections import deque
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .http11 import (
    ConnectError,
    ConnectTimeout,
    Head,
    ReadError,
    ReadTimeout,
    RemoteProtocolError,
    ResponseParser,
    UpstreamError,
    WriteError,
    WriteTimeout,
)

# RFC 9110 section 9.2.2: the methods a proxy may send again when a connection failed under
# them; a POST may have been acted on (a generation paid for) and is answered with the error
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"})

__all__ = [
    "ConnectError",
    "ConnectTimeout",
    "ReadError",
    "ReadTimeout",
    "RemoteProtocolError",
    "Response",
    "UpstreamClient",
    "UpstreamError",
    "WriteError",
    "WriteTimeout",
]


# -- sockets -------------------------------------------------------------------------------------
def _wake(waiter: asyncio.Future[None] | None) -> None:
    if waiter is not None and not waiter.done():
        waiter.set_result(None)


class _Socket(asyncio.Protocol):
    """A connection's transport read one ``recv`` at a time: reading pauses while a read waits
    to be taken, and resumes when it is."""

    def __init__(self) -> None:
        self.transport: Any = None
        self._reads: deque[bytes] = deque()
        self._eof = False
        self._lost = False
        self._error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._write_paused = False
        self._drained: asyncio.Future[None] | None = None
        self.received = 0  # bytes received since the last request was sent

    # asyncio's callbacks
    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self._reads.append(data)
        self.received += len(data)
        self.transport.pause_reading()
        _wake(self._waiter)

    def eof_received(self) -> bool:
        self._eof = True
        _wake(self._waiter)
        return False  # close the transport

    def connection_lost(self, exc: BaseException | None) -> None:
        self._lost = True
        self._error = exc
        _wake(self._waiter)
        _wake(self._drained)

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        _wake(self._drained)

    # for the connection
    @property
    def usable(self) -> bool:
        """Open, and nothing unasked-for arrived (a pooled connection's check)."""
        return not (self._eof or self._lost or self._reads or self.transport.is_closing())

    async def _wait(self, timeout: float, drain: bool) -> bool:
        """Wait for a read (or, with ``drain``, for the write buffer to drain); False when
        ``timeout`` passed first."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        expired = False

        def expire() -> None:
            nonlocal expired
            expired = True
            _wake(waiter)

        if drain:
            self._drained = waiter
        else:
            self._waiter = waiter
        timer = loop.call_later(timeout, expire)
        try:
            await waiter
        finally:
            timer.cancel()
            if drain:
                self._drained = None
            else:
                self._waiter = None
        return not expired

    async def recv(self, timeout: float) -> bytes:
        """One socket read (``b""`` when the upstream closed the connection)."""
        if (
            not self._reads
            and not (self._eof or self._lost)
            and not await self._wait(timeout, drain=False)
            and not self._reads
        ):
            raise ReadTimeout(f"the upstream sent nothing for {timeout:g} s")
        if self._reads:
            data = self._reads.popleft() if len(self._reads) == 1 else b"".join(self._reads)
            self._reads.clear()
            self.transport.resume_reading()
            return data
        if self._error is not None:
            raise ReadError(str(self._error) or type(self._error).__name__)
        return b""

    async def write(self, data: bytes, timeout: float) -> None:
        if self._lost:
            raise WriteError(str(self._error or "the connection was closed"))
        self.transport.write(data)
        if self._write_paused and not await self._wait(timeout, drain=True):
            raise WriteTimeout(f"the upstream took no request bytes for {timeout:g} s")
        if self._lost and self._error is not None:
            raise WriteError(str(self._error) or type(self._error).__name__)


@dataclass(frozen=True, slots=True)
class Origin:
    scheme: str  # http | https
    host: str  # as a socket takes it (an IPv6 address without brackets, IDNA-encoded names)
    port: int


def split_url(url: str) -> tuple[Origin, bytes, bytes]:
    """``(origin, request target, Host header value)`` of an absolute http(s) URL."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    default = {"http": 80, "https": 443}.get(scheme)
    if default is None or not parts.hostname:
        raise ConnectError(f"not an http(s) URL: {url!r}")
    try:
        port = parts.port or default
    except ValueError as exc:
        raise ConnectError(f"{url!r}: {exc}") from None
    host = parts.hostname
    if not host.isascii():
        host = host.encode("idna").decode("ascii")
    shown = f"[{host}]" if ":" in host else host
    host_header = shown if port == default else f"{shown}:{port}"
    rest = url[len(parts.scheme) + 3 + len(parts.netloc) :].partition("#")[0]
    if not rest.startswith("/"):
        rest = "/" + rest
    return Origin(scheme, host, port), rest.encode("latin-1"), host_header.encode("ascii")


def ssl_context(verify: bool | ssl.SSLContext) -> ssl.SSLContext:
    """The TLS settings: ``True`` verifies certificates and host names (the ``certifi`` bundle
    when installed, else the system's), ``False`` does not, a context is used as it is."""
    if isinstance(verify, ssl.SSLContext):
        return verify
    if verify:
        try:
            import certifi
        except ImportError:  # pragma: no cover - httpx brings certifi
            context = ssl.create_default_context()
        else:
            context = ssl.create_default_context(cafile=certifi.where())
    else:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["http/1.1"])
    return context


class _Connection:
    def __init__(self, origin: Origin, transport: Any, sock: _Socket) -> None:
        self.origin = origin
        self.transport = transport
        self.sock = sock
        self.http = ResponseParser()  # a new one per request
        self.idle_since = 0.0

    def close(self) -> None:
        self.transport.close()


class Response:
    """A response whose head arrived; its body is read with :meth:`read`. :meth:`close` it
    (always): a response read to its end gives its connection back to the pool."""

    def __init__(self, client: UpstreamClient, conn: _Connection, head: Head, first: bytes) -> None:
        self.status = head.status
        self.headers = head.headers
        self._client = client
        self._conn: _Connection | None = conn
        self._first = first
        self._complete = conn.http.done

    def header(self, name: bytes) -> bytes | None:
        """The first value of header ``name`` (lowercase)."""
        for k, v in self.headers:
            if k == name:
                return v
        return None

    def text_headers(self) -> list[tuple[str, str]]:
        return [(k.decode("latin-1"), v.decode("latin-1")) for k, v in self.headers]

    async def read(self) -> bytes:
        """The body bytes of the next socket read that brought any; ``b""`` at the end."""
        if self._first:
            data, self._first = self._first, b""
            return data
        conn = self._conn
        if conn is None or self._complete:
            return b""
        http = conn.http
        timeout = self._client.timeout
        while not http.done:
            _, data = http.feed(await conn.sock.recv(timeout))
            if data:
                return data
        self._complete = True
        return b""

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        self._client._release(conn, reuse=self._complete and not self._first)


class UpstreamClient:
    """Sends requests upstream over pooled keep-alive connections.

    ``timeout``: seconds a read (or the request's write) may stall; ``connect_timeout``: for
    opening a connection (TLS handshake included); ``max_connections`` open at once (more
    requests wait for one); idle connections are kept ``keepalive_expiry`` seconds, at most
    ``max_idle`` per origin. Use it from one event loop; :meth:`aclose` at the end.
    """

    def __init__(
        self,
        *,
        timeout: float = 600.0,
        connect_timeout: float = 30.0,
        max_connections: int = 1000,
        max_idle: int = 200,
        keepalive_expiry: float = 60.0,
        verify: bool | ssl.SSLContext = True,
    ) -> None:
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.max_idle = max_idle
        self.keepalive_expiry = keepalive_expiry
        self.ssl = ssl_context(verify)
        self._slots = asyncio.Semaphore(max_connections)
        self._idle: dict[Origin, deque[_Connection]] = {}

    async def request(
        self, method: str, url: str, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> Response:
        """Send a request; return once the response head arrived. ``headers`` are sent as
        given, after ``Host`` (from ``url``) and before ``Content-Length`` (of ``body``), so
        neither of those may be among them."""
        origin, target, host = split_url(url)
        sent = [(b"host", host), *headers]
        if body or method.upper() in ("POST", "PUT", "PATCH"):
            sent.append((b"content-length", str(len(body)).encode("ascii")))
        await self._slots.acquire()
        try:
            return await self._exchange(origin, method, target, sent, body)
        except BaseException:
            self._slots.release()
            raise

    async def _exchange(
        self,
        origin: Origin,
        method: str,
        target: bytes,
        headers: list[tuple[bytes, bytes]],
        body: bytes,
    ) -> Response:
        while True:
            conn = self._checkout(origin)
            reused = conn is not None
            if conn is None:
                conn = await self._connect(origin)
            sock = conn.sock
            http = conn.http = ResponseParser()
            try:
                sock.received = 0
                await sock.write(http.request(method, target, headers, body), self.timeout)
                head: Head | None = None
                while head is None:
                    head, first = http.feed(await sock.recv(self.timeout))
            except (ReadError, WriteError, RemoteProtocolError):
                conn.close()
                if reused and sock.received == 0 and method.upper() in IDEMPOTENT:
                    continue  # the upstream had closed the pooled connection: a new one
                raise
            except BaseException:
                conn.close()
                raise
            return Response(self, conn, head, first)

    def _checkout(self, origin: Origin) -> _Connection | None:
        idle = self._idle.get(origin)
        now = time.monotonic()
        while idle:
            conn = idle.pop()  # the most recently used first
            if conn.sock.usable and now - conn.idle_since < self.keepalive_expiry:
                return conn
            conn.close()
        return None

    async def _connect(self, origin: Origin) -> _Connection:
        loop = asyncio.get_running_loop()
        tls = origin.scheme == "https"
        try:
            async with asyncio.timeout(self.connect_timeout):
                transport, sock = await loop.create_connection(
                    _Socket,
                    origin.host,
                    origin.port,
                    ssl=self.ssl if tls else None,
                    server_hostname=origin.host if tls else None,
                )
        except TimeoutError:
            raise ConnectTimeout(
                f"no connection to {origin.host}:{origin.port} within {self.connect_timeout:g} s"
            ) from None
        except OSError as exc:  # name resolution, refused, TLS (ssl.SSLError is an OSError)
            raise ConnectError(str(exc) or type(exc).__name__) from None
        return _Connection(origin, transport, sock)

    def _release(self, conn: _Connection, *, reuse: bool) -> None:
        self._slots.release()
        if not (reuse and conn.http.reusable and conn.sock.usable):
            conn.close()
            return
        conn.idle_since = now = time.monotonic()
        idle = self._idle.setdefault(conn.origin, deque())
        expired = now - self.keepalive_expiry
        while idle and (len(idle) >= self.max_idle or idle[0].idle_since <= expired):
            idle.popleft().close()
        idle.append(conn)

    async def aclose(self) -> None:
        """Close every idle connection (a response still being read closes its own)."""
        for idle in self._idle.values():
            while idle:
                idle.pop().close()
        self._idle.clear()
