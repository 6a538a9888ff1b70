"""The shared HTTP forwarding edge: one incoming request sent on to an upstream, its response
streamed back read by read and teed into a recording.

Usable from any starlette endpoint (the proxy, ``serve TAPE --record-missing``)::

    forwarder = Forwarder(timeout=600)
    async def endpoint(request):
        body = await request.body()
        recorder = recorder_for(request, body, "0001-....jsonl", provider="openai",
                                api="chat.completions", url=upstream_url)
        return forwarder.forward(request, upstream_url, body=body, recorder=recorder,
                                 on_end=lambda exchange: ...)

:meth:`Forwarder.forward` returns an ASGI response that does everything when the server runs it:
it sends the request upstream (headers and body as they came, hop-by-hop headers dropped), then
writes what the upstream sent to the client as it arrives (all the body bytes that came since
the last read was written, as one write), and feeds the same bytes first to the
:class:`~streamtool.core.recording.recorder.ResponseRecorder` (which flushes it to disk and
scrubs the client's credentials out of it). Faults are passed on as they happened: an HTTP error
is a response like any other, a dropped upstream connection or a read stalled past the timeout
drops the client's connection after the bytes that did arrive, and a client that goes away
cancels the upstream request (once its response streams, after at most :data:`LINGER` seconds in
which an upstream body already at its end may still end: see :meth:`_ForwardedResponse.__call__`).
The recording's end record says which.

The upstream client is aiohttp (its connection pool, TLS, timeouts and proxy settings): its
``StreamResponse.content.iter_any()`` yields what one socket read brought, however many HTTP
chunks it held, so each read is one record and one client write with no queue of our own. aiohttp
and anyio are imported inside the functions that use them.
"""

from __future__ import annotations

import io
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..apis import error_body
from ..recording.recorder import RecordingLimit, ResponseRecorder, classify
from ..recording.secrets import secret_query_values
from ..records import Chunk
from ..wire import fastjson
from .bodies import OFF_LOOP
from .listen import CutConnection
from .requests import credential_values

if TYPE_CHECKING:
    import asyncio
    import ssl

    import aiohttp

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
# ``expect``: the server already answered the agent's 100-continue and the body is here whole;
# forwarded, the client would hold the body back for a 100 Continue the upstream may never send
_REQUEST_DROPPED = HOP_BY_HOP | {"host", "content-length", "expect"}


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
    parsed: Any = ...,
) -> ResponseRecorder:
    """A recorder for a starlette ``request`` about to be forwarded to ``url``.

    The recording header keeps the request's headers (credentials redacted) and its body
    (parsed JSON, else the text: also JSON nested too deeply to walk); every credential value
    is scrubbed from all that is written. ``parsed``: the body as :func:`request_body` parsed
    it already (``None`` when it is not JSON), not to parse it twice.
    """
    headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw]
    if parsed is ... or (parsed is None and body):
        try:
            parsed = fastjson.loads(body) if body else None
        except ValueError:
            parsed = body.decode("utf-8", "replace")
    kept = {k: v for k, v in headers if k.lower() not in _REQUEST_DROPPED}
    description = {"method": request.method, "url": url, "headers": kept, "body": parsed}
    return ResponseRecorder(
        path,
        request=description,
        provider=provider,
        api=api,
        secrets=request_secrets(headers, url),
        force=force,
        request_size=len(body),
    )


READ_BUFFER = 256 * 1024  # aiohttp's read buffer: reading pauses past twice this, unwritten
# seconds a streaming exchange goes on after its client went away, for the upstream's body to
# end (an SDK leaves as soon as it has read a stream's last event, often before the end of the
# HTTP body arrives); then the upstream request is cancelled
LINGER = 1.0
# what aiohttp would add to a request of its own accord: a proxy sends the client's headers only
_NOT_ADDED = frozenset({"User-Agent", "Accept", "Accept-Encoding", "Content-Type"})


def tls_context(verify: bool | ssl.SSLContext = True) -> ssl.SSLContext | bool:
    """The TLS setting of the upstream connections: ``verify`` when it is a context or
    ``False``; else a context trusting ``SSL_CERT_FILE`` (a file of CA certificates) or
    ``SSL_CERT_DIR`` (a folder of them) when set, else certifi's CA bundle."""
    if verify is False or not isinstance(verify, bool):
        return verify
    import ssl

    cafile = os.environ.get("SSL_CERT_FILE")
    capath = os.environ.get("SSL_CERT_DIR")
    if cafile and os.path.isfile(cafile):
        return ssl.create_default_context(cafile=cafile)
    if capath and os.path.isdir(capath):
        return ssl.create_default_context(capath=capath)
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


def env_proxies() -> dict[str, str]:
    """The proxy URL of each scheme from the environment (``HTTPS_PROXY``, ``HTTP_PROXY``,
    ``ALL_PROXY``, lowercase first), as :func:`urllib.request.getproxies` reads them."""
    import urllib.request

    return urllib.request.getproxies()


def upstream_errors() -> tuple[type[BaseException], ...]:
    """What a failed upstream request raises: aiohttp's errors and the OS's."""
    import aiohttp

    return (aiohttp.ClientError, OSError)


def is_timeout(exc: BaseException) -> bool:
    import aiohttp

    return isinstance(exc, aiohttp.ServerTimeoutError | TimeoutError)


class Forwarder:
    """Sends requests upstream with one shared ``aiohttp.ClientSession`` (its connection pool,
    TLS and timeouts; ``HTTPS_PROXY``, ``HTTP_PROXY`` and ``NO_PROXY`` are honoured as the
    standard library reads them, see :meth:`proxy_for`; ``SSL_CERT_FILE`` and ``SSL_CERT_DIR``
    as :func:`tls_context` says).

    ``timeout``: seconds an upstream read may take (the stall limit); ``connect_timeout`` for
    opening a connection (TLS handshake and proxy tunnel included); ``verify``: check the
    upstream's TLS certificate (``True``), not (``False``), or an ``ssl.SSLContext`` to use;
    ``max_recording_bytes``: a recording that would grow past it ends with reason ``limit`` and
    the client's connection is cut. Create it once per server; the session is made on the
    server's event loop when first used; ``await aclose()`` at shutdown (or
    :meth:`close_from_thread` from another thread).
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
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._proxies: dict[str, str] = {}
        self._proxy_for: dict[tuple[str, str], Any] = {}

    @property
    def session(self) -> aiohttp.ClientSession:
        """The shared session (made on first use, on the running event loop)."""
        if self._session is None:
            import asyncio

            import aiohttp

            self._loop = asyncio.get_running_loop()
            self._proxies = env_proxies()
            self._proxy_for = {}
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(
                    limit=self.max_connections,
                    limit_per_host=0,
                    keepalive_timeout=60.0,
                    ssl=tls_context(self.verify),
                ),
                timeout=aiohttp.ClientTimeout(
                    total=None,
                    connect=None,
                    sock_connect=self.connect_timeout,
                    sock_read=self.timeout,
                ),
                # the proxy settings are read here (see proxy_for), not by aiohttp per request
                # in worker threads, and ~/.netrc adds no credentials to forwarded requests
                trust_env=False,
                cookie_jar=aiohttp.DummyCookieJar(),  # a proxy keeps no cookies
                auto_decompress=False,  # the client gets the upstream's bytes
                skip_auto_headers=_NOT_ADDED,
                read_bufsize=READ_BUFFER,
            )
        return self._session

    def proxy_for(self, url: Any) -> tuple[Any, Any]:
        """``(proxy URL, proxy auth)`` for a request to ``url`` (a ``yarl.URL``), or
        ``(None, None)``: the environment's proxy for its scheme unless ``NO_PROXY`` names its
        host (:func:`urllib.request.proxy_bypass`); credentials in the proxy URL are sent as
        the proxy's Basic auth."""
        key = (url.scheme, url.host or "")
        if key not in self._proxy_for:
            import urllib.request

            import aiohttp
            from yarl import URL

            found: tuple[Any, Any] = (None, None)
            proxy = self._proxies.get(url.scheme)
            if proxy and not (url.host and urllib.request.proxy_bypass(url.host)):
                parsed = URL(proxy)
                auth = aiohttp.BasicAuth.from_url(parsed) if parsed.user else None
                found = (parsed.with_user(None), auth)
            self._proxy_for[key] = found
        return self._proxy_for[key]

    async def aclose(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    def close_from_thread(self, timeout: float = 10.0) -> None:
        """Close the session from a thread other than its event loop's (a test's thread, once
        the server that used it moves on); nothing when it was never made or its loop ended."""
        import asyncio

        loop = self._loop
        if self._session is None or loop is None or loop.is_closed() or not loop.is_running():
            return
        asyncio.run_coroutine_threadsafe(self.aclose(), loop).result(timeout)

    async def send(
        self, method: str, url: str, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> aiohttp.ClientResponse:
        """Send a request upstream; return once the response head arrived (its body unread).

        Only the given headers go, with ``Host`` and ``Content-Length`` (aiohttp is told to add
        none of its own). ``url`` is sent as it is written (already percent-encoded). An
        idempotent request whose kept-alive connection broke before any response is sent once
        more, on a new connection, by aiohttp (RFC 9112 section 9.3.1.1).
        """
        from yarl import URL

        session = self.session
        target = URL(url, encoded=True)
        proxy, proxy_auth = self.proxy_for(target)
        data: Any = body or None
        if len(body) >= OFF_LOOP:
            # sent in pieces, the event loop turning between them (as bytes it would be copied
            # into the transport's buffer in one go); its length is known: not chunked
            data = io.BytesIO(body)
        return await session.request(
            method,
            target,
            headers=[(k.decode("latin-1"), v.decode("latin-1")) for k, v in headers],
            data=data,
            allow_redirects=False,
            proxy=proxy,
            proxy_auth=proxy_auth,
        )

    def forward(
        self,
        request: Any,
        url: str,
        *,
        body: bytes,
        recorder: ResponseRecorder | None = None,
        prepare: Callable[[], ResponseRecorder | None] | None = None,
        exchange: Exchange | None = None,
        observer: Observer | None = None,
        transform: StreamTransform | None = None,
        error_style: str = "openai",
        on_end: Callable[[Exchange], None] | None = None,
    ) -> Any:
        """The ASGI response that forwards ``request`` (whose body is ``body``) to ``url``.

        ``url`` is the full upstream URL (origin, path and query). The recording is kept by
        ``recorder``, or by the one ``prepare()`` returns: called in a worker thread as the
        request goes upstream, so that its file work (naming the recording, scrubbing the
        request) adds nothing to the time to the first byte; its recorder is taken before the
        response head is recorded. With ``transform`` the client receives the transformed body
        (the upstream is asked for an uncompressed one) while the recording keeps the upstream's
        bytes. ``on_end`` is called once, when the recording has its end record.
        """
        ex = exchange or Exchange(method=request.method, path=request.url.path)
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
            prepare=prepare,
            exchange=ex,
            observer=observer,
            transform=transform,
            error_style=error_style,
            on_end=on_end,
        )


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
        prepare: Callable[[], ResponseRecorder | None] | None,
        exchange: Exchange,
        observer: Observer | None,
        transform: StreamTransform | None,
        error_style: str,
        on_end: Callable[[Exchange], None] | None,
    ) -> None:
        self.forwarder = forwarder
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.recorder: ResponseRecorder | None = None
        self.prepare = prepare
        self.ex = exchange
        self.observer = observer
        self.transform = transform
        self.error_style = error_style
        self.on_end = on_end
        self._ended = False
        self._started = False
        self._adopt(recorder)

    def _adopt(self, recorder: ResponseRecorder | None) -> None:
        if recorder is None:
            return
        self.recorder = recorder
        if self.ex.file is None:
            self.ex.file = recorder.path
        if self.forwarder.max_recording_bytes is not None:
            recorder.max_bytes = self.forwarder.max_recording_bytes

    # -- recording, never allowed to stop the forwarding ----------------------------------------
    def _rec(self, method: str, *args: Any) -> Any:
        rec = self.recorder
        if rec is None:
            return None
        try:
            return getattr(rec, method)(*args)
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
                reason, error = self._rec("fail", exc) or (reason, error)
        elif self.recorder is not None:
            self._rec("close", reason, error)
            if self.recorder is not None:
                reason = self.recorder.reason
                error = self.recorder.error
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
                    received = self.ex.bytes
                    who = "the client closed the connection" if client_gone else "stopped"
                    self._finish("interrupted", f"{who} after {received} bytes")
                tg.cancel_scope.cancel()
        if cut is not None:
            raise CutConnection(str(cut))

    async def _run(self, send: Any) -> BaseException | None:
        import asyncio

        import anyio

        ex = self.ex
        ex.t0 = time.monotonic()
        self._notify("started")
        prepared = None
        if self.prepare is not None:
            prepared = asyncio.get_running_loop().run_in_executor(None, self.prepare)
        if self.recorder is not None:
            self.recorder.t0 = ex.t0
        failed: BaseException | None = None
        try:
            response = await self.forwarder.send(self.method, self.url, self.headers, self.body)
        except upstream_errors() as exc:
            failed = exc
        finally:
            if prepared is not None:  # also when the client went away meanwhile
                with anyio.CancelScope(shield=True):
                    self._adopt(await prepared)
                if self.recorder is not None:
                    self.recorder.t0 = ex.t0
        if failed is not None:
            timeout = is_timeout(failed)
            status = 504 if timeout else 502
            what = "did not answer in time" if timeout else "could not be reached"
            message = f"streamtool proxy: the upstream {what}: {type(failed).__name__}: {failed}"
            ex.status = status
            self._finish(None, None, failed)
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
            return await self._stream(response, send)
        finally:
            # also when the client went away: a body not read to its end closes the connection
            if response.content.at_eof():
                response.release()
            else:
                response.close()

    async def _stream(self, response: aiohttp.ClientResponse, send: Any) -> BaseException | None:
        import asyncio

        ex = self.ex
        status = ex.status = response.status
        raw_headers = response.raw_headers
        text_headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in raw_headers]
        if len(self.body) >= OFF_LOOP:  # the header record holds the request: scrub it aside
            await asyncio.to_thread(self._rec, "start", status, text_headers)
        else:
            self._rec("start", status, text_headers)
        self._notify("head")
        transform = self.transform
        content_type = response.headers.get("content-type", "")
        if transform is not None and not (status < 300 and "text/event-stream" in content_type):
            transform = None  # errors and non-streamed bodies reach the client untouched
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": response_headers(raw_headers, keep_length=transform is None),
            }
        )
        self._started = True
        try:
            # one item per socket read (all the body bytes that arrived since the last item)
            async for data in response.content.iter_any():
                if ex.ttft is None:
                    ex.ttft = time.monotonic() - ex.t0
                # on disk first (flushed), then to the client: a kill -9 in between never
                # leaves the client holding bytes the recording lacks
                ex.chunks += 1
                ex.bytes += len(data)
                chunk = self._rec("feed", data)
                out = transform.feed(data) if transform is not None else data
                if out:
                    await send({"type": "http.response.body", "body": out, "more_body": True})
                if chunk is not None:
                    self._notify("read", chunk)
        except upstream_errors() as exc:
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
