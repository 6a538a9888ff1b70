"""Amazon Bedrock: the AWS event-stream framing, the ``bedrock-converse`` and ``bedrock-invoke``
converters, and boto3 reading what ``serve`` replays."""

from __future__ import annotations

import base64
import json
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from streamtool.cli.main import app
from streamtool.core.engine.replay import ReplayEngine
from streamtool.core.exchange.playback import Playback
from streamtool.core.model.records import Chunk, End
from streamtool.core.net.server import serving
from streamtool.core.recording.reader import Source
from streamtool.core.wire.eventstream import (
    EventStreamDecoder,
    encode_event,
    encode_message,
)
from streamtool.core.wire.framing import open_decoder, sniff

from .conftest import RECORDINGS

botocore_eventstream = pytest.importorskip("botocore.eventstream")
boto3 = pytest.importorskip("boto3")

CONVERSE = ["text", "parallel"]
NAMES = {
    "converse-text": "bedrock-converse-reasoning-then-text",
    "converse-tools": "bedrock-converse-parallel-tool-calls",
    "converse-error": "bedrock-converse-throttling-mid-stream",
    "invoke-text": "bedrock-invoke-claude-text",
    "invoke-tools": "bedrock-invoke-claude-parallel-tool-calls",
    "invoke-error": "bedrock-invoke-model-stream-error",
}


def rec(key: str) -> Path:
    return RECORDINGS / f"{NAMES[key]}.jsonl"


def body_bytes(path: Path) -> bytes:
    out = b""
    for c in Source(path).chunks():
        out += c.data if isinstance(c.data, bytes) else c.data.encode("utf-8")
    return out


def summary(path: Path, cuts: list[bytes] | None = None) -> dict[str, Any]:
    source = Source(path)
    engine = ReplayEngine(source.header, source=path.name)
    reads = cuts if cuts is not None else [c.data for c in source.chunks()]
    for data in reads:
        engine.feed_chunk(Chunk(None, data))
    engine.finish(End(None, "complete"))
    return engine.summary()


# -- the framing -------------------------------------------------------------------------------
def test_encoder_agrees_with_botocore_decoder() -> None:
    """Our frames are what botocore's own event-stream parser reads (headers, payload)."""
    frames = encode_event("contentBlockDelta", b'{"contentBlockIndex":0}') + encode_message(
        {":message-type": "event", "n": 7, "flag": True, "raw": b"\x00\x01"}, b"payload"
    )
    buffer = botocore_eventstream.EventStreamBuffer()
    buffer.add_data(frames)
    messages = list(buffer)
    assert [m.headers for m in messages] == [
        {
            ":event-type": "contentBlockDelta",
            ":content-type": "application/json",
            ":message-type": "event",
        },
        {":message-type": "event", "n": 7, "flag": True, "raw": b"\x00\x01"},
    ]
    assert [m.payload for m in messages] == [b'{"contentBlockIndex":0}', b"payload"]
    ours = EventStreamDecoder()
    events = ours.feed(frames)
    assert [(e.event, e.data) for e in events] == [
        ("contentBlockDelta", '{"contentBlockIndex":0}'),
        ("", "payload"),
    ]


@pytest.mark.parametrize("key", sorted(NAMES))
def test_bundled_bedrock_bodies_are_read_alike_by_botocore(key: str) -> None:
    """Every frame of the bundled recordings decodes in botocore, to what our decoder yields."""
    body = body_bytes(rec(key))
    buffer = botocore_eventstream.EventStreamBuffer()
    buffer.add_data(body)
    theirs = []
    for m in buffer:
        kind = m.headers[":message-type"]
        name = (
            m.headers[":event-type"]
            if kind == "event"
            else "exception:" + m.headers[":exception-type"]
        )
        theirs.append((name, m.payload.decode()))
    ours = EventStreamDecoder()
    events = ours.feed(body) + ours.finish()
    assert [(e.event, e.data) for e in events] == theirs
    assert ours.errors == []
    assert len(theirs) >= 4


def test_byte_by_byte_equals_whole() -> None:
    body = body_bytes(rec("converse-tools"))
    whole = EventStreamDecoder().feed(body)
    one = EventStreamDecoder()
    pieces = []
    for i in range(len(body)):
        pieces += one.feed(body[i : i + 1])
    assert pieces == whole
    assert one.finish() == [] and one.errors == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=10_000), max_size=20))
def test_any_cut_of_the_frames_gives_the_same_replay(cut_points: list[int]) -> None:
    """Chunking never changes meaning: the same bytes cut anywhere give the same summary."""
    for key in ("converse-tools", "invoke-tools"):
        body = body_bytes(rec(key))
        points = sorted({p % (len(body) + 1) for p in cut_points} | {0, len(body)})
        cuts = [body[a:b] for a, b in zip(points, points[1:], strict=False) if b > a]
        expected = summary(rec(key))
        got = summary(rec(key), cuts)
        for field in ("text", "reasoning", "invocations", "finish_reason", "usage", "errors"):
            assert got[field] == expected[field], field


def test_bad_message_crc_is_an_error_and_the_next_frame_is_read() -> None:
    good = encode_event("contentBlockDelta", b'{"contentBlockIndex":0,"delta":{"text":"a"}}')
    bad = bytearray(
        encode_event("contentBlockDelta", b'{"contentBlockIndex":0,"delta":{"text":"b"}}')
    )
    bad[-6] ^= 0xFF  # a payload byte: the message CRC no longer matches
    decoder = EventStreamDecoder()
    events = decoder.feed(bytes(bad) + good)
    assert [e.data for e in events] == ['{"contentBlockIndex":0,"delta":{"text":"a"}}']
    assert [e.kind for e in decoder.errors] == ["frame_crc"]
    assert "byte 0" in decoder.errors[0].message


def test_bad_prelude_crc_stops_decoding_with_an_error() -> None:
    good = encode_event("messageStart", b'{"role":"assistant"}')
    bad = bytearray(good)
    bad[9] ^= 0x01  # the prelude CRC
    decoder = open_decoder(bytes(good))
    assert len(decoder.feed(good)) == 1
    assert decoder.feed(bytes(bad) + good) == []
    decoder.finish()
    errors = decoder.take_errors()
    assert [e.kind for e in errors] == ["frame_crc"]
    assert f"byte {len(good)}" in errors[0].message
    assert f"({2 * len(good):,} bytes)" in errors[0].message


def test_impossible_lengths_are_an_error() -> None:
    head = (5).to_bytes(4, "big") + (0).to_bytes(4, "big")
    frame = head + zlib.crc32(head).to_bytes(4, "big") + b"\x00" * 8
    decoder = EventStreamDecoder()
    assert decoder.feed(frame) == []
    assert [e.kind for e in decoder.errors] == ["frame_length"]


def _frame_with_headers_of(size: int) -> bytes:
    """An event whose headers take exactly ``size`` bytes (padded with ``x-pad-N`` byte values)."""
    headers: dict[str, Any] = {":event-type": "messageStart", ":message-type": "event"}
    base = len(encode_message(headers, b"{}")) - 18  # the headers' bytes
    n = 0
    while base < size:
        name = f"x-pad-{n}"
        overhead = 1 + len(name) + 1 + 2  # name length, name, value type, value length
        headers[name] = b"." * min(60_000, size - base - overhead)
        base += overhead + len(headers[name])
        n += 1
    frame = encode_message(headers, b"{}")
    assert int.from_bytes(frame[4:8], "big") == size
    return frame


@pytest.mark.parametrize("size", [128 * 1024, 128 * 1024 + 1])
def test_headers_over_128_kib_are_an_error_as_in_botocore(size: int) -> None:
    # the framing's limit on a message's headers (botocore's and aws-c-event-stream's)
    frame = _frame_with_headers_of(size)
    buffer = botocore_eventstream.EventStreamBuffer()
    buffer.add_data(frame)
    try:
        botocore_events = len(list(buffer))
    except botocore_eventstream.InvalidHeadersLength:
        botocore_events = 0
    decoder = EventStreamDecoder()
    events = decoder.feed(frame)
    assert len(events) == botocore_events == (1 if size <= 128 * 1024 else 0)
    assert [e.kind for e in decoder.errors] == ([] if events else ["frame_length"])


@pytest.mark.parametrize("keep", [1, 5, 12, 40])
def test_frame_cut_at_the_end_is_an_error_not_a_hang(keep: int) -> None:
    frame = encode_event("messageStart", b'{"role":"assistant"}')
    decoder = open_decoder(frame[:keep])
    assert decoder.feed(frame[:keep]) == []
    assert decoder.finish() == []
    errors = decoder.take_errors()
    assert [e.kind for e in errors] == ["frame_cut_off"]
    assert f"({keep}" in errors[0].message


def test_sniff_tells_binary_frames_from_sse() -> None:
    frame = encode_event("messageStart", b"{}")
    assert sniff(frame) == "eventstream"
    assert sniff(frame[:11]) is None  # not enough to check the prelude yet
    assert sniff(b"\x00" * 16) == "sse"  # a NUL start whose prelude CRC fails is not a frame
    assert sniff(b"data: {}\n\n") == "sse"


def test_cut_recording_replays_with_a_framing_error(tmp_path: Path) -> None:
    body = body_bytes(rec("converse-tools"))
    engine = ReplayEngine(Source(rec("converse-tools")).header)
    engine.feed_chunk(Chunk(0.1, body[: len(body) - 30]))
    engine.finish(End(0.2, "interrupted"))
    # the last frame (metadata, after messageStop) is cut: a framing error, the answer is whole
    assert [e.kind for e in engine.errors] == ["frame_cut_off", "recording_interrupted"]
    result = engine.summary()
    assert result["text"] == "I'll check the current weather in both cities at the same time."
    assert len(result["invocations"]) == 2 and result["usage"] is None
    # cut inside the tool calls: the stream is also truncated
    engine = ReplayEngine(Source(rec("converse-tools")).header)
    engine.feed_chunk(Chunk(0.1, body[: len(body) // 2]))
    engine.finish(End(0.2, "interrupted"))
    kinds = [e.kind for e in engine.errors]
    assert "frame_cut_off" in kinds and "truncated" in kinds


# -- the converters ----------------------------------------------------------------------------
def test_converse_recordings_replay() -> None:
    tools = summary(rec("converse-tools"))
    assert tools["converter"] == "bedrock-converse"
    assert [(i["id"], i["arguments"]) for i in tools["invocations"]] == [
        ("tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", {"city": "Paris", "unit": "celsius"}),
        ("tooluse_3Wl2cG6bRzKq0yMfOa8nIg", {"city": "Tokyo", "unit": "celsius"}),
    ]
    assert tools["usage"] == {"input_tokens": 612, "output_tokens": 131, "total_tokens": 743}
    assert tools["finish_reason"] == "tool_use"
    text = summary(rec("converse-text"))
    assert text["reasoning"] == "The user asks for a haiku about autumn rain. Five, seven, five."
    assert text["text"].startswith("Cold rain on the eaves")
    assert {q["id"] for q in text["quirks"]} == {
        "bedrock_padding_field",
        "bedrock_text_block_without_start",
    }
    error = summary(rec("converse-error"))
    assert [e["kind"] for e in error["errors"]] == ["provider_error"]
    assert "throttlingException: Too many tokens" in error["errors"][0]["message"]


def test_invoke_reads_claude_events_through_the_anthropic_converter() -> None:
    tools = summary(rec("invoke-tools"))
    assert tools["converter"] == "bedrock-invoke"
    assert [i["id"] for i in tools["invocations"]] == [
        "toolu_bdrk_01A09q90qw90lq917835lq9",
        "toolu_bdrk_01D7FLrfh4GYq7yT1ULFeyMV",
    ]
    error = summary(rec("invoke-error"))
    assert error["text"] == "Step 1: install the package with pip.\nStep 2: "
    assert "modelStreamErrorException" in error["errors"][0]["message"]
    assert [e["kind"] for e in error["errors"]] == ["provider_error"]


def test_invoke_reads_nova_events() -> None:
    """Amazon Nova's native stream is Converse-shaped events, one per chunk."""
    events = [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockDelta": {"delta": {"text": "Hello"}, "contentBlockIndex": 0}},
        {"contentBlockDelta": {"delta": {"text": " there"}, "contentBlockIndex": 0}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": "end_turn"}},
        {
            "metadata": {"usage": {"inputTokens": 3, "outputTokens": 2}},
            "amazon-bedrock-invocationMetrics": {"inputTokenCount": 3, "outputTokenCount": 2},
        },
    ]
    body = b"".join(
        encode_event(
            "chunk",
            json.dumps({"bytes": base64.b64encode(json.dumps(e).encode()).decode()}).encode(),
        )
        for e in events
    )
    engine = ReplayEngine(converter="bedrock-invoke")
    engine.feed_chunk(Chunk(0.0, body))
    engine.finish(End(0.1, "complete"))
    result = engine.summary()
    assert result["text"] == "Hello there"
    assert result["finish_reason"] == "end_turn"
    assert result["usage"] == {"input_tokens": 3, "output_tokens": 2}
    assert result["errors"] == []


def test_detected_from_first_bytes_without_a_header() -> None:
    """A bare body (no recording header) is recognized by its frames."""
    engine = ReplayEngine()
    engine.feed_chunk(Chunk(None, body_bytes(rec("converse-tools"))))
    engine.finish(End(None, "complete"))
    assert engine.converter_name == "bedrock-converse"
    assert len(engine.summary()["invocations"]) == 2


# -- the real SDK, against serve ---------------------------------------------------------------
def _client(url: str) -> Any:
    from botocore.config import Config

    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=url,
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="not-a-secret",
        config=Config(retries={"max_attempts": 1}, read_timeout=10, connect_timeout=5),
    )


MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


def _converse_reading(stream: Any) -> dict[str, Any]:
    """What boto3's caller accumulates: text, reasoning, tool uses (id, name, input)."""
    text, reasoning, calls, stop, error = "", "", {}, None, None
    try:
        for event in stream:
            if "contentBlockStart" in event:
                start = event["contentBlockStart"]
                tool = start["start"]["toolUse"]
                calls[start["contentBlockIndex"]] = [tool["toolUseId"], tool["name"], ""]
            elif "contentBlockDelta" in event:
                delta = event["contentBlockDelta"]["delta"]
                text += delta.get("text", "")
                reasoning += delta.get("reasoningContent", {}).get("text", "")
                if "toolUse" in delta:
                    calls[event["contentBlockDelta"]["contentBlockIndex"]][2] += delta["toolUse"][
                        "input"
                    ]
            elif "messageStop" in event:
                stop = event["messageStop"]["stopReason"]
    except Exception as exc:  # botocore raises the exception frame as an EventStreamError
        error = type(exc).__name__ + ": " + str(exc)
    return {
        "text": text,
        "reasoning": reasoning,
        "calls": [(i, n, json.loads(a)) for i, n, a in calls.values()],
        "stop": stop,
        "error": error,
    }


def _boto3_read(key: str, read: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The replay summary of recording ``key``, and what ``read(client)`` made of it with
    boto3's bedrock-runtime client of serve."""
    path = rec(key)
    with serving([path], Playback(speed=None)) as server:
        return summary(path), read(_client(server.url))


@pytest.mark.parametrize("key", ["converse-text", "converse-tools", "converse-error"])
def test_boto3_converse_stream_reads_what_the_replay_reads(key: str) -> None:
    hi = [{"role": "user", "content": [{"text": "hi"}]}]
    expected, got = _boto3_read(
        key,
        lambda client: _converse_reading(
            client.converse_stream(modelId=MODEL, messages=hi)["stream"]
        ),
    )
    assert got["text"] == expected["text"]
    assert got["reasoning"] == expected["reasoning"]
    assert got["calls"] == [(i["id"], i["name"], i["arguments"]) for i in expected["invocations"]]
    assert got["stop"] == expected["finish_reason"]
    if expected["errors"]:
        assert got["error"] is not None and "(throttlingException)" in got["error"]
        assert "Too many tokens" in got["error"]
    else:
        assert got["error"] is None


def _invoke_reading(client: Any) -> dict[str, Any]:
    """What boto3's caller of InvokeModelWithResponseStream accumulates from Claude's events:
    the content type, text, tool uses (id, name, input) and the error raised."""
    response = client.invoke_model_with_response_stream(
        modelId=MODEL,
        body=json.dumps({"anthropic_version": "bedrock-2023-05-31", "max_tokens": 10}),
    )
    text, calls, error = "", {}, None
    try:
        for event in response["body"]:
            native = json.loads(event["chunk"]["bytes"])
            if native["type"] == "content_block_start":
                block = native["content_block"]
                if block["type"] == "tool_use":
                    calls[native["index"]] = [block["id"], block["name"], ""]
            elif native["type"] == "content_block_delta":
                delta = native["delta"]
                text += delta.get("text", "")
                if delta["type"] == "input_json_delta":
                    calls[native["index"]][2] += delta["partial_json"]
    except Exception as exc:
        error = type(exc).__name__ + ": " + str(exc)
    calls_read = [(i, n, json.loads(a)) for i, n, a in calls.values()]
    return {
        "content_type": response["contentType"],
        "text": text,
        "calls": calls_read,
        "error": error,
    }


@pytest.mark.parametrize("key", ["invoke-text", "invoke-tools", "invoke-error"])
def test_boto3_invoke_with_response_stream_reads_what_the_replay_reads(key: str) -> None:
    expected, got = _boto3_read(key, _invoke_reading)
    assert got["content_type"] == "application/json"
    assert got["text"] == expected["text"]
    assert got["calls"] == [(i["id"], i["name"], i["arguments"]) for i in expected["invocations"]]
    if expected["errors"]:
        assert got["error"] is not None and "(modelStreamErrorException)" in got["error"]
    else:
        assert got["error"] is None


def test_serve_answers_bedrock_routes_by_model_in_path() -> None:
    """Two Bedrock recordings: the route picks the API, byte-exact bodies."""
    paths = [rec("converse-tools"), rec("invoke-tools")]
    with serving(paths, Playback(speed=None)) as server:
        import httpx

        for path, route in zip(
            paths, ["converse-stream", "invoke-with-response-stream"], strict=True
        ):
            quoted = MODEL.replace(":", "%3A")
            response = httpx.post(f"{server.url}/model/{quoted}/{route}", json={}, timeout=10)
            assert response.status_code == 200
            assert response.headers["content-type"] == "application/vnd.amazon.eventstream"
            assert response.content == body_bytes(path)
        missing = httpx.post(f"{server.url}/model/other/converse-stream", json={}, timeout=10)
        assert missing.status_code == 200  # the only converse recording answers any model


# -- the views ---------------------------------------------------------------------------------
runner = CliRunner()


def test_diff_bedrock_and_anthropic_of_the_same_answer_mean_the_same() -> None:
    anthropic = str(RECORDINGS / "anthropic-parallel-tool-calls.jsonl")
    for key in ("converse-tools", "invoke-tools"):
        result = runner.invoke(app, ["diff", anthropic, str(rec(key)), "--format", "json"])
        assert result.exit_code == 0, result.output
        assert json.loads(result.output)["same_meaning"] is True
    other = runner.invoke(app, ["diff", anthropic, str(rec("converse-text")), "--format", "json"])
    assert other.exit_code == 1
    assert json.loads(other.output)["same_meaning"] is False


def test_inspect_reads_shows_frames() -> None:
    result = runner.invoke(app, ["inspect", str(rec("converse-tools")), "--format", "json"])
    assert result.exit_code == 0, result.output
    reads = json.loads(result.output)["reads"]
    frames = [f for r in reads for f in r["frames"]]
    assert frames[:3] == ["messageStart", "contentBlockDelta", "contentBlockDelta"]
    assert frames.count("contentBlockStart") == 2 and frames[-1] == "metadata"
    assert any("event" in r["cuts"] for r in reads)  # one frame is cut across two reads
    text = runner.invoke(
        app, ["inspect", str(rec("converse-error")), "--reads"], env={"COLUMNS": "200"}
    )
    assert text.exit_code == 0, text.output
    assert "exception:throttlingException" in text.output


@pytest.mark.parametrize("key", ["converse-tools", "invoke-error"])
def test_tree_check_report_conform_work(key: str, tmp_path: Path) -> None:
    path = str(rec(key))
    tree = runner.invoke(app, ["replay", path, "--speed", "max"], env={"COLUMNS": "120"})
    assert tree.exit_code == 0, tree.output
    assert "get_weather" in tree.output or "Step 1" in tree.output
    check = runner.invoke(app, ["check", path])
    assert check.exit_code == 0, check.output
    out = tmp_path / "r.html"
    report = runner.invoke(app, ["report", path, "-o", str(out)])
    assert report.exit_code == 0, report.output
    assert out.stat().st_size > 1000
