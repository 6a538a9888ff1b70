"""``streamtool record``: request building (sans-IO) and recording over real HTTP.

The server side is ``streamtool serve``'s app on 127.0.0.1 (uvicorn in a thread) and, for the
compressed-body case, a small stdlib HTTP server; nothing of our own I/O is mocked.
"""

from __future__ import annotations

import gzip
import http.server
import io
import json
import os
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from benchmarks.raw_http import http_server
from streamtool.cli.main import app
from streamtool.core.drive.replay_file import replay_file
from streamtool.core.exchange.playback import Playback
from streamtool.core.exchange.requests import (
    PRESETS,
    RequestError,
    RequestOptions,
    ToolDef,
    build_request,
    parse_header_option,
    parse_messages,
    parse_tools,
)
from streamtool.core.net.server import serving
from streamtool.core.recording.reader import Source
from streamtool.core.wire.http_body import BodyDecoder, provider_error_message

from .serve_helpers import body_of, chunks_of, read_all, record_args, recording, write_recording

MAX = Playback(speed=None)
KEY_STARTS = (b"sk-ant-", b"AIza", b"xai-", b"gsk_")
STREAMTOOL = [sys.executable, "-c", "from streamtool.cli.main import main; main()"]
WEATHER = ToolDef(
    "get_weather",
    "Weather for a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
KEYS = {
    "OPENAI_API_KEY": "sk-test-FAKEopenai0123456789abcdef",
    "ANTHROPIC_API_KEY": "sk-ant-test-FAKEanthropic0123456789",
    "GEMINI_API_KEY": "AIzaSyFAKEgemini0123456789abcdefghij",
}


def build(env: dict[str, str] | None = None, **kw) -> object:
    return build_request(RequestOptions(**kw), KEYS if env is None else env)


def build_hi(env: dict[str, str], provider: str, model: str, **kw) -> object:
    """A request saying "hi" to ``provider``'s ``model``, its key from ``env``."""
    return build(env, provider=provider, model=model, prompt="hi", **kw)


def build_weather(provider: str, model: str, tool_choice: str, **kw) -> object:
    """A request to ``provider`` offering the WEATHER tool, ``tool_choice`` choosing."""
    return build(provider=provider, model=model, tools=[WEATHER], tool_choice=tool_choice, **kw)


# -- request building ----------------------------------------------------------------------------
def test_openai_chat_request():
    req = build_weather("openai-chat", "gpt-4o", "get_weather", prompt="hi", system="be brief")
    assert req.url == "https://api.openai.com/v1/chat/completions"
    assert req.headers["authorization"] == f"Bearer {KEYS['OPENAI_API_KEY']}"
    assert req.headers["accept-encoding"] == "identity"
    body = json.loads(req.content)
    assert body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
    ]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather for a city",
                "parameters": WEATHER.parameters,
            },
        }
    ]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert (req.provider, req.api, req.model) == ("openai", "chat.completions", "gpt-4o")
    assert KEYS["OPENAI_API_KEY"] in req.secrets


def test_openai_responses_request():
    req = build_weather(
        "openai-responses", "gpt-4.1", "required", prompt="hi", system="be brief", max_tokens=50
    )
    assert req.url == "https://api.openai.com/v1/responses"
    body = json.loads(req.content)
    assert body["input"] == [{"role": "user", "content": "hi"}]
    assert body["instructions"] == "be brief"
    assert body["max_output_tokens"] == 50
    assert "stream_options" not in body
    assert body["tools"] == [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": WEATHER.parameters,
        }
    ]
    assert body["tool_choice"] == "required"
    named = build_weather("openai-responses", "m", "get_weather", prompt="x")
    assert json.loads(named.content)["tool_choice"] == {"type": "function", "name": "get_weather"}


@pytest.mark.parametrize(
    "choice, expected",
    [
        ("auto", {"type": "auto"}),
        ("required", {"type": "any"}),
        ("none", {"type": "none"}),
        ("get_weather", {"type": "tool", "name": "get_weather"}),
    ],
)
def test_anthropic_request(choice, expected):
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "weather?"},
    ]
    req = build_weather("anthropic", "claude-sonnet-4-6", choice, messages=messages)
    assert req.url == "https://api.anthropic.com/v1/messages"
    assert req.headers["x-api-key"] == KEYS["ANTHROPIC_API_KEY"]
    assert req.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in req.headers
    body = json.loads(req.content)
    assert body["system"] == "be brief"
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["max_tokens"] == 1024
    assert body["tools"] == [
        {
            "name": "get_weather",
            "description": "Weather for a city",
            "input_schema": WEATHER.parameters,
        }
    ]
    assert body["tool_choice"] == expected


@pytest.mark.parametrize(
    "choice, expected",
    [
        ("auto", {"functionCallingConfig": {"mode": "AUTO"}}),
        ("required", {"functionCallingConfig": {"mode": "ANY"}}),
        ("none", {"functionCallingConfig": {"mode": "NONE"}}),
        (
            "get_weather",
            {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}},
        ),
    ],
)
def test_gemini_request(choice, expected):
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "weather?"},
    ]
    req = build_weather("gemini", "gemini-2.5-flash", choice, messages=messages, system="be brief")
    assert req.url == (
        "https://generativelanguage.googleapis.com/v1beta/models/"
        "gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
    assert req.headers["x-goog-api-key"] == KEYS["GEMINI_API_KEY"]
    body = json.loads(req.content)
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    assert body["contents"][0]["parts"] == [{"text": "hi"}]
    assert body["systemInstruction"] == {"parts": [{"text": "be brief"}]}
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "get_weather",
                    "description": "Weather for a city",
                    "parameters": WEATHER.parameters,
                }
            ]
        }
    ]
    assert body["toolConfig"] == expected
    assert req.model == "gemini-2.5-flash"


def test_gemini_key_in_query_and_google_api_key():
    req = build_hi(
        {"GOOGLE_API_KEY": "AIzaSyFAKEgoogle0123456789abcdefghij"},
        "gemini",
        "gemini-2.5-flash",
        key_in_query=True,
    )
    assert req.url.endswith("?alt=sse&key=AIzaSyFAKEgoogle0123456789abcdefghij")
    assert "x-goog-api-key" not in req.headers


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets_by_name(name):
    preset = PRESETS[name]
    env = {preset.key_env[0]: f"key-for-{name}-0123456789", "OPENAI_API_KEY": "sk-wrong"}
    req = build(env, base_url=name, model="some-model", prompt="hi")
    assert req.url == preset.base_url + "/chat/completions"
    assert req.headers["authorization"] == f"Bearer key-for-{name}-0123456789"
    assert req.provider == name and req.api == "chat.completions"
    assert ("stream_options" in json.loads(req.content)) == preset.stream_usage


def test_preset_found_from_base_url_host():
    env = {"GROQ_API_KEY": "gsk_fake0123456789", "OPENAI_API_KEY": "sk-wrong"}
    req = build_hi(
        env,
        "openai-compatible",
        "llama-3.3-70b-versatile",
        base_url="https://api.groq.com/openai/v1",
    )
    assert req.headers["authorization"] == "Bearer gsk_fake0123456789"
    assert req.provider == "groq"
    mistral = build_hi(
        {"MISTRAL_API_KEY": "mistral-fake-0123"},
        "openai-compatible",
        "mistral-small-latest",
        base_url="https://api.mistral.ai/v1",
    )
    assert "stream_options" not in json.loads(mistral.content)  # Mistral rejects it (422)


def test_openai_compatible_never_sends_the_openai_key_elsewhere():
    req = build_hi(
        {"OPENAI_API_KEY": "sk-test-do-not-send-0123456789"},
        "openai-compatible",
        "m",
        base_url="http://127.0.0.1:9/v1",
    )
    assert "authorization" not in req.headers
    with_env = build_hi(
        {"MY_KEY": "local-key-0123456789"},
        "openai-compatible",
        "m",
        base_url="http://127.0.0.1:9/v1",
        api_key_env="MY_KEY",
    )
    assert with_env.headers["authorization"] == "Bearer local-key-0123456789"


def test_local_presets_need_no_key():
    req = build({}, base_url="ollama", model="qwen3:8b", prompt="hi")
    assert req.url == "http://localhost:11434/v1/chat/completions"
    assert "authorization" not in req.headers


def test_body_file_is_sent_exactly_and_headers_override():
    raw = b'{"model":"gpt-4o",  "stream":true,"messages":[{"role":"user","content":"hi"}]}'
    req = build(
        provider="openai-chat",
        body=raw,
        headers=[("Authorization", "Bearer sk-test-FROMHEADER0123456789"), ("X-Trace", "1")],
    )
    assert req.content == raw
    assert req.model == "gpt-4o"
    assert req.headers["Authorization"] == "Bearer sk-test-FROMHEADER0123456789"
    assert "authorization" not in req.headers  # replaced, not duplicated
    assert "sk-test-FROMHEADER0123456789" in req.secrets


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"provider": "nope", "model": "m", "prompt": "x"}, "unknown provider 'nope'"),
        ({"provider": "openai-chat", "model": "m"}, "give --prompt, --messages FILE or --body"),
        ({"provider": "openai-chat", "prompt": "x"}, "--model is required"),
        ({"model": "m", "prompt": "x"}, "--provider is required"),
        (
            {"provider": "openai-chat", "model": "m", "prompt": "x", "tool_choice": "nope"},
            "--tool-choice 'nope': not a tool",
        ),
        (
            {"provider": "openai-chat", "body": b"{}", "prompt": "x"},
            "--body sends the body as it is: drop --prompt",
        ),
        ({"provider": "anthropic", "base_url": "groq", "model": "m", "prompt": "x"}, "preset"),
        ({"provider": "openai-compatible", "model": "m", "prompt": "x"}, "--base-url is required"),
        (
            {"provider": "openai-chat", "base_url": "ftp://x", "model": "m", "prompt": "x"},
            "not an http(s) URL",
        ),
    ],
)
def test_request_errors(kw, message):
    with pytest.raises(RequestError) as info:
        build(**kw)
    assert message in str(info.value)


def test_missing_key_names_the_variable():
    with pytest.raises(RequestError, match="set OPENAI_API_KEY"):
        build({}, provider="openai-chat", model="m", prompt="x")
    with pytest.raises(RequestError, match="GEMINI_API_KEY or GOOGLE_API_KEY"):
        build({}, provider="gemini", model="m", prompt="x")
    with pytest.raises(RequestError, match="--api-key-env NOPE"):
        build({}, provider="openai-chat", model="m", prompt="x", api_key_env="NOPE")


def test_parse_tools_shapes_and_errors():
    neutral = [{"name": "a", "description": "A", "parameters": {"type": "object"}}]
    openai_shape = [{"type": "function", "function": {"name": "b", "parameters": {}}}]
    anthropic_shape = {"tools": [{"name": "c", "input_schema": {"type": "object"}}]}
    tools = parse_tools(json.dumps(neutral), "t.json")
    tools += parse_tools(json.dumps(openai_shape), "t.json")
    tools += parse_tools(json.dumps(anthropic_shape), "t.json")
    assert [t.name for t in tools] == ["a", "b", "c"]
    assert tools[2].parameters == {"type": "object"}
    with pytest.raises(RequestError, match=r"^t.json:3: not JSON"):
        parse_tools('[\n {"name": "a"},\n oops]', "t.json")
    with pytest.raises(RequestError, match=r"t.json: tool #2: needs a 'name'"):
        parse_tools('[{"name": "a"}, {"description": "x"}]', "t.json")
    with pytest.raises(RequestError, match="a second tool named 'a'"):
        parse_tools('[{"name": "a"}, {"name": "a"}]', "t.json")


def test_parse_messages_and_headers():
    assert parse_messages('{"messages": [{"role": "user", "content": "x"}]}', "m.json") == [
        {"role": "user", "content": "x"}
    ]
    with pytest.raises(RequestError, match="message #1 needs 'content'"):
        parse_messages('[{"role": "user"}]', "m.json")
    assert parse_header_option("X-Thing:  a: b ") == ("X-Thing", "a: b")
    with pytest.raises(RequestError):
        parse_header_option("no colon")


# -- response body helpers -----------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(
    data=st.binary(min_size=0, max_size=600),
    cuts=st.lists(st.integers(0, 700), max_size=8),
    kind=st.sampled_from(["gzip", "deflate", "raw-deflate"]),
)
def test_body_decoder_any_split(data, cuts, kind):
    if kind == "gzip":
        encoded, header = gzip.compress(data), "gzip"
    elif kind == "deflate":
        encoded, header = zlib.compress(data), "deflate"
    else:
        z = zlib.compressobj(wbits=-zlib.MAX_WBITS)
        encoded, header = z.compress(data) + z.flush(), "deflate"
    points = sorted({min(c, len(encoded)) for c in cuts})
    pieces = [encoded[a:b] for a, b in zip([0, *points], [*points, len(encoded)], strict=True)]
    decoder = BodyDecoder(header)
    out = b"".join(decoder.feed(p) for p in pieces) + decoder.flush()
    assert out == data and decoder.decoded
    assert BodyDecoder("br").feed(b"\x01\x02") == b"\x01\x02"  # unknown: left as received


@pytest.mark.parametrize(
    "body, expected",
    [
        (
            b'{"error": {"message": "Incorrect API key", "type": "invalid_request_error"}}',
            "HTTP 401: Incorrect API key (invalid_request_error)",
        ),
        (
            b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
            "HTTP 401: Overloaded (overloaded_error)",
        ),
        (
            b'[{"error": {"code": 400, "message": "API key not valid", "status": "INVALID"}}]',
            "HTTP 401: API key not valid (INVALID)",
        ),
        (b'{"object":"error","message":"Extra inputs"}', "HTTP 401: Extra inputs"),
        (b'{"detail": "Not authenticated"}', "HTTP 401: Not authenticated"),
        (b"<html>\n  Bad   gateway </html>", "HTTP 401: <html> Bad gateway </html>"),
        (b"", "HTTP 401: (empty body)"),
        (
            b'event: error\ndata: {"type":"error","error":{"message":"boom","type":"api_error"}}\n',
            "HTTP 401: boom (api_error)",
        ),
    ],
)
def test_provider_error_message(body, expected):
    assert provider_error_message(401, body) == expected


# -- record against serve ------------------------------------------------------------------------
def run_record(args: list[str], env: dict[str, str] | None = None):
    return CliRunner().invoke(app, ["record", *args], env={**KEYS, **(env or {})})


def record_to(
    out: Path,
    base_url: str,
    *extra: str,
    name: str | None = None,
    provider: str = "openai-chat",
    model: str = "m",
    env: dict[str, str] | None = None,
):
    """``streamtool record`` of one "hi" to ``base_url`` into ``out``; ``name`` asks serve for
    that recording; ``extra``: more options."""
    asks = ["--header", f"X-Streamtool-Recording: {name}"] if name else []
    args = [*record_args(base_url, model, provider), *asks, *extra, "-o", str(out)]
    return run_record(args, env)


# (recording, provider, base URL path)
AGAINST_SERVE = [
    ("openai-parallel-tool-calls", "openai-chat", "/v1"),
    ("openai-text-usage-chunk-utf8-split", "openai-chat", "/v1"),
    ("vllm-crlf-framing-tool-call", "openai-chat", "/v1"),
    ("openrouter-keepalive-comments-tool-call", "openai-chat", "/v1"),
    ("openai-responses-text-then-function-call", "openai-responses", "/v1"),
    ("anthropic-text-then-tool-use", "anthropic", ""),
    ("gemini-text-then-function-call", "gemini", ""),
]


@pytest.fixture(scope="module")
def served():
    with serving([p for p in recording("x").parent.glob("*.jsonl")], MAX) as server:
        yield server


@pytest.mark.parametrize("name, provider, prefix", AGAINST_SERVE)
def test_record_reproduces_served_bytes(served, tmp_path, name, provider, prefix):
    out = tmp_path / "rec.jsonl"
    model = "gemini-2.5-flash" if provider == "gemini" else "any-model"
    result = record_to(out, served.url + prefix, name=name, provider=provider, model=model)
    assert result.exit_code == 0, result.stderr
    assert f"recorded {out}: HTTP 200" in result.stderr
    header, chunks, end = read_all(out)
    served_chunks = chunks_of(recording(name))
    assert b"".join(chunks) == b"".join(served_chunks)
    assert chunks == served_chunks  # one recorded read per served write
    assert end.reason == "complete" and end.error is None
    assert header.response["status"] == 200
    assert header.request["headers"]["accept-encoding"] == "identity"
    times = [c.t for c in Source(out).chunks()]
    assert times == sorted(times) and all(t >= 0 for t in times)


def test_recorded_file_replays_like_the_original(served, tmp_path):
    name = "openai-parallel-tool-calls"
    out = tmp_path / "rec.jsonl"
    result = record_to(out, served.url + "/v1", name=name, model="gpt-4o-2024-08-06")
    assert result.exit_code == 0, result.stderr
    ours = replay_file(out).summary()
    original = replay_file(recording(name)).summary()
    for key in ("text", "invocations", "finish_reason", "usage", "quirks"):
        assert ours[key] == original[key]


def test_http_error_is_recorded_and_reported(served, tmp_path):
    out = tmp_path / "err.jsonl"
    result = record_to(out, served.url + "/v1", name="openai-http-429-rate-limit", model="gpt-4o")
    assert result.exit_code == 1
    assert "HTTP 429: Rate limit reached for gpt-4o" in result.stderr
    assert "Traceback" not in result.output
    header, chunks, end = read_all(out)
    assert header.response["status"] == 429
    assert header.response["headers"]["retry-after"] == "3"
    assert b"".join(chunks) == body_of(recording("openai-http-429-rate-limit"))
    assert end.reason == "error"
    assert end.error.startswith("HTTP 429: Rate limit reached for gpt-4o in organization")


def test_dropped_connection_keeps_every_byte(tmp_path):
    rec = recording("openai-parallel-tool-calls")
    out = tmp_path / "cut.jsonl"
    with serving([rec], Playback(speed=None, cut_after=1000)) as server:
        result = record_to(out, server.url + "/v1")
    assert result.exit_code == 1
    assert "connection dropped after 1000 bytes" in result.stderr
    header, chunks, end = read_all(out)
    assert b"".join(chunks) == body_of(rec)[:1000]
    assert end.reason == "error" and "connection dropped after 1000 bytes" in end.error
    # the partial recording still replays, showing the stream as broken
    summary = replay_file(out).summary()
    assert summary["errors"] and summary["stats"]["bytes"] == 1000


def test_read_timeout_ends_the_recording(tmp_path):
    rec = recording("openai-parallel-tool-calls")
    out = tmp_path / "slow.jsonl"
    with serving([rec], Playback(speed=None, stall=5.0, stall_after=600)) as server:
        started = time.monotonic()
        result = record_to(out, server.url + "/v1", "--timeout", "0.3")
        elapsed = time.monotonic() - started
    assert result.exit_code == 1
    assert elapsed < 4
    header, chunks, end = read_all(out)
    assert b"".join(chunks) == body_of(rec)[:600]
    assert end.reason == "timeout" and "after 600 bytes" in end.error


def test_ctrl_c_leaves_a_valid_recording(tmp_path):
    rec = recording("openai-parallel-tool-calls")
    out = tmp_path / "int.jsonl"
    with serving([rec], Playback(speed=None, stall=30.0, stall_after=700)) as server:
        proc = subprocess.Popen(
            [
                *STREAMTOOL,
                "record",
                *record_args(server.url + "/v1"),
                "-o",
                str(out),
            ],
            env={**os.environ, **KEYS},
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 20
            while sum(len(c) for c in _chunks_so_far(out)) < 700:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.02)
            proc.send_signal(signal.SIGINT)
            _, stderr = proc.communicate(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130
    assert "interrupted" in stderr and "Traceback" not in stderr
    header, chunks, end = read_all(out)
    assert b"".join(chunks) == body_of(rec)[:700]
    assert end.reason == "interrupted"


def _chunks_so_far(path: Path) -> list[bytes]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        obj = json.loads(line)
        if obj.get("type") == "chunk":
            out.append(obj["text"].encode())
    return out


def test_connection_refused(tmp_path):
    from streamtool.core.net.listen import bind

    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    sock.close()
    out = tmp_path / "refused.jsonl"
    result = record_to(out, f"http://127.0.0.1:{port}/v1")
    assert result.exit_code == 1
    assert "could not connect" in result.stderr
    header, chunks, end = read_all(out)
    assert chunks == [] and header.response["status"] is None
    assert end.reason == "error" and "could not connect" in end.error


# -- secrets -------------------------------------------------------------------------------------
FAKE = {
    "openai": "sk-test-FAKEKEYopenai5f3a9c1e7b2d4",
    "header": "sk-ant-api03-FAKEKEYheader8e2f6a0c4",
    "custom": "tok-FAKECUSTOMtoken7d1b9e3f5a",
    "gemini": "AIzaSyFAKEKEYgemini1a2b3c4d5e6f7g8h9",
}


def test_secrets_never_reach_the_file(tmp_path):
    # a server that echoes the key back in its error body, as some gateways do
    echo = json.dumps(
        {
            "error": {
                "message": f"Incorrect API key provided: {FAKE['openai']}.",
                "type": "invalid_request_error",
                "code": "invalid_api_key",
            }
        }
    )
    bad_key = write_recording(
        tmp_path / "openai-401.jsonl", [(0.1, echo)], status=401, content_type="application/json"
    )
    gem = recording("gemini-text-then-function-call")
    with serving([bad_key, gem], MAX) as server:
        out1 = tmp_path / "openai.jsonl"
        r1 = record_to(
            out1,
            server.url + "/v1",
            "-H",
            f"x-api-key: {FAKE['header']}",
            "-H",
            f"X-Custom-Token: {FAKE['custom']}",
            model="gpt-4o-mini",
            env={"OPENAI_API_KEY": FAKE["openai"]},
        )
        out2 = tmp_path / "gemini.jsonl"
        r2 = record_to(
            out2,
            server.url,
            "--key-in-query",
            provider="gemini",
            model="gemini-2.5-flash",
            env={"GEMINI_API_KEY": FAKE["gemini"]},
        )
    assert r1.exit_code == 1 and "Incorrect API key provided" in r1.stderr
    assert r2.exit_code == 0, r2.stderr
    for out, result in ((out1, r1), (out2, r2)):
        text = out.read_text()
        for secret in FAKE.values():
            assert secret not in text
            assert secret not in result.output
        assert "[redacted]" in text
    header, _, end = read_all(out1)
    assert header.request["headers"]["authorization"] == "[redacted]"
    assert header.request["headers"]["x-api-key"] == "[redacted]"
    assert end.error == "HTTP 401: Incorrect API key provided: [redacted]. (invalid_request_error)"
    gheader, gchunks, _ = read_all(out2)
    assert "key=" in gheader.request["url"]  # the key was sent in the query, and redacted
    assert b"".join(gchunks) == body_of(gem)


# -- output file and bad input -------------------------------------------------------------------
def test_existing_output_is_never_overwritten(served, tmp_path):
    out = tmp_path / "keep.jsonl"
    out.write_text("precious\n")
    name = "openai-parallel-tool-calls"
    result = record_to(out, served.url + "/v1", name=name, model="gpt-4o-2024-08-06")
    assert result.exit_code == 2
    assert result.stderr.strip() == f"streamtool: error: {out}: exists (use --force to overwrite)"
    assert out.read_text() == "precious\n"
    forced = record_to(out, served.url + "/v1", "--force", name=name, model="gpt-4o-2024-08-06")
    assert forced.exit_code == 0
    assert read_all(out)[2].reason == "complete"


@pytest.mark.parametrize(
    "args, files, message",
    [
        (["-p", "nope", "-m", "m", "--prompt", "x"], {}, "unknown provider 'nope'"),
        (
            ["-p", "openai-chat", "-m", "m", "--prompt", "x", "--tools", "{d}/t.json"],
            {"t.json": '[\n  {"name": "a",}\n]'},
            "t.json:2: not JSON",
        ),
        (
            ["-p", "openai-chat", "-m", "m", "--prompt", "x", "--tools", "{d}/none.json"],
            {},
            "none.json: no such file or folder",
        ),
        (
            ["-p", "openai-chat", "-m", "m", "--messages", "{d}/m.json"],
            {"m.json": '[{"content": "x"}]'},
            "message #1 needs a 'role'",
        ),
        (
            ["-p", "openai-chat", "-m", "m", "--prompt", "x", "--tool-choice", "zap"],
            {},
            "--tool-choice 'zap'",
        ),
        (
            ["-p", "openai-chat", "-m", "m", "--prompt", "x", "-H", "bad header"],
            {},
            "expected 'Name: value'",
        ),
        (
            ["-p", "openai-chat", "-m", "m", "--prompt", "x", "--view", "fancy"],
            {},
            "unknown view 'fancy'",
        ),
        (
            ["-p", "openai-chat", "-m", "m", "--prompt", "x", "--parser", "nope"],
            {},
            "unknown parser 'nope'",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2(tmp_path, args, files, message):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    out = tmp_path / "out.jsonl"
    result = run_record([*[a.format(d=tmp_path) for a in args], "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output
    assert not out.exists()


def test_missing_key_is_exit_2(tmp_path):
    result = CliRunner().invoke(
        app,
        ["record", "-p", "anthropic", "-m", "m", "--prompt", "x", "-o", str(tmp_path / "o.jsonl")],
        env={"ANTHROPIC_API_KEY": ""},
    )
    assert result.exit_code == 2
    assert "no API key: set ANTHROPIC_API_KEY" in result.stderr


# -- compressed bodies ---------------------------------------------------------------------------
class _GzipHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    body = b""

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-encoding", "gzip")  # ignores Accept-Encoding: identity
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        z = zlib.compressobj(wbits=31)
        third = len(self.body) // 3
        parts = [self.body[:third], self.body[third : 2 * third], self.body[2 * third :]]
        for i, part in enumerate(parts):
            data = z.compress(part) + (z.flush() if i == 2 else z.flush(zlib.Z_SYNC_FLUSH))
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
            time.sleep(0.02)
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, *args: object) -> None:
        pass


def test_gzip_body_is_recorded_decoded(tmp_path):
    body = body_of(recording("openai-parallel-tool-calls"))
    handler = type("Handler", (_GzipHandler,), {"body": body})
    out = tmp_path / "gz.jsonl"
    with http_server(handler) as url:
        result = record_to(out, url + "/v1")
    assert result.exit_code == 0, result.stderr
    header, chunks, end = read_all(out)
    assert b"".join(chunks) == body
    assert len(chunks) >= 3  # still one chunk per network read
    assert header.response["decoded"] == "gzip"
    assert header.response["headers"]["content-encoding"] == "gzip"
    assert replay_file(out).summary()["invocations"]


# -- the live view -------------------------------------------------------------------------------
def test_a_view_sink_sees_the_stream_as_it_is_recorded(served, tmp_path, monkeypatch):
    from streamtool.cli import record as record_cli

    calls: list[tuple[float | None, int]] = []
    closed = []

    class Collect:
        def on_items(self, engine, t, items):
            calls.append((t, len(items)))

        def close(self, engine):
            closed.append(engine.summary())

    monkeypatch.setitem(record_cli.VIEWS, "collect", Collect)
    out = tmp_path / "live.jsonl"
    result = record_to(
        out,
        served.url + "/v1",
        "--view",
        "collect",
        name="openai-parallel-tool-calls",
        model="gpt-4o-2024-08-06",
    )
    assert result.exit_code == 0, result.stderr
    assert len(calls) >= len(chunks_of(out))  # once per chunk, then once at the end
    assert sum(n for _, n in calls) > 0
    live = closed[0]
    replayed = replay_file(out).summary()
    for key in ("text", "invocations", "finish_reason", "usage", "errors", "quirks"):
        assert live[key] == replayed[key]


def test_progress_line_on_a_terminal():
    from streamtool.cli.record import ProgressLine

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Tty()
    line = ProgressLine(out)
    line.on_read(0.5, 3, 2048)
    assert out.getvalue() == "\rrecording: 3 chunks · 2.0 KB · 0.5 s"
    line.close(None)
    assert out.getvalue().endswith("\n")
    quiet = io.StringIO()
    ProgressLine(quiet).on_read(0.5, 3, 2048)
    assert quiet.getvalue() == ""  # not a terminal: no redraws


def test_a_request_holding_a_key_is_refused_before_sending(served, tmp_path):
    out = tmp_path / "keyed.jsonl"
    result = run_record(
        [
            "-p",
            "openai-chat",
            "-m",
            "gpt-4o-2024-08-06",
            "--prompt",
            "my key is sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX",
            "--base-url",
            served.url + "/v1",
            "-o",
            str(out),
        ]
    )
    assert result.exit_code == 2
    assert "refusing to record: the request holds an OpenAI-style key" in result.stderr
    assert "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX" not in result.output
    assert not out.exists()


def test_record_keeps_the_reads_as_the_server_cut_them(tmp_path):
    rec = recording("openai-text-usage-chunk-utf8-split")
    out = tmp_path / "rechunked.jsonl"
    with serving([rec], Playback(speed=None, rechunk=7)) as server:
        result = record_to(out, server.url + "/v1")
    assert result.exit_code == 0, result.stderr
    _, chunks, end = read_all(out)
    body = body_of(rec)
    assert b"".join(chunks) == body and end.reason == "complete"
    # a read's tail that could start a key ("A" of "AIza...") waits for the next read; nothing
    # else moves
    for c in chunks:
        assert len(c) <= 7 or any(k.startswith(c[: len(c) - 7]) for k in KEY_STARTS), c
    assert len(chunks) >= -(-len(body) // 7)
    # 7-byte cuts split multi-byte characters: such reads are kept as base64, not repaired
    raw = out.read_text()
    assert '"b64":' in raw
    assert replay_file(out).summary()["text"] == replay_file(rec).summary()["text"]


def test_the_live_tree_view_shows_the_capture(served, tmp_path):
    """``--view tree`` draws replay's tree while recording (printed once when not a terminal)."""
    out = tmp_path / "tree.jsonl"
    result = record_to(
        out,
        served.url,
        "--view",
        "tree",
        name="anthropic-text-then-tool-use",
        provider="anthropic",
        model="claude-sonnet-4-6",
    )
    assert result.exit_code == 0, result.stderr
    assert "converter anthropic" in result.stderr
    assert "tool_call get_weather" in result.stderr and '"city": "Lisbon"' in result.stderr
    assert "invocations (1)" in result.stderr
    assert body_of(out) == body_of(recording("anthropic-text-then-tool-use"))


@pytest.mark.parametrize("name", ["deepseek-reasoning-then-tool-call", "anthropic-write-file"])
def test_progress_line_counts_the_text_and_reasoning_read(name: str) -> None:
    from streamtool.cli.record import ProgressLine
    from streamtool.core.engine.replay import ReplayEngine
    from streamtool.core.pipeline.segment_log import SegmentLog

    path = recording(name)
    summary = replay_file(str(path)).summary()
    line = ProgressLine(io.StringIO())
    with Source(path) as source:
        engine = ReplayEngine(source.header, segments=SegmentLog(keep_content=False))
        for chunk in source.chunks():
            line.on_items(engine, chunk.t, engine.feed_chunk(chunk))
        line.on_items(engine, None, engine.finish(source.end))
    text = line.line()
    for kind in ("reasoning", "text"):
        if summary[kind]:
            assert f"{kind} {len(summary[kind])} chars" in text, text
        else:
            assert f"{kind} " not in text, text
