"""The shared HTTP forwarding edge: one incoming request sent on to an upstream, its response
streamed back read by read and teed into a recording.

Usable from any starlette endpoint (the proxy, ``serve TAPE --record-missing``)::

    forwarder = Forwarder(timeout=600)
    async def endpoint(request):
        body = await request.body()
        recorder = recorder_for(request, body, "0001-....jsonl", provider=route.provider,
                                api=route.api, url=upstream_url)
        return forwarder.forward(request, upstream_url, body=body, recorder=recorder,
                                 on_end=lambda exchange: ...)

:meth:`Forwarder.forward` returns an ASGI response that does everything when the server runs it:
it sends the request upstream (headers and body as they came, hop-by-hop headers dropped), then
writes what the upstream sent to the client as it arrives (all the body bytes that came since
the writer's last wake-up, as one write: see :class:`_Reads`), and feeds the same bytes first to
the
:class:`~streamtool.core.recording.recorder.ResponseRecorder` (which flushes it to disk and
scrubs the client's credentials out of it). Faults are passed on as they happened: an HTTP error
is a response like any other, a dropped upstream connection or a read stalled past the timeout
drops the client's connection after the bytes that did arrive, and a client that goes away
cancels the upstream request (once its response streams, after at most :data:`LINGER` seconds in
which an upstream body already at its end may still end: see :meth:`_ForwardedResponse.__call__`).
The recording's end record says which.

The upstream client is aiohttp (its pool, TLS and timeouts; the proxy settings of the environment
read with the standard library's ``urllib.request``); aiohttp and anyio are imported inside the
functions that use them.
"""

from __future__ import annotations

import time
from bisect import bisect_right
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypeVar

from ..model.records import Chunk
from ..plugins import error_body
from ..recording.recorder import RecordingLimit, ResponseRecorder, classify, origin
from ..recording.secrets import (
    credential_values,
    secret_query_values,
    without_secrets,
)
from ..wire import fastjson
from .bodies import OFF_LOOP
from .listen import CutConnection, allow_status, at_stop

if TYPE_CHECKING:
    import ssl

    import aiohttp

_P = ParamSpec("_P")
_T = TypeVar("_T")

# RFC 9110 section 7.6.1: meaningful for one connection only, never forwarded. ``host`` and
# ``content-length`` of the request are recomputed by the client for the upstream connection.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
_REQUEST_DROPPED = HOP_BY_HOP | {"host", "content-length"}


class StreamTransform(Protocol):
    """Rewrites the body bytes the client receives (sans-IO): ``feed`` per read, ``finish``."""

    def feed(self, data: bytes) -> bytes: ...

    def finish(self) -> bytes: ...


@dataclass(slots=True, eq=False)
class Exchange:
    """One forwarded exchange as a live view sees it; updated in place while it streams."""

    method: str
    path: str
    provider: str | None = None
    api: str | None = None
    model: str | None = None
    file: str | None = None
    seq: int | None = None
    started_at: float = field(default_factory=time.time)  # wall clock
    t0: float = field(default_factory=time.monotonic)
    status: int | None = None
    ttft: float | None = None  # seconds to the first body byte
    duration: float | None = None
    chunks: int = 0
    bytes: int = 0
    end: str | None = None  # complete | error | timeout | interrupted, once ended
    error: str | None = None
    record_error: str | None = None  # the recording could not be written (forwarding went on)
    # what the upstream sent that is passed on as it came but is not what it should be (a
    # status HTTP does not define, a body that does not decode as its Content-Encoding says)
    warning: str | None = None

    @property
    def elapsed(self) -> float:
        return self.duration if self.duration is not None else time.monotonic() - self.t0


class Observer(Protocol):
    """What a live view is told; every call happens on the server's event loop."""

    def started(self, exchange: Exchange) -> None: ...

    def head(self, exchange: Exchange) -> None: ...

    def read(self, exchange: Exchange, chunk: Chunk) -> None:
        """A read as the recording keeps it (decoded, credentials scrubbed)."""

    def ended(self, exchange: Exchange) -> None: ...


def forwarded_headers(raw: Iterable[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """Request headers to send upstream: all but the hop-by-hop ones (and those that
    ``Connection`` names), ``Host`` and ``Content-Length``."""
    items = list(raw)
    named = set()
    for k, v in items:
        if k.lower() == b"connection":
            named |= {t.strip().lower() for t in v.split(b",") if t.strip()}
    return [
        (k, v)
        for k, v in items
        if k.lower().decode("latin-1") not in _REQUEST_DROPPED and k.lower() not in named
    ]


def response_headers(
    raw: Iterable[tuple[bytes, bytes]], *, keep_length: bool = True
) -> list[tuple[bytes, bytes]]:
    """Upstream response headers to send to the client: all but the hop-by-hop ones."""
    items = list(raw)
    named = set()
    for k, v in items:
        if k.lower() == b"connection":
            named |= {t.strip().lower() for t in v.split(b",") if t.strip()}
    out = []
    for k, v in items:
        low = k.lower()
        if low.decode("latin-1") in HOP_BY_HOP or low in named:
            continue
        if low == b"content-length" and not keep_length:
            continue
        out.append((low, v))
    return out


def request_secrets(headers: Iterable[tuple[str, str]], url: str) -> list[str]:
    """Every credential value a request carries (headers and ``?key=``-style parameters)."""
    return credential_values(headers) + secret_query_values(url)


def request_body(body: bytes) -> Any:
    """A request body parsed as JSON, or ``None`` (empty, not JSON, or nested deeper than
    :data:`~streamtool.core.wire.fastjson.MAX_DEPTH` levels, which the standard decoder
    would answer with a ``RecursionError``)."""
    if not body:
        return None
    try:
        return fastjson.loads(body)
    except ValueError:
        return None


def recorder_for(
    request: Any,
    body: bytes,
    path: str,
    *,
    provider: str | None,
    api: str | None,
    url: str,
    force: bool = False,
    parsed: Any = None,
    secrets: list[str] | None = None,
) -> ResponseRecorder:
    """A recorder for a starlette ``request`` about to be forwarded to ``url``.

    The recording header keeps the request's headers (credentials redacted) and its body
    (parsed JSON, else the text: also JSON nested too deeply to walk); every credential value
    is scrubbed from all that is written. ``parsed``: the body as :func:`request_body` parsed
    it already (``None``: parsed here); ``secrets``: what :func:`request_secrets` found in it
    already (``None``: looked for here).
    """
    headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw]
    if parsed is None and body:
        try:
            parsed = fastjson.loads(body)
        except ValueError:
            parsed = body.decode("utf-8", "replace")
    kept = {k: v for k, v in headers if k.lower() not in _REQUEST_DROPPED}
    description = {"method": request.method, "url": url, "headers": kept, "body": parsed}
    return ResponseRecorder(
        path,
        request=description,
        provider=provider,
        api=api,
        secrets=request_secrets(headers, url) if secrets is None else secrets,
        secrets_complete=True,  # every credential of the headers and URL it describes
        force=force,
    )


# seconds an idle upstream connection is kept open for the next request
KEEP_ALIVE_SECONDS = 60.0
# RFC 9110 section 9.2.2: the methods a proxy may send again when a connection failed under
# them; a POST may have been acted on (a generation paid for) and is answered with the error
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"})
READ_AHEAD = 1024 * 1024  # bytes read from the upstream that may wait for a slow client
# seconds between two writes while an upstream's reads keep coming: one record and one client
# write (not one per socket read) for a burst, at most this much later (see :class:`_Reads`)
GATHER = 0.001
# seconds a streaming exchange goes on after its client went away, for the upstream's body to
# end (an SDK leaves as soon as it has read a stream's last event, often before the end of the
# HTTP body arrives); then the upstream request is cancelled
LINGER = 1.0


class _EnvironmentProxies:
    """The proxy a request goes through, from ``HTTPS_PROXY``, ``HTTP_PROXY`` and ``NO_PROXY``
    (either spelling, the lowercase one first) as the standard library reads them; read once."""

    def __init__(self) -> None:
        from urllib.request import getproxies

        self.proxies = getproxies()
        self._bypass: dict[str, bool] = {}

    def __call__(self, scheme: str, host: str) -> str | None:
        proxy = self.proxies.get(scheme)
        if not proxy:
            return None
        bypass = self._bypass.get(host)
        if bypass is None:
            from urllib.request import proxy_bypass

            bypass = self._bypass[host] = bool(proxy_bypass(host))
        return None if bypass else proxy


class Forwarder:
    """Sends requests upstream with one shared ``aiohttp.ClientSession`` (its connection pool,
    TLS and timeouts; ``HTTPS_PROXY``, ``HTTP_PROXY`` and ``NO_PROXY`` are honoured as the
    standard library reads them, ``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` as OpenSSL does).

    ``timeout``: seconds an upstream read may take (the stall limit); ``connect_timeout`` for
    opening a connection; ``verify``: check the upstream's TLS certificate (``True``), not
    (``False``), or an ``ssl.SSLContext`` to use; ``max_recording_bytes``: a recording that
    would grow past it ends with reason ``limit`` and the client's connection is cut. Create it
    once per server and ``await aclose()`` at shutdown.
    """

    def __init__(
        self,
        *,
        timeout: float = 600.0,
        connect_timeout: float = 30.0,
        max_connections: int = 1000,
        verify: bool | ssl.SSLContext = True,
        max_recording_bytes: int | None = None,
    ) -> None:
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.max_connections = max_connections
        self.verify = verify
        self.max_recording_bytes = max_recording_bytes
        self._client: aiohttp.ClientSession | None = None
        self._proxy_for: _EnvironmentProxies | None = None

    @property
    def client(self) -> aiohttp.ClientSession:
        """The session (made on first use, on the server's event loop)."""
        if self._client is None:
            import aiohttp

            at_stop(self.aclose)  # closed when the server on this loop stops
            self._proxy_for = _EnvironmentProxies()
            self._client = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(
                    limit=self.max_connections,
                    limit_per_host=0,
                    keepalive_timeout=KEEP_ALIVE_SECONDS,
                    ssl=self.verify,
                ),
                # the stall limit is per read; none for the whole exchange (a stream may last)
                timeout=aiohttp.ClientTimeout(
                    total=None, connect=self.connect_timeout, sock_read=self.timeout
                ),
                # a proxy keeps no cookies (each client's go in its own headers), adds none
                # of the client library's headers and hands the body on as it came
                cookie_jar=aiohttp.DummyCookieJar(),
                skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
                auto_decompress=False,
                # proxies are read from the environment here, never credentials from ~/.netrc
                trust_env=False,
            )
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()

    async def send(
        self, method: str, url: str, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> aiohttp.ClientResponse:
        """Send a request upstream; return once the response head arrived (its body unread).

        Only the given headers go, with ``Host`` and ``Content-Length`` (the session adds none
        of its own). An idempotent request whose connection broke before any response is sent
        once more, on a new connection.
        """
        import aiohttp
        from yarl import URL

        client = self.client
        target = URL(url, encoded=True)  # the path and query as the client sent them
        assert self._proxy_for is not None
        proxy = self._proxy_for(target.scheme, target.host or "")
        sent = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in headers]
        for attempt in (1, 2):
            try:
                return await client.request(
                    method,
                    target,
                    headers=sent,
                    data=body or None,  # an empty body: no Content-Length, as it came
                    allow_redirects=False,
                    proxy=proxy,
                )
            except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
                if isinstance(exc, aiohttp.ClientConnectorError):
                    raise  # never connected: nothing was sent
                if attempt == 2 or method.upper() not in IDEMPOTENT:
                    raise
        raise AssertionError("unreachable")

    def forward(
        self,
        request: Any,
        url: str,
        *,
        body: bytes,
        recorder: ResponseRecorder | None = None,
        exchange: Exchange | None = None,
        observer: Observer | None = None,
        transform: StreamTransform | None = None,
        error_style: str = "",
        on_end: Callable[[Exchange], None] | None = None,
        prepare: Callable[[], Awaitable[Any]] | None = None,
    ) -> Any:
        """The ASGI response that forwards ``request`` (whose body is ``body``) to ``url``.

        ``url`` is the full upstream URL (origin, path and query). With ``transform`` the client
        receives the transformed body (the upstream is asked for an uncompressed one) while the
        recording keeps the upstream's bytes. ``on_end`` is called once, when the recording has
        its end record. ``prepare`` (e.g. claiming the recording's file name in a worker thread)
        is started as the request goes upstream and awaited before the recorder is used (and
        before ``on_end``): its work overlaps the upstream's; if it raises, the exchange is
        forwarded unrecorded.
        """
        ex = exchange or Exchange(method=request.method, path=request.url.path)
        if recorder is not None and ex.file is None and prepare is None:
            ex.file = recorder.path
        if recorder is not None and self.max_recording_bytes is not None:
            recorder.max_bytes = self.max_recording_bytes
        headers = forwarded_headers(request.headers.raw)
        if transform is not None:
            headers = [(k, v) for k, v in headers if k.lower() != b"accept-encoding"]
            headers.append((b"accept-encoding", b"identity"))
        return _ForwardedResponse(
            self,
            method=request.method,
            url=url,
            headers=headers,
            body=body,
            recorder=recorder,
            ex=ex,
            observer=observer,
            transform=transform,
            error_style=error_style,
            on_end=on_end,
            prepare=prepare,
        )


class _Reads:
    """The upstream's body as it arrives, gathered between two wake-ups of the writer.

    A reader task :meth:`pump`s the upstream's reads here, each with the time it came, from the
    moment the response's head arrived; the writer :meth:`take`s the reads that came within
    :data:`GATHER` seconds of the oldest one waiting, as one ``bytes``: one record and one
    client write for a burst, one per event of a paced stream, as they came, also when the
    writer started late (the first exchange's recording being set up) and several waited.
    While reads keep coming, the writer takes at most once per :data:`GATHER` seconds: a read
    after a quiet :data:`GATHER` (the first one, each event of a paced stream) is taken at once.

    The reader is always waiting on the response while the upstream may send: aiohttp's stream
    raises a dropped connection before it hands over what it had buffered, so a read left in
    its buffer when the connection drops would be lost. Read at once, each read is handed over
    before the drop is seen (the event loop runs the woken reader before it reads the socket
    again). When :data:`READ_AHEAD` bytes wait for a slow client, the reader stops and so
    does the connection's transport (nothing more read from the socket, the drop included)
    until there is room.
    """

    def __init__(self) -> None:
        import asyncio

        self._loop = asyncio.get_running_loop()
        self._sleep = asyncio.sleep
        self._pieces: list[bytes] = []
        self._times: list[float] = []  # loop time each piece came
        self._size = 0
        self._ended = False
        self._error: BaseException | None = None
        self._ready = asyncio.Event()
        self._room = asyncio.Event()
        self._room.set()
        self._taken = -GATHER  # loop time of the last take

    async def pump(self, response: aiohttp.ClientResponse) -> None:
        """The reader task: the whole body into the box (or the error that stopped it)."""
        room = self._room
        try:
            async for piece in response.content.iter_any():
                self._pieces.append(piece)
                self._times.append(self._loop.time())
                self._size += len(piece)
                self._ready.set()
                if self._size >= READ_AHEAD:
                    room.clear()
                    await self._wait_for_room(response)
        except Exception as exc:
            self._error = exc
        finally:
            self._ended = True
            self._ready.set()

    async def _wait_for_room(self, response: aiohttp.ClientResponse) -> None:
        """The box is full: the connection's transport paused (no read of the socket, so no
        drop seen with reads still unread) until the writer took what waits."""
        connection = response.connection
        transport = connection.transport if connection is not None else None
        if transport is not None:
            transport.pause_reading()
        try:
            await self._room.wait()
        finally:
            if transport is not None and not transport.is_closing():
                transport.resume_reading()

    async def take(self) -> bytes:
        """Everything that arrived since the last call; ``b""`` at the end; the upstream's
        error once what came before it was taken."""
        while not self._pieces:
            if self._ended:
                if self._error is not None:
                    raise self._error
                return b""
            self._ready.clear()
            await self._ready.wait()
        now = self._loop.time()
        wait = self._taken + GATHER - now
        if wait > 0:  # also past the end: the records of a backlog stay GATHER apart
            await self._sleep(wait)  # the reader goes on: what comes meanwhile is gathered
        pieces, times = self._pieces, self._times
        n = bisect_right(times, times[0] + GATHER)  # the reads within GATHER of the oldest
        data = pieces[0] if n == 1 else b"".join(pieces[:n])
        del pieces[:n], times[:n]
        self._size -= len(data)
        if self._size < READ_AHEAD:
            self._room.set()
        self._taken = self._loop.time()
        return data


@dataclass(eq=False)
class _ForwardedResponse:
    """An ASGI response (starlette calls it like one) doing one forwarded exchange."""

    forwarder: Forwarder
    method: str
    url: str
    headers: list[tuple[bytes, bytes]]
    body: bytes
    recorder: ResponseRecorder | None
    ex: Exchange
    observer: Observer | None
    transform: StreamTransform | None
    error_style: str
    on_end: Callable[[Exchange], None] | None
    prepare: Callable[[], Awaitable[Any]] | None = None
    _prepared: Awaitable[Any] | None = field(default=None, init=False)
    _ended: bool = field(default=False, init=False)
    _started: bool = field(default=False, init=False)
    background = None  # what starlette asks of a response (none)

    # -- recording, never allowed to stop the forwarding ----------------------------------------
    def _safely(self, call: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T | None:
        """``call`` (a recorder's method): a recording that cannot be written is dropped and
        the forwarding goes on (a recording's size limit is passed on)."""
        try:
            return call(*args, **kwargs)
        except RecordingLimit:
            raise
        except Exception as exc:  # a recording that cannot be written: keep forwarding
            self.ex.record_error = str(exc)
            self.recorder = None
            return None

    def _without_secrets(self, text: str) -> str:
        """``text`` with the request's credentials (its headers', its URL's) and anything
        key-shaped redacted."""
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in self.headers]
        return without_secrets(text, request_secrets(headers, self.url))

    def _notify(self, what: str, *args: Any) -> None:
        if self.observer is None:
            return
        try:
            getattr(self.observer, what)(self.ex, *args)
        except Exception:  # a live view's trouble is its own
            self.observer = None

    def _finish(self, reason: str | None, error: str | None = None, exc: Any = None) -> None:
        if self._ended:
            return
        self._ended = True
        ex = self.ex
        if exc is not None:
            reason, error = classify(exc, ex.bytes)
            if self.recorder is not None:
                reason, error = self._safely(self.recorder.fail, exc) or (reason, error)
        elif self.recorder is not None:
            self._safely(self.recorder.close, reason, error)
            if self.recorder is not None and self.recorder.write_error is None:
                reason = self.recorder.reason
                error = self.recorder.error
        rec = self.recorder
        if rec is not None and rec.write_error is not None:
            # the stream went on (the client got it all); its recording stopped (a full disk)
            ex.record_error = rec.write_error
        if rec is not None and rec.undecoded is not None:
            ex.warning = rec.undecoded
        if reason is None and ex.status is not None and ex.status >= 400:
            reason = "error"
            error = error or f"HTTP {ex.status}"
        ex.end = reason or "complete"
        ex.error = self._without_secrets(error) if error else error
        ex.duration = time.monotonic() - ex.t0
        self._notify("ended")
        if self.on_end is not None:
            try:
                self.on_end(ex)
            except Exception as err:
                ex.record_error = str(err)

    # -- the exchange ---------------------------------------------------------------------------
    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        import asyncio

        task = asyncio.current_task()
        assert task is not None
        cut: BaseException | None = None
        client_gone = False
        stopped = False  # the watch below cancelled the exchange (the client went away)

        async def watch_disconnect() -> None:
            nonlocal client_gone, stopped
            try:
                while (await receive())["type"] != "http.disconnect":
                    pass
            except Exception:  # the client's side cannot be read: taken as gone
                pass
            client_gone = True
            if self._ended:
                return  # the exchange is over (the server says so once it answered)
            if self._started:
                # the client may have left after the stream's last event, before the
                # upstream's body ended (an SDK stops reading at its last event): the upstream
                # gets a moment to end, for a complete recording (nothing more reaches the
                # client); the exchange ending cancels this wait
                await asyncio.sleep(LINGER)
            if not self._ended:
                stopped = True
                task.cancel()

        # a task of the event loop's own, cancelled when the exchange ends (anyio's task group
        # cost each exchange its task handle, its cancel scopes and, to cancel the watch, a
        # message holding the repr of the task that cancels)
        watcher = asyncio.get_running_loop().create_task(watch_disconnect())
        try:
            cut = await self._run(send)
        except asyncio.CancelledError:
            if not stopped:
                raise
            task.uncancel()  # the watch's own: the exchange ends here, as its client left
        finally:
            watcher.cancel()
            if not self._ended:
                await self._ready()  # the recorder needs its file name (shielded in there)
                received = self.ex.bytes
                who = "the client closed the connection" if client_gone else "stopped"
                self._finish("interrupted", f"{who} after {received} bytes")
        if cut is not None:
            raise CutConnection(str(cut))

    async def _ready(self) -> None:
        """Wait for :attr:`prepare`'s work; a failure of it stops the recording."""
        import asyncio

        pending = self._prepared
        if pending is None:
            return
        try:
            # shielded: a cancelled exchange still waits for it in its ``finally``
            await asyncio.shield(pending)
        except Exception as exc:
            # a file of the tape named (a link refused), else the message alone (a request
            # holding a key, refused before its recording had a name)
            path, message = getattr(exc, "path", None), getattr(exc, "message", None)
            self.ex.record_error = (f"{path}: {message}" if path else message) or str(exc)
            self.recorder = None
        self._prepared = None

    async def _run(self, send: Any) -> BaseException | None:
        import aiohttp

        ex = self.ex
        ex.t0 = time.monotonic()
        self._notify("started")
        if self.recorder is not None:
            self.recorder.t0 = ex.t0
        if self.prepare is not None:
            self._prepared = self.prepare()
        try:
            response = await self.forwarder.send(self.method, self.url, self.headers, self.body)
        except (aiohttp.ClientError, OSError, TimeoutError, ValueError) as exc:
            await self._ready()
            timeout = isinstance(exc, TimeoutError)
            status = 504 if timeout else 502
            what = "did not answer in time" if timeout else "could not be reached"
            # the client library's words may hold the request's URL, its query's key included
            message = (
                f"streamtool proxy: the upstream {origin(self.url)} {what}: "
                f"{type(exc).__name__}: {self._without_secrets(str(exc))}"
            )
            ex.status = status
            self._finish(None, None, exc)
            body = error_body(self.error_style, status, message)
            await send(
                {
                    "type": "http.response.start",
                    "status": status,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body, "more_body": False})
            return None
        import asyncio

        import anyio

        # the body is read from now on, while the recording is set up
        reads = _Reads()
        reader = asyncio.create_task(reads.pump(response))
        try:
            await self._ready()
            return await self._stream(response, send, reads)
        finally:
            if not reader.done():
                reader.cancel()
                with anyio.CancelScope(shield=True):
                    await asyncio.wait([reader])
            response.release()  # back to the pool when read to its end; else closed

    async def _stream(
        self, response: aiohttp.ClientResponse, send: Any, reads: _Reads
    ) -> BaseException | None:
        import asyncio

        import aiohttp

        ex = self.ex
        ex.status = response.status
        if not 100 <= ex.status <= 599:
            # RFC 9110 15: a status outside 100-599 is not HTTP's; the client gets it as it came
            allow_status(ex.status)
            ex.warning = f"the upstream answered status {ex.status}, which HTTP does not define"
        raw_headers = response.raw_headers
        text_headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in raw_headers]
        rec = self.recorder
        if rec is not None and len(self.body) >= OFF_LOOP:
            # the header record holds the request: scrub it aside
            await asyncio.to_thread(self._safely, rec.start, ex.status, text_headers)
        elif rec is not None:
            self._safely(rec.start, ex.status, text_headers)
        self._notify("head")
        transform = self.transform
        content_type = response.headers.get("content-type", "")
        if transform is not None and not (ex.status < 300 and "text/event-stream" in content_type):
            transform = None  # errors and non-streamed bodies reach the client untouched
        await send(
            {
                "type": "http.response.start",
                "status": ex.status,
                "headers": response_headers(raw_headers, keep_length=transform is None),
            }
        )
        self._started = True
        take = reads.take
        try:
            # one item per wake-up: all the body bytes that arrived since the last one
            while data := await take():
                if ex.ttft is None:
                    ex.ttft = time.monotonic() - ex.t0
                # on disk first (flushed), then to the client: a kill -9 in between never
                # leaves the client holding bytes the recording lacks
                ex.chunks += 1
                ex.bytes += len(data)
                rec = self.recorder
                chunk = self._safely(rec.feed, data) if rec is not None else None
                out = transform.feed(data) if transform is not None else data
                if out:
                    await send({"type": "http.response.body", "body": out, "more_body": True})
                if chunk is not None:
                    self._notify("read", chunk)
        except (aiohttp.ClientError, TimeoutError) as exc:
            # a transformed stream is not closed properly either: the client sees the break
            self._finish(None, None, exc)
            return exc  # the client's connection is dropped as the upstream's was
        except RecordingLimit as exc:
            # the recording has its end record (reason "limit"); the client's stream is cut
            self._finish(None)
            return exc
        tail = transform.finish() if transform is not None else b""
        await send({"type": "http.response.body", "body": tail, "more_body": False})
        self._finish(None)
        return None
