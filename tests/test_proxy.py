"""``streamtool proxy``: real SDK clients -> the proxy -> ``serve`` (or a small upstream), all
real HTTP on 127.0.0.1."""

from __future__ import annotations

import gzip
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from streamtool.core.drive.replay_file import replay_file
from streamtool.core.exchange.playback import Playback
from streamtool.core.net.listen import ServerThread
from streamtool.core.net.proxy import (
    ProxyConfig,
    ProxyThread,
    Route,
    parse_upstreams,
    route,
)
from streamtool.core.net.server import serving
from streamtool.core.recording.reader import Source
from streamtool.core.recording.tape_index import Tape

from .proxy_helpers import Upstream, proxy_to, sse_json
from .serve_helpers import anthropic_status_error, body_of, chunks_of, read_all, recording

# Against ``serve --speed max`` the proxy's reads are whatever the kernel gathered: the tests
# below compare a recording's bytes, not their cuts (test_proxy_reads pins the cuts against a
# paced upstream).
MAX = Playback(speed=None)


@contextmanager
def upstream_through_proxy(
    upstream: Upstream, out: Path, route: str = ""
) -> Iterator[tuple[Any, ProxyThread]]:
    """The test ``upstream`` (in a server thread; ``route``: its path prefix) behind a proxy
    recording into ``out``; gives both."""
    with ServerThread(upstream.app) as up, proxy_to(out, up.url + route) as px:
        yield up, px


@contextmanager
def serve_through_proxy(
    rec: Path, out: Path, playback: Playback = MAX, api: str | None = None
) -> Iterator[tuple[Any, ProxyThread]]:
    """serve of ``rec`` (played as ``playback``) as the upstream of a proxy recording into
    ``out``, for every API or for ``api`` alone; gives both."""
    with serving([rec], playback) as up, proxy_to(out, f"{api}={up.url}" if api else up.url) as px:
        yield up, px


OPENAI_KEY = "sk-proj-Zt3qW8xYb2Nc5Vd7Lm9Kp1Rs4Tu6"
ANTHROPIC_KEY = "sk-ant-api03-Hq7Wm2Xn5Bv8Cz1Lk4Jp6"


def captured(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.jsonl") if p.name != "index.jsonl")


def index_of(folder: Path) -> list[dict]:
    path = folder / "index.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def wait_for_index(folder: Path, n: int, timeout: float = 10) -> list[dict]:
    """The index is appended when an exchange ends, just after the client got its last byte."""
    deadline = time.monotonic() + timeout
    while True:
        entries = index_of(folder)
        if len(entries) >= n or time.monotonic() > deadline:
            return entries
        time.sleep(0.01)


def raw_post(url: str, body: dict, headers: dict | None = None) -> tuple[int, list[bytes]]:
    with (
        httpx.Client(timeout=10) as client,
        client.stream("POST", url, json=body, headers=headers or {}) as resp,
    ):
        return resp.status_code, list(resp.iter_raw())


def summary_core(path: Path) -> dict:
    s = replay_file(path).summary()
    return {k: s[k] for k in ("text", "reasoning", "invocations", "finish_reason", "usage")}


def no_secret_in(folder: Path, *secrets: str) -> None:
    for p in folder.iterdir():
        text = p.read_text(encoding="utf-8")
        for secret in secrets:
            assert secret not in text, f"{secret!r} written to {p.name}"
            # a secret split across two chunk records is as bad: check the joined chunks
        if p.suffix == ".jsonl" and p.name != "index.jsonl":
            joined = b"".join(chunks_of(p)).decode("utf-8", "replace")
            for secret in secrets:
                assert secret not in joined, f"{secret!r} in the chunks of {p.name}"


# -- routing (pure) ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("method", "path", "headers", "expected"),
    [
        ("POST", "/v1/chat/completions", {}, Route("openai", "chat.completions", "m")),
        ("POST", "/v1/responses", {}, Route("openai", "responses", "m")),
        ("POST", "/v1/messages", {}, Route("anthropic", "messages", "m", "anthropic")),
        ("POST", "/v1/messages/count_tokens", {}, Route("anthropic", None, "m", "anthropic")),
        ("GET", "/v1/models", {}, Route("openai", None, None)),
        (
            "GET",
            "/v1/models",
            {"anthropic-version": "2023-06-01"},
            Route("anthropic", None, None, "anthropic"),
        ),
        (
            "POST",
            "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
            {},
            Route("gemini", "gemini", "gemini-2.5-flash", "gemini"),
        ),
        (
            "POST",
            "/v1beta/models/gemini-2.5-pro:generateContent",
            {},
            Route("gemini", "gemini", "gemini-2.5-pro", "gemini"),
        ),
        ("POST", "/api/v1/chat/completions", {}, Route("openrouter", "chat.completions", "m")),
    ],
)
def test_route(method: str, path: str, headers: dict, expected: Route) -> None:
    body = {"model": "m"} if method == "POST" else None
    assert route(method, path, headers, body) == expected


def test_upstream_rules() -> None:
    ups = parse_upstreams(
        ["http://127.0.0.1:9/", "messages=http://127.0.0.1:8/x", "gemini=https://g"]
    )
    assert ups.url(Route("openai", "chat.completions"), "/v1/chat/completions", "") == (
        "http://127.0.0.1:9/v1/chat/completions"
    )
    assert ups.url(Route("anthropic", "messages"), "/v1/messages", "beta=true") == (
        "http://127.0.0.1:8/x/v1/messages?beta=true"
    )
    assert ups.origin(Route("gemini", None)) == "https://g"
    official = parse_upstreams([])
    assert official.origin(Route("anthropic", "messages")) == "https://api.anthropic.com"
    assert official.origin(Route("openrouter", "chat.completions")) == "https://openrouter.ai"
    for bad in (["ftp://x"], ["nosuch=http://x"], ["http://a", "http://b"]):
        with pytest.raises(ValueError):
            parse_upstreams(bad)


# -- real SDKs through the proxy to serve --------------------------------------------------------
@pytest.mark.parametrize(
    "name", ["openai-parallel-tool-calls", "deepseek-reasoning-then-tool-call"]
)
def test_openai_sdk_through_proxy(tmp_path: Path, name: str) -> None:
    rec = recording(name)
    out = tmp_path / "caps"
    with serve_through_proxy(rec, out) as (up, px):
        body = {
            "model": "gpt-test",
            "messages": [{"role": "user", "content": "hi"}],
            "stream": True,
        }
        _, direct = raw_post(up.url + "/v1/chat/completions", body)
        _, proxied = raw_post(px.url + "/v1/chat/completions", body)
        client = openai.OpenAI(base_url=px.url + "/v1", api_key=OPENAI_KEY, max_retries=0)
        stream = client.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        sdk_chunks = list(stream)
        entries = wait_for_index(out, 2)
    # the client's bytes are the upstream's, and so are the recording's
    assert b"".join(proxied) == b"".join(direct) == b"".join(chunks_of(rec))
    files = captured(out)
    assert len(files) == 2
    for f in files:
        assert body_of(f) == body_of(rec)
        assert read_all(f)[2].reason == "complete"
        assert summary_core(f) == summary_core(rec)
    assert sdk_chunks and any(c.choices and c.choices[0].delta.tool_calls for c in sdk_chunks)
    assert [e["seq"] for e in entries] == [1, 2]
    assert [e["file"] for e in entries] == [f.name for f in files]
    assert files[0].name == "0001-openai-chat-completions-gpt-test.jsonl"
    assert all(e["status"] == 200 and e["end"] == "complete" for e in entries)
    assert [e["chunks"] for e in entries] == [len(chunks_of(f)) for f in files]
    no_secret_in(out, OPENAI_KEY)


def test_anthropic_sdk_through_proxy(tmp_path: Path) -> None:
    rec = recording("anthropic-parallel-tool-calls")
    out = tmp_path / "caps"
    with serve_through_proxy(rec, out, api="messages") as (_, px):
        client = anthropic.Anthropic(base_url=px.url, api_key=ANTHROPIC_KEY, max_retries=0)
        with client.messages.stream(
            model="claude-sonnet-4-6", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            message = stream.get_final_message()
        wait_for_index(out, 1)
    [f] = captured(out)
    assert f.name == "0001-anthropic-messages-claude-sonnet-4-6.jsonl"
    assert body_of(f) == body_of(rec)
    assert summary_core(f) == summary_core(rec)
    assert [b.type for b in message.content].count("tool_use") == len(
        replay_file(rec).summary()["invocations"]
    )
    header = Source(f).header
    assert header.provider == "anthropic" and header.api == "messages"
    sent = header.request["headers"]
    credential = sent.get("x-api-key", sent.get("authorization"))
    assert credential == "[redacted]"
    assert header.request["body"]["model"] == "claude-sonnet-4-6"
    assert header.response["status"] == 200
    no_secret_in(out, ANTHROPIC_KEY)


# -- the HTTP edge: headers, non-generating endpoints, compression --------------------------------
def test_headers_forwarded_and_models_unrecorded(tmp_path: Path) -> None:
    upstream = Upstream()
    out = tmp_path / "caps"
    with upstream_through_proxy(upstream, out) as (up, px):
        client = openai.OpenAI(base_url=px.url + "/v1", api_key=OPENAI_KEY, max_retries=0)
        models = client.models.list()
        r = httpx.post(
            px.url
            + "/v1beta/models/gemini-2.5-flash:generateContent?key=AIzaSyD3mK9xQ2wLp7Vn4Rt8Yb6Zc1",
            content=b'{"contents": []}',
            headers={
                "x-goog-api-key": "AIzaSyA8hK2mX9qL4wP7nV3tR6yB1cZ5",
                "x-custom": "kept",
                "connection": "keep-alive, x-hop",
                "x-hop": "dropped",
            },
            timeout=10,
        )
        wait_for_index(out, 1)
    assert [m.id for m in models.data] == ["gpt-test"]
    assert upstream.seen[0]["headers"]["authorization"] == f"Bearer {OPENAI_KEY}"
    got = dict(upstream.seen[1]["headers"])
    assert got["x-goog-api-key"] == "AIzaSyA8hK2mX9qL4wP7nV3tR6yB1cZ5"
    assert got["x-custom"] == "kept"
    assert "x-hop" not in got and "connection" not in got
    assert got["host"] == up.url.removeprefix("http://")
    assert upstream.seen[1]["query"] == "key=AIzaSyD3mK9xQ2wLp7Vn4Rt8Yb6Zc1"
    assert upstream.seen[1]["body"] == b'{"contents": []}'
    assert r.status_code == 200
    # only the generating exchange was recorded
    [f] = captured(out)
    assert f.name.startswith("0001-gemini-gemini-gemini-2-5-flash")
    no_secret_in(out, "AIzaSyD3mK9xQ2wLp7Vn4Rt8Yb6Zc1", "AIzaSyA8hK2mX9qL4wP7nV3tR6yB1cZ5")


def test_compressed_body_reaches_client_as_asked(tmp_path: Path) -> None:
    upstream = Upstream()
    out = tmp_path / "caps"
    body = {"model": "gpt-test", "stream": True, "messages": []}
    with upstream_through_proxy(upstream, out, "/gz") as (up, px):
        _, zipped = raw_post(px.url + "/v1/chat/completions", body, {"accept-encoding": "gzip"})
        _, plain = raw_post(px.url + "/v1/chat/completions", body, {"accept-encoding": "identity"})
        _, direct = raw_post(up.url + "/gz/v1/chat/completions", body, {"accept-encoding": "gzip"})
        wait_for_index(out, 2)
    assert b"".join(zipped) == b"".join(direct)
    assert gzip.decompress(b"".join(zipped)) == b"".join(plain)
    first, second = captured(out)
    # the recording keeps the body decoded, as every recording does
    assert b"".join(chunks_of(first)) == b"".join(plain)
    assert Source(first).header.response.get("decoded") == "gzip"
    assert len(sse_json(b"".join(plain))) == 50


# -- secrets -------------------------------------------------------------------------------------
def post_with_token(tmp_path: Path, upstream_path: str, token: str) -> tuple[int, list, Path]:
    """A streamed POST carrying ``token`` through the proxy to the test upstream's
    ``upstream_path``: (status, the client's reads, the capture folder)."""
    upstream = Upstream()
    out = tmp_path / "caps"
    with (
        ServerThread(upstream.app) as up,
        ProxyThread(
            ProxyConfig(out=out, upstreams=parse_upstreams([f"{up.url}{upstream_path}"]))
        ) as px,
    ):
        status, reads = raw_post(
            px.url + "/v1/chat/completions",
            {"model": "gpt-test", "stream": True},
            {"authorization": f"Bearer {token}"},
        )
        wait_for_index(out, 1)
    return status, reads, out


def test_echoed_secret_never_written(tmp_path: Path) -> None:
    token = "sk-proj-Echo7xQ2wLp9Vn4Rt8Yb6Zc1Md3"
    status, reads, out = post_with_token(tmp_path, "/secret", token)
    assert status == 200
    received = b"".join(reads).decode()
    assert received.count(token) == 1  # the client gets the upstream's bytes untouched
    [f] = captured(out)
    assert "[redacted]" in b"".join(chunks_of(f)).decode()
    no_secret_in(out, token)


# an integer beyond 64 bits: the request's text is looked through as the standard library
# writes it (orjson refuses it), else as orjson writes it
@pytest.mark.parametrize("extra", [{}, {"seed": 2**70}], ids=["json", "beyond-64-bits"])
def test_a_request_holding_a_key_pattern_is_forwarded_not_recorded(
    tmp_path: Path, extra: dict
) -> None:
    key = "sk-proj-Body7xQ2wLp9Vn4Rt8Yb6Zc1Md3"  # in the body, not in any credential header
    ended: list = []

    class Ends:
        def started(self, ex: object) -> None: ...
        def head(self, ex: object) -> None: ...
        def read(self, ex: object, chunk: object) -> None: ...
        def ended(self, ex: object) -> None:
            ended.append(ex)

    upstream = Upstream()
    out = tmp_path / "caps"
    with ServerThread(upstream.app) as up:
        config = ProxyConfig(out=out, upstreams=parse_upstreams([up.url]), observer=Ends())
        with ProxyThread(config) as px:
            url = px.url + "/v1/chat/completions"
            leaking = {"model": "gpt-test", "messages": [{"role": "user", "content": key}]}
            leaking.update(extra)
            first = httpx.post(url, json=leaking, timeout=10)
            second = httpx.post(url, json={"model": "gpt-test", "messages": []}, timeout=10)
            [entry] = wait_for_index(out, 1)
    assert first.status_code == second.status_code == 200
    assert key in first.json()["body"]  # the upstream got the request as it was sent
    assert json.loads(upstream.seen[0]["body"]) == leaking
    assert "refusing to record" in ended[0].record_error and ended[0].file is None
    assert ended[1].record_error is None
    # the refused exchange took no number and left no file behind (none the index lacks)
    assert [p.name for p in captured(out)] == [entry["file"]] and entry["seq"] == 1
    assert not Tape(out, create=False).in_flight()
    no_secret_in(out, key)


# -- faults are passed on as they happened, recorded, and the proxy goes on serving --------------
def test_upstream_http_error(tmp_path: Path) -> None:
    rec = recording("anthropic-http-529-overloaded")
    out = tmp_path / "caps"
    with serve_through_proxy(rec, out) as (up, px):
        client = anthropic.Anthropic(base_url=px.url, api_key=ANTHROPIC_KEY, max_retries=0)
        error = anthropic_status_error(client)
        [entry] = wait_for_index(out, 1)
    assert error.status_code == 529
    assert "verloaded" in str(error)
    [f] = captured(out)
    header, chunks, end = read_all(f)
    assert header.response["status"] == 529
    assert b"".join(chunks) == b"".join(chunks_of(rec))
    assert end.reason == "error" and "529" in end.error
    assert entry["status"] == 529 and entry["end"] == "error"


def test_dropped_upstream_connection(tmp_path: Path) -> None:
    rec = recording("openai-parallel-tool-calls")
    out = tmp_path / "caps"
    body = {"model": "gpt-test", "stream": True, "messages": []}
    with serve_through_proxy(rec, out, Playback(speed=None, cut_after=300)) as (_, px):
        received = bytearray()
        with (
            pytest.raises(httpx.RemoteProtocolError),
            httpx.Client(timeout=10) as client,
            client.stream("POST", px.url + "/v1/chat/completions", json=body) as resp,
        ):
            for data in resp.iter_raw():
                received += data
        [entry] = wait_for_index(out, 1)
        # the proxy goes on serving
        client = openai.OpenAI(base_url=px.url + "/v1", api_key=OPENAI_KEY, max_retries=0)
        with pytest.raises(openai.APIError):
            list(client.chat.completions.create(model="gpt-test", messages=[], stream=True))
    assert bytes(received) == b"".join(chunks_of(rec))[:300]
    _, chunks, end = captured_parts(out, 1)
    assert b"".join(chunks) == bytes(received)
    assert end.reason == "error" and "connection dropped" in end.error
    assert entry["end"] == "error"


def captured_parts(out: Path, seq: int) -> tuple:
    [f] = [p for p in captured(out) if p.name.startswith(f"{seq:04d}-")]
    return read_all(f)


def test_stall_past_timeout_while_others_stream(tmp_path: Path) -> None:
    rec = recording("openai-parallel-tool-calls")
    out = tmp_path / "caps"
    body = {"model": "gpt-test", "stream": True, "messages": []}
    stalled: dict = {}
    with (
        serving([rec], Playback(speed=None, stall=4.0, stall_after=300)) as slow,
        serving([rec], MAX) as fast,
        ProxyThread(
            ProxyConfig(
                out=out,
                timeout=0.6,
                upstreams=parse_upstreams([slow.url, f"responses={fast.url}"]),
            )
        ) as px,
    ):

        def stall() -> None:
            received = bytearray()
            t0 = time.monotonic()
            try:
                with (
                    httpx.Client(timeout=10) as client,
                    client.stream("POST", px.url + "/v1/chat/completions", json=body) as resp,
                ):
                    for data in resp.iter_raw():
                        received += data
            except httpx.RemoteProtocolError as exc:
                stalled["error"] = exc
            stalled["bytes"] = bytes(received)
            stalled["after"] = time.monotonic() - t0

        thread = threading.Thread(target=stall)
        thread.start()
        time.sleep(0.2)
        # while one stream stalls, another goes through (fast answers /responses with 404: no
        # recording speaks it; what matters is that it is answered at once)
        t0 = time.monotonic()
        status, _ = raw_post(px.url + "/v1/responses", {"model": "m", "stream": True})
        other = time.monotonic() - t0
        thread.join(10)
        wait_for_index(out, 2)
    assert status == 404 and other < 0.5
    assert "error" in stalled, "the client's connection is dropped as the stall is cut"
    assert stalled["bytes"] == b"".join(chunks_of(rec))[:300]
    assert stalled["after"] < 3.5
    _, chunks, end = captured_parts(out, 1)
    assert b"".join(chunks) == stalled["bytes"]
    assert end.reason == "timeout"


def test_client_disconnect_cancels_upstream(tmp_path: Path) -> None:
    upstream = Upstream()
    out = tmp_path / "caps"
    body = {"model": "gpt-test", "stream": True, "messages": []}
    with upstream_through_proxy(upstream, out, "/endless") as (up, px):
        got = 0
        with (
            httpx.Client(timeout=10) as client,
            client.stream("POST", px.url + "/v1/chat/completions", json=body) as resp,
        ):
            for data in resp.iter_raw():
                got += len(data)
                if got > 100:
                    break
        assert upstream.cancelled.wait(5), "the upstream request was not cancelled"
        [entry] = wait_for_index(out, 1)
        # still serving
        upstream.cancelled.clear()
        status, _ = raw_post(px.url + "/v1/models", {})
    assert status == 200
    _, chunks, end = captured_parts(out, 1)
    assert end.reason == "interrupted" and "client" in end.error
    assert len(b"".join(chunks)) >= 100
    assert entry["end"] == "interrupted"


def test_unreachable_upstream(tmp_path: Path) -> None:
    from streamtool.core.net.listen import bind

    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    out = tmp_path / "caps"
    with ProxyThread(
        ProxyConfig(out=out, upstreams=parse_upstreams([f"http://127.0.0.1:{port}"]))
    ) as px:
        client = openai.OpenAI(base_url=px.url + "/v1", api_key=OPENAI_KEY, max_retries=0)
        with pytest.raises(openai.APIStatusError) as caught:
            client.chat.completions.create(model="gpt-test", messages=[], stream=True)
        [entry] = wait_for_index(out, 1)
    assert caught.value.status_code == 502
    assert "could not be reached" in str(caught.value)
    _, chunks, end = captured_parts(out, 1)
    assert chunks == [] and end.reason == "error" and "could not connect" in end.error
    assert entry["end"] == "error"


# -- --transform kimi-k2 -----------------------------------------------------------------------
def test_kimi_transform_gives_the_sdk_real_tool_calls(tmp_path: Path) -> None:
    from streamtool.core.apis.openai_chat.kimi_transform import KimiTransform

    rec = recording("fireworks-kimi-k2-tokens-split-across-chunks")
    plain = recording("openai-parallel-tool-calls")
    out = tmp_path / "caps"
    model = "accounts/fireworks/models/kimi-k2-instruct-0905"
    with (
        serving([rec, plain], MAX) as up,
        ProxyThread(
            ProxyConfig(out=out, upstreams=parse_upstreams([up.url]), transform=KimiTransform)
        ) as px,
    ):
        client = openai.OpenAI(base_url=px.url + "/v1", api_key=OPENAI_KEY, max_retries=0)
        messages = [{"role": "user", "content": "read both"}]
        with client.chat.completions.stream(model=model, messages=messages) as stream:
            for _ in stream:
                pass
            completion = stream.get_final_completion()
        # a stream without Kimi tokens passes byte for byte
        body = {"model": "gpt-test", "stream": True, "messages": []}
        _, reads = raw_post(
            px.url + "/v1/chat/completions", body, {"x-streamtool-recording": plain.stem}
        )
        wait_for_index(out, 2)
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = [
        (c.id, c.function.name, json.loads(c.function.arguments)) for c in choice.message.tool_calls
    ]
    assert calls == [
        ("functions.read_file:3", "read_file", {"path": "README.md"}),
        ("functions.read_file:4", "read_file", {"path": "pyproject.toml"}),
    ]
    assert "<|" not in (choice.message.content or "")
    assert b"".join(reads) == b"".join(chunks_of(plain))
    # the recordings keep the upstream's bytes
    first, second = captured(out)
    assert body_of(first) == body_of(rec)
    assert body_of(second) == body_of(plain)


def test_kimi_transform_joins_markers_split_across_paced_upstream_reads(tmp_path: Path) -> None:
    """Paced as recorded, every upstream read reaches the proxy on its own, so the Kimi markers
    really arrive cut across reads; the SDK still gets the calls, the recording the reads."""
    from streamtool.core.apis.openai_chat.kimi_transform import KimiTransform

    rec = recording("fireworks-kimi-k2-tokens-split-across-chunks")
    served = chunks_of(rec)
    marker = b"<|tool_call_begin|>"
    assert marker not in served[4] and marker in b"".join(served[3:5])  # cut across two reads
    out = tmp_path / "caps"
    with (
        serving([rec], Playback(speed=1.0)) as up,
        ProxyThread(
            ProxyConfig(out=out, upstreams=parse_upstreams([up.url]), transform=KimiTransform)
        ) as px,
    ):
        client = openai.OpenAI(base_url=px.url + "/v1", api_key=OPENAI_KEY, max_retries=0)
        model = "accounts/fireworks/models/kimi-k2-instruct-0905"
        messages = [{"role": "user", "content": "read both"}]
        with client.chat.completions.stream(model=model, messages=messages) as stream:
            for _ in stream:
                pass
            completion = stream.get_final_completion()
        wait_for_index(out, 1)
    (capture,) = captured(out)
    assert chunks_of(capture) == served  # one record per paced upstream read, as served
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert [
        (c.function.name, json.loads(c.function.arguments)) for c in choice.message.tool_calls
    ] == [
        ("read_file", {"path": "README.md"}),
        ("read_file", {"path": "pyproject.toml"}),
    ]
    assert "<|" not in (choice.message.content or "")


def test_secret_split_across_two_reads_never_written(tmp_path: Path) -> None:
    token = "sk-proj-Split4xQ2wLp9Vn4Rt8Yb6Zc1Md3"
    status, reads, out = post_with_token(tmp_path, "/split", token)
    assert status == 200
    # the upstream sent the token in two reads; the client got them as they came
    assert token not in reads[0].decode() and token in b"".join(reads).decode()
    [f] = captured(out)
    assert len(chunks_of(f)) >= 2
    no_secret_in(out, token, token[: len(token) // 2], token[len(token) // 2 :])
