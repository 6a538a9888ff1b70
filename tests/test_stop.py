"""Stopping ``serve`` and ``proxy`` while a stream is in flight, the way users do: Ctrl-C in a
real terminal, and SIGTERM. The stream in progress is cut at once (its client sees the cut, not
an ending), nothing is printed but the command's own last line (no traceback, no uvicorn
message), the exit status is 130 (143 for SIGTERM), and the proxy finishes what it recorded:
its index names every exchange (the interrupted one too), no reservation is left, and the count
it prints is the truth.

The servers are the real commands (a pty for Ctrl-C, a plain subprocess for SIGTERM); the
clients httpx on 127.0.0.1; the proxy's upstream ``serve``'s app, paced as recorded.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from streamtool.core.exchange.playback import Playback
from streamtool.core.net.server import serving
from streamtool.core.recording.tape_index import Tape, read_index

from .serve_helpers import (
    STREAMTOOL,
    body_of,
    chat_chunk,
    read_all,
    start_listening,
    write_recording,
)
from .test_proxy_pty import free_port
from .test_tree_pty import run_in_pty

# what an interrupted server must not print
NOISE = (
    "Traceback",
    "CancelledError",
    "Exception in ASGI application",
    "timeout graceful shutdown exceeded",
    "ASGI callable returned",
)


def long_stream(folder: Path, model: str = "gpt-long") -> Path:
    """100 events 0.1 s apart: 10 s of stream, far longer than any stop may take."""
    reads: list[tuple[float, bytes | str]] = [(i / 10, chat_chunk(f"w{i} ", i)) for i in range(100)]
    reads.append((10.0, "data: [DONE]\n\n"))
    return write_recording(folder / f"{model}.jsonl", reads, model=model)


def short_stream(folder: Path, model: str = "gpt-short") -> Path:
    reads: list[tuple[float, bytes | str]] = [(0.0, chat_chunk("hi", 0))]
    reads.append((0.01, chat_chunk("", 1, "stop")))
    reads.append((0.02, "data: [DONE]\n\n"))
    return write_recording(folder / f"{model}.jsonl", reads, model=model)


class Client(threading.Thread):
    """Streams ``models`` one after the other from a server that may not be up yet; ``reading``
    is set once the last stream's first bytes came. ``ends`` says how each stream ended
    (``complete`` or the error that cut it), ``cut_at`` when the last one stopped."""

    def __init__(self, origin: str | int, models: list[str]) -> None:
        super().__init__(daemon=True)
        self.origin = origin if isinstance(origin, str) else f"http://127.0.0.1:{origin}"
        self.models = models
        self.reading = threading.Event()
        self.ends: list[str] = []
        self.bodies: list[bytes] = []
        self.cut_at = 0.0

    def run(self) -> None:
        for i, model in enumerate(self.models):
            last = i == len(self.models) - 1
            self.ends.append(self.stream(model, last))

    def stream(self, model: str, last: bool) -> str:
        deadline = time.monotonic() + 30
        body = bytearray()
        while True:
            try:
                with (
                    httpx.Client(timeout=30) as client,
                    client.stream(
                        "POST",
                        self.origin + "/v1/chat/completions",
                        json={"model": model, "stream": True, "messages": []},
                    ) as resp,
                ):
                    try:
                        for piece in resp.iter_raw():
                            body += piece
                            if last:
                                self.reading.set()
                        return "complete"
                    except httpx.TransportError as exc:
                        return type(exc).__name__
                    finally:
                        self.bodies.append(bytes(body))
                        self.cut_at = time.monotonic()
            except httpx.ConnectError:
                if time.monotonic() > deadline:
                    return "never connected"
                time.sleep(0.1)


def interrupt_once_reading(client: Client, sent: dict[str, float]) -> Callable[[], bool]:
    """Ctrl-C once the client reads its last stream (``sent["at"]``: when)."""

    def when() -> bool:
        if client.reading.is_set():
            sent.setdefault("at", time.monotonic())
            return True
        return False

    return when


def assert_quiet(text: str) -> None:
    for noise in NOISE:
        assert noise not in text, text[-2000:]


def interrupted_quietly(args: list[str], client: Any, cols: int = 100) -> tuple[str, dict]:
    """``streamtool ARGS`` in a terminal, Ctrl-C once ``client`` (started) reads, the client
    then waited on; checks it exits 130 without noise; gives what the terminal showed and when
    the Ctrl-C was sent."""
    sent: dict[str, float] = {}
    run = run_in_pty(
        args, cols=cols, interrupt_when=interrupt_once_reading(client, sent), timeout=40
    )
    client.join(20)
    text = run.raw.decode("utf-8", "replace")
    assert run.code == 130, text[-1000:]
    assert_quiet(text)
    return text, sent


def test_ctrl_c_cuts_serves_stream_at_once_and_exits_130(tmp_path: Path) -> None:
    rec = long_stream(tmp_path)
    port = free_port()
    client = Client(port, ["gpt-long"])
    client.start()
    text, sent = interrupted_quietly(["serve", str(rec), "--port", str(port)], client)
    assert "serve stopped; 1 request in progress cut" in text, text[-1000:]
    # the client saw its stream cut (9 s of it were still to come), not an ending, and at once:
    # uvicorn's own stop waited 2 s for it before cancelling it with two tracebacks
    [end] = client.ends
    assert end == "RemoteProtocolError", end
    assert 0 < len(client.bodies[0]) < len(body_of(rec))
    assert client.cut_at - sent["at"] < 1.5


def test_ctrl_c_stops_the_proxy_and_it_finishes_what_it_recorded(tmp_path: Path) -> None:
    """One exchange complete, the next streaming when Ctrl-C comes: both are in the index (the
    second ``interrupted``), no reservation is left, the last line counts both, exit 130."""
    short, long = short_stream(tmp_path), long_stream(tmp_path)
    out = tmp_path / "caps"
    port = free_port()
    client = Client(port, ["gpt-short", "gpt-long"])
    with serving([short, long], Playback()) as up:
        client.start()
        command = ["proxy", "--port", str(port), "--upstream", up.url, "--out", str(out)]
        text, sent = interrupted_quietly(command, client, cols=160)
    assert client.ends == ["complete", "RemoteProtocolError"], client.ends
    assert client.cut_at - sent["at"] < 1.5
    entries = read_index(out)
    assert [(e.seq, e.model, e.end) for e in entries] == [
        (1, "gpt-short", "complete"),
        (2, "gpt-long", "interrupted"),
    ]
    assert not Tape(out, create=False).in_flight()  # no recording left that the index lacks
    assert "proxy stopped; 2 exchanges recorded in" in text and "(1 interrupted)" in text
    # the interrupted recording holds what its client got, and says it was stopped
    _, chunks, end = read_all(out / entries[1].file)
    kept = b"".join(chunks)
    assert end is not None and end.reason == "interrupted"
    assert kept.startswith(client.bodies[1]) and kept != body_of(long)


@pytest.mark.parametrize("command", ["serve", "proxy"])
def test_sigterm_cuts_the_stream_in_flight_and_exits_143(command: str, tmp_path: Path) -> None:
    rec = long_stream(tmp_path)
    out = tmp_path / "caps"
    with serving([rec], Playback()) as up:
        if command == "serve":
            args = ["serve", str(rec)]
        else:
            args = ["proxy", "--upstream", up.url, "--out", str(out), "--view", "none"]
        proc, _, origin = start_listening([*STREAMTOOL, *args, "--port", "0"])
        client = Client(origin, ["gpt-long"])
        client.start()
        try:
            assert client.reading.wait(20), "the stream did not start"
            sent = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
        client.join(20)
    assert proc.returncode == 143, err
    assert_quiet(err)
    assert client.ends == ["RemoteProtocolError"]
    assert client.cut_at - sent < 1.5
    if command == "serve":
        assert err.rstrip().endswith("streamtool: serve stopped; 1 request in progress cut"), err
    else:
        assert [e.end for e in read_index(out)] == ["interrupted"]
        assert not Tape(out, create=False).in_flight()
        assert "proxy stopped; 1 exchange recorded in" in err and "(1 interrupted)" in err
