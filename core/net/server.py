"""``streamtool serve``: recordings played back over real HTTP (the edge; starlette + uvicorn).

The library of recordings and the choice of which one answers a request are plain Python
(:class:`Library`, :meth:`Library.select`); the write schedule comes from
:mod:`streamtool.core.net.playback`. This module adds the ASGI app that sends the recorded bytes,
one recorded read per write, and helpers that run it with uvicorn. starlette, anyio and uvicorn
are imported only inside the functions that need them.
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from ..converters import detect_from_event, detect_from_header
from ..recording.reader import RAW_SUFFIXES, RECORDING_SUFFIXES, Source
from ..recording.secrets import REDACTED
from ..recording.tape_index import INDEX_NAME
from ..records import RecordingError
from ..wire import fastjson
from ..wire.framing import PendingDecoder, sniff
from ..wire.sse import SSEEvent
from .playback import Cut, Playback, schedule

RECORDING_HEADER = "x-streamtool-recording"
SNIFF_BYTES = 64 * 1024
# response headers never replayed: framing and connection handling are the server's own, the
# body is served decoded, and cookies or redacted values mean nothing to a client
DROPPED_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "transfer-encoding",
        "content-length",
        "content-encoding",
        "date",
        "server",
        "set-cookie",
        "alt-svc",
        "strict-transport-security",
        "via",
    }
)
# endpoint path suffix -> the converters whose recordings answer it
ENDPOINTS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("/chat/completions", "openai", ("openai-chat", "kimi-k2")),
    ("/responses", "openai", ("openai-responses",)),
    ("/messages", "anthropic", ("anthropic",)),
    (":streamGenerateContent", "gemini", ("gemini",)),
)
_GEMINI_MODEL = re.compile(r"/models/([^/:]+):")
# converter -> the API it speaks, as a client names it (``GET /`` and the logs)
API_NAMES = {
    "openai-chat": "chat.completions",
    "kimi-k2": "chat.completions",
    "openai-responses": "responses",
    "anthropic": "messages",
    "gemini": "streamGenerateContent",
}


# -- the recordings ------------------------------------------------------------------------------
@dataclass(slots=True)
class Recording:
    """One recording (or raw SSE body) held in memory, ready to be served."""

    name: str
    path: str
    api: str | None  # converter name, or None when the stream does not say
    model: str | None
    status: int
    headers: list[tuple[str, str]]
    chunks: list[tuple[float | None, bytes]] = field(repr=False)
    size: int = 0
    # how the recorded stream ended: "complete", "error", "timeout", "interrupted", or
    # "cut off" (no end record)
    ended: str = "complete"
    # the request it answered: its JSON body (None when the recording holds none, as a raw
    # .sse body) and its endpoint suffix (``/chat/completions``, ...; None when unknown)
    request_body: Any = field(default=None, repr=False)
    endpoint: str | None = None

    @property
    def broken(self) -> bool:
        """The recorded stream did not end properly: it is served the same way, by dropping
        the connection after its last byte (HTTP error statuses are complete responses)."""
        return self.ended != "complete" and self.status < 400

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "api": API_NAMES.get(self.api or ""),
            "endpoint": self.endpoint or endpoint_of_api(self.api),
            "model": self.model,
            "status": self.status,
            "bytes": self.size,
            "chunks": len(self.chunks),
            "ended": self.ended,
        }


def expand_paths(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Files as given, and the recordings (``.jsonl``, ``.sse``, ``.txt``) inside folders."""
    out: list[Path] = []
    suffixes = RAW_SUFFIXES | (RECORDING_SUFFIXES - {".json"})
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = sorted(
                f
                for f in p.iterdir()
                if f.is_file() and f.suffix.lower() in suffixes and f.name != INDEX_NAME
            )
            if not found:
                raise RecordingError(str(p), None, "holds no recordings (.jsonl, .sse, .txt)")
            out.extend(found)
        elif p.exists():
            out.append(p)
        else:
            raise RecordingError(str(p), None, "no such file or folder")
    return out


def _sniff(chunks: list[tuple[float | None, bytes]]) -> tuple[str | None, str | None]:
    """The API and model a body's first events show."""
    decoder = PendingDecoder()  # the framing decides: SSE, a JSON array or NDJSON
    api: str | None = None
    model: str | None = None
    seen = 0
    for _, data in chunks:
        for item in decoder.feed(data):
            if type(item) is not SSEEvent:
                continue
            if api is None:
                api = detect_from_event(item)
            if model is None:
                model = _model_of(item.data)
            if api is not None and model is not None:
                return api, model
        seen += len(data)
        if seen >= SNIFF_BYTES:
            break
    return api, model


def _model_of(data: str) -> str | None:
    try:
        obj: Any = fastjson.loads(data)
    except ValueError:
        return None
    if isinstance(obj, list) and obj:
        obj = obj[0]
    if not isinstance(obj, dict):
        return None
    for holder in (obj, obj.get("message"), obj.get("response")):
        if isinstance(holder, dict):
            for key in ("model", "modelVersion"):
                if isinstance(holder.get(key), str) and holder[key]:
                    return str(holder[key])
    return None


# RFC 9110 token characters for a name; a value is latin-1 without CR, LF or NUL
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEADER_VALUE = re.compile(r"[^\r\n\x00\u0100-\U0010ffff]*")
_log = logging.getLogger("streamtool.serve")


def load_recording(path: str | os.PathLike[str]) -> Recording:
    source = Source(path)
    chunks: list[tuple[float | None, bytes]] = []
    size = 0
    for chunk in source.chunks():
        data = chunk.data if isinstance(chunk.data, bytes) else chunk.data.encode("utf-8")
        chunks.append((chunk.t, data))
        size += len(data)
    header = source.header
    api = detect_from_header(header) if not header.raw_body else None
    model = header.model
    url = header.url
    if model is None and url:
        found = _GEMINI_MODEL.search(unquote(urlsplit(url).path))
        if found:
            model = found.group(1)
    if api is None or model is None:
        sniffed_api, sniffed_model = _sniff(chunks)
        api = api or sniffed_api
        model = model or sniffed_model
    request_path = unquote(urlsplit(url).path) if url else ""
    endpoint = endpoint_for(request_path)
    suffix = endpoint[0] if endpoint is not None else endpoint_of_api(api)
    status = header.response.get("status")
    if isinstance(status, int) and 100 <= status <= 199:
        # an informational status (101 Switching Protocols) is no answer to a request
        raise RecordingError(str(path), None, f"recorded status {status} cannot be served")
    if not isinstance(status, int) or not 100 <= status <= 599:
        status = 200
    recorded = header.response.get("headers")
    headers: list[tuple[str, str]] = []
    if isinstance(recorded, dict):
        for k, v in recorded.items():
            if k.lower() in DROPPED_HEADERS or not isinstance(v, str) or REDACTED in v:
                continue
            if not _HEADER_NAME.fullmatch(k) or not _HEADER_VALUE.fullmatch(v):
                _log.warning("%s: recorded header %r is not valid HTTP: not served", path, k)
                continue
            headers.append((k.lower(), v))
    if not any(k == "content-type" for k, _ in headers):
        head = b"".join(d for _, d in chunks[:8])
        json_body = sniff(head) in ("json-array", "ndjson") or status >= 400
        headers.append(("content-type", "application/json" if json_body else "text/event-stream"))
    return Recording(
        name=Path(path).stem,
        path=str(path),
        api=api,
        model=model,
        status=status,
        headers=headers,
        chunks=chunks,
        size=size,
        ended=source.end.reason if source.end is not None else "cut off",
        request_body=header.request.get("body"),
        endpoint=suffix,
    )


class SelectionError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class NoMatch(SelectionError):
    """Nothing recorded answers the request (a tape's miss): HTTP 404, or forwarded upstream
    when the server records what is missing."""

    def __init__(self, message: str) -> None:
        super().__init__(404, message)


@dataclass(slots=True)
class Incoming:
    """A request as the choice of a recording sees it."""

    path: str
    endpoint: str  # the endpoint suffix (see ENDPOINTS)
    apis: tuple[str, ...]
    model: str | None
    name: str | None  # the X-Streamtool-Recording header
    body: Any  # parsed JSON, or None for an empty body
    gemini_model: str | None = None  # the model named in a Gemini path


class Library:
    """The recordings a server answers with, and the rule that picks one for a request."""

    def __init__(self, recordings: Sequence[Recording]) -> None:
        self.recordings = list(recordings)
        self.by_name: dict[str, Recording] = {}
        for rec in self.recordings:
            for key in (rec.name, Path(rec.path).name):
                other = self.by_name.get(key)
                if other is not None and other is not rec:
                    raise RecordingError(
                        rec.path, None, f"two recordings are named {key!r} (also {other.path})"
                    )
                self.by_name[key] = rec

    @classmethod
    def from_paths(cls, paths: Iterable[str | os.PathLike[str]]) -> Library:
        files = expand_paths(paths)
        if not files:
            raise RecordingError("serve", None, "no recordings given")
        if len(files) == 1:
            return cls([load_recording(files[0])])
        # among several, one that cannot be read or served is skipped with a warning
        loaded = []
        for p in files:
            try:
                loaded.append(load_recording(p))
            except RecordingError as exc:
                _log.warning("skipped: %s", exc)
        if not loaded:
            raise RecordingError("serve", None, "none of the recordings can be served")
        return cls(loaded)

    def names(self) -> list[str]:
        return [r.name for r in self.recordings]

    def choose(self, request: Incoming) -> Recording:
        """The recording that answers ``request``; raises :class:`SelectionError`."""
        return self.select(request.apis, request.model, request.name)

    def select(self, apis: tuple[str, ...], model: str | None, name: str | None) -> Recording:
        """The recording for a request: by name (header), by model, else the only one."""
        if name:
            rec = self.by_name.get(name)
            if rec is None:
                raise SelectionError(
                    404, f"no recording named {name!r}; available: {', '.join(self.names())}"
                )
            return rec
        candidates = [r for r in self.recordings if r.api in apis]
        if model:
            matching = [r for r in candidates if r.model == model]
            if len(matching) == 1:
                return matching[0]
            if len(matching) > 1:
                raise SelectionError(
                    400,
                    f"{len(matching)} recordings are for model {model!r} "
                    f"({', '.join(r.name for r in matching)}); pick one with the "
                    f"X-Streamtool-Recording header",
                )
        if len(candidates) == 1:
            return candidates[0]
        if len(self.recordings) == 1 and self.recordings[0].api is None:
            return self.recordings[0]
        if not candidates:
            available = ", ".join(f"{r.name} ({r.api or 'unknown API'})" for r in self.recordings)
            raise SelectionError(404, f"no recording speaks this API; available: {available}")
        wanted = f" and none is for model {model!r}" if model else ""
        raise SelectionError(
            400,
            f"{len(candidates)} recordings answer this endpoint{wanted} "
            f"({', '.join(r.name for r in candidates)}); pick one with the model name or the "
            "X-Streamtool-Recording header",
        )


def endpoint_for(path: str) -> tuple[str, str, tuple[str, ...]] | None:
    """The endpoint suffix, the error style and the converters for a request path, or
    ``None``."""
    for suffix, style, apis in ENDPOINTS:
        if path.endswith(suffix):
            return suffix, style, apis
    return None


def endpoint_of_api(api: str | None) -> str | None:
    """The endpoint suffix a converter's recordings answer."""
    for suffix, _, apis in ENDPOINTS:
        if api in apis:
            return suffix
    return None


def style_for(path: str) -> str:
    """The error style of a path, also for paths no recording answers."""
    if "/messages" in path:
        return "anthropic"
    if ":" in path.rsplit("/", 1)[-1] or "/models/" in path:
        return "gemini"
    return "openai"


def error_body(style: str, status: int, message: str) -> bytes:
    """An error in the shape the API's SDK reads its message from."""
    kinds = {
        400: "invalid_request_error",
        404: "not_found_error",
        405: "invalid_request_error",
        409: "conflict_error",
    }
    kind = kinds.get(status, "api_error")
    obj: dict[str, Any]
    if style == "anthropic":
        obj = {"type": "error", "error": {"type": kind, "message": message}}
    elif style == "gemini":
        statuses = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 405: "NOT_FOUND", 409: "ABORTED"}
        obj = {"error": {"code": status, "message": message, "status": statuses.get(status)}}
    else:
        code = {404: "not_found"}.get(status)
        obj = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return json.dumps(obj).encode("utf-8")


class CutConnection(Exception):
    """Raised by the app to make the server drop a connection (``--cut-after``)."""


class _QuietCuts(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, CutConnection)


def quiet_cut_logging() -> None:
    """Deliberate connection drops are not server errors: keep them out of the log."""
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _QuietCuts) for f in logger.filters):
        logger.addFilter(_QuietCuts())


# -- the ASGI app --------------------------------------------------------------------------------
MAX_BODY = 10 * 1024 * 1024  # the default request body limit (--max-body): 413 beyond


def parse_size(text: str) -> int:
    """``10MB``, ``512K``, ``1048576``: a size in bytes (``ValueError`` with a sentence)."""
    value = text.strip().upper().removesuffix("B")
    scale = 1
    for suffix, factor in (("K", 1024), ("M", 1024**2), ("G", 1024**3)):
        if value.endswith(suffix):
            value, scale = value[:-1], factor
            break
    try:
        size = int(float(value) * scale)
    except ValueError:
        raise ValueError(f"--max-body {text!r}: a size such as 10MB, 512K or 1048576") from None
    if size <= 0:
        raise ValueError(f"--max-body {text!r}: must be more than 0 bytes")
    return size


def create_app(
    library: Library,
    playback: Playback | None = None,
    log: Callable[[str], None] | None = None,
    on_miss: Callable[[Any, bytes, Incoming, str], Any] | None = None,
    max_body: int = MAX_BODY,
) -> Any:
    """The starlette app answering the provider endpoints from ``library``.

    ``log`` gets one line per request: the recording served, or the error status and why.
    ``on_miss(request, raw_body, incoming, error_style)`` answers a request nothing matched
    (:class:`NoMatch`) instead of the 404: record on miss. A request body larger than
    ``max_body`` bytes is answered 413 without being read whole.
    """
    import anyio
    from starlette.applications import Starlette
    from starlette.requests import ClientDisconnect, Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route
    from starlette.types import Receive, Scope, Send

    play = playback or Playback()

    class RecordedStream(Response):
        """Sends a recording's status, headers and body writes, paced, watching for disconnect."""

        def __init__(self, rec: Recording, start: float) -> None:
            self.rec = rec
            self.start = start
            self.status_code = rec.status
            self.background = None
            self.raw_headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in rec.headers]
            self.raw_headers.append((RECORDING_HEADER.encode(), rec.name.encode("utf-8")))

        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            cut = False
            async with anyio.create_task_group() as tg:

                async def watch_disconnect() -> None:
                    while True:
                        message = await receive()
                        if message["type"] == "http.disconnect":
                            tg.cancel_scope.cancel()
                            return

                tg.start_soon(watch_disconnect)
                cut = await self._play(send)
                tg.cancel_scope.cancel()
            if cut:
                raise CutConnection(self.rec.name)

        async def _play(self, send: Send) -> bool:
            await send(
                {
                    "type": "http.response.start",
                    "status": self.status_code,
                    "headers": self.raw_headers,
                }
            )
            rec = self.rec
            plan = play
            if rec.broken and plan.cut_after is None:
                plan = replace(plan, cut_after=rec.size)  # broken off as it was recorded
            for step in schedule(rec.chunks, plan, rec.size):
                if isinstance(step, Cut):
                    return True
                delay = self.start + step.at - anyio.current_time()
                if delay > 0:
                    await anyio.sleep(delay)
                await send({"type": "http.response.body", "body": step.data, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return False

    def error(request: Request, style: str, status: int, message: str) -> Response:
        if log is not None:
            log(f"{request.method} {request.url.path} -> {status}: {message}")
        return Response(error_body(style, status, message), status, media_type="application/json")

    known = ", ".join(f"POST *{suffix}" for suffix, _, _ in ENDPOINTS)

    async def answer(request: Request) -> Response:
        start = anyio.current_time()
        path = request.url.path
        endpoint = endpoint_for(path)
        if endpoint is None or request.method != "POST":
            return error(
                request,
                style_for(path),
                404,
                f"streamtool serve answers {known}; not {request.method} {path}",
            )
        suffix, style, apis = endpoint
        too_big = f"the request body is larger than {max_body} bytes (--max-body)"
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_body:
            return error(request, style, 413, too_big)
        pieces: list[bytes] = []
        size = 0
        try:
            async for piece in request.stream():
                size += len(piece)
                if size > max_body:
                    return error(request, style, 413, too_big)
                pieces.append(piece)
        except ClientDisconnect:
            if log is not None:
                log(f"{request.method} {path}: the client went away while sending its body")
            return Response(status_code=400)  # nobody is there to read it
        raw = b"".join(pieces)
        try:
            body: Any = fastjson.loads(raw) if raw.strip() else None
        except (ValueError, UnicodeDecodeError):
            return error(request, style, 400, "the request body is not JSON")
        model = body.get("model") if isinstance(body, dict) else None
        gemini_model = None
        if style == "gemini":
            found = _GEMINI_MODEL.search(unquote(path))
            gemini_model = found.group(1) if found else None
            model = gemini_model or model
        incoming = Incoming(
            path=path,
            endpoint=suffix,
            apis=apis,
            model=model if isinstance(model, str) else None,
            name=request.headers.get(RECORDING_HEADER),
            body=body,
            gemini_model=gemini_model,
        )
        try:
            rec = library.choose(incoming)
        except NoMatch as exc:
            if on_miss is None:
                return error(request, style, exc.status, exc.message)
            return on_miss(request, raw, incoming, style)
        except SelectionError as exc:
            return error(request, style, exc.status, exc.message)
        if (
            style != "gemini"
            and rec.status < 400
            and isinstance(body, dict)
            and body.get("stream") is not True
        ):
            return error(request, style, 400, "streamtool serve replays streams: send stream: true")
        if log is not None:
            log(f"{request.method} {path} -> {rec.name} ({rec.status})")
        return RecordedStream(rec, start)

    async def index(request: Request) -> Response:
        return JSONResponse({"recordings": [r.describe() for r in library.recordings]})

    methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
    return Starlette(
        routes=[
            Route("/", index, methods=["GET"]),
            Route("/{path:path}", answer, methods=methods),
        ]
    )


# -- connections under abuse ---------------------------------------------------------------------
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

    The asyncio event loop is used (the listening socket of :func:`bind` paces its accepts
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


class _Listener(socket.socket):
    """A listening socket that accepts at most :data:`ACCEPT_BURST` connections per turn of the
    asyncio event loop. A connection over the limit is closed a turn or two after it was
    accepted; accepting a whole queue of them at once could run out of descriptors first."""

    _burst = 0

    def accept(self) -> tuple[socket.socket, Any]:
        import asyncio

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return super().accept()
        if self._burst >= ACCEPT_BURST:
            raise BlockingIOError("the rest on the next turn of the event loop")
        conn, address = super().accept()
        if self._burst == 0:
            loop.call_soon(self._next_turn)
        self._burst += 1
        return conn, address

    def _next_turn(self) -> None:
        self._burst = 0


# -- running it ----------------------------------------------------------------------------------
def bind(host: str, port: int) -> socket.socket:
    """A listening socket (``port`` 0 picks a free one). Raises ``OSError`` if it cannot.

    The protocol is TCP by name: asyncio turns Nagle's algorithm off only on sockets whose
    ``proto`` says TCP, and a socket made with protocol 0 would hold each small write back for
    the peer's delayed ACK (tens of milliseconds on a reused connection).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = _Listener(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(1024)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def _config(
    app: Any, log_level: str, access_log: bool, limits: ConnectionLimits | None = None
) -> Any:
    import uvicorn

    config = uvicorn.Config(
        app,
        log_level=log_level,
        access_log=access_log,
        lifespan="off",
        timeout_graceful_shutdown=2,
        **guarded(limits or ConnectionLimits(connection_limit())),
    )
    quiet_cut_logging()
    return config


def run_server(
    app: Any,
    sock: socket.socket,
    *,
    log_level: str = "info",
    access_log: bool = True,
    limits: ConnectionLimits | None = None,
) -> None:
    """Serve on ``sock`` until interrupted (uvicorn handles SIGINT / SIGTERM).

    ``limits``: the connection limit and header timeout (default: derived from the open-file
    limit, :data:`HEADER_TIMEOUT`).
    """
    import uvicorn

    server = uvicorn.Server(_config(app, log_level, access_log, limits))
    server.run(sockets=[sock])


class ServerThread:
    """A server on 127.0.0.1 in a background thread, for tests: ``with ServerThread(app) as s``.

    ``s.url`` is the origin (``http://127.0.0.1:PORT``); stopped on exit.
    """

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0) -> None:
        self.app = app
        self.host = host
        self.port = port
        self.url = ""
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ServerThread:
        import time

        import uvicorn

        sock = bind(self.host, self.port)
        self.port = sock.getsockname()[1]
        self.url = f"http://{self.host}:{self.port}"
        self._server = uvicorn.Server(_config(self.app, "warning", False))
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the test server did not start")
            time.sleep(0.005)
        self._sock = sock
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._sock.close()


def serving(
    paths: Iterable[str | os.PathLike[str]], playback: Playback | None = None, port: int = 0
) -> ServerThread:
    """Serve recordings from a background thread: ``with serving(["rec.jsonl"]) as server:``.

    Point an SDK at ``server.url + "/v1"`` (OpenAI) or ``server.url`` (Anthropic, Gemini).
    """
    return ServerThread(create_app(Library.from_paths(paths), playback), port=port)
