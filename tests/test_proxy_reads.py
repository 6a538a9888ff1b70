"""The proxy's upstream client on real sockets: one chunk record per socket read, keep-alive,
TLS verification, and request bodies the JSON decoder cannot walk."""

from __future__ import annotations

import json
import ssl
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
import trustme

from streamtool.core.net.listen import ServerThread
from streamtool.core.net.proxy import ProxyConfig, ProxyThread, parse_upstreams
from streamtool.core.recording.reader import Source
from streamtool.core.recording.recorder import classify

from .proxy_helpers import ScriptedUpstream, Upstream, chunked
from .serve_helpers import read_all
from .test_proxy import captured, raw_post, wait_for_index

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
BODY = {"model": "gpt-test", "stream": True, "messages": []}


def event(i: int) -> bytes:
    return b'data: {"choices":[{"index":0,"delta":{"content":"%d "}}]}\n\n' % i


def test_a_burst_is_one_record_and_paced_events_one_each(tmp_path: Path) -> None:
    burst = [event(i) for i in range(200)]  # 200 HTTP chunks in one write
    paced = [event(i) for i in range(200, 204)]
    done = b"data: [DONE]\n\n"
    writes = [(0.0, HEAD + chunked(*burst))]
    writes += [(0.25, chunked(e)) for e in paced]
    writes.append((0.25, chunked(done) + b"0\r\n\r\n"))
    out = tmp_path / "caps"
    with (
        ScriptedUpstream(writes) as up,
        ProxyThread(ProxyConfig(out=out, upstreams=parse_upstreams([up.url]))) as px,
    ):
        status, reads = raw_post(px.url + "/v1/chat/completions", BODY)
        [entry] = wait_for_index(out, 1)
    assert status == 200
    assert b"".join(reads) == b"".join([*burst, *paced, done])
    [f] = captured(out)
    _, chunks, end = read_all(f)
    # one socket read, one record, whatever number of HTTP chunks it held
    assert chunks == [b"".join(burst), *paced, done]
    assert end.reason == "complete"
    assert entry["chunks"] == len(chunks) == 6
    times = [c.t for c in Source(f).chunks()]
    assert all(b - a > 0.15 for a, b in zip(times[1:], times[2:], strict=False))


def test_keep_alive_and_a_pooled_connection_the_upstream_closed(tmp_path: Path) -> None:
    writes = [(0.0, HEAD + chunked(event(1), b"data: [DONE]\n\n") + b"0\r\n\r\n")]
    out = tmp_path / "caps"
    with (
        ScriptedUpstream(writes) as up,
        ProxyThread(ProxyConfig(out=out, upstreams=parse_upstreams([up.url]))) as px,
    ):
        for _ in range(3):
            assert raw_post(px.url + "/v1/chat/completions", BODY)[0] == 200
        assert up.connections == 1  # one connection, kept alive
    # an upstream that closes a kept connection as a request arrives: a GET is sent again on
    # a new connection; a POST is not (RFC 9110 section 9.2.2: it may have been acted on)
    with (
        ScriptedUpstream(writes, close_on_reuse=True) as up,
        ProxyThread(ProxyConfig(out=out, upstreams=parse_upstreams([up.url]))) as px,
        httpx.Client(timeout=10) as client,
    ):
        assert client.get(px.url + "/v1/models").status_code == 200
        assert client.get(px.url + "/v1/models").status_code == 200
        assert up.connections == 2 and [m for m, _, _ in up.requests] == ["GET"] * 3
        r = client.post(px.url + "/v1/chat/completions", json=BODY)
        assert r.status_code == 502 and "without sending a response" in r.text
        assert up.connections == 2 and len(up.requests) == 4


def test_an_upstream_that_never_answers_is_a_504(tmp_path: Path) -> None:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)  # connections complete in the backlog; nothing is ever accepted
        port = sock.getsockname()[1]
        # TLS: the handshake never ends (the connect timeout); plain: no head (the read one)
        for scheme, error in (("https", "ConnectTimeout"), ("http", "ReadTimeout")):
            out = tmp_path / scheme
            config = ProxyConfig(
                out=out,
                upstreams=parse_upstreams([f"{scheme}://127.0.0.1:{port}"]),
                timeout=0.3,
                connect_timeout=0.3,
            )
            with ProxyThread(config) as px:
                r = httpx.post(px.url + "/v1/chat/completions", json=BODY, timeout=10)
                wait_for_index(out, 1)
            assert r.status_code == 504, r.text
            assert f"did not answer in time: {error}" in r.json()["error"]["message"]
            _, chunks, end = read_all(captured(out)[0])
            assert chunks == [] and end.reason == "timeout" and error in end.error


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
        with ProxyThread(ProxyConfig(out=out, upstreams=parse_upstreams([up.url]))) as px:
            r = httpx.post(px.url + "/v1/chat/completions", json=BODY, timeout=10)
            wait_for_index(out, 1)
        assert r.status_code == 502
        message = r.json()["error"]["message"]
        assert "could not be reached: ConnectError" in message
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
        ProxyThread(ProxyConfig(out=out, upstreams=parse_upstreams([up.url]))) as px,
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


def test_a_look_alike_class_name_is_not_a_client_error() -> None:
    # classified by type: an exception merely named like httpx's is an error like any other
    class ReadTimeout(Exception):  # noqa: N818
        pass

    assert classify(ReadTimeout("x"), 3) == ("error", "ReadTimeout after 3 bytes: x")
