"""``serve``'s WebSocket side: a recorded session answered to a client that opens one.

An upgrade at a route of an API reached over WebSocket (``/v1/realtime``, ``/v1/responses``) gets
a recorded session of that API (:meth:`~.library.Library.next_session`: the one its
``X-Streamtool-Recording`` header names, else the next in recorded order). The session is then
played as :mod:`streamtool.core.exchange.session_play` plans it: the server's messages at the
recorded pace (or at once), the client's awaited and compared with the recorded ones (ids, event
ids and audio payloads aside, as the API's ``session`` part says); a client message that matches
nothing gets the API's ``error`` event naming the difference, then a close. A recorded close is
sent with its code and reason; a session whose server went without a close frame is dropped the
same way. starlette's WebSocket does the protocol (uvicorn's ``websockets-sansio`` underneath).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from ..exchange.hostcheck import host_of, host_refusal, is_loopback
from ..exchange.playback import Playback
from ..exchange.session_play import (
    AWAIT_CLOSE,
    CLOSE,
    DROP,
    EXPECT,
    PAUSE,
    Step,
    delays,
    difference,
)
from ..plugins import api_for_converter, part, served_api
from .library import Incoming, Library, Recording, SelectionError
from .listen import CutConnection

RECORDING_HEADER = "x-streamtool-recording"
# a session that went off its recording, for an API whose package says nothing of it
_MISMATCH_CLOSE = (1008, "streamtool: the client's event matches nothing recorded")


def origin_refusal(scope: dict[str, Any]) -> str | None:
    """Why an upgrade may not be answered: it reached a loopback address under a ``Host``
    that is not loopback, or it comes from a web page (an ``Origin``) that is not on a loopback
    address (a page may not drive a local session: no client of an API sends an ``Origin``)."""
    why = host_refusal(scope)
    if why is not None:
        return why
    for key, value in scope.get("headers", ()):
        if key.lower() == b"origin":
            text = value.decode("latin-1")
            host = host_of(text.split("://", 1)[-1].split("/", 1)[0])
            if text != "null" and (host is None or not is_loopback(host)):
                return f"Origin {text[:80]!r} is not a loopback address (403)"
            if text == "null":
                return "Origin 'null' (403)"
    return None


def session_endpoint(
    library: Library, playback: Playback, log: Callable[[str], None] | None = None
) -> Callable[[Any], Any]:
    """The starlette WebSocket endpoint answering upgrades from ``library``'s sessions."""

    async def endpoint(websocket: Any) -> None:
        from starlette.responses import PlainTextResponse

        path = websocket.url.path
        why = origin_refusal(websocket.scope)
        if why is not None:
            if log is not None:
                log(f"WebSocket {path} -> 403: {why}")
            await websocket.send_denial_response(PlainTextResponse(why, status_code=403))
            return
        api = served_api(path, "websocket")
        if api is None:
            message = f"streamtool serve answers no WebSocket at {path}"
            if log is not None:
                log(f"WebSocket {path} -> 404: {message}")
            await websocket.send_denial_response(PlainTextResponse(message, status_code=404))
            return
        model = websocket.query_params.get(api.model_field)
        incoming = Incoming(
            path=path,
            endpoint=api.route,
            apis=api.converters,
            model=model,
            name=websocket.headers.get(RECORDING_HEADER),
            body=None,
            websocket=True,
        )
        try:
            rec = library.choose(incoming)
        except SelectionError as exc:
            if log is not None:
                log(f"WebSocket {path} -> {exc.status}: {exc.message}")
            response = PlainTextResponse(exc.message, status_code=exc.status)
            await websocket.send_denial_response(response)
            return
        if log is not None:
            log(f"WebSocket {path} -> {rec.name} (session)")
        await play(websocket, rec, playback, log)

    return endpoint


async def play(
    websocket: Any, rec: Recording, playback: Playback, log: Callable[[str], None] | None
) -> None:
    """Play the session ``rec`` holds to the client of ``websocket``."""
    from starlette.websockets import WebSocketDisconnect

    steps: list[Step] = rec.session or []
    offered = websocket.scope.get("subprotocols") or []
    recorded = rec.subprotocol
    await websocket.accept(subprotocol=recorded if recorded in offered else None)
    rules = _rules(rec)
    inbox: asyncio.Queue[Any] = asyncio.Queue()

    async def read() -> None:
        try:
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    await inbox.put(None)
                    return
                text = message.get("text")
                await inbox.put(text if text is not None else message.get("bytes") or b"")
        except (WebSocketDisconnect, RuntimeError, OSError):
            await inbox.put(None)

    reader = asyncio.ensure_future(read())
    loop = asyncio.get_running_loop()
    try:
        due = loop.time()
        for step, wait in zip(steps, delays(steps, playback.speed, playback.max_gap), strict=True):
            if step.kind == EXPECT:
                got = await inbox.get()
                if got is None:
                    return  # the client went
                why = difference(step, got, getattr(rules, "normalize_client_event", None))
                if why is not None:
                    await _mismatch(websocket, rules, step, got, why, rec, log)
                    return
                due = loop.time()  # what follows answers it: paced from its arrival
                continue
            due += wait
            delay = due - loop.time()
            await asyncio.sleep(max(delay, 0))
            if step.kind == CLOSE:
                await websocket.close(step.code or 1000, step.reason)
                return
            if step.kind == DROP:
                raise CutConnection(rec.name)
            if step.kind == AWAIT_CLOSE:
                break
            if step.kind == PAUSE:
                continue  # waited for: uvicorn's keep-alive pings the client meanwhile
            data = step.data
            if isinstance(data, bytes):
                await websocket.send_bytes(data)
            else:
                await websocket.send_text(data)
        # the recording is over: the client may only close now
        got = await inbox.get()
        if got is not None:
            n = sum(1 for s in steps if s.kind == EXPECT) + 1
            extra = Step(EXPECT, 0.0, "", index=n)
            why = "the recorded session has no more client events"
            await _mismatch(websocket, rules, extra, got, why, rec, log)
    except (WebSocketDisconnect, OSError):
        return  # the client went while the session played
    finally:
        reader.cancel()


def _rules(rec: Recording) -> Any:
    """The ``session`` part of the recording's API (how its client events are compared, the
    error a mismatch gets), or ``None``."""
    api = api_for_converter(rec.api)
    return part(api, "session") if api is not None else None


async def _mismatch(
    websocket: Any,
    rules: Any,
    step: Step,
    got: str | bytes,
    why: str,
    rec: Recording,
    log: Callable[[str], None] | None,
) -> None:
    """The client's message matches nothing recorded: the API's error event, then a close."""
    kind = None
    event_id = None
    if isinstance(got, str):
        try:
            obj = json.loads(got)
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            kind, event_id = obj.get("type"), obj.get("event_id")
    message = (
        f"streamtool serve: client event {step.index} ({kind or 'not a JSON event'}) matches "
        f"nothing recorded in {rec.name}: {why}"
    )
    if log is not None:
        log(f"WebSocket {rec.name}: {message}")
    make = getattr(rules, "mismatch_event", None)
    if make is not None:
        await websocket.send_text(json.dumps(make(message, event_id)))
    code, reason = getattr(rules, "MISMATCH_CLOSE", _MISMATCH_CLOSE)
    await websocket.close(code, reason)
