"""``streamtool serve``: recordings played back over real HTTP on 127.0.0.1.

Servers are real (uvicorn in a thread, or the command in a subprocess); clients are httpx and
the official openai and anthropic SDKs.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamtool.core.converters import CONVERTERS
from streamtool.core.drive.replay_file import replay_file
from streamtool.core.exchange.playback import Cut, Playback, Write, schedule
from streamtool.core.model.records import RecordingError
from streamtool.core.model.speed import parse_speed
from streamtool.core.net.library import Library
from streamtool.core.net.server import create_app, serving
from streamtool.core.recording.reader import Source

from .conftest import RECORDINGS
from .helpers import fresh_python_prints
from .serve_helpers import (
    STREAMTOOL,
    anthropic_status_error,
    body_of,
    chat_chunk,
    chunks_of,
    payloads,
    record_args,
    recording,
    start_listening,
    write_recording,
)

MAX = Playback(speed=None)
ALL = sorted(RECORDINGS.glob("*.jsonl"))
CHAT_SDK_AGREES = [
    "openai-parallel-tool-calls",
    "openai-text-usage-chunk-utf8-split",
    "deepseek-reasoning-then-tool-call",
    "vllm-crlf-framing-tool-call",
    "openrouter-keepalive-comments-tool-call",
]


def stream_raw(
    url: str, body: dict, headers: dict | None = None, broken_off_ok: bool = False
) -> tuple[int, list[bytes]]:
    """POST and collect every raw read (httpx ``iter_raw``: one item per HTTP chunk read).

    With ``broken_off_ok`` a connection the server drops (a recording that broke off is served
    broken off) ends the reads instead of raising."""
    with (
        httpx.Client(timeout=10) as client,
        client.stream("POST", url, json=body, headers=headers or {}) as resp,
    ):
        reads: list[bytes] = []
        try:
            for read in resp.iter_raw():
                reads.append(read)
        except httpx.RemoteProtocolError:
            if not broken_off_ok:
                raise
        return resp.status_code, reads


# -- the write plan (sans-IO) --------------------------------------------------------------------
_reads = st.lists(
    st.tuples(st.floats(0, 5, allow_nan=False), st.binary(min_size=0, max_size=40)),
    min_size=0,
    max_size=12,
)


@settings(max_examples=80, deadline=None)
@given(
    reads=_reads,
    rechunk=st.none() | st.integers(1, 17),
    cut=st.none() | st.integers(0, 300),
    stall_after=st.none() | st.integers(0, 300),
    speed=st.sampled_from([None, 1.0, 2.5]),
)
def test_schedule_keeps_bytes_and_order(reads, rechunk, cut, stall_after, speed):
    total = sum(len(d) for _, d in reads)
    body = b"".join(d for _, d in reads)
    play = Playback(speed=speed, rechunk=rechunk, cut_after=cut, stall=0.5, stall_after=stall_after)
    steps = list(schedule(reads, play, total))
    writes = [s for s in steps if isinstance(s, Write)]
    sent = b"".join(w.data for w in writes)
    expected = body if cut is None else body[:cut]
    assert sent == expected
    assert all(w.data for w in writes)
    assert [w.at for w in writes] == sorted(w.at for w in writes)
    if cut is None:
        assert not any(isinstance(s, Cut) for s in steps)
    else:
        assert isinstance(steps[-1], Cut) and steps[-1].sent == len(expected)
    if rechunk:
        assert all(len(w.data) <= rechunk for w in writes)
    # the pause happens exactly after stall_after bytes (default: half the body)
    stall_point = total // 2 if stall_after is None else stall_after
    offset = 0
    for w in writes:
        if speed is None:
            assert (w.at == 0.5) == (offset >= stall_point)
        offset += len(w.data)


def test_schedule_pacing_and_rechunk_times():
    reads = [(0.1, b"aaaa"), (0.3, b"bbbb"), (0.6, b"cc")]
    assert list(schedule(reads, Playback(speed=1.0), 10)) == [
        Write(0.1, b"aaaa"),
        Write(0.3, b"bbbb"),
        Write(0.6, b"cc"),
    ]
    assert [w.at for w in schedule(reads, Playback(speed=2.0), 10)] == [0.05, 0.15, 0.3]
    # a re-cut piece is sent when the read holding its last byte was received
    pieces = list(schedule(reads, Playback(speed=1.0, rechunk=3), 10))
    assert pieces == [
        Write(0.1, b"aaa"),
        Write(0.3, b"abb"),
        Write(0.6, b"bbc"),
        Write(0.6, b"c"),
    ]
    stalled = list(schedule(reads, Playback(speed=1.0, stall=2.0, stall_after=6), 10))
    assert stalled == [
        Write(0.1, b"aaaa"),
        Write(0.3, b"bb"),
        Write(2.3, b"bb"),
        Write(2.6, b"cc"),
    ]


def test_parse_speed():
    assert parse_speed("max") is None and parse_speed("inf") is None
    assert parse_speed("2") == 2.0
    for bad in ("-1", "0", "fast", "nan"):
        with pytest.raises(ValueError):
            parse_speed(bad)


# -- byte-exact replay ---------------------------------------------------------------------------
def test_every_bundled_recording_is_served_byte_exact():
    library = Library.from_paths([RECORDINGS])
    with serving([RECORDINGS], MAX) as server:
        for rec in library.recordings:
            path = {
                "openai-chat": "/v1/chat/completions",
                "kimi-k2": "/v1/chat/completions",
                "openai-responses": "/v1/responses",
                "anthropic": "/v1/messages",
                "gemini": f"/v1beta/models/{rec.model}:streamGenerateContent?alt=sse",
                "openai-completions": "/v1/completions",
                "cohere": "/v2/chat",
                "gemini-interactions": "/v1beta/interactions",
                "bedrock-converse": f"/model/{quote(rec.model or '', safe='')}/converse-stream",
                "bedrock-invoke": (
                    f"/model/{quote(rec.model or '', safe='')}/invoke-with-response-stream"
                ),
            }[rec.api or ""]
            source = Source(rec.path)
            list(source.chunks())
            broken_off = source.end is None or source.end.reason != "complete"
            status, reads = stream_raw(
                server.url + path,
                {"model": rec.model, "stream": True},
                {"X-Streamtool-Recording": rec.name},
                broken_off_ok=broken_off,
            )
            assert status == rec.status, rec.name
            assert b"".join(reads) == body_of(Path(rec.path)), rec.name
            # each recorded read is one HTTP chunk: the client never gets two in one read
            assert len(reads) >= len(chunks_of(Path(rec.path))), rec.name


def test_response_head_is_the_recorded_one():
    with serving([recording("openai-http-429-rate-limit")], MAX) as server:
        resp = httpx.post(server.url + "/v1/chat/completions", json={"model": "gpt-4o"})
    assert resp.status_code == 429
    assert resp.headers["retry-after"] == "3"
    assert resp.headers["content-type"].startswith("application/json")
    assert resp.headers["x-streamtool-recording"] == "openai-http-429-rate-limit"
    assert "rate_limit_exceeded" in resp.json()["error"]["code"]


def test_raw_sse_body_is_served_and_sniffed(tmp_path):
    body = (
        chat_chunk("Hel") + chat_chunk("lo") + chat_chunk("", finish="stop") + "data: [DONE]\n\n"
    ).encode()
    raw = tmp_path / "capture.sse"
    raw.write_bytes(body)
    library = Library.from_paths([raw])
    assert (library.recordings[0].api, library.recordings[0].model) == (
        "openai-chat",
        "gpt-4o-mini-2024-07-18",
    )
    with serving([raw], MAX) as server:
        status, reads = stream_raw(server.url + "/v1/chat/completions", {"stream": True})
    assert status == 200 and b"".join(reads) == body


def test_gemini_endpoint_serves_crlf_sse():
    rec = recording("gemini-text-then-function-call")
    with serving([rec, recording("openai-parallel-tool-calls")], MAX) as server:
        url = server.url + "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        status, reads = stream_raw(url, {"contents": []})
    assert status == 200
    assert b"".join(reads) == body_of(rec)
    assert b"\r\n\r\n" in reads[0]


# -- choosing the recording ----------------------------------------------------------------------
def test_selection_by_model_header_and_only_one():
    paths = [
        recording("openai-parallel-tool-calls"),
        recording("openai-text-usage-chunk-utf8-split"),
        recording("anthropic-text-then-tool-use"),
    ]
    with serving(paths, MAX) as server:
        chat = server.url + "/v1/chat/completions"
        by_model = httpx.post(chat, json={"model": "gpt-4o-mini-2024-07-18", "stream": True})
        assert by_model.headers["x-streamtool-recording"] == "openai-text-usage-chunk-utf8-split"
        by_header = httpx.post(
            chat,
            json={"model": "gpt-4o-mini-2024-07-18", "stream": True},
            headers={"X-Streamtool-Recording": "openai-parallel-tool-calls.jsonl"},
        )
        assert by_header.headers["x-streamtool-recording"] == "openai-parallel-tool-calls"
        # the only recording for /v1/messages answers whatever the model
        only = httpx.post(server.url + "/v1/messages", json={"model": "x", "stream": True})
        assert only.status_code == 200
        assert only.headers["x-streamtool-recording"] == "anthropic-text-then-tool-use"

        ambiguous = httpx.post(chat, json={"model": "gpt-5", "stream": True})
        assert ambiguous.status_code == 400  # a status the SDKs do not retry
        message = ambiguous.json()["error"]["message"]
        assert "openai-parallel-tool-calls" in message and "X-Streamtool-Recording" in message

        unknown = httpx.post(
            chat, json={"stream": True}, headers={"X-Streamtool-Recording": "nope"}
        )
        assert unknown.status_code == 404 and "nope" in unknown.json()["error"]["message"]

        none = httpx.post(server.url + "/v1/responses", json={"model": "x", "stream": True})
        assert none.status_code == 404
        assert "no recording speaks this API" in none.json()["error"]["message"]

        not_streaming = httpx.post(chat, json={"model": "gpt-4o-mini-2024-07-18"})
        assert not_streaming.status_code == 400

        elsewhere = httpx.post(server.url + "/v1/embeddings", json={})
        assert elsewhere.status_code == 404
        assert "/chat/completions" in elsewhere.json()["error"]["message"]


def test_anthropic_style_errors_on_messages_endpoint():
    paths = [recording("anthropic-text-then-tool-use"), recording("anthropic-http-529-overloaded")]
    with serving(paths, MAX) as server:
        resp = httpx.post(
            server.url + "/v1/messages", json={"model": "claude-sonnet-4-6", "stream": True}
        )
    assert resp.status_code == 400
    err = resp.json()
    assert err["type"] == "error" and err["error"]["type"] == "invalid_request_error"
    assert "anthropic-text-then-tool-use" in err["error"]["message"]
    assert "anthropic-http-529-overloaded" in err["error"]["message"]


def test_bad_paths_are_one_line_errors(tmp_path):
    with pytest.raises(RecordingError, match="no such file"):
        Library.from_paths([tmp_path / "missing.jsonl"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(RecordingError, match="holds no recordings"):
        Library.from_paths([tmp_path / "empty"])
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "header"}\n')
    with pytest.raises(RecordingError, match=r"bad.jsonl:1"):
        Library.from_paths([bad])


# -- pacing and fault injection ------------------------------------------------------------------
def _paced(tmp_path: Path) -> Path:
    reads = [(0.05, chat_chunk("a")), (0.15, chat_chunk("b")), (0.3, chat_chunk("c"))]
    reads.append((0.4, chat_chunk("", finish="stop") + "data: [DONE]\n\n"))
    return write_recording(tmp_path / "paced.jsonl", reads)


def _timed_reads(url: str) -> list[tuple[float, bytes]]:
    out = []
    with httpx.Client(timeout=10) as client:
        start = time.monotonic()
        with client.stream("POST", url, json={"stream": True}) as resp:
            for data in resp.iter_raw():
                out.append((time.monotonic() - start, data))
    return out


def test_recorded_pacing_and_speed(tmp_path):
    rec = _paced(tmp_path)
    times = [0.05, 0.15, 0.3, 0.4]
    with serving([rec]) as server:
        reads = _timed_reads(server.url + "/v1/chat/completions")
    assert b"".join(d for _, d in reads) == body_of(rec)
    # no read comes before its recorded time (1 ms of clock slack)
    offset = 0
    ends = []
    for t, data in reads:
        offset += len(data)
        ends.append((offset, t))
    sizes = [len(c) for c in chunks_of(rec)]
    for i, when in enumerate(times):
        boundary = sum(sizes[: i + 1])
        first_read_reaching = next(t for off, t in ends if off >= boundary)
        assert first_read_reaching >= when - 0.001
    with serving([rec], Playback(speed=4.0)) as server:
        fast = _timed_reads(server.url + "/v1/chat/completions")
    assert fast[-1][0] >= 0.4 / 4 - 0.001
    assert fast[-1][0] < 0.4  # clearly faster than the recording


def test_rechunk_cuts_writes(tmp_path):
    rec = recording("openai-parallel-tool-calls")
    with serving([rec], Playback(speed=None, rechunk=100)) as server:
        status, reads = stream_raw(server.url + "/v1/chat/completions", {"stream": True})
    body = body_of(rec)
    assert b"".join(reads) == body
    assert max(len(r) for r in reads) <= 100
    assert len(reads) >= -(-len(body) // 100)


def _read_until_dropped(url: str) -> bytes:
    """What a streamed chat completion from ``url`` gave before its connection was dropped
    (checked: the stream ends in httpx's RemoteProtocolError)."""
    got = bytearray()
    with (
        httpx.Client(timeout=10) as client,
        client.stream("POST", url + "/v1/chat/completions", json={"stream": True}) as r,
        pytest.raises(httpx.RemoteProtocolError),
    ):
        for data in r.iter_raw():
            got += data
    return bytes(got)


def test_cut_after_drops_the_connection():
    rec = recording("openai-parallel-tool-calls")
    with serving([rec], Playback(speed=None, cut_after=777)) as server:
        got = _read_until_dropped(server.url)
    assert got == body_of(rec)[:777]


def test_stall_pauses_mid_stream():
    rec = recording("openai-text-usage-chunk-utf8-split")
    with serving([rec], Playback(speed=None, stall=0.4, stall_after=1000)) as server:
        reads = _timed_reads(server.url + "/v1/chat/completions")
    assert b"".join(d for _, d in reads) == body_of(rec)
    before = [t for t, d in reads]
    offsets = []
    off = 0
    for _, d in reads:
        off += len(d)
        offsets.append(off)
    i = offsets.index(1000)  # a write ends exactly at the stall point
    assert before[i + 1] - before[i] >= 0.35


# -- real SDK clients ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def library_server():
    with serving([RECORDINGS], MAX) as server:
        yield server


def openai_client(server):
    import openai

    return openai.OpenAI(base_url=server.url + "/v1", api_key="sk-test-local", max_retries=0)


def anthropic_client(server):
    import anthropic

    return anthropic.Anthropic(base_url=server.url, api_key="sk-ant-test-local", max_retries=0)


def _pick(name: str) -> dict:
    return {"X-Streamtool-Recording": name}


def _sdk_completion_and_summary(server: Any, name: str) -> tuple[Any, dict[str, Any]]:
    """The openai SDK's final chat completion of recording ``name`` served by ``server``, and
    the recording's replay summary."""
    with openai_client(server).chat.completions.stream(
        model="any", messages=[{"role": "user", "content": "hi"}], extra_headers=_pick(name)
    ) as stream:
        final = stream.get_final_completion()
    return final, replay_file(recording(name)).summary()


@pytest.mark.parametrize("name", CHAT_SDK_AGREES)
def test_openai_sdk_chat_matches_streamtool_summary(library_server, name):
    final, summary = _sdk_completion_and_summary(library_server, name)
    message = final.choices[0].message
    assert (message.content or "") == summary["text"]
    sdk_calls = [
        (c.id, c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or []
    ]
    ours = [(i["id"], i["name"], i["arguments"]) for i in summary["invocations"]]
    assert sdk_calls == ours
    assert final.choices[0].finish_reason == summary["finish_reason"]
    if final.usage is not None:
        assert final.usage.prompt_tokens == summary["usage"]["input_tokens"]
        assert final.usage.completion_tokens == summary["usage"]["output_tokens"]


def test_openai_sdk_merges_same_index_calls_that_streamtool_separates(library_server):
    name = "ollama-parallel-calls-same-index"
    final, summary = _sdk_completion_and_summary(library_server, name)
    calls = final.choices[0].message.tool_calls or []
    assert len(calls) == 1  # the SDK glues three calls into one
    assert calls[0].function.arguments.count("{") == 3
    assert [i["arguments"]["city"] for i in summary["invocations"]] == ["北京", "上海", "广州"]
    assert summary["quirks"]


def test_openai_sdk_raises_on_in_band_error_that_streamtool_reports(library_server):
    import openai

    name = "openrouter-error-in-stream"
    client = openai_client(library_server)
    with (
        pytest.raises(openai.APIError, match="Overloaded"),
        client.chat.completions.stream(
            model="any", messages=[{"role": "user", "content": "hi"}], extra_headers=_pick(name)
        ) as stream,
    ):
        stream.get_final_completion()
    summary = replay_file(recording(name)).summary()
    assert any("Overloaded" in e["message"] for e in summary["errors"])


def test_openai_sdk_gets_recorded_http_error(library_server):
    import openai

    client = openai_client(library_server)
    with pytest.raises(openai.RateLimitError) as info:
        client.chat.completions.create(
            model="gpt-4o",
            messages=[],
            stream=True,
            extra_headers=_pick("openai-http-429-rate-limit"),
        )
    assert info.value.status_code == 429
    assert "Rate limit reached for gpt-4o" in info.value.message


def _responses_expected(name: str) -> tuple[str, list[tuple[str, str, dict]]]:
    events = payloads(recording(name))
    text = "".join(d["delta"] for _, d in events if d["type"] == "response.output_text.delta")
    calls = [
        (d["item"]["call_id"], d["item"]["name"], json.loads(d["item"]["arguments"]))
        for _, d in events
        if d["type"] == "response.output_item.done" and d["item"]["type"] == "function_call"
    ]
    return text, calls


def _sdk_response(server, name):
    client = openai_client(server)
    with client.responses.stream(model="gpt-4.1", input="hi", extra_headers=_pick(name)) as s:
        deltas = [e.delta for e in s if e.type == "response.output_text.delta"]
        return s.get_final_response(), "".join(deltas)


def test_openai_sdk_responses_matches_recorded_payloads(library_server):
    name = "openai-responses-text-then-function-call"
    final, streamed_text = _sdk_response(library_server, name)
    text, calls = _responses_expected(name)
    assert streamed_text == text and final.output_text == text
    got = [
        (o.call_id, o.name, json.loads(o.arguments))
        for o in final.output
        if o.type == "function_call"
    ]
    assert got == calls and calls


def test_openai_sdk_responses_matches_streamtool_summary(library_server):
    if "openai-responses" not in CONVERTERS:
        pytest.skip("the openai-responses converter is not in this build yet")
    name = "openai-responses-text-then-function-call"
    final, _ = _sdk_response(library_server, name)
    summary = replay_file(recording(name)).summary()
    assert summary["text"] == final.output_text
    got = [
        (o.call_id, o.name, json.loads(o.arguments))
        for o in final.output
        if o.type == "function_call"
    ]
    assert [(i["id"], i["name"], i["arguments"]) for i in summary["invocations"]] == got


def _anthropic_expected(name: str) -> tuple[str, list[tuple[str, str, dict]], str]:
    events = [d for _, d in payloads(recording(name))]
    text = "".join(
        d["delta"]["text"]
        for d in events
        if d["type"] == "content_block_delta" and d["delta"]["type"] == "text_delta"
    )
    tools = []
    for d in events:
        if d["type"] == "content_block_start" and d["content_block"]["type"] == "tool_use":
            idx = d["index"]
            raw = "".join(
                e["delta"]["partial_json"]
                for e in events
                if e["type"] == "content_block_delta" and e["index"] == idx
            )
            tools.append((d["content_block"]["id"], d["content_block"]["name"], json.loads(raw)))
    stop = next(d["delta"]["stop_reason"] for d in events if d["type"] == "message_delta")
    return text, tools, stop


def _sdk_message(server, name):
    client = anthropic_client(server)
    with client.messages.stream(
        model="claude-sonnet-4-6",
        max_tokens=256,
        messages=[{"role": "user", "content": "hi"}],
        extra_headers=_pick(name),
    ) as stream:
        return stream.get_final_message()


def test_anthropic_sdk_matches_recorded_payloads(library_server):
    name = "anthropic-text-then-tool-use"
    message = _sdk_message(library_server, name)
    text, tools, stop = _anthropic_expected(name)
    assert "".join(b.text for b in message.content if b.type == "text") == text
    assert [(b.id, b.name, b.input) for b in message.content if b.type == "tool_use"] == tools
    assert message.stop_reason == stop == "tool_use"


def test_anthropic_sdk_matches_streamtool_summary(library_server):
    if "anthropic" not in CONVERTERS:
        pytest.skip("the anthropic converter is not in this build yet")
    name = "anthropic-text-then-tool-use"
    message = _sdk_message(library_server, name)
    summary = replay_file(recording(name)).summary()
    assert summary["text"] == "".join(b.text for b in message.content if b.type == "text")
    assert [(i["id"], i["name"], i["arguments"]) for i in summary["invocations"]] == [
        (b.id, b.name, b.input) for b in message.content if b.type == "tool_use"
    ]
    assert summary["finish_reason"] == message.stop_reason


def test_anthropic_sdk_gets_recorded_overload(library_server):
    client = anthropic_client(library_server)
    error = anthropic_status_error(client, extra_headers=_pick("anthropic-http-529-overloaded"))
    assert error.status_code == 529
    assert "Overloaded" in str(error)


# -- many clients at once ------------------------------------------------------------------------
def test_fifty_concurrent_streams_are_byte_exact():
    names = [
        "openai-parallel-tool-calls",
        "anthropic-text-then-tool-use",
        "vllm-crlf-framing-tool-call",
    ]
    expected = {n: body_of(recording(n)) for n in names}

    async def one(client, url, name):
        path = "/v1/messages" if name.startswith("anthropic") else "/v1/chat/completions"
        got = bytearray()
        async with client.stream(
            "POST", url + path, json={"stream": True}, headers=_pick(name)
        ) as resp:
            async for data in resp.aiter_raw():
                got += data
        return name, bytes(got)

    async def run(url):
        limits = httpx.Limits(max_connections=60)
        async with httpx.AsyncClient(timeout=20, limits=limits) as client:
            jobs = [one(client, url, names[i % len(names)]) for i in range(50)]
            return await asyncio.gather(*jobs)

    with serving([recording(n) for n in names], MAX) as server:
        results = asyncio.run(run(server.url))
    assert len(results) == 50
    for name, got in results:
        assert got == expected[name], name


# -- the command ---------------------------------------------------------------------------------
def test_serve_command_runs_and_stops(tmp_path):
    proc, first, url = start_listening(
        [*STREAMTOOL, "serve", str(RECORDINGS), "--port", "0", "--speed", "max", "--quiet"]
    )
    try:
        assert first.startswith("streamtool: serving ") and first.strip().endswith(url)
        listing = httpx.get(url + "/").json()
        assert {r["name"] for r in listing["recordings"]} == {p.stem for p in ALL}
        rec = recording("openai-text-usage-chunk-utf8-split")
        status, reads = stream_raw(
            url + "/v1/chat/completions", {"model": "gpt-4o-mini-2024-07-18", "stream": True}
        )
        assert status == 200 and b"".join(reads) == body_of(rec)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        assert proc.stderr is not None
        proc.stderr.close()


@pytest.mark.parametrize(
    "args, message",
    [
        (["missing.jsonl"], "missing.jsonl: no such file"),
        (["{rec}", "--speed", "fast"], "--speed must be a number > 0 or 'max', not 'fast'"),
        (["{rec}", "--rechunk", "0"], "rechunk must be at least 1"),
    ],
)
def test_serve_command_bad_input(tmp_path, args, message):
    from typer.testing import CliRunner

    from streamtool.cli.main import app

    rec = str(recording("openai-parallel-tool-calls"))
    result = CliRunner().invoke(app, ["serve", *[a.format(rec=rec) for a in args]])
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1


def test_serve_command_port_in_use():
    from typer.testing import CliRunner

    from streamtool.cli.main import app
    from streamtool.core.net.listen import bind

    sock = bind("127.0.0.1", 0)
    try:
        port = sock.getsockname()[1]
        result = CliRunner().invoke(
            app, ["serve", str(recording("openai-parallel-tool-calls")), "--port", str(port)]
        )
    finally:
        sock.close()
    assert result.exit_code == 2
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr


def test_create_app_needs_no_server_imports_at_cli_start():
    code = (
        "import sys, streamtool.cli.main; "
        "print(sorted(m for m in ('uvicorn', 'starlette', 'openai', 'anthropic', 'httpx') "
        "if m in sys.modules))"
    )
    assert fresh_python_prints(code) == "[]"
    assert create_app  # the app factory is importable without them


def test_a_broken_off_recording_is_served_broken_off(tmp_path):
    from typer.testing import CliRunner

    from streamtool.cli.main import app

    rec = recording("openai-parallel-tool-calls")
    out = tmp_path / "openai-dropped.jsonl"
    with serving([rec], Playback(speed=None, cut_after=1234)) as server:
        result = CliRunner().invoke(
            app,
            [
                "record",
                *record_args(server.url + "/v1"),
                "-o",
                str(out),
            ],
            env={"OPENAI_API_KEY": "sk-test-local"},
        )
    assert result.exit_code == 1
    [again] = Library.from_paths([out]).recordings
    assert again.ended == "error" and again.broken
    with serving([out], MAX) as server:
        got = _read_until_dropped(server.url)
    assert got == body_of(rec)[:1234]


def test_a_raw_json_array_body_is_served_as_what_it_is(tmp_path):
    """A raw Gemini body without alt=sse (a streamed JSON array) is recognised like replay does:
    its API and model come from the array's first object, and it is served as JSON."""
    raw = tmp_path / "gemini-array.txt"
    raw.write_bytes(body_of(recording("gemini-json-array-error-mid-stream")))
    (rec,) = Library.from_paths([raw]).recordings
    assert rec.api == "gemini"
    assert rec.model == replay_file(raw).model
    assert dict(rec.headers)["content-type"] == "application/json"
