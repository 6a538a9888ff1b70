"""``streamtool serve``: recordings played back over real HTTP (the edge; starlette + uvicorn).

The library of recordings and the choice of which one answers a request are plain Python
(:mod:`.library`); the write schedule comes from :mod:`..exchange.playback`, the endpoints from the
table of wire APIs (:mod:`streamtool.core.apis`). This module adds the ASGI app that sends the
recorded bytes, one recorded read per write; :mod:`.listen` runs it. starlette, anyio and uvicorn
are imported only inside the functions that need them.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any
from urllib.parse import unquote

from ..exchange.hostcheck import loopback_only
from ..exchange.playback import Cut, Playback, schedule
from ..plugins import api_table, error_body, served_api
from ..plugins.table import default_api
from ..recording.secrets import (
    credential_values,
    redact_keys,
    secret_query_values,
    without_secrets,
)
from ..wire import fastjson
from .bodies import BODY_TIMEOUT, MAX_BODY, BodyRefused, off_loop, read_body, refusal
from .library import Incoming, Library, NoMatch, Recording, SelectionError
from .listen import ServerThread, allow_status, send_watched

RECORDING_HEADER = "x-streamtool-recording"
# every method a request may come with: serve answers each (a 404 for all but POST)
_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


def style_for(path: str) -> str:
    """The error style of a path, also for paths no recording answers: the first API's that
    takes the path's errors (:attr:`~streamtool.core.plugins.WireApi.error_path`), else the
    default API's."""
    found = next((a for a in api_table() if a.errs_on(path)), None)
    return (found or default_api()).error_style


# -- the ASGI app --------------------------------------------------------------------------------
def masked(request: Any, text: str) -> str:
    """``text`` without the credentials ``request`` carries (headers, query parameters) and
    without anything key-shaped: what a log line or an error answer may show."""
    secrets = credential_values(request.headers.items()) + secret_query_values(str(request.url))
    return without_secrets(text, secrets)


def _parse(raw: bytes) -> Any:
    return fastjson.loads(raw) if raw.strip() else None


def parse_size(text: str, option: str = "--max-body") -> int:
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
        raise ValueError(f"{option} {text!r}: a size such as 10MB, 512K or 1048576") from None
    if size <= 0:
        raise ValueError(f"{option} {text!r}: must be more than 0 bytes")
    return size


def create_app(
    library: Library,
    playback: Playback | None = None,
    log: Callable[[str], None] | None = None,
    on_miss: Callable[[Any, bytes, Incoming, str], Any] | None = None,
    max_body: int = MAX_BODY,
    body_timeout: float = BODY_TIMEOUT,
    on_no_match: Callable[[str], None] | None = None,
    edge: Callable[[Any], Any] | None = None,
) -> Any:
    """The starlette app answering the provider endpoints from ``library``.

    ``log`` gets one line per request: the recording served, or the error status and why.
    ``on_miss(request, raw_body, incoming, error_style)`` answers a request nothing matched
    (:class:`NoMatch`) instead of the 404: record on miss; else ``on_no_match`` is told the
    404's message. A request body larger than ``max_body`` bytes is answered 413 without being
    read whole, one that has not arrived ``body_timeout`` seconds after its head 408
    (:mod:`.bodies`). A request that reached a
    loopback address under a ``Host`` that is not loopback is 421 (:mod:`..exchange.hostcheck`).
    ``edge`` wraps the app behind the host check: the requests of APIs served as sessions go to
    their players first (:mod:`.sessions`).
    """
    import anyio
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route, WebSocketRoute
    from starlette.types import Receive, Scope, Send

    play = playback or Playback()

    class RecordedStream(Response):
        """Sends a recording's status, headers and body writes, paced, watching for disconnect."""

        def __init__(self, rec: Recording, start: float) -> None:
            self.rec = rec
            self.start = start
            self.status_code = rec.status
            if not 100 <= rec.status <= 599:  # recorded as the upstream sent it (999)
                allow_status(rec.status)
            self.background = None
            self.raw_headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in rec.headers]
            self.raw_headers.append((RECORDING_HEADER.encode(), rec.name.encode("utf-8")))

        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            await send_watched(receive, lambda: self._play(send), self.rec.name)

        async def _play(self, send: Send) -> bool:
            return await play_recording(
                send, self.rec, play, self.start, self.status_code, self.raw_headers
            )

    def error(request: Request, style: str, status: int, message: str) -> Response:
        # the request's own credentials and anything key-shaped never reach the log or the
        # client's error (a model set to the key, a key in the path)
        message = masked(request, message)
        if log is not None:
            log(f"{request.method} {redact_keys(request.url.path)} -> {status}: {message}")
        return Response(error_body(style, status, message), status, media_type="application/json")

    known = ", ".join(f"POST *{api.route}" for api in api_table() if api.http)

    async def answer(request: Request) -> Response:
        start = anyio.current_time()
        path = request.url.path
        api = served_api(path, "http")
        if api is None or request.method != "POST":
            return error(
                request,
                style_for(path),
                404,
                f"streamtool serve answers {known}; not {request.method} {path}",
            )
        style = api.error_style
        try:
            raw = await read_body(request, max_body=max_body, timeout=body_timeout)
        except BodyRefused as exc:
            if exc.status is None:
                if log is not None and not exc.quiet:
                    log(f"{request.method} {redact_keys(path)}: {exc.message}")
                return Response(status_code=400)  # nobody is there to read it
            if log is not None:
                log(f"{request.method} {redact_keys(path)} -> {exc.status}: {exc.message}")
            return refusal(exc.status, error_body(style, exc.status, exc.message))
        try:
            body: Any = await off_loop(len(raw), _parse, raw)
        except (ValueError, UnicodeDecodeError):
            return error(request, style, 400, "the request body is not JSON")
        path_model = api.path_model(unquote(path))
        model = path_model or (body.get(api.model_field) if isinstance(body, dict) else None)
        incoming = Incoming(
            path=path,
            endpoint=api.route,
            apis=api.converters,
            model=model if isinstance(model, str) else None,
            name=request.headers.get(RECORDING_HEADER),
            body=body,
            path_model=path_model,
            headers=request.headers,
            query=request.scope.get("query_string", b"").decode("latin-1"),
        )
        try:
            rec = library.choose(incoming)
        except NoMatch as exc:
            if on_miss is None:
                if on_no_match is not None:
                    on_no_match(masked(request, exc.message))
                return error(request, style, exc.status, exc.message)
            # recording a large request (parsing, scrubbing) is done off the event loop
            return await off_loop(len(raw), on_miss, request, raw, incoming, style)
        except SelectionError as exc:
            return error(request, style, exc.status, exc.message)
        if (
            not api.stream_in_path
            and rec.status < 400
            and isinstance(body, dict)
            and body.get("stream") is not True
            and not _whole_answer(rec)
        ):
            return error(request, style, 400, "streamtool serve replays streams: send stream: true")
        rec = await _ready(library, rec, log, f"{request.method} {redact_keys(path)}")
        return RecordedStream(rec, start)

    async def index(request: Request) -> Response:
        return JSONResponse({"recordings": [r.describe() for r in library.recordings]})

    from .ws_serve import session_endpoint

    routes = [
        Route("/", index, methods=["GET"]),
        Route("/{path:path}", answer, methods=_METHODS),
        # a WebSocket upgrade: a recorded session of an API reached that way (:mod:`.ws_serve`)
        WebSocketRoute("/{path:path}", session_endpoint(library, play, log)),
    ]
    inner = Starlette(routes=routes)
    return loopback_only(edge(inner) if edge is not None else inner, log)


async def play_recording(
    send: Any,
    rec: Recording,
    play: Playback,
    start: float,
    status: int,
    headers: list[tuple[bytes, bytes]],
) -> bool:
    """Send ``rec``'s status, ``headers`` and body writes, paced by ``play`` from ``start``
    (anyio's clock); ``True`` when the connection is to be dropped after them (a cut planned
    or recorded)."""
    import anyio

    await send({"type": "http.response.start", "status": status, "headers": headers})
    plan = play
    if rec.broken and plan.cut_after is None:
        plan = replace(plan, cut_after=rec.size)  # broken off as it was recorded
    for step in schedule(rec.chunks, plan, rec.size):
        if isinstance(step, Cut):
            return True
        delay = start + step.at - anyio.current_time()
        # sleep, or at least let the loop run: a client that left is noticed (and the
        # writes stop) instead of each write failing on its own
        await anyio.sleep(max(delay, 0))
        await send({"type": "http.response.body", "body": step.data, "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})
    return False


def _whole_answer(rec: Recording) -> bool:
    """The recording answered without a stream (a JSON body, an imported plain exchange): a
    request that asks for none is answered with it."""
    kind = next((v for k, v in rec.headers if k.lower() == "content-type"), "")
    return kind.lower().startswith("application/json")


async def _ready(
    library: Library, rec: Recording, log: Callable[[str], None] | None, request: str
) -> Recording:
    """``rec`` ready to be served to ``request`` (``--mutate``: its quirks worked out at its
    first request, in a worker thread), and the request's log line naming them."""
    if library.needs_prepare:
        rec = await asyncio.to_thread(library.prepare, rec)
    if log is not None:
        quirks = library.mutated.get(rec.name)
        given = f" with {', '.join(quirks)}" if quirks else ""
        log(f"{request} -> {rec.name} ({rec.status}){given}")
    return rec


def serving(
    paths: Iterable[str | os.PathLike[str]], playback: Playback | None = None, port: int = 0
) -> ServerThread:
    """Serve recordings from a background thread: ``with serving(["rec.jsonl"]) as server:``.

    Point an SDK at ``server.url + "/v1"`` (OpenAI) or ``server.url`` (Anthropic, Gemini).
    """
    return ServerThread(create_app(Library.from_paths(paths), playback), port=port)
