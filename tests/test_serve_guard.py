"""``serve`` and ``proxy`` under connection abuse: half-sent requests (slowloris) beyond the
open-file limit, the header timeout, the connection limit at work, and the options' bad values.

Servers are the real commands in subprocesses whose open-file limit is set low; the abusers are
raw sockets and the clients httpx, on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import h11
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from streamtool.cli import proxy as proxy_cli
from streamtool.cli import serve as serve_cli
from streamtool.cli.main import app
from streamtool.core.exchange.playback import Playback
from streamtool.core.net import bodies
from streamtool.core.net import guard as guard_module
from streamtool.core.net.listen import ServerThread
from streamtool.core.net.server import parse_size, serving

from .serve_helpers import body_of, chat_chunk, recording, start_listening, write_recording

REC = recording("openai-parallel-tool-calls")
NOFILE = 256  # the servers' open-file limit: the default connection limit is 192 (proxy: 64)
HALF_SENT = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
REQUEST_BODY = b'{"model": "gpt-4o-2024-08-06", "stream": true, "messages": []}'


def streamtool(nofile: int) -> list[str]:
    """The command, in a process whose open-file limit is ``nofile`` (soft and hard)."""
    return [
        sys.executable,
        "-c",
        "import resource; "
        f"resource.setrlimit(resource.RLIMIT_NOFILE, ({nofile}, {nofile})); "
        "from streamtool.cli.main import main; main()",
    ]


def start(args: list[str], nofile: int = NOFILE) -> tuple[subprocess.Popen[str], str]:
    """``streamtool ARGS --port 0``; returns the process and its origin."""
    proc, _, origin = start_listening([*streamtool(nofile), *args, "--port", "0"])
    return proc, origin


def stop(proc: subprocess.Popen[str]) -> str:
    proc.terminate()
    _, err = proc.communicate(timeout=20)
    return err


def port_of(origin: str) -> int:
    return int(origin.rsplit(":", 1)[1])


def connect(origin: str) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port_of(origin)), timeout=5)


def half_sent(origin: str, count: int) -> list[socket.socket]:
    """``count`` connections that send the start of a request head and then nothing."""
    socks = []
    for _ in range(count):
        sock = connect(origin)
        sock.sendall(HALF_SENT)
        socks.append(sock)
    return socks


def closed(sock: socket.socket, wait: float = 0.0) -> bool:
    """Whether the server closed ``sock`` (within ``wait`` seconds); what it sent is read."""
    deadline = time.monotonic() + wait
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    while True:
        if not poller.poll(max(0.0, deadline - time.monotonic()) * 1000):
            return False
        try:
            if sock.recv(65536) == b"":
                return True
        except OSError:  # reset
            return True


def closed_now(socks: list[socket.socket]) -> list[int]:
    """The indices of the sockets the server has closed by now."""
    gone = []
    for i, sock in enumerate(socks):
        sock.setblocking(False)
        try:
            while sock.recv(65536):
                pass
            gone.append(i)
        except BlockingIOError:
            pass
        except OSError:  # reset
            gone.append(i)
        sock.settimeout(5)
    return gone


def read_to_end(sock: socket.socket, timeout: float = 10) -> bytes:
    sock.settimeout(timeout)
    out = bytearray()
    try:
        while data := sock.recv(65536):
            out += data
    except ConnectionResetError:
        pass
    return bytes(out)


def request_bytes(path: str = "/v1/chat/completions") -> bytes:
    client = h11.Connection(h11.CLIENT)
    head = h11.Request(
        method="POST",
        target=path,
        headers=[
            ("Host", "127.0.0.1"),
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(REQUEST_BODY))),
        ],
    )
    return b"".join(
        client.send(e) or b"" for e in (head, h11.Data(data=REQUEST_BODY), h11.EndOfMessage())
    )


class Response:
    """A response read with h11 from a raw socket (kept alive for the next request)."""

    def __init__(self, sock: socket.socket, client: h11.Connection | None = None) -> None:
        self.sock = sock
        self.client = client or h11.Connection(h11.CLIENT)
        # h11 must have seen the request go out to read the response
        self.client.send(h11.Request(method="POST", target="/", headers=[("Host", "x")]))
        self.client.send(h11.EndOfMessage())
        self.status = 0
        self.body = bytearray()

    def next_event(self) -> object:
        while True:
            event = self.client.next_event()
            if event is not h11.NEED_DATA:
                return event
            self.sock.settimeout(10)
            self.client.receive_data(self.sock.recv(65536))

    def head(self) -> int:
        event = self.next_event()
        assert isinstance(event, h11.Response), event
        self.status = event.status_code
        return self.status

    def rest(self) -> bytes:
        while True:
            event = self.next_event()
            if isinstance(event, h11.Data):
                self.body += event.data
            elif isinstance(event, h11.EndOfMessage):
                return bytes(self.body)

    def read(self) -> tuple[int, bytes]:
        return self.head(), self.rest()


def raw_stream(url: str) -> tuple[int, bytes]:
    with (
        httpx.Client(timeout=10) as client,
        client.stream(
            "POST", url, content=REQUEST_BODY, headers={"content-type": "application/json"}
        ) as resp,
    ):
        return resp.status_code, b"".join(resp.iter_raw())


# -- serve ---------------------------------------------------------------------------------------
def test_half_sent_requests_beyond_the_descriptor_limit_do_not_block_a_client() -> None:
    """More half-sent requests than the process has descriptors: a client still gets its
    stream at once, byte for byte; the oldest half-sent connections were closed for it."""
    proc, origin = start(["serve", str(REC), "--speed", "max"])
    flood: list[socket.socket] = []
    try:
        flood = half_sent(origin, NOFILE + 44)
        started = time.monotonic()
        status, body = raw_stream(origin + "/v1/chat/completions")
        elapsed = time.monotonic() - started
        assert status == 200 and body == body_of(REC)
        assert elapsed < 5, f"the client waited {elapsed:.1f} s"  # without the guard: for ever
        # the oldest were closed to make room, the newest are still open (the limit is 192)
        time.sleep(0.2)  # the last closes on their way
        gone = closed_now(flood)
        assert gone == list(range(len(gone))), gone
        assert len(flood) - 192 <= len(gone) <= len(flood) - 150
    finally:
        for sock in flood:
            sock.close()
        err = stop(proc)
    assert "Too many open files" not in err and "Traceback" not in err, err
    assert "still without a request head to make room (--max-connections 192)" in err


def test_a_request_head_not_complete_in_time_is_closed() -> None:
    proc, origin = start(["serve", str(REC), "--speed", "max", "--header-timeout", "0.5"])
    try:
        part, silent, trickle = connect(origin), connect(origin), connect(origin)
        opened = time.monotonic()
        part.sendall(HALF_SENT)
        # a head sent a byte every 0.1 s is closed all the same: progress buys no time
        answer, poller = bytearray(), select.poll()
        poller.register(trickle, select.POLLIN)
        for byte in HALF_SENT:
            if poller.poll(100):
                answer += read_to_end(trickle)
                break
            trickle.sendall(bytes([byte]))
        assert answer.startswith(b"HTTP/1.1 408 "), answer
        assert 0.4 < time.monotonic() - opened < 3
        answer = read_to_end(part)
        assert answer.startswith(b"HTTP/1.1 408 "), answer
        assert read_to_end(silent) == b""  # nothing came: closed without an answer
        # a kept-alive connection: the idle wait does not count (uvicorn's keep-alive timeout
        # governs it), the next head's clock starts with its first byte
        kept = connect(origin)
        kept.sendall(request_bytes())
        response = Response(kept)
        assert response.read() == (200, body_of(REC))
        time.sleep(0.8)
        kept.sendall(HALF_SENT)
        sent = time.monotonic()
        answer = read_to_end(kept)
        assert answer.startswith(b"HTTP/1.1 408 "), answer
        assert 0.4 < time.monotonic() - sent < 3
    finally:
        err = stop(proc)
    assert "whose request head took longer than 0.5 s (--header-timeout)" in err, err


def test_a_slow_client_that_completes_its_head_in_time_is_served() -> None:
    proc, origin = start(["serve", str(REC), "--speed", "max", "--header-timeout", "1.5"])
    try:
        sock = connect(origin)
        data = request_bytes()
        pieces = [data[i : i + 12] for i in range(0, len(data), 12)]
        pause = 0.9 / len(pieces)  # the whole head and body in about 0.9 s
        for piece in pieces:
            sock.sendall(piece)
            time.sleep(pause)
        assert Response(sock).read() == (200, body_of(REC))
        # kept alive: a second request, also slow, on the same connection
        time.sleep(0.3)
        for piece in pieces:
            sock.sendall(piece)
            time.sleep(pause)
        assert Response(sock).read() == (200, body_of(REC))
    finally:
        stop(proc)


def test_at_the_limit_the_waiting_make_room_and_the_busy_keep_streaming() -> None:
    """--max-connections 2: a new connection closes a half-sent one rather than a stream in
    progress; when both are streams in progress, it gets a 503 at once."""
    proc, origin = start(
        ["serve", str(REC), "--speed", "max", "--stall", "1.5", "--max-connections", "2"]
    )
    try:
        waiting = half_sent(origin, 1)[0]
        first = connect(origin)
        first.sendall(request_bytes())
        first_response = Response(first)
        assert first_response.head() == 200  # busy: stalled half-way through its body
        second = connect(origin)
        second.sendall(request_bytes())
        second_response = Response(second)
        assert second_response.head() == 200
        assert closed(waiting, wait=2)
        for _ in range(3):
            started = time.monotonic()
            r = httpx.post(
                origin + "/v1/chat/completions",
                content=REQUEST_BODY,
                headers={"content-type": "application/json"},
                timeout=5,
            )
            assert r.status_code == 503 and r.headers["retry-after"] == "1"
            assert time.monotonic() - started < 2  # not held until a stream ends
        assert first_response.rest() == body_of(REC)
        assert second_response.rest() == body_of(REC)
    finally:
        err = stop(proc)
    assert "closed 1 connection still without a request head" in err
    assert "503: all 2 are busy with requests" in err


@pytest.mark.parametrize("command", ["serve", "proxy"])
@pytest.mark.parametrize(
    "args, message",
    [
        (["--max-connections", "0"], "--max-connections must be at least 1, not 0"),
        (["--max-connections", "-3"], "--max-connections must be at least 1, not -3"),
        (["--max-connections", str(10**9)], "--max-connections 1000000000: the open-file limit"),
        (["--header-timeout", "0"], "--header-timeout must be a number of seconds more than 0"),
        (["--header-timeout", "-1"], "--header-timeout must be a number of seconds more than 0"),
        (["--header-timeout", "nan"], "'nan' is not a number"),
        (["--header-timeout", "soon"], "'soon' is not a number"),
    ],
)
def test_bad_values_exit_2_with_one_line(command: str, args: list[str], message: str) -> None:
    target = [str(REC)] if command == "serve" else []
    result = CliRunner().invoke(app, [command, *target, "--port", "0", *args])
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 or lines[-1].startswith("Error: "), result.stderr
    assert "Traceback" not in result.stderr


def test_the_connection_limit_follows_the_open_file_limit() -> None:
    code = (
        "import resource\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (256, 4096))\n"
        "from streamtool.core.net.guard import connection_limit\n"
        "print(connection_limit(), connection_limit(None, 3), connection_limit(100))\n"
        "print(connection_limit(1000), resource.getrlimit(resource.RLIMIT_NOFILE)[0])\n"
        "try:\n"
        "    connection_limit(4000)\n"
        "except ValueError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out[0] == "192 64 100"
    # asked for more than the soft limit holds: raised, never past the hard limit
    limit, soft = map(int, out[1].split())
    assert limit == 1000 and 1064 <= soft <= 4096
    assert out[2] == (
        "--max-connections 4000: the open-file limit (ulimit -n) of 4096 holds at most 3584"
    )


def test_the_commands_defaults_are_the_servers() -> None:
    import inspect

    for command in (serve_cli.serve, proxy_cli.proxy):
        parameters = inspect.signature(command).parameters
        assert parameters["header_timeout"].default == guard_module.HEADER_TIMEOUT
        assert parameters["body_timeout"].default == bodies.BODY_TIMEOUT, command.__name__
        assert parse_size(parameters["max_body"].default) == bodies.MAX_BODY, command.__name__


# -- proxy ---------------------------------------------------------------------------------------
def test_the_proxy_is_guarded_too(tmp_path: Path) -> None:
    """The same flood at the proxy: an agent's request still goes through, byte for byte, and
    the half-sent connections left are closed after the header timeout."""
    with serving([REC], Playback(speed=None)) as upstream:
        proc, origin = start(
            [
                "proxy",
                "--upstream",
                upstream.url,
                "--out",
                str(tmp_path / "caps"),
                "--view",
                "none",
                "--header-timeout",
                "2",
            ]
        )
        flood: list[socket.socket] = []
        try:
            flood = half_sent(origin, NOFILE + 44)
            flooded = time.monotonic()
            status, body = raw_stream(origin + "/v1/chat/completions")
            assert status == 200 and body == body_of(REC)
            assert time.monotonic() - flooded < 5
            time.sleep(0.2)
            gone = closed_now(flood)
            left = [sock for i, sock in enumerate(flood) if i not in gone]
            assert 0 < len(left) <= 64  # (256 - 64) / 3 connections at most
            wait = flooded + 2 + 2 - time.monotonic()
            assert all(closed(sock, wait=max(0.0, wait)) for sock in left)
        finally:
            for sock in flood:
                sock.close()
            err = stop(proc)
    assert "Too many open files" not in err and "Traceback" not in err, err
    assert "(--max-connections 64)" in err


# -- request bodies ------------------------------------------------------------------------------
def slow_body(origin: str, count: int) -> list[socket.socket]:
    """``count`` connections with a complete request head whose body then comes one byte at a
    time, every 2 s (the first byte at once)."""
    head = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"content-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(REQUEST_BODY)
    )
    socks = []
    for _ in range(count):
        sock = connect(origin)
        sock.sendall(head + REQUEST_BODY[:1])
        socks.append(sock)
    return socks


def drip(socks: list[socket.socket], stop: float) -> None:
    """One more body byte on every connection still open, every 2 s, until ``stop``."""
    sent = 1
    while time.monotonic() + 2 < stop:
        time.sleep(2)
        # not to connections already answered: a byte sent after the server closed one would
        # be answered with a reset, which drops the answer unread
        waiting = [s for s in socks if s not in select.select(socks, [], [], 0)[0]]
        for sock in waiting:
            with contextlib.suppress(OSError):
                sock.sendall(REQUEST_BODY[sent : sent + 1])
        sent += 1


def served_within(origin: str, seconds: float) -> int:
    """Normal requests sent one after another for ``seconds``: how many got their stream."""
    served = 0
    deadline = time.monotonic() + seconds
    with httpx.Client(timeout=10) as client:
        while time.monotonic() < deadline:
            try:
                r = client.post(origin + "/v1/chat/completions", content=REQUEST_BODY)
            except httpx.TransportError:
                continue
            if r.status_code == 200 and r.content == body_of(REC):
                served += 1
            time.sleep(0.1)
    return served


@pytest.mark.parametrize("command", ["serve", "proxy"])
def test_slow_bodies_time_out_and_normal_requests_are_served(command: str, tmp_path: Path) -> None:
    """Clients that send a head and then a body byte every 2 s, as many as --max-connections:
    each is answered 408 after --body-timeout and closed (or 503 if a normal request took its
    connection first), and normal requests get through."""
    limit = 30
    guard = ["--max-connections", str(limit), "--body-timeout", "1"]
    with serving([REC], Playback(speed=None)) as upstream:
        if command == "serve":
            args = ["serve", str(REC), "--speed", "max", *guard]
        else:
            out = tmp_path / "caps"
            args = ["proxy", "--upstream", upstream.url, "--out", str(out), "--view", "none"]
            args += guard
        proc, origin = start(args, nofile=1024)
        flood: list[socket.socket] = []
        try:
            flood = slow_body(origin, limit)
            time.sleep(0.3)  # every head taken: the connections are busy with their requests
            dripping = threading.Thread(target=drip, args=(flood, time.monotonic() + 2.5))
            dripping.start()
            served = served_within(origin, 4)
            dripping.join()
            answers = [read_to_end(sock, timeout=5) for sock in flood]
        finally:
            for sock in flood:
                sock.close()
            err = stop(proc)
    assert served >= 5, err
    # each slow client is answered 408 and closed, or 503 when a normal request needed its
    # connection first; one whose head the server had not taken yet when the first normal
    # request came may have been closed to make room for it (without an answer)
    timed_out = [a for a in answers if a.startswith(b"HTTP/1.1 408 ")]
    evicted = [a for a in answers if a.startswith(b"HTTP/1.1 503 ")]
    assert len(timed_out) + len(evicted) >= limit - 2, [a[:30] for a in answers]
    assert timed_out, [a[:30] for a in answers]
    assert all(a == b"" for a in answers if a not in timed_out and a not in evicted)
    assert all(b"--body-timeout" in a and b"connection: close" in a for a in timed_out)
    assert "Traceback" not in err and "--body-timeout" in err, err


def test_a_client_leaving_mid_body_is_one_line_no_traceback(tmp_path: Path) -> None:
    with serving([REC], Playback(speed=None)) as upstream:
        out = tmp_path / "caps"
        proc, origin = start(
            ["proxy", "--upstream", upstream.url, "--out", str(out), "--view", "none"]
        )
        try:
            for _ in range(3):
                sock = connect(origin)
                sock.sendall(
                    b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    b"content-length: 1000\r\n\r\n" + REQUEST_BODY[:10]
                )
                time.sleep(0.2)
                sock.close()
            time.sleep(0.5)
            # the proxy goes on serving
            status, body = raw_stream(origin + "/v1/chat/completions")
            assert status == 200 and body == body_of(REC)
        finally:
            err = stop(proc)
    assert "Traceback" not in err and "ClientDisconnect" not in err, err
    lines = [line for line in err.splitlines() if "went away while sending its body" in line]
    assert len(lines) == 3, err


def test_the_proxy_answers_a_body_over_max_body_413_without_forwarding(tmp_path: Path) -> None:
    from .proxy_helpers import Upstream

    upstream = Upstream()
    out = tmp_path / "caps"
    with ServerThread(upstream.app) as up:
        proc, origin = start(
            ["proxy", "--upstream", up.url, "--out", str(out), "--view", "none"]
            + ["--max-body", "1K"]
        )
        try:
            big = b'{"model": "m", "stream": true, "pad": "' + b"x" * 2000 + b'"}'
            with httpx.Client(timeout=10) as client:
                r = client.post(origin + "/v1/chat/completions", content=big)
                small = client.post(origin + "/v1/chat/completions", content=REQUEST_BODY)
                # no Content-Length: counted as it comes
                chunked = client.post(
                    origin + "/v1/chat/completions", content=iter([big[:600], big[600:]])
                )
        finally:
            err = stop(proc)
    assert r.status_code == 413 and "--max-body" in r.json()["error"]["message"]
    assert chunked.status_code == 413
    assert small.status_code == 200
    assert len(upstream.seen) == 1  # only the small one went upstream
    assert not [p for p in out.glob("*.jsonl") if p.read_bytes() and "x" * 100 in p.read_text()]
    assert "Traceback" not in err and err.count("-> 413") == 2, err


# -- behind a gateway ----------------------------------------------------------------------------
def two_second_stream(folder: Path) -> Path:
    """20 events 0.1 s apart, then the end: a stream of 2 s."""
    reads: list[tuple[float, bytes | str]] = [(0.1 * i, chat_chunk(f"w{i} ", i)) for i in range(20)]
    reads.append((2.0, "data: [DONE]\n\n"))
    return write_recording(folder / "two-seconds.jsonl", reads, model="gpt-4o-mini")


@pytest.mark.parametrize("command", ["serve", "proxy"])
def test_a_stream_past_the_header_timeout_survives_x_forwarded_for(
    command: str, tmp_path: Path
) -> None:
    """Behind a local gateway that adds X-Forwarded-For: a 2 s stream with a 0.8 s header
    timeout arrives whole; no 408 is written into it (the request was linked to its connection
    by the client's address, which the header replaced)."""
    rec = two_second_stream(tmp_path)
    with serving([rec], Playback()) as upstream:
        if command == "serve":
            args = ["serve", str(rec)]
        else:
            out = str(tmp_path / "caps")
            args = ["proxy", "--upstream", upstream.url, "--out", out, "--view", "none"]
        proc, origin = start([*args, "--header-timeout", "0.8"])
        try:
            with httpx.Client(timeout=10, headers={"X-Forwarded-For": "10.9.8.7"}) as client:
                started = time.monotonic()
                with client.stream(
                    "POST",
                    origin + "/v1/chat/completions",
                    json={"model": "gpt-4o-mini", "stream": True, "messages": []},
                ) as resp:
                    body = b"".join(resp.iter_raw())
                assert resp.status_code == 200
                assert body == body_of(rec)
                assert time.monotonic() - started > 1.5  # well past the header timeout
                # the kept-alive connection's next request is linked to it just as well
                r = client.get(origin + "/" if command == "serve" else origin + "/v1/models")
                assert r.status_code in (200, 404)
        finally:
            err = stop(proc)
    assert "--header-timeout" not in err and "Traceback" not in err, err


def test_forwarded_headers_are_not_trusted_and_the_proxy_passes_them_on() -> None:
    """A request's client is the address its connection came from: X-Forwarded-For and
    X-Forwarded-Proto change neither it nor the scheme (every server of the project runs with
    uvicorn's proxy_headers off); the proxy sends them upstream as they came, as any header."""
    from streamtool.core.net.proxy import ProxyConfig, ProxyThread, parse_upstreams

    from .proxy_helpers import Upstream

    seen: list[tuple[str, str]] = []

    async def app(scope: dict, receive: object, send: object) -> None:
        seen.append((scope["client"][0], scope["scheme"]))
        await send({"type": "http.response.start", "status": 204, "headers": []})  # type: ignore[operator]
        await send({"type": "http.response.body", "body": b""})  # type: ignore[operator]

    forwarded = {"X-Forwarded-For": "10.9.8.7", "X-Forwarded-Proto": "https"}
    with ServerThread(app) as server:
        assert httpx.get(server.url + "/", headers=forwarded).status_code == 204
    assert seen == [("127.0.0.1", "http")]
    upstream = Upstream()
    with ServerThread(upstream.app) as up, tempfile.TemporaryDirectory() as out:
        config = ProxyConfig(out=out, upstreams=parse_upstreams([up.url]))
        with ProxyThread(config) as proxy:
            assert httpx.get(proxy.url + "/v1/models", headers=forwarded).status_code == 200
    headers = upstream.seen[-1]["headers"]
    assert headers["x-forwarded-for"] == "10.9.8.7"
    assert headers["x-forwarded-proto"] == "https"


# -- slow request bodies at the connection limit ------------------------------------------------
def received_now(socks: list[socket.socket]) -> list[bytes | None]:
    """What each socket has received so far (``None``: reset)."""
    out: list[bytes | None] = []
    for sock in socks:
        sock.setblocking(False)
        data = bytearray()
        try:
            while piece := sock.recv(65536):
                data += piece
        except BlockingIOError:
            pass
        except OSError:
            out.append(None)
            continue
        finally:
            sock.settimeout(5)
        out.append(bytes(data))
    return out


@pytest.mark.parametrize("command", ["serve", "proxy"])
def test_slow_bodies_filling_the_limit_make_room_for_normal_requests(
    command: str, tmp_path: Path
) -> None:
    """20 clients send a head, then their body a byte every 2 s, filling --max-connections 20
    (the body timeout is the default 30 s): normal requests are served all the same, each taking
    the connection of the body that has come slowest, whose client reads a real 503."""
    limit = 20
    with serving([REC], Playback(speed=None)) as upstream:
        if command == "serve":
            args = ["serve", str(REC), "--speed", "max"]
        else:
            out = str(tmp_path / "caps")
            args = ["proxy", "--upstream", upstream.url, "--out", out, "--view", "none"]
        proc, origin = start([*args, "--max-connections", str(limit)], nofile=1024)
        flood: list[socket.socket] = []
        try:
            # a first request pays for the server's imports: the flood's heads are then taken
            # at once, however loaded the machine
            assert raw_stream(origin + "/v1/chat/completions") == (200, body_of(REC))
            flood = slow_body(origin, limit)
            dripping = threading.Thread(target=drip, args=(flood, time.monotonic() + 2.5))
            dripping.start()
            time.sleep(1.5)  # every head taken, each body arriving for longer than BODY_GRACE
            statuses = []
            for _ in range(5):
                r = httpx.post(origin + "/v1/chat/completions", content=REQUEST_BODY, timeout=5)
                statuses.append((r.status_code, r.content == body_of(REC)))
            time.sleep(0.3)
            answers = received_now(flood)
            dripping.join()
        finally:
            err = stop(proc)  # first: the slow clients still sending are cut, not gone away
            for sock in flood:
                sock.close()
    assert statuses == [(200, True)] * 5, err
    evicted = [a for a in answers if a and a.startswith(b"HTTP/1.1 503 ")]
    assert evicted, [a[:20] if a is not None else None for a in answers]
    assert all(b"came too slowly" in a and b"connection: close" in a for a in evicted)
    # the others are still open, waiting for their bodies: nobody was reset
    assert all(a == b"" for a in answers if a not in evicted), answers
    assert "503 and closed it to make room: its request body came slowest" in err, err
    assert "went away while sending its body" not in err and "Traceback" not in err, err


@pytest.mark.parametrize("command", ["serve", "proxy"])
def test_a_refused_client_reads_its_503_though_it_sends_after_it(
    command: str, tmp_path: Path
) -> None:
    """--max-connections 2, both busy streaming: a new client is answered 503 as it connects,
    and reads it although it sends its request afterwards (a connection closed with bytes
    unread, or sent to after its close, is reset, and the client would lose the answer)."""
    with serving([REC], Playback(speed=None, stall=2.0)) as upstream:
        if command == "serve":
            args = ["serve", str(REC), "--speed", "max", "--stall", "2"]
        else:
            out = str(tmp_path / "caps")
            args = ["proxy", "--upstream", upstream.url, "--out", out, "--view", "none"]
        proc, origin = start([*args, "--max-connections", "2"])
        try:
            busy = []
            for _ in range(2):
                sock = connect(origin)
                sock.sendall(request_bytes())
                response = Response(sock)
                assert response.head() == 200
                busy.append(response)
            refused = connect(origin)
            time.sleep(0.3)  # the 503 is written as the connection comes
            data = request_bytes()
            refused.sendall(data[:40])
            time.sleep(0.1)
            refused.sendall(data[40:])
            answer = read_to_end(refused)
            for response in busy:
                assert response.rest() == body_of(REC)
        finally:
            err = stop(proc)
    assert answer.startswith(b"HTTP/1.1 503 "), answer
    assert b"retry-after: 1" in answer and answer.endswith(b"is busy"), answer
    assert "503: all 2 are busy with requests" in err


class _Body:
    def __init__(self, since: float, sent: int) -> None:
        self.body_since = since
        self.body_bytes = sent


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(min_value=0, max_value=30), st.integers(min_value=0, max_value=10**7)),
        max_size=25,
    )
)
def test_the_body_closed_to_make_room_is_the_slowest_past_the_grace(
    bodies: list[tuple[float, int]],
) -> None:
    """Whatever bodies are arriving: the one chosen has the fewest bytes per second since its
    head among those arriving for BODY_GRACE seconds or more; none when no body is that old."""
    now = 1000.0
    guard = guard_module.ConnectionGuard(guard_module.ConnectionLimits(100), clock=lambda: now)
    conns = []
    for age, sent in sorted(bodies, key=lambda b: -b[0]):  # heads came oldest first
        conn = _Body(now - age, sent)
        guard.admit(conn)
        guard.busy(conn, body=True)
        conns.append(conn)
    chosen = guard.slowest_body()
    old = [c for c in conns if now - c.body_since >= guard_module.BODY_GRACE]
    if not old:
        assert chosen is None
        return
    rate = {id(c): c.body_bytes / (now - c.body_since) for c in old}
    assert chosen in old and rate[id(chosen)] == min(rate.values())
