"""The network edge against hostile clients, on real sockets on 127.0.0.1 and real ``serve`` and
``proxy`` processes: the proxy sends a request to its upstream and nowhere else, whatever the
request target says; a connection to a loopback address is answered only under a loopback
``Host`` (DNS rebinding); listening on another address is one warning line."""

from __future__ import annotations

import contextlib
import json
import re
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from streamtool.core.net.listen import ServerThread
from streamtool.core.net.proxy import BadTarget, _shown, target_path

from .proxy_helpers import Upstream
from .serve_helpers import STREAMTOOL, recording, start_listening

BODY = json.dumps({"model": "gpt-test", "stream": True, "messages": []}).encode()


class Decoy:
    """A TCP listener that counts the connections it is sent (and answers none of them)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()

    def close(self) -> None:
        # a thread blocked in accept() is not woken by close(); a shutdown wakes it (Linux)
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        self._thread.join(5)


def exchange(port: int, head: str, body: bytes = b"") -> tuple[int, bytes]:
    """Send one raw request (``head`` without its blank line) and read the status and the
    whole response (the request asks for the connection to close)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(head.encode("latin-1") + b"\r\n\r\n" + body)
        data = bytearray()
        while True:
            piece = s.recv(65536)
            if not piece:
                break
            data += piece
    status_line = bytes(data).split(b"\r\n", 1)[0]
    assert status_line.startswith(b"HTTP/1.1 "), bytes(data[:200])
    return int(status_line.split()[1]), bytes(data)


def post_head(target: str, port: int, host: str | None = None) -> str:
    return (
        f"POST {target} HTTP/1.1\r\nHost: {host or f'127.0.0.1:{port}'}\r\n"
        f"Content-Type: application/json\r\nAuthorization: Bearer sk-test\r\n"
        f"Content-Length: {len(BODY)}\r\nConnection: close"
    )


@pytest.fixture(scope="module")
def decoy() -> Iterator[Decoy]:
    d = Decoy()
    yield d
    d.close()


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[Upstream, str]]:
    up = Upstream()
    with ServerThread(up.app) as server:
        yield up, server.url


def start_proxy(tmp: Path, *args: str) -> tuple[subprocess.Popen[str], int]:
    tmp.mkdir(exist_ok=True)
    proc, _, origin = start_listening(
        [*STREAMTOOL, "proxy", "--port", "0", "--view", "none", "--out", str(tmp), *args]
    )
    return proc, int(origin.rsplit(":", 1)[1])


def stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=20)
    return err


def tricks(decoy_port: int) -> list[str]:
    """Request targets that, pasted after the upstream origin, name the decoy instead."""
    d = decoy_port
    return [
        f"@127.0.0.1:{d}/v1/chat/completions",
        f":{d}/v1/chat/completions",
        f"//127.0.0.1:{d}/v1/chat/completions",
        f"\\\\127.0.0.1:{d}/v1/chat/completions",
        f"/\\127.0.0.1:{d}/v1/chat/completions",
        f".evil@127.0.0.1:{d}/v1/chat/completions",
        f"http://127.0.0.1:{d}/v1/chat/completions",
        f"http://localhost:{d}/v1/chat/completions",
        f"127.0.0.1:{d}",
    ]


@pytest.mark.parametrize("configured", [True, False], ids=["--upstream", "official-hosts"])
def test_no_target_reaches_anything_but_the_upstream(
    tmp_path: Path, decoy: Decoy, upstream: tuple[Upstream, str], configured: bool
) -> None:
    up, up_url = upstream
    seen_before = len(up.seen)
    args = ["--upstream", up_url] if configured else []
    proc, port = start_proxy(tmp_path / "caps", *args)
    answers = []
    try:
        for target in tricks(decoy.port):
            status, _ = exchange(port, post_head(target, port), BODY)
            answers.append((target, status))
        status, _ = exchange(
            port,
            f"GET @127.0.0.1:{decoy.port}/v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            "Connection: close",
        )
        answers.append(("GET @…/v1/models", status))
        status, _ = exchange(
            port,
            f"CONNECT 127.0.0.1:{decoy.port} HTTP/1.1\r\nHost: 127.0.0.1:{decoy.port}\r\n"
            "Connection: close",
        )
        answers.append(("CONNECT", status))
    finally:
        err = stop(proc)
    assert decoy.connections == 0, answers
    assert all(status == 400 for _, status in answers), answers
    assert len(up.seen) == seen_before  # nothing was sent on at all
    assert not list((tmp_path / "caps").glob("0*.jsonl"))  # nor recorded
    assert "Traceback" not in err
    # one line for each refused request: the proxy's, naming its target and why, or uvicorn's
    # (httptools) for a target or a method its parser refuses before any application sees it
    ours = sum("-> 400:" in line for line in err.splitlines())
    parser = sum("Invalid HTTP request received." in line for line in err.splitlines())
    assert ours + parser == len(answers), err
    assert ours >= 4, err  # the absolute forms, the network-path and the backslash: named


def test_absolute_form_naming_the_proxy_goes_to_the_upstream_path(
    tmp_path: Path, upstream: tuple[Upstream, str]
) -> None:
    """RFC 9112 3.2.2: a server accepts the absolute form; only its path is sent on."""
    up, up_url = upstream
    proc, port = start_proxy(tmp_path / "caps", "--upstream", up_url)
    try:
        for own in (f"127.0.0.1:{port}", f"localhost:{port}"):
            target = f"http://{own}/v1/echo?x=1"
            status, data = exchange(port, post_head(target, port), BODY)
            assert status == 200, data
            assert up.seen[-1]["path"] == "/v1/echo" and up.seen[-1]["query"] == "x=1"
        target = f"http://user:hunter2@127.0.0.1:{port}/v1/echo"
        status, _ = exchange(port, post_head(target, port), BODY)
        assert status == 400  # user information in the authority
    finally:
        err = stop(proc)
    # the refusal's line names the target without its password
    assert f"POST 'http://***@127.0.0.1:{port}/v1/echo' -> 400" in err, err
    assert f"names '***@127.0.0.1:{port}'" in err and "hunter2" not in err, err


def test_pipelined_requests_are_each_judged_by_their_own_target(
    tmp_path: Path, decoy: Decoy, upstream: tuple[Upstream, str]
) -> None:
    """Requests sent together on one connection (HTTP/1.1 pipelining) reach the app one after
    another: each is judged by the target it came with (uvicorn's parser drops an absolute
    form's authority and a fragment; the proxy has them back, request by request). A refusal
    closes the connection: what was sent after it is not answered."""
    up, up_url = upstream
    proc, port = start_proxy(tmp_path / "caps", "--upstream", up_url)
    other = f"http://127.0.0.1:{decoy.port}/v1/echo?n=9"
    runs = [  # the targets sent together on one connection, and the statuses answered
        (["/v1/echo?n=1", f"http://127.0.0.1:{port}/v1/echo?n=2", other, "/v1/echo?n=9"],
         [200, 200, 400]),
        ([f"http://localhost:{port}/v1/echo?n=3", "/v1/echo#frag", "/v1/echo?n=9"], [200, 400]),
        (["/v1/echo?n=4", "/v1/echo?n=5"], [200, 200]),
    ]  # fmt: skip
    seen_before = len(up.seen)
    got = []
    try:
        for targets, _ in runs:
            heads = [post_head(t, port).replace("close", "keep-alive") for t in targets]
            heads[-1] = post_head(targets[-1], port)
            with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                s.sendall(b"".join(h.encode("latin-1") + b"\r\n\r\n" + BODY for h in heads))
                data = bytearray()
                while piece := s.recv(65536):
                    data += piece
            got.append([int(n) for n in re.findall(rb"HTTP/1\.1 (\d{3}) ", bytes(data))])
    finally:
        err = stop(proc)
    assert got == [statuses for _, statuses in runs], err
    assert [q["query"] for q in up.seen[seen_before:]] == [f"n={n}" for n in range(1, 6)]
    assert decoy.connections == 0
    assert f"names '127.0.0.1:{decoy.port}'" in err and "'/v1/echo#frag'" in err, err


def test_a_websocket_upgrade_naming_another_authority_is_refused_without_its_password(
    tmp_path: Path, decoy: Decoy
) -> None:
    """An upgrade's absolute-form target goes through the same check (uvicorn hands the
    upgrade's target over as it came); its refusal's line masks the user information."""
    proc, port = start_proxy(tmp_path / "caps", "--upstream", f"ws://127.0.0.1:{decoy.port}")
    heads = []
    try:
        for target in (
            f"http://user:hunter2@127.0.0.1:{port}/v1/realtime",
            f"http://127.0.0.1:{decoy.port}/v1/realtime",
        ):
            with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                s.sendall(
                    f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                    "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                    "Sec-WebSocket-Version: 13\r\n\r\n".encode()
                )
                heads.append(s.recv(65536).split(b"\r\n", 1)[0])
    finally:
        err = stop(proc)
    assert heads == [b"HTTP/1.1 400 Bad Request"] * 2, heads
    assert decoy.connections == 0
    assert f"WebSocket 'http://***@127.0.0.1:{port}/v1/realtime' -> 400" in err, err
    assert f"names '127.0.0.1:{decoy.port}'" in err and "hunter2" not in err, err


def test_a_shown_target_masks_its_user_information_and_nothing_else() -> None:
    assert _shown("http://user:pw@h:1/x") == "http://***@h:1/x"
    assert _shown("//user:pw@h/x") == "//***@h/x"
    assert _shown("user:pw@h:1") == "***@h:1"  # an authority alone
    for plain in ("/v1/a@b", "http://h:1/v1?x=@", "h:1", "/v1/chat/completions"):
        assert _shown(plain) == plain


def test_target_path_unit_cases() -> None:
    server = ("127.0.0.1", 8788)
    assert target_path("/v1/chat/completions", server) == "/v1/chat/completions"
    assert target_path("/v1beta/models/g:streamGenerateContent", server).endswith(
        ":streamGenerateContent"
    )
    assert target_path("http://127.0.0.1:8788/v1/x", server) == "/v1/x"
    assert target_path("http://[::1]:8788", server) == "/"
    for bad in (
        "@h/v1",
        ":1/v1",
        "//h/v1",
        "/\\h/v1",
        "/v1#x",
        "*",
        "h:1",
        "http://127.0.0.1:8789/v1",
        "http://example.com:8788/v1",
        "ftp://127.0.0.1:8788/v1",
        "http://127.0.0.1:notaport/v1",
    ):
        with pytest.raises(BadTarget):
            target_path(bad, server)


# -- Host -----------------------------------------------------------------------------------------
LOOPBACK_HOSTS = ["127.0.0.1", "127.0.0.1:1", "localhost", "LOCALHOST:8788", "[::1]", "[::1]:99"]
FOREIGN_HOSTS = [
    "evil.example",
    "evil.example:8788",
    "10.0.0.1",
    "127.0.0.1.evil.example",
    "localhost.evil.example:80",
    "user@127.0.0.1",
]


def host_statuses(port: int, path: str, hosts: list[str]) -> dict[str, int]:
    out = {}
    for host in hosts:
        status, _ = exchange(port, post_head(path, port, host=host), BODY)
        out[host] = status
    return out


def test_serve_answers_only_a_loopback_host() -> None:
    rec = recording("openai-parallel-tool-calls")
    proc, _, origin = start_listening(
        [*STREAMTOOL, "serve", str(rec), "--port", "0", "--speed", "max"]
    )
    port = int(origin.rsplit(":", 1)[1])
    try:
        good = host_statuses(port, "/v1/chat/completions", LOOPBACK_HOSTS)
        bad = host_statuses(port, "/v1/chat/completions", FOREIGN_HOSTS)
    finally:
        err = stop(proc)
    assert all(s == 200 for s in good.values()), good
    assert all(s == 421 for s in bad.values()), bad
    refused = [line for line in err.splitlines() if "-> 421" in line]
    assert len(refused) == len(FOREIGN_HOSTS), err
    assert "Traceback" not in err


def test_proxy_answers_only_a_loopback_host(tmp_path: Path, upstream: tuple[Upstream, str]) -> None:
    up, up_url = upstream
    proc, port = start_proxy(tmp_path / "caps", "--upstream", up_url)
    seen_before = len(up.seen)
    try:
        bad = host_statuses(port, "/v1/echo", FOREIGN_HOSTS)
        assert len(up.seen) == seen_before  # nothing refused was sent on
        good = host_statuses(port, "/v1/echo", LOOPBACK_HOSTS)
    finally:
        err = stop(proc)
    assert all(s == 421 for s in bad.values()), bad
    assert all(s == 200 for s in good.values()), good
    assert len(up.seen) == seen_before + len(LOOPBACK_HOSTS)
    refused = [line for line in err.splitlines() if "-> 421" in line]
    assert len(refused) == len(FOREIGN_HOSTS), err


@pytest.mark.parametrize("command", ["serve", "proxy"])
def test_listening_on_another_address_is_one_warning(tmp_path: Path, command: str) -> None:
    args = (
        [str(recording("openai-parallel-tool-calls"))]
        if command == "serve"
        else ["--out", str(tmp_path), "--view", "none"]
    )
    proc = subprocess.Popen(
        [*STREAMTOOL, command, *args, "--host", "0.0.0.0", "--port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    first = proc.stderr.readline()
    second = proc.stderr.readline()
    err = first + second + stop(proc)
    warnings = [line for line in err.splitlines() if "warning" in line.lower()]
    assert len(warnings) == 1, err
    assert "0.0.0.0" in warnings[0] and "not a loopback address" in warnings[0]
    for quiet_host in ("127.0.0.1", "localhost"):
        proc = subprocess.Popen(
            [*STREAMTOOL, command, *args, "--host", quiet_host, "--port", "0"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stderr is not None
        first = proc.stderr.readline()
        err = first + stop(proc)
        assert "warning" not in err.lower(), err
