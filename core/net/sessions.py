"""Sessions served over HTTP: the requests an API claims (MCP's JSON-RPC) answered by its
``session`` part's player, everything else by the recordings' app.

An API whose exchanges form a session (MCP: a POST, a GET stream and a DELETE share a session
id, a GET resumes a POST's stream) has a ``session`` part: a sans-IO ``Player`` given the tape's
exchanges, that answers one request at a time with a reply (status, headers, the body's reads in
parts, what the request did to the sessions). :func:`players` makes one per such API from a
library's recordings (with ``--mutate``'s session faults applied by the API's
``session_faults`` part); :class:`SessionEdge` routes the requests those APIs claim
(``claim_request`` of their ``detect`` part) to them and sends their replies: paced as the
recordings were (:mod:`..exchange.playback`), a part that waits for the client's answer to a
server request sent once it came (or after :data:`WAIT_TIMEOUT`), a GET stream held open until
its session ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from ..exchange.playback import Cut, Playback, schedule
from ..model.records import RecordedExchange
from ..plugins import ApiError, WireApi, api_for_converter, part
from ..plugins.table import api_for_request
from ..recording.reader import Source
from ..wire import fastjson
from .bodies import BODY_TIMEOUT, MAX_BODY, BodyRefused, off_loop, read_body
from .library import Incoming, Library, Recording
from .listen import send_watched

WAIT_TIMEOUT = 10.0  # seconds a stream waits for the client's answer to a server request
RECORDING_HEADER = b"x-streamtool-recording"


def exchanges_of(recordings: Sequence[Recording]) -> list[RecordedExchange]:
    """The recordings whole (header, reads, end), in the tape's order (their names: a tape
    numbers its files)."""
    out = []
    for rec in sorted(recordings, key=lambda r: r.name):
        if rec.origin is not None:
            header, chunks, end = rec.origin
        else:
            source = Source(rec.path)
            chunks = list(source.chunks())
            header, end = source.header, source.end
        out.append(RecordedExchange(rec.name, header, list(chunks), end))
    return out


def session_part(api: WireApi) -> Any:
    """An API's ``player`` part (:class:`ApiError` when its package has none)."""
    found = part(api, "player")
    if found is None:
        raise ApiError(f"API {api.id!r} serves no sessions: its package has no player part")
    return found


def session_groups(library: Library) -> dict[str, list[Recording]]:
    """The recordings of the APIs that serve sessions (a ``player`` part), by API id."""
    groups: dict[str, list[Recording]] = {}
    for rec in library.recordings:
        api = api_for_converter(rec.api)
        if api is not None and part(api, "player") is not None:
            groups.setdefault(api.id, []).append(rec)
    return groups


def players(
    library: Library, faults: Sequence[str] = ()
) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """A player per API whose recordings form sessions, and the session faults applied (by
    recording name: what ``--mutate`` did)."""
    from ..plugins import find_api

    found: dict[str, Any] = {}
    applied: dict[str, list[str]] = {}
    for api_id, recs in session_groups(library).items():
        api = find_api(api_id)
        assert api is not None
        exchanges = exchanges_of(recs)
        rules = part(api, "session_faults")
        if faults and rules is not None:
            exchanges, done = rules.apply_all(exchanges, list(faults))
            applied.update(done)
        found[api_id] = session_part(api).Player(exchanges)
    return found, applied


class _Signals:
    """Events by key, made when first asked for or set (an answer may come before its wait)."""

    def __init__(self) -> None:
        self._events: dict[str, asyncio.Event] = {}

    def event(self, key: str) -> asyncio.Event:
        found = self._events.get(key)
        if found is None:
            found = self._events[key] = asyncio.Event()
        return found

    def set(self, key: str) -> None:
        self.event(key).set()


class SessionEdge:
    """The ASGI app that answers the requests the session APIs claim with their players, and
    passes every other request to ``app``."""

    def __init__(
        self,
        app: Any,
        players_by_api: dict[str, Any],
        *,
        playback: Playback | None = None,
        log: Callable[[str], None] | None = None,
        on_served: Callable[[str], None] | None = None,
        max_body: int = MAX_BODY,
        body_timeout: float = BODY_TIMEOUT,
        wait_timeout: float = WAIT_TIMEOUT,
        forward: Callable[[Any, bytes, Incoming, str], Any] | None = None,
        on_no_match: Callable[[str], None] | None = None,
    ) -> None:
        self.app = app
        # answers a claimed request of an API without a player (its session is being
        # recorded: record on miss forwards it to the upstream)
        self.forward = forward
        self.on_no_match = on_no_match  # told why, for each request nothing recorded answers
        self.players = players_by_api
        self.playback = playback or Playback()
        self.log = log
        self.on_served = on_served
        self.max_body = max_body
        self.body_timeout = body_timeout
        self.wait_timeout = wait_timeout
        self.answers = _Signals()  # the client's answers to server requests, by key
        self.ends = _Signals()  # sessions ended, by key
        self.problems: list[str] = []  # what the clients did wrong (an unanswered request)

    def wrap(self, app: Any) -> SessionEdge:
        """This edge in front of ``app`` (what it passes every other request to)."""
        self.app = app
        return self

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        from starlette.requests import Request

        request = Request(scope, receive)
        headers = {k.lower(): v for k, v in request.headers.items()}
        raw = b""
        if scope["method"] == "POST":
            try:
                raw = await read_body(request, max_body=self.max_body, timeout=self.body_timeout)
            except BodyRefused as exc:
                if exc.status is None:
                    return  # nobody is there to answer
                from ..plugins import error_body
                from .bodies import refusal
                from .server import style_for

                body = error_body(style_for(scope["path"]), exc.status, exc.message)
                await refusal(exc.status, body)(scope, receive, send)
                return
        body = _parse(raw)
        claimed = api_for_request(scope["method"], headers, body)
        player = self.players.get(claimed[0].id) if claimed is not None else None
        if player is None and claimed is not None and self.forward is not None:
            api = claimed[0]
            incoming = Incoming(scope["path"], scope["path"], api.converters, None, None, body)
            response = await off_loop(
                len(raw), self.forward, request, raw, incoming, api.error_style
            )
            await response(scope, receive, send)
            return
        if player is None:
            await self.app(scope, _replaying(raw, receive), send)
            return
        missed = len(player.misses)
        reply = player.handle(scope["method"], scope["path"], headers, body)
        if self.on_no_match is not None:
            for why in player.misses[missed:]:
                self.on_no_match(why)
        self._note(scope, reply)
        await self._send(reply, receive, send)

    def _note(self, scope: Any, reply: Any) -> None:
        for key in reply.answered:
            self.answers.set(key)
        if reply.ended is not None:
            self.ends.set(reply.ended)
        if reply.name is not None and self.on_served is not None:
            self.on_served(reply.name)
        if self.log is not None:
            self.log(f"{scope['method']} {scope['path']} -> {reply.note or reply.status}")

    async def _send(self, reply: Any, receive: Any, send: Any) -> None:
        headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in reply.headers]
        if reply.name is not None:
            headers.append((RECORDING_HEADER, reply.name.encode("utf-8")))

        async def respond() -> bool:
            await send({"type": "http.response.start", "status": reply.status, "headers": headers})
            cut = await self._body(reply, send)
            if not cut and reply.hold is not None:
                await self.ends.event(reply.hold).wait()  # a GET stream: until its session ends
            if not cut:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            return cut

        await send_watched(receive, respond, reply.name or "a session's stream")

    async def _body(self, reply: Any, send: Any) -> bool:
        """Send the body's parts; True when the connection is to be dropped after it."""
        import anyio

        plan = self.playback
        for piece in reply.parts:
            if piece.wait is not None:
                try:
                    with anyio.fail_after(self.wait_timeout):
                        await self.answers.event(piece.wait).wait()
                except TimeoutError:
                    asked = piece.wait.rpartition(":")[2]
                    self.problems.append(
                        f"the client did not answer the server's request {asked} "
                        f"within {self.wait_timeout:g} s"
                    )
            size = sum(len(d) for _, d in piece.reads)
            start = anyio.current_time()
            for step in schedule(piece.reads, plan, size):
                if isinstance(step, Cut):
                    return True
                await anyio.sleep(max(start + step.at - anyio.current_time(), 0))
                await send({"type": "http.response.body", "body": step.data, "more_body": True})
        return bool(reply.cut)


def _parse(raw: bytes) -> Any:
    if not raw.strip():
        return None
    try:
        return fastjson.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None


def _replaying(raw: bytes, receive: Any) -> Any:
    """A ``receive`` that gives the body already read, then what the client sends next."""
    given = False

    async def again() -> Any:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": raw, "more_body": False}
        return await receive()

    return again


async def _nothing_else(scope: Any, receive: Any, send: Any) -> None:
    """What a session app answers a request its player does not claim: 404."""
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 404, "headers": []})
    await send({"type": "http.response.body", "body": b"not a request of the recorded session"})


def session_app(
    api_id: str, exchanges: Sequence[RecordedExchange], playback: Playback | None = None
) -> SessionEdge:
    """An app serving one recorded session (conform's run): its API's player over
    ``exchanges``, and 404 for anything it does not claim. ``app.players[api_id]`` is the
    player (what it served, what it missed)."""
    from ..plugins import find_api

    api = find_api(api_id)
    assert api is not None
    player = session_part(api).Player(exchanges)
    return SessionEdge(_nothing_else, {api_id: player}, playback=playback)
