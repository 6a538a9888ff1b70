"""An S3 server for the store benchmarks: moto's threaded server on 127.0.0.1, and two ways to
put it 30 ms away, as a store across a network would be.

    with moto_s3() as endpoint, DelayRelay(endpoint, 0.030) as far:
        ...  # AWS_ENDPOINT_URL=far.url: every request waits 30 ms before moto sees it
    with moto_s3_server(delay=0.030, s3_only=True) as server:
        ...  # the same wait, inside the server (it costs no CPU), and moto's S3 alone

The relay delays each burst of bytes from the client (an HTTP request) by the delay, in order;
responses flow back as they come. moto checks no signature: any key is accepted. moto's server
(werkzeug's) closes the connection after every response: each request is a new connection.
"""

from __future__ import annotations

import asyncio
import collections
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

BUCKET = "streamtool-bench"


@dataclass(frozen=True, slots=True)
class Server:
    origin: str  # http://127.0.0.1:PORT
    pid: int  # its process (for its CPU time)


@contextmanager
def moto_s3(bucket: str = BUCKET) -> Iterator[str]:
    """moto's S3 on 127.0.0.1 (a free port), in a process of its own (its CPU is not the
    benchmark's), with ``bucket`` made; yields its origin and sets the AWS variables for it
    (restored after)."""
    with moto_s3_server(bucket) as server:
        yield server.origin


@contextmanager
def moto_s3_server(
    bucket: str = BUCKET, delay: float = 0.0, *, s3_only: bool = False
) -> Iterator[Server]:
    """:func:`moto_s3`, yielding its process too.

    - ``delay``: every request waits that long in the server (in its own thread, before moto
      reads it), as a store that far away would make it wait; the wait costs no CPU, unlike
      a relay's (:class:`DelayRelay`).
    - ``s3_only``: moto's S3 application alone, without the dispatcher in front of it that
      finds each request's service (every request listing moto's package folder, under one
      lock: about 1.5 ms of CPU a request that a real store does not spend)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _SERVE, str(delay), "s3" if s3_only else ""],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    origin = proc.stdout.readline().strip()
    saved = {k: os.environ.get(k) for k in _VARS}
    os.environ.update(
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_ENDPOINT_URL=origin,
    )
    try:
        import urllib.request

        urllib.request.urlopen(urllib.request.Request(f"{origin}/{bucket}", method="PUT"))
        yield Server(origin, proc.pid)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        proc.terminate()
        proc.wait(10)


# moto's threaded server as moto.server.ThreadedMotoServer builds it (its public parts): its
# dispatcher, or the S3 application the dispatcher hands S3's requests to; behind a delay when
# one is given
_SERVE = """
import logging, sys, time
from werkzeug.serving import make_server
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication, MotoRequestHandler, create_backend_app,
)
logging.getLogger("werkzeug").setLevel(logging.WARNING)  # a line per request costs its CPU
delay = float(sys.argv[1])
if sys.argv[2] == "s3":
    moto = create_backend_app("s3")
else:
    moto = DomainDispatcherApplication(create_backend_app)

def app(environ, start_response):
    time.sleep(delay)
    return moto(environ, start_response)

server = make_server(
    "127.0.0.1", 0, app if delay > 0 else moto, True, request_handler=MotoRequestHandler
)
host, port = server.server_address[:2]
print(f"http://{host}:{port}", flush=True)
server.serve_forever()
"""
_VARS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL")


class DelayRelay:
    """A TCP relay on 127.0.0.1 to ``upstream`` (``http://host:port``) that delays what the
    client sends by ``delay`` seconds (each burst, in order). ``.url`` is its origin.

    ``process=True`` runs it in a process of its own (``python -m benchmarks.store_servers
    UPSTREAM DELAY``), as a network would be: its work takes nothing from the measured
    process (neither its interpreter lock nor its event loop); else in a thread here."""

    def __init__(self, upstream: str, delay: float, *, process: bool = False) -> None:
        self.upstream = upstream
        self.delay = delay
        self.process = process
        self.url = ""
        self.pid: int | None = None
        self._proc: subprocess.Popen[str] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._sides: set[_Side] = set()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="delay-relay")

    def __enter__(self) -> DelayRelay:
        if self.process:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "benchmarks.store_servers", self.upstream, str(self.delay)],
                cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                stdout=subprocess.PIPE,
                text=True,
            )
            assert self._proc.stdout is not None
            self.url = self._proc.stdout.readline().strip()
            self.pid = self._proc.pid
            if not self.url:
                raise RuntimeError("the delay relay did not start")
            return self
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(10)
            return
        assert self._loop is not None
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()

    async def _shutdown(self) -> None:
        """Stop listening and end every relayed connection."""
        assert self._server is not None
        self._server.close()
        for side in list(self._sides):
            side.transport.abort()

    def _run(self) -> None:
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            start_relay(self.upstream, self.delay, self._sides)
        )
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        self._ready.set()
        self._loop.run_forever()


class _Side(asyncio.Protocol):
    """One side of a relayed connection: what it receives goes to ``peer``, ``delay`` later
    (bursts in order: one timer at a time, for the oldest burst held). asyncio protocols, no
    task or queue per burst: the relay costs little CPU per request."""

    def __init__(self, delay: float, sides: set[_Side]) -> None:
        self.delay = delay
        self.sides = sides
        self.peer: _Side | None = None
        self.transport: Any = None
        self.held: collections.deque[tuple[float, bytes]] = collections.deque()
        self.timer: asyncio.TimerHandle | None = None
        self.ended = False

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.sides.add(self)

    def data_received(self, data: bytes) -> None:
        if self.delay <= 0 and not self.held and self.peer is not None:
            self._send(data)
            return
        loop = asyncio.get_running_loop()
        self.held.append((loop.time() + self.delay, data))
        if self.timer is None and self.peer is not None:
            self.timer = loop.call_at(self.held[0][0], self._release)

    def connected(self, peer: _Side) -> None:
        """The upstream connection is made: what came before it is sent when its time comes."""
        self.peer = peer
        if self.held and self.timer is None:
            self.timer = asyncio.get_running_loop().call_at(self.held[0][0], self._release)
        elif self.ended and not self.held:
            self._end()

    def eof_received(self) -> bool:
        self.ended = True
        if not self.held and self.peer is not None:
            self._end()
        return True  # keep the transport open: the peer still answers

    def _release(self) -> None:
        loop = asyncio.get_running_loop()
        self.timer = None
        while self.held and self.held[0][0] <= loop.time():
            self._send(self.held.popleft()[1])
        if self.held:
            self.timer = loop.call_at(self.held[0][0], self._release)
        elif self.ended:
            self._end()

    def _send(self, data: bytes) -> None:
        if self.peer is not None and not self.peer.transport.is_closing():
            self.peer.transport.write(data)

    def _end(self) -> None:
        if self.peer is not None and self.peer.transport.can_write_eof():
            with suppress(OSError):
                self.peer.transport.write_eof()

    def connection_lost(self, exc: Exception | None) -> None:
        self.sides.discard(self)
        if self.timer is not None:
            self.timer.cancel()
        if self.peer is not None and not self.peer.transport.is_closing():
            self.peer.transport.close()


async def start_relay(upstream: str, delay: float, sides: set[_Side]) -> asyncio.Server:
    """Listen on 127.0.0.1 (a free port): each connection relayed to ``upstream``, what the
    client sends held ``delay`` seconds, what the upstream sends back passed on at once
    (``sides``: the connections open, both ends)."""
    host, port = upstream.removeprefix("http://").rsplit(":", 1)
    loop = asyncio.get_running_loop()
    pending: set[asyncio.Task[None]] = set()

    async def accepted(client: _Side) -> None:
        try:
            _, server = await loop.create_connection(lambda: _Side(0.0, sides), host, int(port))
        except OSError:
            client.transport.close()
            return
        server.connected(client)
        client.connected(server)

    def make() -> _Side:
        side = _Side(delay, sides)
        task = loop.create_task(accepted(side))
        pending.add(task)
        task.add_done_callback(pending.discard)
        return side

    return await loop.create_server(make, "127.0.0.1", 0)


def _serve_relay(upstream: str, delay: float) -> None:
    async def main() -> None:
        server = await start_relay(upstream, delay, set())
        print(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", flush=True)
        await server.serve_forever()

    with suppress(KeyboardInterrupt):
        asyncio.run(main())


if __name__ == "__main__":
    _serve_relay(sys.argv[1], float(sys.argv[2]))
