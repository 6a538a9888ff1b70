"""The proxy's WebSocket relay sends the upstream's frames of one turn of its event loop to the
agent in as few TCP segments as they fill (the agent's socket corked from the turn's second
frame to the turn's end), and never holds a frame past its turn: real connections on
127.0.0.1, an upstream that sends its burst in one write (``websockets``' Sans-I/O protocol on a
socket), the agent's own kernel counting the segments it received (``TCP_INFO``)."""

from __future__ import annotations

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
from websockets.frames import Opcode
from websockets.server import ServerProtocol
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
    """A WebSocket server on a socket of its own (a thread a connection), speaking through
    ``websockets``' Sans-I/O ``ServerProtocol``, that answers ``{"burst": N, "pause": S}`` with N
    events in one write, then, after S seconds, one more."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"ws://127.0.0.1:{self.server.getsockname()[1]}"
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> BurstUpstream:
        accepting = threading.Thread(target=self._accept, daemon=True)
        accepting.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.close()
        for thread in self._threads:
            thread.join(10)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return  # closed
            thread = threading.Thread(target=self._session, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _session(self, conn: socket.socket) -> None:
        protocol = ServerProtocol(max_size=None)
        with conn:
            while not (events := protocol.events_received()):
                data = conn.recv(65536)
                if not data:
                    return
                protocol.receive_data(data)
            protocol.send_response(protocol.accept(events[0]))
            conn.sendall(b"".join(protocol.data_to_send()))
            while True:
                data = conn.recv(65536)
                if data:
                    protocol.receive_data(data)
                else:
                    protocol.receive_eof()
                for frame in protocol.events_received():
                    if frame.opcode is Opcode.TEXT:
                        asked = json.loads(frame.data)
                        for i in range(asked["burst"]):
                            protocol.send_text(_event(i).encode())
                        conn.sendall(b"".join(protocol.data_to_send()))  # one write
                        if asked.get("pause"):
                            time.sleep(asked["pause"])
                            protocol.send_text(_event(-1).encode())
                out = protocol.data_to_send()  # a pong, a close; b"": the end
                conn.sendall(b"".join(out))
                if b"" in out or not data:
                    return


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
    # a segment a frame would be 300 (80 to 301 seen without the cork, 5 with it): the turns'
    # frames went out together
    assert segments <= BURST // 10, segments
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
