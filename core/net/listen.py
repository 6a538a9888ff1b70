"""The listening side: a listening socket, and an ASGI app run on it with uvicorn under the
connection guard (:mod:`.guard`), until interrupted (:func:`run_server`, which cuts the requests in
progress and says which signal stopped it) or in a background thread (:class:`ServerThread`).
uvicorn is imported only inside the functions that run it.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, Self, TypeVar

from .guard import ACCEPT_BURST, ConnectionLimits, connection_limit, guarded, stop_requests


# -- connections dropped on purpose ----------------------------------------------------------------
class CutConnection(Exception):
    """Raised by the app to make the server drop a connection (``--cut-after``)."""


async def send_watched(
    receive: Callable[[], Awaitable[Any]], respond: Callable[[], Awaitable[bool]], name: str
) -> None:
    """Run ``respond`` (an ASGI response's sends; ``True``: the connection is to be dropped
    after them) while watching ``receive``: a client that leaves stops it. A response to be
    dropped raises :class:`CutConnection` (``name`` says which). anyio is imported here."""
    import anyio

    cut = False
    async with anyio.create_task_group() as tg:

        async def watch_disconnect() -> None:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    tg.cancel_scope.cancel()
                    return

        tg.start_soon(watch_disconnect)
        cut = await respond()
        tg.cancel_scope.cancel()
    if cut:
        raise CutConnection(name)


class _QuietCuts(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, CutConnection)


def quiet_cut_logging() -> None:
    """Deliberate connection drops are not server errors: keep them out of the log."""
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _QuietCuts) for f in logger.filters):
        logger.addFilter(_QuietCuts())


def allow_status(status: int) -> None:
    """Let uvicorn's HTTP protocols send ``status`` although their tables of status lines (100
    to 599) lack it: a status HTTP does not define (an upstream's 999) is passed on as it came,
    with an empty reason phrase, instead of failing the response. uvicorn is imported here."""
    from uvicorn.protocols.http import h11_impl, httptools_impl

    h11_impl.STATUS_PHRASES.setdefault(status, b"")
    httptools_impl.STATUS_LINE.setdefault(status, b"HTTP/1.1 %d \r\n" % status)


# -- the listening socket --------------------------------------------------------------------------
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


# -- closed when a server stops -------------------------------------------------------------------
_AT_STOP: weakref.WeakKeyDictionary[Any, list[Callable[[], Awaitable[None]]]] = (
    weakref.WeakKeyDictionary()
)


def at_stop(close: Callable[[], Awaitable[None]]) -> None:
    """Have the server running on this event loop await ``close`` when it stops (an upstream
    client's session: one left to the garbage collector is reported as unclosed)."""
    _AT_STOP.setdefault(asyncio.get_running_loop(), []).append(close)


# -- running an app on it --------------------------------------------------------------------------
def _config(
    app: Any,
    log_level: str,
    access_log: bool,
    limits: ConnectionLimits | None = None,
    ws_ping_interval: float | None = 20.0,
) -> Any:
    import uvicorn

    config = uvicorn.Config(
        **guarded(limits or ConnectionLimits(connection_limit()), app, websockets=True),
        log_level=log_level,
        access_log=access_log,
        lifespan="off",
        timeout_graceful_shutdown=2,
        ws_ping_interval=ws_ping_interval,  # a WebSocket session's keep-alive pings
    )
    quiet_cut_logging()
    return config


def server_for(config: Any) -> Any:
    """A ``uvicorn.Server`` for ``config`` whose stop cuts the requests in progress at once
    (:func:`.guard.stop_requests`: their clients' connections dropped, their tasks cancelled,
    what they were recording finished) instead of waiting for them; uvicorn then closes the
    idle connections and, with nothing left to wait for, stops."""
    import uvicorn

    class StoppingServer(uvicorn.Server):
        cut = 0  # requests in progress when it stopped

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            self.cut = stop_requests(self.config.http)
            await super().shutdown(sockets)
            # what holds connections of its own on this loop: a proxy's or a record on
            # miss's upstream session
            for close in _AT_STOP.pop(asyncio.get_running_loop(), []):
                await close()

    return StoppingServer(config)


@dataclass(frozen=True, slots=True)
class Stopped:
    """How a server run until interrupted ended: the signal that stopped it (SIGINT, SIGTERM;
    ``None``: stopped otherwise) and how many requests in progress it cut."""

    signal: int | None
    cut: int = 0

    @property
    def exit_code(self) -> int:
        """128 + the signal's number, as a shell reports a process a signal ended (130 for
        Ctrl-C, 143 for SIGTERM); 0 without one."""
        return 128 + self.signal if self.signal else 0


class _Signalled(BaseException):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def run_until_stopped(server: Any, sock: socket.socket) -> Stopped:
    """Run uvicorn ``server`` on ``sock`` until SIGINT (Ctrl-C) or SIGTERM.

    uvicorn takes both signals while it serves and stops (:func:`server_for` cuts what is in
    progress); once it has stopped it raises the signal again, which lands here and says how it
    ended, instead of ending the process before the command's last line (SIGTERM) or as an
    exception (SIGINT). A signal before uvicorn took them stops it all the same.
    """
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        server.run(sockets=[sock])
        return Stopped(None, server.cut)

    def stop(signum: int, frame: Any) -> None:
        raise _Signalled(signum)

    handled = (signal.SIGINT, signal.SIGTERM)
    previous = {s: signal.signal(s, stop) for s in handled}
    try:
        server.run(sockets=[sock])
    except _Signalled as exc:
        return Stopped(exc.signum, server.cut)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    return Stopped(None, server.cut)


def run_server(
    app: Any,
    sock: socket.socket,
    *,
    log_level: str = "info",
    access_log: bool = True,
    limits: ConnectionLimits | None = None,
) -> Stopped:
    """Serve on ``sock`` until interrupted (SIGINT, SIGTERM: :func:`run_until_stopped`); the
    requests in progress are cut at once.

    ``limits``: the connection limit and header timeout (default: derived from the open-file
    limit, :data:`.guard.HEADER_TIMEOUT`).
    """
    return run_until_stopped(server_for(_config(app, log_level, access_log, limits)), sock)


def _quiet_config(app: Any) -> Any:
    return _config(app, "warning", False)


def session_settings(ping_interval: float) -> Callable[[Any], Any]:
    """:class:`ServerThread` settings whose WebSocket sessions are pinged every
    ``ping_interval`` seconds (uvicorn's keep-alive; the default is 20 s)."""

    def settings(app: Any) -> Any:
        return _config(app, "warning", False, ws_ping_interval=ping_interval)

    return settings


class ServerThread:
    """A server on 127.0.0.1 in a background thread, for tests: ``with ServerThread(app) as s``.

    ``s.url`` is the origin (``http://127.0.0.1:PORT``); stopped on exit. ``settings(app)``
    makes its uvicorn settings (by default: the connection guard, warnings only); ``name`` says
    what did not start, ``stop_timeout`` how long it may take to stop.
    """

    def __init__(
        self,
        app: Any,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        settings: Callable[[Any], Any] = _quiet_config,
        name: str = "the test server",
        stop_timeout: float = 10,
    ) -> None:
        self.app = app
        self.host = host
        self.port = port
        self.url = ""
        self.settings = settings
        self.name = name
        self.stop_timeout = stop_timeout
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None

    def __enter__(self) -> Self:
        import time

        sock = bind(self.host, self.port)
        self.port = sock.getsockname()[1]
        self.url = f"http://{self.host}:{self.port}"
        self._server = server_for(self.settings(self.app))
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not start")
            time.sleep(0.005)
        self._sock = sock
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=self.stop_timeout)
        if self._sock is not None:
            self._sock.close()
        if self._thread is not None and self._thread.is_alive() and exc[0] is None:
            # an app that never lets its loop run (a stream writing to a client that has
            # gone, without awaiting anything) holds the thread, and the interpreter's lock
            raise RuntimeError(f"{self.name} did not stop within {self.stop_timeout:g} s")


class _Serves(Protocol):
    @property
    def served(self) -> list[str]: ...


_L = TypeVar("_L", bound=_Serves)


class LibraryServer(ServerThread, Generic[_L]):
    """A library served from a background thread: ``.url``, ``.library`` and ``.served``."""

    def __init__(self, library: _L, app: Any, port: int = 0) -> None:
        super().__init__(app, port=port)
        self.library = library

    @property
    def served(self) -> list[str]:
        """The names of the recordings served so far, in order."""
        return list(self.library.served)
