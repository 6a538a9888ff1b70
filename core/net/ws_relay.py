"""The proxy's WebSocket edge: an agent's session relayed to the upstream, every message recorded.

The agent's side is the ASGI WebSocket uvicorn hands the proxy (its ``websockets-sansio``
protocol); the upstream's is a client of the ``websockets`` package's asyncio API (the one the
openai SDK's realtime and ``responses.connect()`` clients use). The upgrade goes upstream with
the agent's headers (hop-by-hop and handshake headers aside) and subprotocols; the upstream's
answer comes back (a refusal as the HTTP response it was); then each message is relayed as it
comes, text as text and binary as binary, and written to the session's recording
(:class:`~streamtool.core.recording.session.SessionRecorder`) with its direction and time. A close
is relayed with its code and reason; an upstream that drops the connection without a close frame
has the agent's dropped the same way. Keep-alive pings are answered on each side by its own
library (they are not relayed, so the recording holds none). The messages the upstream sends in
one turn of the event loop leave for the agent together (:class:`_TurnCork`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..recording.secrets import redact_keys
from ..recording.session import SessionRecorder
from .guard import connection_socket
from .listen import CutConnection

_log = logging.getLogger("uvicorn.error")

# request headers the upgrade does not take upstream: the handshake is each side's own
_HANDSHAKE = frozenset(
    {
        "host",
        "connection",
        "upgrade",
        "keep-alive",
        "te",
        "trailer",
        "transfer-encoding",
        "proxy-connection",
        "proxy-authorization",
        "content-length",
        "sec-websocket-key",
        "sec-websocket-version",
        "sec-websocket-extensions",
        "sec-websocket-protocol",
        "user-agent",  # sent as the agent's own, below
    }
)
# the upstream's answer headers the agent does not get: its handshake is the proxy's
_ANSWER_DROPPED = frozenset(
    {
        "connection",
        "upgrade",
        "sec-websocket-accept",
        "sec-websocket-extensions",
        "sec-websocket-protocol",
        "content-length",
        "transfer-encoding",
        "date",
        "server",
        "keep-alive",
    }
)
# close codes that are never sent in a close frame (RFC 6455 7.4.1)
_RESERVED = frozenset({1005, 1006, 1015})


def websocket_url(url: str) -> str:
    """An http(s) URL as the ws(s) URL of the same place."""
    if url.startswith("https://"):
        return "wss://" + url[len("https://") :]
    if url.startswith("http://"):
        return "ws://" + url[len("http://") :]
    return url


@dataclass(slots=True)
class Session:
    """One relayed session as the proxy's index and live view see it."""

    seq: int | None = None
    file: str | None = None
    status: int | None = None
    messages: int = 0
    bytes: int = 0
    ttft: float | None = None
    duration: float | None = None
    end: str | None = None


def _headers(scope: dict[str, Any]) -> list[tuple[str, str]]:
    return [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope.get("headers", [])]


async def relay(
    scope: dict[str, Any],
    receive: Callable[[], Any],
    send: Callable[[dict[str, Any]], Any],
    *,
    url: str,
    recorder: SessionRecorder | None,
    connect_timeout: float = 30.0,
    ssl: Any = None,
    on_end: Callable[[SessionRecorder | None, str], None] | None = None,
) -> None:
    """Relay the WebSocket session of ``scope`` to ``url`` (ws or wss), recording it with
    ``recorder`` (``None``: relayed only). ``on_end(recorder, end reason)`` when it is over."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidHandshake, InvalidStatus

    first = await receive()
    if first.get("type") != "websocket.connect":
        return
    headers = _headers(scope)
    forwarded = [(k, v) for k, v in headers if k.lower() not in _HANDSHAKE]
    agent = next((v for k, v in headers if k.lower() == "user-agent"), None)
    subprotocols = list(scope.get("subprotocols") or ())
    if recorder is not None:
        recorder.t0 = time.monotonic()  # times count from the upgrade sent upstream
    # a wss:// session's TLS: the proxy's context (--insecure, a trusted CA), else the default
    tls = {"ssl": ssl} if ssl is not None and url.startswith("wss://") else {}
    try:
        upstream = await connect(
            url,
            additional_headers=forwarded,
            subprotocols=subprotocols or None,
            user_agent_header=agent,
            compression=None,
            max_size=None,
            open_timeout=connect_timeout,
            proxy=None,
            **tls,
        )
    except InvalidStatus as exc:
        refusal = exc.response
        kept = [(k, v) for k, v in refusal.headers.raw_items() if k.lower() not in _ANSWER_DROPPED]
        body = bytes(refusal.body or b"")
        if recorder is not None:
            recorder.start(refusal.status_code, kept)
            text = body.decode("utf-8", "replace")
            why = f"the upstream refused the upgrade: {refusal.status_code} {text}"
            recorder.finish("error", why)
        await deny(send, refusal.status_code, kept, body)
        if on_end is not None:
            on_end(recorder, "error")
        return
    except (OSError, TimeoutError, InvalidHandshake) as exc:
        said = str(exc)
        if recorder is not None:  # never a credential in a log line
            said = str(recorder.scrub(said))
        message = f"streamtool proxy: cannot open the upstream session: {redact_keys(said)}"
        _log.warning("WebSocket %s: %s", scope.get("path"), message)
        await deny(send, 502, [("content-type", "text/plain; charset=utf-8")], message.encode())
        if on_end is not None:
            on_end(None, "error")
        return
    response = upstream.response
    answer = [] if response is None else list(response.headers.raw_items())
    kept_answer = [(k, v) for k, v in answer if k.lower() not in _ANSWER_DROPPED]
    if recorder is not None:
        recorder.start(101, answer, upstream.subprotocol)
    reason = "interrupted"
    try:
        await send(
            {
                "type": "websocket.accept",
                "subprotocol": upstream.subprotocol,
                "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in kept_answer],
            }
        )
        reason = await _pump(receive, send, upstream, recorder)
    finally:
        if reason == "interrupted":  # cancelled (the proxy stops): the upstream goes too
            await upstream.close(1001, "the proxy is stopping")
        if recorder is not None:  # (ended already at a limit)
            ended = None if reason == "complete" else f"the session ended: {reason}"
            recorder.finish(reason if reason != "dropped" else "error", ended)
        if on_end is not None:
            on_end(recorder, reason)
    if reason == "dropped":
        raise CutConnection("the upstream dropped the session")


class _TurnCork:
    """The agent's socket corked (Linux's ``TCP_CORK``) from the second message sent in a turn
    of the event loop to the turn's end: a turn's frames leave in as few segments as they fill,
    not a segment (and a wake-up of the agent) each. A turn's first message leaves at once, so
    a lone message costs no system call more and waits for nothing."""

    __slots__ = ("loop", "sent", "sock")

    def __init__(self, sock: Any, loop: asyncio.AbstractEventLoop) -> None:
        self.sock = sock
        self.loop = loop
        self.sent = 0  # messages sent this turn (2: the socket is corked)

    def __call__(self) -> None:
        sent = self.sent
        if sent == 0:
            self.sent = 1
            self.loop.call_soon(self.release)
        elif sent == 1:
            self.sent = 2
            with contextlib.suppress(OSError):  # the connection is going: its disconnect tells
                self.sock.setsockopt(socket.IPPROTO_TCP, _CORK, 1)

    def release(self) -> None:
        if self.sent == 2:
            with contextlib.suppress(OSError):
                self.sock.setsockopt(socket.IPPROTO_TCP, _CORK, 0)
        self.sent = 0


_CORK = getattr(socket, "TCP_CORK", None)


def _cork(loop: asyncio.AbstractEventLoop) -> _TurnCork | None:
    sock = connection_socket() if _CORK is not None else None
    if sock is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return None
    return _TurnCork(sock, loop)


class _Limit(Exception):
    def __init__(self, max_bytes: int | None) -> None:
        super().__init__(f"streamtool proxy: the recording reached its limit of {max_bytes} bytes")


async def deny(
    send: Callable[[dict[str, Any]], Any],
    status: int,
    headers: Iterable[tuple[str, str]],
    body: bytes,
) -> None:
    """Answer the upgrade with an HTTP response (the ASGI ``websocket.http.response``
    extension uvicorn has)."""
    await send(
        {
            "type": "websocket.http.response.start",
            "status": status,
            "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers],
        }
    )
    await send({"type": "websocket.http.response.body", "body": body, "more_body": False})


async def _pump(
    receive: Callable[[], Any],
    send: Callable[[dict[str, Any]], Any],
    upstream: Any,
    recorder: SessionRecorder | None,
) -> str:
    """Relay both ways until the session is over: ``complete`` or ``dropped`` (the upstream
    went without a close frame). The side that closes first is recorded closing; the other's
    answering close frame is the protocol's, not recorded."""
    from websockets.exceptions import ConnectionClosed

    closed_by: list[str] = []
    loop = asyncio.get_running_loop()
    if recorder is not None:
        # the messages of one turn of the event loop are written at its end, in one write:
        # a burst of the upstream's frames costs one flush, not one a message
        recorder.gather = True

    def note(direction: str, data: str | bytes) -> None:
        assert recorder is not None
        if recorder.hold(direction, data):  # the first of this turn: written at its end
            loop.call_soon(recorder.flush)
        if recorder.over_limit:
            raise _Limit(recorder.max_bytes)

    async def from_agent() -> None:
        while True:
            message = await receive()
            kind = message["type"]
            if kind == "websocket.receive":
                text = message.get("text")
                data = text if text is not None else message.get("bytes") or b""
                if recorder is not None:
                    note("client", data)
                # a closed upstream: from_upstream tells it (not suppress(): a context manager
                # made for every message)
                try:  # noqa: SIM105
                    await upstream.send(data)
                except ConnectionClosed:
                    pass
            elif kind == "websocket.disconnect":
                if closed_by:
                    return  # the answer to the upstream's close, relayed
                closed_by.append("client")
                code = message.get("code", 1000)
                reason = message.get("reason") or ""
                if recorder is not None:
                    recorder.flush()
                    recorder.control("client", "close", None if code in _RESERVED else code, reason)
                await upstream.close(1000 if code in _RESERVED else code, reason)
                return

    cork = _cork(loop)

    async def from_upstream() -> str:
        try:
            while True:
                data = await upstream.recv()
                if recorder is not None:
                    note("server", data)
                if cork is not None:
                    cork()
                key = "text" if isinstance(data, str) else "bytes"
                # the agent is gone: its disconnect tells (not suppress(), as above)
                try:  # noqa: SIM105
                    await send({"type": "websocket.send", key: data})
                except OSError:
                    pass
        except ConnectionClosed as exc:
            if closed_by:
                return "complete"
            closed_by.append("server")
            rcvd = exc.rcvd
            if recorder is not None:
                recorder.flush()
                code = rcvd.code if rcvd is not None else None
                recorder.control("server", "close", code, rcvd.reason if rcvd else "")
            if rcvd is None:
                return "dropped"
            code = 1000 if rcvd.code in _RESERVED else rcvd.code
            with contextlib.suppress(OSError):
                await send({"type": "websocket.close", "code": code, "reason": rcvd.reason})
            return "complete"

    agent = asyncio.ensure_future(from_agent())
    server = asyncio.ensure_future(from_upstream())
    try:
        done, _ = await asyncio.wait({agent, server}, return_when=asyncio.FIRST_COMPLETED)
        limit = next((t.exception() for t in done if isinstance(t.exception(), _Limit)), None)
        if limit is not None:
            # the recording reached --max-recording-bytes: the session ends there, both ways
            closed_by.append("proxy")
            await upstream.close(1000, "")
            with contextlib.suppress(OSError):
                await send({"type": "websocket.close", "code": 1009, "reason": str(limit)})
            return "limit"
        if server in done:
            result = server.result()
            if result == "dropped":
                return result
            # the agent answers the close frame (or goes): its disconnect ends from_agent
            await asyncio.wait({agent}, timeout=10)
            return result
        agent.result()  # an error of the agent's side is raised here
        await asyncio.wait({server}, timeout=10)
        return server.result() if server.done() else "complete"
    finally:
        for task in (agent, server):
            if not task.done():
                task.cancel()
