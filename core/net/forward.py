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

The upstream client is httpx (its pool, TLS, timeouts and proxy settings); httpx and anyio are
imported inside the functions that use them.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypeVar

from ..model.records import Chunk
from ..plugins import error_body
from ..recording.recorder import RecordingLimit, ResponseRecorder, classify, origin
from ..recording.secrets import credential_values, secret_query_values
from ..wire import fastjson
from .bodies import OFF_LOOP
from .listen import CutConnection, allow_status

if TYPE_CHECKING:
    import ssl

    import httpx

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
        force=force,
    )


# upstream connections kept open between requests. httpcore's pool (httpx 0.28) walks every
# connection it holds each time a request starts or a response ends: an idle one costs a check
# that its socket is still open (two system calls) and a count of the whole pool. With 50 MCP
# clients at once and up to 200 kept, that walk was most of the proxy's CPU (26-31 ms a call,
# against 10-12 ms with 8 kept; `benchmarks/bench_mcp.py`). Past this many connections in all,
# busy ones included, httpcore closes a connection when its response ends instead of keeping
# it: more streams at once than this reconnect (a TCP connect, and a TLS handshake to an
# https upstream) instead of reusing one; an agent's handful of streams always reuses.
KEEP_ALIVE = 8
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


class _RefuseCookies(DefaultCookiePolicy):
    """A proxy keeps no cookies: each client's go through in its own headers."""

    def set_ok(self, cookie: Any, request: Any) -> bool:
        return False


class Forwarder:
    """Sends requests upstream with one shared ``httpx.AsyncClient`` (its connection pool, TLS
    and timeouts; ``HTTPS_PROXY``, ``NO_PROXY`` and ``SSL_CERT_FILE`` are honoured as httpx
    documents them).

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
        self._client: httpx.AsyncClient | None = None

    @property
    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            import httpx

            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.timeout, connect=self.connect_timeout),
                limits=httpx.Limits(
                    max_connections=self.max_connections,
                    max_keepalive_connections=min(self.max_connections, KEEP_ALIVE),
                    keepalive_expiry=60.0,
                ),
                verify=self.verify,
                trust_env=True,
                follow_redirects=False,
                cookies=CookieJar(_RefuseCookies()),
            )
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def send(
        self, method: str, url: str, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> httpx.Response:
        """Send a request upstream; return once the response head arrived (its body unread).

        Only the given headers go, with ``Host`` and ``Content-Length`` (httpx adds no headers
        of its own to a request built this way). An idempotent request whose connection broke
        before any response is sent once more, on a new connection.
        """
        import httpx

        client = self.client
        for attempt in (1, 2):
            request = httpx.Request(method, url, headers=headers, content=body)
            try:
                return await client.send(request, stream=True)
            except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError):
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
            exchange=ex,
            observer=observer,
            transform=transform,
            error_style=error_style,
            on_end=on_end,
            prepare=prepare,
        )


class _Reads:
    """The upstream's body as it arrives, gathered between two wake-ups of the writer.

    httpx yields one piece per HTTP chunk (thousands of small server-sent events in one socket
    read); a reader task :meth:`pump`s them here and the writer :meth:`take`s all that arrived
    since its last turn as one ``bytes``: one record and one client write per wake-up, which
    against a paced upstream is one per event as it came. While reads keep coming (a burst),
    the writer takes at most once per :data:`GATHER` seconds, and the reader waits with it, so
    that what arrives meanwhile is gathered in the socket and read at once: a read after a
    quiet :data:`GATHER` (the first one, each event of a paced stream) is taken at once. At most
    :data:`READ_AHEAD` bytes wait.
    """

    def __init__(self) -> None:
        import asyncio

        self._loop = asyncio.get_running_loop()
        self._sleep = asyncio.sleep
        self._pieces: list[bytes] = []
        self._size = 0
        self._ended = False
        self._error: BaseException | None = None
        self._ready = asyncio.Event()
        self._room = asyncio.Event()
        self._room.set()
        self._taken = -GATHER  # loop time of the last take

    async def pump(self, response: httpx.Response) -> None:
        """The reader task: the whole body into the box (or the error that stopped it)."""
        room = self._room
        try:
            async for piece in response.aiter_raw():
                self._pieces.append(piece)
                self._size += len(piece)
                self._ready.set()
                if self._size >= READ_AHEAD:
                    room.clear()
                if not room.is_set():  # a full box, or the writer gathering
                    await room.wait()
        except Exception as exc:
            self._error = exc
        finally:
            self._ended = True
            self._ready.set()

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
        wait = self._taken + GATHER - self._loop.time()
        if wait > 0 and not self._ended:
            self._room.clear()  # the reader waits too: the socket gathers what comes
            try:
                await self._sleep(wait)
            finally:
                self._room.set()
        pieces = self._pieces
        data = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        self._pieces = []
        self._size = 0
        self._room.set()
        self._taken = self._loop.time()
        return data


class _ForwardedResponse:
    """An ASGI response (starlette calls it like one) doing one forwarded exchange."""

    background = None

    def __init__(
        self,
        forwarder: Forwarder,
        *,
        method: str,
        url: str,
        headers: list[tuple[bytes, bytes]],
        body: bytes,
        recorder: ResponseRecorder | None,
        exchange: Exchange,
        observer: Observer | None,
        transform: StreamTransform | None,
        error_style: str,
        on_end: Callable[[Exchange], None] | None,
        prepare: Callable[[], Awaitable[Any]] | None = None,
    ) -> None:
        self.forwarder = forwarder
        self.prepare = prepare
        self._prepared: Awaitable[Any] | None = None
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.recorder = recorder
        self.ex = exchange
        self.observer = observer
        self.transform = transform
        self.error_style = error_style
        self.on_end = on_end
        self._ended = False
        self._started = False

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
        ex.error = error
        ex.duration = time.monotonic() - ex.t0
        self._notify("ended")
        if self.on_end is not None:
            try:
                self.on_end(ex)
            except Exception as err:
                ex.record_error = str(err)

    # -- the exchange ---------------------------------------------------------------------------
    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        import anyio

        cut: BaseException | None = None
        client_gone = False
        async with anyio.create_task_group() as tg:

            async def watch_disconnect() -> None:
                nonlocal client_gone
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        client_gone = True
                        if self._started:
                            # the client may have left after the stream's last event, before
                            # the upstream's body ended (an SDK stops reading at its last
                            # event): the upstream gets a moment to end, for a complete
                            # recording (nothing more reaches the client); ``_run`` ending
                            # cancels this wait
                            await anyio.sleep(LINGER)
                        tg.cancel_scope.cancel()
                        return

            tg.start_soon(watch_disconnect)
            try:
                cut = await self._run(send)
            finally:
                if not self._ended:
                    with anyio.CancelScope(shield=True):  # the recorder needs its file name
                        await self._ready()
                    received = self.ex.bytes
                    who = "the client closed the connection" if client_gone else "stopped"
                    self._finish("interrupted", f"{who} after {received} bytes")
                tg.cancel_scope.cancel()
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
        import anyio
        import httpx

        ex = self.ex
        ex.t0 = time.monotonic()
        self._notify("started")
        if self.recorder is not None:
            self.recorder.t0 = ex.t0
        if self.prepare is not None:
            self._prepared = self.prepare()
        try:
            response = await self.forwarder.send(self.method, self.url, self.headers, self.body)
        except (httpx.HTTPError, httpx.InvalidURL, OSError) as exc:
            await self._ready()
            timeout = isinstance(exc, httpx.TimeoutException | TimeoutError)
            status = 504 if timeout else 502
            what = "did not answer in time" if timeout else "could not be reached"
            message = (
                f"streamtool proxy: the upstream {origin(self.url)} {what}: "
                f"{type(exc).__name__}: {exc}"
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
        try:
            await self._ready()
            return await self._stream(response, send)
        finally:
            with anyio.CancelScope(shield=True):  # also when the client went away
                await response.aclose()

    async def _stream(self, response: httpx.Response, send: Any) -> BaseException | None:
        import asyncio

        import anyio
        import httpx

        ex = self.ex
        ex.status = response.status_code
        if not 100 <= ex.status <= 599:
            # RFC 9110 15: a status outside 100-599 is not HTTP's; the client gets it as it came
            allow_status(ex.status)
            ex.warning = f"the upstream answered status {ex.status}, which HTTP does not define"
        raw_headers = response.headers.raw
        text_headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in raw_headers]
        rec = self.recorder
        if rec is not None and len(self.body) >= OFF_LOOP:
            # the header record holds the request: scrub it aside
            await asyncio.to_thread(self._safely, rec.start, response.status_code, text_headers)
        elif rec is not None:
            self._safely(rec.start, response.status_code, text_headers)
        self._notify("head")
        transform = self.transform
        content_type = response.headers.get("content-type", "")
        if transform is not None and not (
            response.status_code < 300 and "text/event-stream" in content_type
        ):
            transform = None  # errors and non-streamed bodies reach the client untouched
        await send(
            {
                "type": "http.response.start",
                "status": response.status_code,
                "headers": response_headers(raw_headers, keep_length=transform is None),
            }
        )
        self._started = True
        reads = _Reads()
        reader = asyncio.create_task(reads.pump(response))
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
        except httpx.HTTPError as exc:
            # a transformed stream is not closed properly either: the client sees the break
            self._finish(None, None, exc)
            return exc  # the client's connection is dropped as the upstream's was
        except RecordingLimit as exc:
            # the recording has its end record (reason "limit"); the client's stream is cut
            self._finish(None)
            return exc
        finally:
            if not reader.done():
                reader.cancel()
                with anyio.CancelScope(shield=True):
                    await asyncio.wait([reader])
        tail = transform.finish() if transform is not None else b""
        await send({"type": "http.response.body", "body": tail, "more_body": False})
        self._finish(None)
        return None
