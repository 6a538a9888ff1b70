"""The proxy's upstream client on real sockets: one chunk record per socket read (reads that
come quicker than GATHER gathered into one), keep-alive,
TLS verification, and request bodies the JSON decoder cannot walk."""

from __future__ import annotations

import bisect
import contextlib
import gzip
import itertools
import json
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
import trustme

from benchmarks.procs import proxy_args
from benchmarks.raw_http import read_arrivals
from streamtool.core.net.forward import GATHER, READ_AHEAD
from streamtool.core.net.listen import ServerThread
from streamtool.core.net.proxy import ProxyConfig, ProxyThread, parse_upstreams
from streamtool.core.recording.reader import Source
from streamtool.core.recording.recorder import classify

from .proxy_helpers import ScriptedUpstream, Upstream, chunked, proxy_to
from .serve_helpers import STREAMTOOL, read_all, start_listening
from .test_proxy import captured, raw_post, wait_for_index

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
BODY = {"model": "gpt-test", "stream": True, "messages": []}


def event(i: int) -> bytes:
    return b'data: {"choices":[{"index":0,"delta":{"content":"%d "}}]}\n\n' % i


def proxy_scripted(tmp_path: Path, writes: list[tuple[float, bytes]], sent: list[bytes]) -> Any:
    """A chat completion posted through the proxy to an upstream that makes ``writes``; checks
    that the client got 200 and the bytes ``sent``; gives the recording's index entry, its
    recorded reads and its end."""
    with _through_proxy(tmp_path, writes) as (out, px):
        status, reads = raw_post(px.url + "/v1/chat/completions", BODY)
        [entry] = wait_for_index(out, 1)
    assert status == 200
    assert b"".join(reads) == b"".join(sent)
    [f] = captured(out)
    _, chunks, end = read_all(f)
    times = [c.t for c in Source(f).chunks()]
    return entry, chunks, end, times


def test_a_burst_is_one_record_and_paced_events_one_each(tmp_path: Path) -> None:
    burst = [event(i) for i in range(200)]  # 200 HTTP chunks in one write
    paced = [event(i) for i in range(200, 204)]
    done = b"data: [DONE]\n\n"
    writes = [(0.0, HEAD + chunked(*burst))]
    writes += [(0.25, chunked(e)) for e in paced]
    writes.append((0.25, chunked(done) + b"0\r\n\r\n"))
    entry, chunks, end, times = proxy_scripted(tmp_path, writes, [*burst, *paced, done])
    # one socket read, one record, whatever number of HTTP chunks it held
    assert chunks == [b"".join(burst), *paced, done]
    assert end.reason == "complete"
    assert entry["chunks"] == len(chunks) == 6
    assert all(b - a > 0.15 for a, b in zip(times[1:], times[2:], strict=False))


def test_quick_reads_are_gathered_into_one_record_per_gather(tmp_path: Path) -> None:
    # an event every 0.2 ms, each in a write of its own: one record (and one client write) per
    # GATHER seconds at most, every byte kept, in order
    events = [event(i) for i in range(300)]
    done = b"data: [DONE]\n\n"
    writes = [(0.0, HEAD), *((0.0002, chunked(e)) for e in events)]
    writes.append((0.0002, chunked(done) + b"0\r\n\r\n"))
    entry, chunks, end, times = proxy_scripted(tmp_path, writes, [*events, done])
    assert b"".join(chunks) == b"".join([*events, done])
    assert end.reason == "complete"
    assert entry["chunks"] == len(chunks) < len(events)
    assert all(b - a >= GATHER * 0.9 for a, b in zip(times, times[1:], strict=False))


@contextlib.contextmanager
def _through_proxy(tmp_path: Path, writes: list) -> Iterator[tuple[Path, Any]]:
    """A proxy recording into ``tmp_path / "caps"`` in front of an upstream that writes
    ``writes``: the tape's folder and the proxy."""
    out = tmp_path / "caps"
    with ScriptedUpstream(writes) as up, proxy_to(out, up.url) as px:
        yield out, px


def test_the_recording_is_named_while_the_upstream_works_on_the_request(tmp_path: Path) -> None:
    # the upstream answers 1 s after the request came: well before that, the proxy has checked
    # the request and claimed its recording's number (its file, made empty), off the first
    # byte's path
    writes = [(1.0, HEAD + chunked(event(0)) + b"0\r\n\r\n")]
    with _through_proxy(tmp_path, writes) as (out, px):
        start = time.monotonic()
        client = threading.Thread(target=raw_post, args=(px.url + "/v1/chat/completions", BODY))
        client.start()
        named: list[Path] = []
        while not named and time.monotonic() < start + 5:
            named = [p for p in out.iterdir() if p.suffix == ".jsonl" and p.name != "index.jsonl"]
            time.sleep(0.005)
        named_after = time.monotonic() - start
        empty = [p.stat().st_size for p in named] == [0]  # before the answer's head came
        client.join(10)
        [entry] = wait_for_index(out, 1)
    assert [p.name for p in named] == [entry["file"]] and empty
    assert named_after < 0.8, f"named {named_after:.2f} s after the request, not before the answer"


def test_a_client_gone_after_the_head_leaves_the_head_recorded(tmp_path: Path) -> None:
    # the head reaches the client before the recording's header record is written: a client
    # that leaves as soon as it has the head (no body has come) still leaves a recording with
    # the upstream's status and headers, ended "interrupted"
    head = HEAD.replace(b"\r\n\r\n", b"\r\nx-upstream-note: kept\r\n\r\n")
    writes = [(0.0, head), (3.0, chunked(event(0)) + b"0\r\n\r\n")]
    with _through_proxy(tmp_path, writes) as (out, px):
        with (
            httpx.Client(timeout=10) as client,
            client.stream("POST", px.url + "/v1/chat/completions", json=BODY) as resp,
        ):
            assert resp.status_code == 200
            assert resp.headers["x-upstream-note"] == "kept"
        [entry] = wait_for_index(out, 1)
    [f] = captured(out)
    header, chunks, end = read_all(f)
    assert header.response["status"] == 200
    assert header.response["headers"]["x-upstream-note"] == "kept"
    assert header.request["body"] == BODY
    assert chunks == []
    assert end.reason == "interrupted" and "client" in end.error
    assert entry["end"] == "interrupted" and entry["status"] == 200


def test_a_client_gone_before_the_head_ends_the_exchange_at_once(tmp_path: Path) -> None:
    # the upstream takes 3 s to answer; the client leaves after 0.3 s: the exchange ends then
    # (its upstream request cancelled), not when the upstream answers, and is recorded as
    # interrupted by the client, with no status (no head came)
    writes = [(3.0, HEAD + chunked(event(0)) + b"0\r\n\r\n")]
    with _through_proxy(tmp_path, writes) as (out, px):
        start = time.monotonic()
        with httpx.Client(timeout=0.3) as client, pytest.raises(httpx.ReadTimeout):
            client.post(px.url + "/v1/chat/completions", json=BODY)
        [entry] = wait_for_index(out, 1, timeout=5)
        ended_after = time.monotonic() - start
    assert ended_after < 2.0, f"ended {ended_after:.2f} s after the request"
    assert entry["end"] == "interrupted" and entry["status"] is None
    [f] = captured(out)
    header, chunks, end = read_all(f)
    assert header.request["body"] == BODY
    assert chunks == []
    assert end.reason == "interrupted"
    assert "the client closed the connection" in end.error


def test_keep_alive_and_a_pooled_connection_the_upstream_closed(tmp_path: Path) -> None:
    writes = [(0.0, HEAD + chunked(event(1), b"data: [DONE]\n\n") + b"0\r\n\r\n")]
    out = tmp_path / "caps"
    with (
        ScriptedUpstream(writes) as up,
        proxy_to(out, up.url) as px,
    ):
        for _ in range(3):
            assert raw_post(px.url + "/v1/chat/completions", BODY)[0] == 200
        assert up.connections == 1  # one connection, kept alive
    # an upstream that closes a kept connection as a request arrives: a GET is sent again on
    # a new connection; a POST is not (RFC 9110 section 9.2.2: it may have been acted on)
    with (
        ScriptedUpstream(writes, close_on_reuse=True) as up,
        proxy_to(out, up.url) as px,
        httpx.Client(timeout=10) as client,
    ):
        assert client.get(px.url + "/v1/models").status_code == 200
        assert client.get(px.url + "/v1/models").status_code == 200
        assert up.connections == 2 and [m for m, _, _ in up.requests] == ["GET"] * 3
        r = client.post(px.url + "/v1/chat/completions", json=BODY)
        assert r.status_code == 502 and "ServerDisconnectedError: Server disconnected" in r.text
        assert up.connections == 2 and len(up.requests) == 4


def test_an_upstream_that_never_answers_is_a_504(tmp_path: Path) -> None:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)  # connections complete in the backlog; nothing is ever accepted
        port = sock.getsockname()[1]
        # TLS: the handshake never ends (the connect timeout); plain: no head (the read one)
        for scheme, error in (("https", "ConnectionTimeoutError"), ("http", "SocketTimeoutError")):
            out = tmp_path / scheme
            config = ProxyConfig(
                out=out,
                upstreams=parse_upstreams([f"{scheme}://127.0.0.1:{port}"]),
                timeout=0.3,
                connect_timeout=0.3,
            )
            # a key in the query: aiohttp's connect timeout names the whole URL, which the
            # answer and the recording must not repeat
            key = "AIzaSyD4Query0Key1Of2Gemini3Shape4xyz12"
            with ProxyThread(config) as px:
                url = px.url + f"/v1/chat/completions?key={key}"
                r = httpx.post(url, json=BODY, timeout=10)
                wait_for_index(out, 1)
            assert r.status_code == 504, r.text
            assert f"did not answer in time: {error}" in r.json()["error"]["message"]
            assert key not in r.text
            _, chunks, end = read_all(captured(out)[0])
            assert chunks == [] and end.reason == "timeout" and error in end.error
            assert all(key not in f.read_text() for f in out.iterdir() if f.is_file())


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def tls_server(ca: trustme.CA, *names: str) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(*names).configure_cert(context)
    return context


def test_tls_upstream_verified(tmp_path: Path, ca: trustme.CA) -> None:
    writes = [(0.0, HEAD + chunked(event(7), b"data: [DONE]\n\n") + b"0\r\n\r\n")]
    trusted = ssl.create_default_context()
    ca.configure_trust(trusted)
    with ScriptedUpstream(writes, tls=tls_server(ca, "127.0.0.1")) as up:
        assert up.url.startswith("https://")
        # verification on by default: a certificate from an unknown CA is a clean 502
        out = tmp_path / "untrusted"
        with proxy_to(out, up.url) as px:
            r = httpx.post(px.url + "/v1/chat/completions", json=BODY, timeout=10)
            wait_for_index(out, 1)
        assert r.status_code == 502
        message = r.json()["error"]["message"]
        assert "could not be reached: ClientConnectorCertificateError" in message
        assert "CERTIFICATE_VERIFY_FAILED" in message
        _, chunks, end = read_all(captured(out)[0])
        assert chunks == [] and end.reason == "error" and "could not connect" in end.error
        # the CA trusted: streamed and recorded
        out = tmp_path / "trusted"
        config = ProxyConfig(out=out, upstreams=parse_upstreams([up.url]), verify=trusted)
        with ProxyThread(config) as px:
            status, reads = raw_post(px.url + "/v1/chat/completions", BODY)
            wait_for_index(out, 1)
        assert status == 200 and b"".join(reads) == event(7) + b"data: [DONE]\n\n"
        assert read_all(captured(out)[0])[2].reason == "complete"
    # a trusted CA, but a certificate for another name: refused as well
    with (
        ScriptedUpstream(writes, tls=tls_server(ca, "elsewhere.test")) as up,
        ProxyThread(
            ProxyConfig(out=tmp_path / "name", upstreams=parse_upstreams([up.url]), verify=trusted)
        ) as px,
    ):
        r = httpx.post(px.url + "/v1/chat/completions", json=BODY, timeout=10)
    assert r.status_code == 502 and "CERTIFICATE_VERIFY_FAILED" in r.text


def test_a_body_nested_too_deeply_passes_through_as_text(tmp_path: Path) -> None:
    deep = '{"model": "gpt-test", "messages": ' + "[" * 5000 + "]" * 5000 + "}"
    upstream = Upstream()
    out = tmp_path / "caps"
    with (
        ServerThread(upstream.app) as up,
        proxy_to(out, up.url) as px,
    ):
        r = httpx.post(
            px.url + "/v1/chat/completions",
            content=deep.encode(),
            headers={"content-type": "application/json"},
            timeout=10,
        )
        wait_for_index(out, 1)
    assert r.status_code == 200
    assert upstream.seen[-1]["body"] == deep.encode()  # forwarded untouched
    [f] = captured(out)
    assert f.name == "0001-openai-chat-completions-model.jsonl"  # no model read from it
    header = Source(f).header
    assert header.request["body"] == deep  # kept, as text
    assert json.loads(r.text)["body"] == deep


@pytest.mark.parametrize("client", [httpx, httpx2], ids=["httpx", "httpx2"])
@pytest.mark.parametrize(
    ("name", "reason", "words"),
    [
        ("ReadTimeout", "timeout", "ReadTimeout after 30 "),
        ("ConnectTimeout", "timeout", "ConnectTimeout after 30 "),
        ("ConnectError", "error", "could not connect: boom"),
        ("RemoteProtocolError", "error", "connection dropped after 30 bytes"),
        ("ReadError", "error", "connection dropped after 30 bytes"),
        ("WriteError", "error", "connection dropped after 30 bytes"),
    ],
)
def test_end_records_word_the_clients_errors_by_their_types(
    client: Any, name: str, reason: str, words: str
) -> None:
    got_reason, message = classify(getattr(client, name)("boom"), 30)
    assert got_reason == reason and message.startswith(words)


def test_end_records_word_aiohttps_errors_by_their_types() -> None:
    # the proxy's upstream client: its errors told apart by type, as httpx's are
    import aiohttp
    from aiohttp.client_reqrep import ConnectionKey

    key = ConnectionKey("127.0.0.1", 9, False, True, None, None, None, None)
    refused = aiohttp.ClientConnectorError(key, ConnectionRefusedError(111, "refused"))
    for exc, reason, words in [
        (aiohttp.SocketTimeoutError("read"), "timeout", "SocketTimeoutError after 30 "),
        (aiohttp.ConnectionTimeoutError("connect"), "timeout", "ConnectionTimeoutError after 30 "),
        (refused, "error", "could not connect: Cannot connect to host 127.0.0.1:9"),
        (aiohttp.ServerDisconnectedError(), "error", "connection dropped after 30 bytes"),
        (aiohttp.ClientPayloadError("cut"), "error", "connection dropped after 30 bytes"),
    ]:
        got_reason, message = classify(exc, 30)
        assert got_reason == reason and message.startswith(words), (exc, message)


def test_a_look_alike_class_name_is_not_a_client_error() -> None:
    # classified by type: an exception merely named like httpx's is an error like any other
    class ReadTimeout(Exception):  # noqa: N818
        pass

    assert classify(ReadTimeout("x"), 3) == ("error", "ReadTimeout after 3 bytes: x")


# -- upstream limits: a real proxy process, its peak memory read from /proc ----------------------
def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def proxy_process(upstream: str, out: Path, *extra: str) -> tuple[subprocess.Popen[str], str]:
    proc, _, origin = start_listening([*STREAMTOOL, *proxy_args(out, *extra, upstream=upstream)])
    return proc, origin


def stream_through_proxy(upstream: str, out: Path, *extra: str) -> tuple[Any, ...]:
    """A stream read through a proxy process (``extra``: its options) until it ends: (status,
    body bytes received, the error that ended the stream or None, the proxy's peak RSS in MB,
    its stderr), once it has indexed the recording and been stopped."""
    proc, origin = proxy_process(upstream, out, *extra)
    try:
        status, got, error = stream_through(origin)
        wait_for_index(out, 1)
        peak = peak_rss_mb(proc.pid)
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    return status, got, error, peak, err


def stream_through(origin: str, seconds: float = 20.0) -> tuple[int, int, str | None]:
    """(status, body bytes received, the error that ended the stream or None)."""
    got = 0
    with (
        httpx.Client(timeout=seconds) as client,
        client.stream("POST", origin + "/v1/chat/completions", json=BODY) as resp,
    ):
        try:
            for data in resp.iter_raw():
                got += len(data)
        except httpx.HTTPError as exc:
            return resp.status_code, got, type(exc).__name__
    return resp.status_code, got, None


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_a_gzip_bomb_ends_the_recording_with_limit_and_memory_stays_flat(tmp_path: Path) -> None:
    decoded = b"data: " + b"0" * (100 * 1024 * 1024) + b"\n\n"  # 100 MB from ~100 KB
    gz = gzip.compress(decoded, compresslevel=9, mtime=0)
    del decoded
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-encoding: gzip\r\n"
        b"content-length: %d\r\n\r\n" % len(gz)
    )
    out = tmp_path / "caps"
    out.mkdir()
    with ScriptedUpstream([(0.0, head + gz)]) as up:
        status, got, _, peak, err = stream_through_proxy(up.url, out)
    assert status == 200
    assert got < len(gz)  # the client's stream was cut where the recording stopped
    [f] = captured(out)
    _, chunks, end = read_all(f)
    assert end.reason == "limit" and "times its size" in end.error
    assert sum(map(len, chunks)) < 16 * 1024 * 1024  # stopped at the ratio, not at 100 MB
    assert peak < 100, f"the proxy's peak RSS was {peak:.0f} MB"
    assert "Traceback" not in err, err


def endless_app() -> Any:
    from starlette.applications import Starlette
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    piece = event(1) * 1000  # ~60 KB of events a write

    async def endless(request: Any) -> Any:
        import anyio

        await request.body()

        async def gen() -> Any:
            while True:
                yield piece
                # a write to a client that has gone returns at once: without a turn of the
                # loop here, starlette's watch for the disconnect never runs and this loop
                # spins for ever, holding the interpreter's lock
                await anyio.sleep(0)

        return StreamingResponse(gen(), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/chat/completions", endless, methods=["POST"])])


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_max_recording_bytes_ends_an_endless_stream(tmp_path: Path) -> None:
    out = tmp_path / "caps"
    out.mkdir()
    with ServerThread(endless_app()) as up:
        status, got, error, peak, err = stream_through_proxy(
            up.url, out, "--max-recording-bytes", "20MB"
        )
    assert status == 200 and error == "RemoteProtocolError"  # a cut, not a clean end
    [f] = captured(out)
    _, chunks, end = read_all(f)
    recorded = sum(map(len, chunks))
    assert end.reason == "limit" and f"limit of {20 * 1024 * 1024} bytes" in end.error
    # a record is the reads taken at one wake-up: at most READ_AHEAD waiting plus the read that
    # filled it (aiohttp's reads are far smaller), so the one that would pass the limit ends the
    # recording less than 2 * READ_AHEAD short of it (under load a wake-up takes ~1.2 MB)
    limit = 20 * 1024 * 1024
    assert limit - 2 * READ_AHEAD < recorded <= limit
    assert recorded <= got <= recorded + 2 * 1024 * 1024  # the client got no more than that
    assert f.stat().st_size < 30 * 1024 * 1024
    assert peak < 100, f"the proxy's peak RSS was {peak:.0f} MB"
    assert "Traceback" not in err, err


# -- the environment's proxy and CA settings, as httpx documents them ----------------------------
class ConnectProxy:
    """A forward proxy on 127.0.0.1 that tunnels ``CONNECT host:port`` (only to 127.0.0.1) and
    counts the tunnels it opened: ``with ConnectProxy() as fp: fp.url, fp.tunnels``."""

    def __init__(self) -> None:
        self.tunnels: list[str] = []

    def __enter__(self) -> ConnectProxy:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._sock.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=self._tunnel, args=(conn,), daemon=True).start()

    def _tunnel(self, conn: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            data = conn.recv(4096)
            if not data:
                conn.close()
                return
            head += data
        method, target, _ = head.split(b"\r\n", 1)[0].decode().split(" ", 2)
        host, _, port = target.rpartition(":")
        if method != "CONNECT" or host != "127.0.0.1":
            conn.sendall(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n")
            conn.close()
            return
        self.tunnels.append(target)
        upstream = socket.create_connection((host, int(port)))
        conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")

        def pipe(a: socket.socket, b: socket.socket) -> None:
            with contextlib.suppress(OSError):
                while data := a.recv(65536):
                    b.sendall(data)
            with contextlib.suppress(OSError):
                b.shutdown(socket.SHUT_WR)

        threading.Thread(target=pipe, args=(upstream, conn), daemon=True).start()
        pipe(conn, upstream)


def test_https_proxy_no_proxy_and_ssl_cert_file_are_honoured(
    tmp_path: Path, ca: trustme.CA
) -> None:
    writes = [(0.0, HEAD + chunked(event(5), b"data: [DONE]\n\n") + b"0\r\n\r\n")]
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))

    def env(https_proxy: str, no_proxy: str = "", **more: str) -> dict[str, str]:
        # both spellings: the lowercase one, even empty, wins where both are set
        names = {
            "https_proxy": https_proxy,
            "no_proxy": no_proxy,
            "http_proxy": "",
            "all_proxy": "",
        }
        return {**names, **{k.upper(): v for k, v in names.items()}, "SSL_CERT_DIR": "", **more}

    with ScriptedUpstream(writes, tls=tls_server(ca, "127.0.0.1")) as up, ConnectProxy() as fp:
        results = []
        for n, settings in enumerate(
            [
                env(fp.url, SSL_CERT_FILE=str(bundle)),  # tunnelled, the CA trusted
                env(fp.url, "127.0.0.1", SSL_CERT_FILE=str(bundle)),  # not tunnelled
                env(fp.url, SSL_CERT_FILE=""),  # the CA not trusted: refused
            ]
        ):
            out = tmp_path / f"caps{n}"
            out.mkdir()
            command = [*STREAMTOOL, "proxy", "--upstream", up.url, "--out", str(out)]
            proc, _, origin = start_listening(
                [*command, "--view", "none", "--port", "0"], env=settings
            )
            try:
                before = len(fp.tunnels)
                r = httpx.post(origin + "/v1/chat/completions", json=BODY, timeout=10)
                results.append((r.status_code, r.content, len(fp.tunnels) - before))
            finally:
                proc.terminate()
                proc.communicate(timeout=20)
    port = up.url.rsplit(":", 1)[1]
    body = event(5) + b"data: [DONE]\n\n"
    assert results[0] == (200, body, 1) and fp.tunnels[0] == f"127.0.0.1:{port}"
    assert results[1] == (200, body, 0)  # NO_PROXY: straight to the upstream
    status, text, tunnels = results[2]
    assert status == 502 and b"CERTIFICATE_VERIFY_FAILED" in text and tunnels == 1


def paced_lateness(out: Path, big: str) -> float:
    """Seconds the latest read of a stream paced at one event per 100 ms came late (beyond the
    earliest read's lateness) while ``big`` was posted through a proxy recording into ``out``."""
    paced = [(0.0, HEAD)] + [(0.1, chunked(event(i))) for i in range(40)]
    paced.append((0.1, b"0\r\n\r\n"))
    out.mkdir()
    with ScriptedUpstream(paced) as up:
        proc, origin = proxy_process(up.url, out)
        try:
            url = origin + "/v1/chat/completions"
            reader, arrivals = read_arrivals(url, BODY, timeout=20)
            deadline = time.monotonic() + 20
            while len(arrivals) < 5 and reader.is_alive() and time.monotonic() < deadline:
                time.sleep(0.01)
            assert len(arrivals) >= 5, "the paced stream did not start"
            with httpx.Client(timeout=20) as client:
                r = client.post(
                    origin + "/v1/chat/completions",
                    content=big.encode(),
                    headers={"content-type": "application/json"},
                )
            reader.join()
            wait_for_index(out, 2)
        finally:
            proc.terminate()
            proc.communicate(timeout=20)
    assert r.status_code == 200
    assert any(len(body) == len(big) for _, _, body in up.requests)
    # each read against the schedule: the last event it completed was due 100 ms after the one
    # before; how late it came, beyond the earliest read's lateness, is the delay
    ends = list(itertools.accumulate(len(event(i)) for i in range(40)))
    lateness = []
    for t, got in arrivals:
        done = bisect.bisect_right(ends, got)  # events complete in what arrived so far
        if done:
            lateness.append(t - (done - 1) * 0.1)
    assert len(lateness) >= 20 and ends[-1] == arrivals[-1][1]
    return max(lateness) - min(lateness)


def test_a_large_request_body_does_not_hold_other_streams(tmp_path: Path) -> None:
    """A 9.5 MB request (parsed, scrubbed and recorded by the proxy) sent while another stream
    is paced at one event per 100 ms: that stream's reads are not held by it."""
    message = {"role": "user", "content": "lorem ipsum dolor sit amet " * 16}
    count = 9_500_000 // len(json.dumps(message))
    big = json.dumps({"model": "gpt-test", "stream": True, "messages": [message] * count})
    assert 9_000_000 < len(big) < 10_000_000
    # the issue's figure is < 50 ms on an idle machine (benchmarks/bench_proxy.py prints it); the
    # bound here leaves room for a loaded test run and still fails on a proxy that parses on the
    # event loop (0.7 s idle, more under load). The suite shares two cores: a trial that the
    # other worker's load made late is run again, up to five trials; a proxy that holds the
    # loop is late in every one.
    late = []
    for trial in range(5):
        late.append(paced_lateness(tmp_path / f"caps{trial}", big))
        if late[-1] < 0.5:
            break
    print(f"the paced stream's latest read: {', '.join(f'{x * 1000:.0f} ms' for x in late)}")
    assert min(late) < 0.5, f"a read of the paced stream came {min(late) * 1000:.0f} ms late"


class DroppingUpstream:
    """Answers one request with ``events`` as HTTP chunks, in writes of ``per_write`` events,
    then closes the connection without the last chunk: a stream cut by its upstream."""

    def __init__(self, events: list[bytes], per_write: int) -> None:
        self.events = events
        self.per_write = per_write

    def __enter__(self) -> str:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(4)
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def _serve(self) -> None:
        conn, _ = self._sock.accept()
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                head += conn.recv(65536)
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            body = head.partition(b"\r\n\r\n")[2]
            while len(body) < length:
                body += conn.recv(65536)
            conn.sendall(HEAD)
            for i in range(0, len(self.events), self.per_write):
                conn.sendall(chunked(*self.events[i : i + self.per_write]))

    def __exit__(self, *exc: object) -> None:
        self._thread.join(10)
        self._sock.close()


def slow_read(url: str, pause: float) -> tuple[int, bytes, str]:
    """A streamed POST read as it comes, ``pause`` seconds after each read: (status,
    the body bytes that came, how the body ended). httpx's ``iter_raw()`` hands over each read
    as it came (with a chunk size it would keep a partial one back when the stream breaks)."""
    got = b""
    with (
        httpx.Client(timeout=30) as client,
        client.stream("POST", url, json=BODY) as resp,
    ):
        try:
            for piece in resp.iter_raw():
                got += piece
                time.sleep(pause)
        except httpx.HTTPError as exc:
            return resp.status_code, got, type(exc).__name__
        return resp.status_code, got, "complete"


@pytest.mark.parametrize(
    ("size", "per_write", "pause"),
    [(40, 1, 0.0), (30_000, 50, 0.0), (30_000, 50, 0.002)],
    ids=["paced-few", "burst", "burst-slow-client"],
)
def test_every_read_before_an_upstream_drop_reaches_the_client_and_the_recording(
    tmp_path: Path, size: int, per_write: int, pause: float
) -> None:
    # the upstream client's stream raises a dropped connection before it hands over what it
    # buffered: the proxy reads at once (and, its box full for a slow client, stops the
    # socket's reads too), so that every read before the drop goes on, text included
    events = [event(i) for i in range(size)]  # 30,000 events: about 1.7 MB, past READ_AHEAD
    out = tmp_path / "caps"
    with (
        DroppingUpstream(events, per_write) as url,
        proxy_to(out, url) as px,
    ):
        status, got, ended = slow_read(px.url + "/v1/chat/completions", pause)
        wait_for_index(out, 1)
    assert status == 200 and ended == "RemoteProtocolError"  # cut, as the upstream's was
    assert got == b"".join(events)
    [f] = captured(out)
    _, chunks, end = read_all(f)
    assert b"".join(chunks) == b"".join(events)
    assert end.reason == "error" and "connection dropped" in end.error
