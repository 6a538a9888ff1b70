"""The proxy's WebSocket relay sends the upstream's frames of one turn of its event loop to the
agent in as few TCP segments as they fill (the agent's socket corked from the turn's second
frame to the turn's end), and never holds a frame past its turn: real connections on
127.0.0.1, a ``websockets`` upstream that sends its burst in one write, the agent's own kernel
counting the segments it received (``TCP_INFO``)."""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection, serve
from websockets.sync.client import connect as ws_connect

from streamtool.core.model.records import Message
from streamtool.core.net.proxy import ProxyConfig, ProxyThread, parse_upstreams
from streamtool.core.recording.reader import Source
from streamtool.core.recording.tape_index import read_index

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="TCP_CORK and TCP_INFO are Linux's"
)

BURST = 300


def _event(i: int) -> str:
    return json.dumps({"type": "response.output_text.delta", "n": i, "delta": "x" * 200})


class BurstUpstream:
    """A ``websockets`` server (its own thread) that answers ``{"burst": N, "pause": S}`` with N
    events written at once (its socket corked around them), then, after S seconds, one more."""

    def __init__(self) -> None:
        self.url = ""
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    def __enter__(self) -> BurstUpstream:
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with serve(self._handler, "127.0.0.1", 0, compression=None, max_size=None) as srv:
            self.url = f"ws://127.0.0.1:{next(iter(srv.sockets)).getsockname()[1]}"
            self._ready.set()
            await self._stop.wait()

    async def _handler(self, ws: ServerConnection) -> None:
        sock = ws.transport.get_extra_info("socket")
        async for message in ws:
            asked = json.loads(message)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
            for i in range(asked["burst"]):
                await ws.send(_event(i))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 0)
            if asked.get("pause"):
                await asyncio.sleep(asked["pause"])
                await ws.send(_event(-1))


@pytest.fixture(scope="module")
def relayed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    out = tmp_path_factory.mktemp("turns") / "tape"
    with BurstUpstream() as up, ProxyThread(ProxyConfig(out, parse_upstreams([up.url]))) as proxy:
        yield proxy.url.replace("http://", "ws://") + "/v1/realtime?model=m", out


def segments_in(ws: Any) -> int:
    """The TCP segments the client's socket has received (``tcpi_segs_in`` of Linux's
    ``struct tcp_info``, at byte 140)."""
    info = ws.socket.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    return int(struct.unpack_from("I", info, 140)[0])


def test_a_burst_reaches_the_agent_whole_in_few_segments(relayed: tuple[str, Path]) -> None:
    url, out = relayed
    with ws_connect(url, compression=None, max_size=None) as ws:
        before = segments_in(ws)
        ws.send(json.dumps({"burst": BURST}))
        got = [ws.recv(timeout=10) for _ in range(BURST)]
        segments = segments_in(ws) - before
    # every event, in order, as the upstream sent it
    assert got == [_event(i) for i in range(BURST)]
    # a segment each would be 300: the turns' frames went out together
    assert segments < BURST // 4, segments
    # and every one is in the recording
    deadline = time.monotonic() + 5
    while not (out / "index.jsonl").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    [entry] = [e for e in read_index(out) if e.chunks and e.chunks > BURST]
    server = [
        r.data
        for r in Source(out / entry.file).session_records()
        if type(r) is Message and r.direction == "server"
    ]
    assert server == got


def test_no_frame_waits_past_its_turn(relayed: tuple[str, Path]) -> None:
    """Two events written at once, then a pause: the second is corked behind the first and must
    leave when its turn ends, not when the kernel's 200 ms ceiling on a cork lets it go (and
    the socket must not stay corked for what comes after)."""
    url, _ = relayed
    took = []
    with ws_connect(url, compression=None, max_size=None) as ws:
        for _ in range(3):
            start = time.monotonic()
            ws.send(json.dumps({"burst": 2, "pause": 0.3}))
            assert ws.recv(timeout=10) == _event(0)
            assert ws.recv(timeout=10) == _event(1)
            took.append(time.monotonic() - start)
            assert ws.recv(timeout=10) == _event(-1)
    assert min(took) < 0.1, took
