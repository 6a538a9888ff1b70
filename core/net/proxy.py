"""``streamtool proxy``: a local reverse proxy that records every generating exchange.

An agent only changes its base URL. Each request goes to the official host of the API its path
names (or to ``--upstream``), through the shared forwarding edge (:mod:`.forward`): headers and
body untouched, every upstream read written to the client as it arrives and, for the generating
endpoints, into a recording of its own in the capture folder, listed in order in the folder's
index (the session's tape). The routing rules are plain Python (:func:`route`); the app is a
bare ASGI callable; uvicorn runs it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar
from urllib.parse import unquote, urlsplit

from ..exchange.hostcheck import host_refusal, is_loopback, refuse
from ..exchange.requests import PRESETS
from ..model.records import RecordingError
from ..plugins import api_for_path, api_table, error_body, find_api, official_origins, served_api
from ..plugins.table import api_by_header, api_for_request, default_api
from ..recording.recorder import MAX_RECORDING_BYTES
from ..recording.secrets import SecretScrubber, redact_keys
from ..recording.tape_index import IndexEntry, Tape, read_index, written
from .bodies import BODY_TIMEOUT, MAX_BODY, BodyRefused, off_loop, read_body, refusal
from .forward import (
    Exchange,
    Forwarder,
    Observer,
    StreamTransform,
    recorder_for,
    request_body,
    request_secrets,
)
from .listen import ServerThread, Stopped, quiet_cut_logging, run_until_stopped, server_for

if TYPE_CHECKING:
    import ssl

DEFAULT_OUT = "streamtool-captures"
# the providers of the presets the proxy routes by path (OpenRouter)
_PROXIED = tuple(p for p in PRESETS.values() if p.proxied)
# the official origin of each provider: the wire APIs' own, and the routed presets'
OFFICIAL = {**official_origins(), **{p.name: p.origin for p in _PROXIED}}
PROVIDER_NAMES = frozenset(OFFICIAL)
_STYLES = {a.provider: a.error_style for a in api_table()}
_DEFAULT = default_api()
_log = logging.getLogger("uvicorn.error")


@dataclass(frozen=True, slots=True)
class Route:
    """Where a request goes and what it is."""

    provider: str  # a provider of the API table, or a routed preset's (openrouter)
    api: str | None  # the API's name (chat.completions, messages...); None: not generating
    model: str | None = None
    style: str = _DEFAULT.error_style  # the error body shape its SDK reads

    @property
    def generating(self) -> bool:
        return self.api is not None


def _provider_of(low: str, headers: Mapping[str, str]) -> str:
    """The provider a request is for: the one whose paths it takes (``low``: lower case), else
    the one whose clients alone send one of its headers, else the default API's."""
    found = next((a for a in api_table() if a.claims_path(low)), None) or api_by_header(headers)
    return (found or _DEFAULT).provider


def route(method: str, path: str, headers: Mapping[str, str], body: Any) -> Route:
    """What a request is, from its method, path, headers and parsed body (sans-IO)."""
    low = path.lower()
    preset = next((p for p in _PROXIED if low.startswith(p.route_prefix)), None)
    provider = preset.name if preset is not None else _provider_of(low, headers)
    # the provider's own error shape (its wire APIs'), but an API that many providers speak
    # answers in its own shape whoever serves it
    style = _STYLES.get(provider, _DEFAULT.error_style)
    # an API served at any path claims its requests by what they carry (MCP: a JSON-RPC body)
    claimed = api_for_request(method, headers, body)
    if claimed is not None:
        api, name = claimed
        return Route(api.provider, api.name, name, api.error_style)
    wire = api_for_path(path) if method.upper() == "POST" else None
    if wire is not None and not wire.http:
        wire = None  # an API reached over WebSocket only: a POST there is not one of its streams
    if wire is None:
        model = body.get("model") if isinstance(body, dict) else None
        return Route(provider, None, model if isinstance(model, str) and model else None, style)
    if wire.compatible:
        style = wire.error_style
    elif provider == _DEFAULT.provider:  # an API only its own provider speaks (Bedrock, Cohere)
        provider, style = wire.provider, wire.error_style
    return Route(provider, wire.name, wire.model_of(unquote(path), body), style)


def parse_upstreams(values: Iterable[str]) -> Upstreams:
    """``--upstream URL`` (every request) and ``--upstream NAME=URL`` (one API or provider)."""
    default: str | None = None
    rules: dict[str, str] = {}
    for value in values:
        name, sep, url = value.partition("=")
        if not sep or "://" in name:
            name, url = "", value
        url = url.strip().rstrip("/")
        parts = urlsplit(url)
        if parts.scheme in ("ws", "wss") and parts.netloc:
            # a WebSocket origin: its HTTP requests go to the same place over http(s)
            url = ("https" if parts.scheme == "wss" else "http") + url[len(parts.scheme) :]
            parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"--upstream {value!r}: not an http(s) or ws(s) URL")
        if parts.query or parts.fragment:
            raise ValueError(f"--upstream {value!r}: a URL without query or fragment is needed")
        if not name:
            if default is not None:
                raise ValueError("--upstream URL given twice (use NAME=URL for one API)")
            default = url
            continue
        key = name.strip().lower()
        api = find_api(key)
        if key in PROVIDER_NAMES:
            rules[key] = url
        elif api is not None:
            rules[api.name] = url
        else:
            known = ", ".join(sorted({n for a in api_table() for n in a.names} | PROVIDER_NAMES))
            raise ValueError(f"--upstream {value!r}: unknown API {name!r} (known: {known})")
    return Upstreams(default, rules)


@dataclass(frozen=True, slots=True)
class Upstreams:
    default: str | None = None
    rules: dict[str, str] = field(default_factory=dict)

    def origin(self, r: Route) -> str:
        for key in (r.api, r.provider):
            if key and key in self.rules:
                return self.rules[key]
        origin = self.default or OFFICIAL.get(r.provider)
        if origin is None:  # an API without an official host (MCP)
            raise NoUpstream(
                f"{r.api or r.provider} requests have no official host to go to: start the "
                f"proxy with --upstream URL (or --upstream {r.api or r.provider}=URL)"
            )
        return origin

    def url(self, r: Route, raw_path: str, query: str) -> str:
        """The upstream URL: the origin (and any path it has) plus the request's path
        (origin-form: see :func:`target_path`) and query."""
        origin = self.origin(r)
        url = origin + raw_path + (f"?{query}" if query else "")
        if urlsplit(url).netloc != urlsplit(origin).netloc:  # what target_path rules out
            raise BadTarget(f"the request target {_shown(raw_path)!r} leaves the upstream")
        return url


# -- the request target ----------------------------------------------------------------------------
class BadTarget(ValueError):
    """A request target that is not a path on this proxy (answered 400)."""


class NoUpstream(ValueError):
    """A request of an API without an official host, and no ``--upstream`` for it (502)."""


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def _raw_target(scope: Any) -> str:
    """The request's target as it came (its raw path)."""
    return (scope.get("raw_path") or scope["path"].encode("utf-8")).decode("latin-1")


def _target(scope: Any, raw: str) -> tuple[str, int, str | None]:
    """``(path, 0, None)``: the target ``raw`` as a plain path; or ``(raw, status, why)`` for a
    request refused: 421 for a ``Host`` that is not loopback (:mod:`..exchange.hostcheck`), 400
    for a target that is not a path (:func:`target_path`)."""
    why = host_refusal(scope)
    if why is not None:
        return raw, 421, why
    host = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"host"), None)
    try:
        return target_path(raw, scope.get("server"), host), 0, None
    except BadTarget as exc:
        return raw, 400, str(exc)


# the user information of a URL, or of an authority alone (``user:password@host``)
_USERINFO = re.compile(r"^((?:[A-Za-z][A-Za-z0-9+.-]*:)?//)?[^/?#@]*@")


def _shown(target: str) -> str:
    """A request target (or an authority) as a message shows it: its user information (a
    password, as often as not) as ``***``, key-shaped parts masked, then cut to 80 characters
    (never a key cut short, which would no longer look like one)."""
    return redact_keys(_USERINFO.sub(r"\1***@", target))[:80]


def target_path(raw: str, server: Any, host: str | None = None) -> str:
    """The path of a request target (before its ``?``), the only part sent on upstream.

    Origin-form (``/v1/chat/completions``) is taken as it is. Absolute-form
    (``http://127.0.0.1:8788/v1/...``, RFC 9112 3.2.2) gives its path when its authority is this
    proxy's own (``server``, the address the connection reached, as ``(host, port)``; ``host``,
    the request's ``Host`` header, names it too). Anything else is :class:`BadTarget`: another
    authority, user information, authority-form (``host:port``), a target that does not start
    with ``/`` (``@host/...``, ``:port/...``), a network-path ``//host/...``, a backslash or a
    fragment.
    """
    if _SCHEME.match(raw):
        parts = urlsplit(raw)
        if parts.scheme.lower() not in ("http", "https") or not _own_authority(
            parts.netloc, parts.scheme.lower(), server, host
        ):
            raise BadTarget(
                f"the request target names {_shown(parts.netloc)!r}, not this proxy: "
                "send the path only (the proxy picks the upstream)"
            )
        raw = parts.path or "/"
    if not raw.startswith("/") or raw.startswith("//") or "\\" in raw or "#" in raw:
        shown = _shown(raw)
        raise BadTarget(f"the request target {shown!r} is not a path starting with a single /")
    return raw


def _own_authority(netloc: str, scheme: str, server: Any, host: str | None) -> bool:
    if not server or "@" in netloc or not netloc:
        return False
    parts = urlsplit("//" + netloc)
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:
        return False
    name = (parts.hostname or "").rstrip(".")
    own_host, own_port = str(server[0]).lower(), int(server[1])
    if port != own_port:
        return False
    if is_loopback(own_host):
        return is_loopback(name)
    named = urlsplit("//" + host).hostname if host else None
    return name in (own_host, named)


# -- the capture folder (a tape: recordings named in order and their index) --------------------
def index_entry(ex: Exchange) -> dict[str, Any]:
    """The tape index's fields for an ended exchange (``IndexEntry(**index_entry(ex))``)."""
    return {
        "seq": ex.seq,
        "file": os.path.basename(ex.file) if ex.file else None,
        "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ex.started_at)),
        "api": ex.api,
        "provider": ex.provider,
        "method": ex.method,
        "path": ex.path,
        "model": ex.model,
        "status": ex.status,
        "end": ex.end,
        "duration_s": None if ex.duration is None else round(ex.duration, 6),
        "ttft_s": None if ex.ttft is None else round(ex.ttft, 6),
        "chunks": ex.chunks,
    }


# -- the tape's file work -------------------------------------------------------------------------
_T = TypeVar("_T")


class Batches(Generic[_T]):
    """Work done on a thread of its own, in order, all that is waiting at once: ``run`` is
    called with every item submitted since it was last called (never two calls at once).

    The thread waits on a ``queue.SimpleQueue``: handing it an item is one call into C (a
    wake-up when it sleeps), where a thread pool's ``submit`` made a future, took two locks and
    counted its threads again, on the event loop, for every batch. Items submitted after
    :meth:`shutdown` are done at once, in the caller's thread; the thread is a daemon, and
    the interpreter's exit waits for what it was given (``atexit``)."""

    def __init__(self, run: Callable[[list[_T]], None], name: str) -> None:
        import atexit

        self._run = run
        self._queue: queue.SimpleQueue[_T | None] = queue.SimpleQueue()  # None: stop
        self._guard = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()
        atexit.register(self.shutdown)

    def submit(self, item: _T) -> None:
        with self._guard:
            if not self._closed:
                self._queue.put(item)
                return
        self._run([item])

    def _work(self) -> None:
        get, more = self._queue.get, self._queue.get_nowait
        while True:
            batch = [get()]
            with suppress(queue.Empty):
                while True:
                    batch.append(more())
            items = [item for item in batch if item is not None]
            if items:
                try:
                    self._run(items)
                except Exception:  # run's own failures are its to report; the thread goes on
                    _log.exception("streamtool: the tape's file work failed")
            if len(items) < len(batch):
                return

    def shutdown(self) -> None:
        """Wait until everything submitted is done."""
        import atexit

        with self._guard:
            if not self._closed:
                self._closed = True
                self._queue.put(None)
        atexit.unregister(self.shutdown)
        if self._thread is not threading.current_thread():
            self._thread.join()


@dataclass(slots=True, eq=False)
class Claim:
    """An exchange's recording waiting for its name (see :meth:`ProxyApp._claim_all`)."""

    ex: Exchange
    recorder: Any
    api: str
    model: str | None
    error: BaseException | None = None
    loop: Any = None
    done: Any = None  # an asyncio future of ``loop``


def _settle(claims: list[Claim]) -> None:
    """On the claims' event loop: each claim's future done (or failed with its error)."""
    for claim in claims:
        if claim.done.done():
            continue
        if claim.error is not None:
            claim.done.set_exception(claim.error)
        else:
            claim.done.set_result(None)


# -- the app ---------------------------------------------------------------------------------------
@dataclass(slots=True)
class ProxyConfig:
    out: str | Path = DEFAULT_OUT
    upstreams: Upstreams = field(default_factory=Upstreams)
    timeout: float = 600.0
    connect_timeout: float = 30.0
    # request body -> transform; its ``api`` attribute names the API whose responses it rewrites
    transform: Callable[[Any], StreamTransform] | None = None
    observer: Observer | None = None
    verify: bool | ssl.SSLContext = True  # check the upstream's TLS certificate
    log: Callable[[str], None] | None = None  # one line per refused request (default: stderr)
    max_body: int = MAX_BODY  # request bodies larger are answered 413
    body_timeout: float = BODY_TIMEOUT  # seconds a request body may take: 408 after
    max_recording_bytes: int = MAX_RECORDING_BYTES  # a recording's limit: cut at it


class ProxyApp:
    """The ASGI app of ``streamtool proxy``."""

    def __init__(self, config: ProxyConfig) -> None:
        self.config = config
        # a store URL (s3://...): recorded into a local folder, each exchange published to the
        # store as soon as it is complete (net.store)
        self.publisher: Any = None
        out = config.out
        from ..exchange.store_layout import is_store_url

        if is_store_url(str(out)):
            from .store import StorePublisher, StoreTape, staging_folder

            store = StoreTape(str(out))
            store.check()  # a missing bucket or refused credentials: said now, in one line
            self.publisher = StorePublisher(store, log=self.log)
            out = staging_folder(str(out))
        self.tape = Tape(out, storage=self.publisher)
        if not self.tape.folder.is_dir():
            raise RecordingError(str(self.tape.folder), None, "is not a folder")
        self.recorded = 0  # exchanges recorded and indexed
        self.interrupted = 0  # of them, those that ended interrupted (the client left, a stop)
        self.forwarder = Forwarder(
            timeout=config.timeout,
            connect_timeout=config.connect_timeout,
            verify=config.verify,
            max_recording_bytes=config.max_recording_bytes,
        )
        self.active: set[Exchange] = set()
        # the tape's file work, off the event loop: recordings named in one thread (while their
        # requests go upstream), the fsynced index appended in another, each in order and each
        # taking all the work waiting at once (one hold of the tape's lock, one fsync: a lock
        # and an fsync per exchange kept the threads, and the interpreter's lock, busy enough
        # to hold up every exchange with 50 at once)
        self._namer = Batches(self._claim_all, "tape-names")
        self._index_writer = Batches(self._index_all, "tape-index")

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] == "websocket":
            await self._session(scope, receive, send)
            return
        if scope["type"] != "http":
            return
        checked = await self._checked(scope, send)
        if checked is None:
            return
        scope = checked
        from starlette.requests import Request

        request = Request(scope, receive)
        config = self.config
        try:
            body = await read_body(request, max_body=config.max_body, timeout=config.body_timeout)
        except BodyRefused as exc:
            what = f"{request.method} {redact_keys(request.url.path)}"
            if exc.status is None:
                if not exc.quiet:
                    _log.warning("%s: %s", what, exc.message)
                return
            _log.warning("%s -> %s: %s", what, exc.status, exc.message)
            style = route(request.method, request.url.path, request.headers, None).style
            body = error_body(style, exc.status, f"streamtool proxy: {exc.message}")
            await refusal(exc.status, body)(scope, receive, send)
            return
        # a large body is parsed and scrubbed for its recording in a worker thread
        response = await off_loop(len(body), self.handle, request, body)
        await response(scope, receive, send)

    async def _checked(self, scope: Any, send: Any) -> Any:
        """``scope`` with its target as a plain path, or ``None`` once the request is refused:
        421 for a ``Host`` that is not loopback (:mod:`..exchange.hostcheck`), 400 for a target
        that is not a path (:func:`target_path`)."""
        raw = _raw_target(scope)
        path, status, why = _target(scope, raw)
        if why is not None:
            self.log(f"{scope.get('method', '?')} {_shown(raw)!r} -> {status}: {why}")
            await refuse(send, status, why)
            return None
        if path == raw:
            return scope
        return {**scope, "raw_path": path.encode("latin-1"), "path": unquote(path)}

    def log(self, line: str) -> None:
        if self.config.log is not None:
            self.config.log(line)
            return
        sys.stderr.write(f"streamtool: {line}\n")
        sys.stderr.flush()

    async def _lifespan(self, receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                # pay for the imports and the TLS context now, not in the first request
                import jsonlines  # noqa: F401

                _ = self.forwarder.client
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.forwarder.aclose()
                self.finish()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def finish(self) -> None:
        """Wait for the tape's file work: every exchange ended is in the index, its count in
        :attr:`recorded` (at the server's stop, once its requests are done)."""
        self._namer.shutdown()
        self._index_writer.shutdown()
        if self.publisher is not None:
            kept = self.publisher.close(self.tape.folder)
            if kept is not None:
                self.log(kept)

    def handle(self, request: Any, body: bytes) -> Any:
        parsed = request_body(body)
        scope = request.scope
        raw_path = scope.get("raw_path") or scope["path"].encode("utf-8")
        path = raw_path.decode("latin-1")
        query = scope.get("query_string", b"").decode("latin-1")
        r = route(request.method, request.url.path, request.headers, parsed)
        try:
            url = self.config.upstreams.url(r, path, query)
        except NoUpstream as exc:
            self.log(f"{request.method} {_shown(request.url.path)!r} -> 502: {exc}")
            return refusal(502, error_body(r.style, 502, f"streamtool proxy: {exc}"))
        # the model and path name the file, the index entry and the journal's row: a credential
        # the request carries (a model set to the key) reaches none of them
        secrets = request_secrets(request.headers.items(), url)
        scrub = SecretScrubber(secrets)
        model = None if r.model is None else redact_keys(scrub.text(r.model))
        ex = Exchange(
            method=request.method,
            path=redact_keys(scrub.text(request.url.path)),
            provider=r.provider,
            model=model,
        )
        if not r.generating:
            return self.forwarder.forward(request, url, body=body, exchange=ex, error_style=r.style)
        assert r.api is not None
        ex.api = r.api
        # checked for key patterns and its file named in :meth:`_claim`, while the request goes
        # upstream
        recorder = recorder_for(
            request,
            body,
            "",
            provider=r.provider,
            api=r.api,
            url=url,
            parsed=parsed,
            secrets=secrets,
        )
        claim = Claim(ex, recorder, f"{r.provider}-{r.api}", model)
        transform = None
        # a transform says which API's responses it rewrites (``api``), else the default API's
        applies = getattr(self.config.transform, "api", None) or _DEFAULT.name
        if self.config.transform is not None and r.api == applies:
            transform = self.config.transform(parsed)
        self.active.add(ex)
        observer = self.config.observer
        return self.forwarder.forward(
            request,
            url,
            body=body,
            recorder=recorder,
            exchange=ex,
            observer=observer,
            transform=transform,
            error_style=r.style,
            on_end=self._ended,
            prepare=partial(self._naming, claim),
        )

    async def _session(self, scope: Any, receive: Any, send: Any) -> None:
        """A WebSocket upgrade: the session relayed upstream and recorded (:mod:`.ws_relay`)."""
        from .ws_relay import deny, relay, websocket_url

        raw = _raw_target(scope)
        raw, status, why = _target(scope, raw)
        if why is not None:
            self.log(f"WebSocket {_shown(raw)!r} -> {status}: {why}")
            await receive()  # websocket.connect
            await deny(send, status, [("content-type", "text/plain; charset=utf-8")], why.encode())
            return
        path = unquote(raw)
        query = scope.get("query_string", b"").decode("latin-1")
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        r = route("GET", path, dict(headers), None)
        wire = served_api(path, "websocket")
        try:
            url = websocket_url(self.config.upstreams.url(r, raw, query))
        except BadTarget as exc:
            await receive()
            await deny(send, 400, [], str(exc).encode())
            return
        recorder = await self._session_recorder(url, headers, r.provider, wire, path)
        ex = None if recorder is None else recorder[1]
        verify = self.config.verify
        ssl_context: Any = None
        if url.startswith("wss://"):
            import ssl as ssl_module

            ssl_context = verify if isinstance(verify, ssl_module.SSLContext) else None
            if verify is False:
                ssl_context = ssl_module.create_default_context()
                ssl_context.check_hostname = False
                ssl_context.verify_mode = ssl_module.CERT_NONE
        await relay(
            scope,
            receive,
            send,
            url=url,
            recorder=None if recorder is None else recorder[0],
            connect_timeout=self.config.connect_timeout,
            ssl=ssl_context,
            on_end=None if ex is None else partial(self._session_ended, ex),
        )

    async def _session_recorder(
        self, url: str, headers: list[tuple[str, str]], provider: str, wire: Any, path: str
    ) -> tuple[Any, Exchange] | None:
        """The recorder of a session and its exchange, its file named; ``None`` when its
        request holds a key pattern (relayed, not recorded)."""
        from ..recording.session import SessionRecorder

        api = wire.name if wire is not None else None
        recorder = SessionRecorder(
            None,
            url=url,
            headers=headers,
            provider=provider,
            api=api,
            max_bytes=self.config.max_recording_bytes,
        )
        model = _query_model(url)
        model = None if model is None else redact_keys(recorder.scrubber.text(model))
        ex = Exchange(
            method="GET",
            path=redact_keys(recorder.scrubber.text(path)),
            provider=provider,
            model=model,
        )
        ex.api = api
        claim = Claim(ex, recorder, f"{provider}-{api or 'websocket'}", model)
        try:
            await self._naming(claim)
        except RecordingError as exc:
            self.log(f"WebSocket {path}: relayed, not recorded: {exc}")
            return None
        self.active.add(ex)
        if self.config.observer is not None:
            self.config.observer.started(ex)  # a row of its own in the live view
        return recorder, ex

    def _session_ended(self, ex: Exchange, recorder: Any, reason: str) -> None:
        if recorder is not None:
            ex.status = recorder.status  # None: the upstream was not reached, nothing written
            ex.chunks = recorder.messages
            ex.ttft = recorder.first_server
            ex.duration = recorder.end_t
        ex.end = "error" if reason == "dropped" else reason
        if self.config.observer is not None:
            self.config.observer.ended(ex)
        self._ended(ex)

    def _naming(self, claim: Claim) -> asyncio.Future[None]:
        """``claim`` queued for the naming thread: a future that is done once its recording
        is named, or raises why it is not (the forwarder awaits it before recording, and
        before an exchange ends: its index entry is written after its file was named)."""
        loop = asyncio.get_running_loop()
        claim.done = loop.create_future()
        claim.loop = loop
        self._namer.submit(claim)
        return claim.done

    def _claim_all(self, claims: list[Claim]) -> None:
        """Check the request of each claim for key patterns (a request holding one is
        forwarded, not recorded), then name the recordings of the others (sequence numbers,
        each held by its file, made empty), all under one hold of the tape's lock."""
        try:
            named: list[Claim] = []
            for claim in claims:
                try:
                    claim.recorder.preflight()
                except Exception as exc:
                    claim.error = exc
                else:
                    named.append(claim)
            got = self.tape.allocate_many([(c.api, c.model) for c in named])
            for claim, name in zip(named, got, strict=True):
                if isinstance(name, Exception):
                    claim.error = name
                    continue
                claim.ex.seq, file = name
                claim.ex.file = claim.recorder.path = str(file)
                claim.recorder.claimed = True  # the tape made its file: written as is
        except Exception as exc:  # the tape's lock could not be had
            for claim in claims:
                if claim.error is None and claim.ex.file is None:
                    claim.error = exc
        finally:
            by_loop: dict[Any, list[Claim]] = {}
            for claim in claims:
                by_loop.setdefault(claim.loop, []).append(claim)
            for loop, waiting in by_loop.items():
                with suppress(RuntimeError):  # a loop closed meanwhile: nobody waits
                    loop.call_soon_threadsafe(_settle, waiting)

    def _ended(self, ex: Exchange) -> None:
        self.active.discard(ex)
        if self.config.observer is None:
            # no live view to show it in its row: what went wrong is one line of its own
            record_error = ex.record_error and f"not recorded: {ex.record_error}"
            problems = [p for p in (ex.warning, record_error) if p]
            if problems:
                self.log(redact_keys(f"{ex.method} {ex.path}: {'; '.join(problems)}"))
        self._index_writer.submit(ex)

    def _index_all(self, ended: list[Exchange]) -> None:
        """Index recorded exchanges, in the order they ended (one write and one fsync for
        them all). One whose recording could not be written (a full disk; what was written is
        kept), or was never started (the upstream was not reached: its file is empty), is not
        an exchange of the tape: not indexed, not counted."""
        kept: list[Exchange] = []
        for ex in ended:
            if ex.file is None:
                continue
            if ex.record_error is not None or not written(ex.file):
                self.tape.release(ex.file)  # an empty file goes; its number is not used again
                continue
            kept.append(ex)
        if not kept:
            return
        try:
            self.tape.append_many([IndexEntry(**index_entry(ex)) for ex in kept])
        except RecordingError as exc:  # an index put in as a link meanwhile, a full disk
            listed = set()
            with suppress(RecordingError):  # what a cut write put in whole is indexed
                listed = {e.file for e in read_index(self.tape.folder)}
            for ex in kept:
                name = Path(ex.file or "").name
                if name not in listed:
                    self.tape.release(name)
                    self.log(f"{name}: not indexed: {exc}")
            kept = [ex for ex in kept if Path(ex.file or "").name in listed]
        self.recorded += len(kept)
        self.interrupted += sum(ex.end == "interrupted" for ex in kept)


def _query_model(url: str) -> str | None:
    """The ``model`` query parameter of a URL (a WebSocket session names its model there)."""
    from urllib.parse import parse_qs

    found = parse_qs(urlsplit(url).query).get("model")
    return found[0] if found else None


# -- running it ------------------------------------------------------------------------------------
# descriptors an exchange holds: the agent's connection, the upstream's and the recording
FDS_PER_CONNECTION = 3


def uvicorn_config(
    app: Any, *, log_level: str = "warning", access_log: bool = False, limits: Any = None
) -> Any:
    """uvicorn settings for the proxy: no headers of its own (the upstream's pass through).

    ``limits`` (a :class:`~.guard.ConnectionLimits`): the connection limit and header timeout;
    by default as many connections as the open-file limit allows, each counted as three
    descriptors (the agent's connection, the upstream's and the recording).
    """
    import uvicorn

    from .guard import ConnectionLimits, connection_limit, guarded

    if limits is None:
        limits = ConnectionLimits(connection_limit(None, FDS_PER_CONNECTION))
    config = uvicorn.Config(
        **guarded(limits, app, websockets=True),
        log_level=log_level,
        access_log=access_log,
        lifespan="on",
        server_header=False,
        date_header=False,
        timeout_graceful_shutdown=3,
        timeout_keep_alive=75,
    )
    quiet_cut_logging()
    return config


def run_proxy(
    app: ProxyApp, sock: Any, *, log_level: str = "warning", limits: Any = None
) -> Stopped:
    """Serve on ``sock`` until interrupted (SIGINT, SIGTERM): the exchanges in progress are cut
    at once, each recording gets its end record (``interrupted``) and its index entry."""
    server = server_for(uvicorn_config(app, log_level=log_level, limits=limits))
    try:
        return run_until_stopped(server, sock)
    finally:
        app.finish()


class ProxyThread(ServerThread):
    """The proxy on 127.0.0.1 in a background thread: ``with ProxyThread(config) as p``.

    ``p.url`` is its origin; stopped (and every recording finished) on exit.
    """

    def __init__(self, config: ProxyConfig, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(
            ProxyApp(config), host, port, settings=uvicorn_config, name="the proxy", stop_timeout=15
        )
