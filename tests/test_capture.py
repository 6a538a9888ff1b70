"""Capture for SDK users: the real openai and anthropic SDKs, given a :class:`Capture` client,
stream from ``serve`` on 127.0.0.1 and the raw bytes land in recordings."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from streamtool.core.drive.replay_file import replay_file
from streamtool.core.exchange.playback import Playback
from streamtool.core.net.capture import Capture, http_module, is_stream_request, provider_and_api
from streamtool.core.net.server import serving
from streamtool.core.wire.http_body import StreamEndDetector

from .conftest import RECORDINGS
from .serve_helpers import body_of, chunks_of, read_all, recording

OPENAI_KEY = "sk-test-FAKEcapture0123456789abcdef"
ANTHROPIC_KEY = "sk-ant-test-FAKEcapture0123456789ab"


@pytest.fixture(scope="module")
def server():
    with serving([RECORDINGS], Playback(speed=None)) as s:
        yield s


def _pick(name: str) -> dict:
    return {"X-Streamtool-Recording": name}


def _openai_through(server: Any, capture: Capture) -> openai.OpenAI:
    """The openai SDK's client of ``server``, sending through ``capture``'s HTTP client."""
    return openai.OpenAI(
        base_url=server.url + "/v1", api_key=OPENAI_KEY, max_retries=0, http_client=capture.client()
    )


def _claude_question(name: str) -> dict[str, Any]:
    """The Messages request both Anthropic captures send, answered with recording ``name``."""
    return {
        "model": "claude-sonnet-4-6",
        "max_tokens": 256,
        "messages": [{"role": "user", "content": "hi"}],
        "extra_headers": _pick(name),
    }


def test_sdks_take_the_capture_client():
    capture = Capture("unused.jsonl")
    client = capture.client()
    assert isinstance(client, httpx2.Client)  # what the installed SDKs are built on
    assert http_module().__name__ == "httpx2"
    assert isinstance(capture.async_client(), httpx2.AsyncClient)
    # that the SDKs send through it is what the captures below check, byte for byte
    import httpx

    assert isinstance(Capture("unused.jsonl", module="httpx").client(), httpx.Client)


def test_openai_chat_stream_is_captured_byte_exact(server, tmp_path):
    name = "openai-parallel-tool-calls"
    capture = Capture(tmp_path / "rec.jsonl")
    client = _openai_through(server, capture)
    with client.chat.completions.stream(
        model="gpt-4o", messages=[{"role": "user", "content": "hi"}], extra_headers=_pick(name)
    ) as stream:
        final = stream.get_final_completion()
    assert capture.paths == [tmp_path / "rec.jsonl"]
    header, chunks, end = read_all(capture.paths[0])
    assert chunks == chunks_of(recording(name))
    # the SDK stops reading at [DONE]: the capture knows the stream was complete
    assert end.reason == "complete"
    assert (header.provider, header.api) == ("openai", "chat.completions")
    assert header.request["body"]["model"] == "gpt-4o"
    assert header.request["headers"]["authorization"] == "[redacted]"
    assert OPENAI_KEY not in capture.paths[0].read_text()
    # the captured recording replays to what the SDK saw
    summary = replay_file(capture.paths[0]).summary()
    calls = final.choices[0].message.tool_calls or []
    assert [(i["id"], i["name"], i["arguments"]) for i in summary["invocations"]] == [
        (c.id, c.function.name, json.loads(c.function.arguments)) for c in calls
    ]


def test_openai_responses_stream_is_captured(server, tmp_path):
    name = "openai-responses-text-then-function-call"
    capture = Capture(tmp_path / "captures/")
    client = _openai_through(server, capture)
    with client.responses.stream(model="gpt-4.1", input="hi", extra_headers=_pick(name)) as s:
        final = s.get_final_response()
    assert final.output_text.startswith("I'll check the current weather")
    [path] = capture.paths
    assert path.parent == tmp_path / "captures"
    assert path.name == "001-openai-responses.jsonl"
    header, chunks, end = read_all(path)
    assert chunks == chunks_of(recording(name))
    assert end.reason == "complete"


def test_anthropic_stream_is_captured(server, tmp_path):
    name = "anthropic-text-then-tool-use"
    capture = Capture(tmp_path)
    client = anthropic.Anthropic(
        base_url=server.url, api_key=ANTHROPIC_KEY, max_retries=0, http_client=capture.client()
    )
    with client.messages.stream(**_claude_question(name)) as stream:
        message = stream.get_final_message()
    [path] = capture.paths
    _, chunks, end = read_all(path)
    assert chunks == chunks_of(recording(name)) and end.reason == "complete"
    assert [b.type for b in message.content] == ["text", "tool_use"]


def test_async_anthropic_stream_is_captured(server, tmp_path):
    name = "anthropic-text-then-tool-use"
    capture = Capture(tmp_path)

    async def run():
        client = anthropic.AsyncAnthropic(
            base_url=server.url,
            api_key=ANTHROPIC_KEY,
            max_retries=0,
            http_client=capture.async_client(),
        )
        async with client.messages.stream(**_claude_question(name)) as stream:
            return await stream.get_final_message()

    message = asyncio.run(run())
    [path] = capture.paths
    assert path.name == "001-anthropic-messages.jsonl"
    header, chunks, end = read_all(path)
    assert chunks == chunks_of(recording(name))
    assert end.reason == "complete"
    assert header.provider == "anthropic" and header.api == "messages"
    sent = header.request["headers"]
    assert "[redacted]" in (sent.get("x-api-key"), sent.get("authorization"))
    assert ANTHROPIC_KEY not in path.read_text()
    tool = next(b for b in message.content if b.type == "tool_use")
    assert tool.input == {"city": "Lisbon", "unit": "celsius"}


def test_http_error_is_captured(server, tmp_path):
    capture = Capture(tmp_path / "err.jsonl")
    client = openai.OpenAI(
        base_url=server.url + "/v1", api_key=OPENAI_KEY, max_retries=0, http_client=capture.client()
    )
    with pytest.raises(openai.RateLimitError):
        client.chat.completions.create(
            model="gpt-4o",
            messages=[],
            stream=True,
            extra_headers=_pick("openai-http-429-rate-limit"),
        )
    header, chunks, end = read_all(tmp_path / "err.jsonl")
    assert header.response["status"] == 429
    assert b"".join(chunks) == body_of(recording("openai-http-429-rate-limit"))
    assert end.reason == "error" and "Rate limit reached for gpt-4o" in end.error


def test_non_streaming_requests_are_not_recorded(server, tmp_path):
    capture = Capture(tmp_path / "none/")
    client = openai.OpenAI(
        base_url=server.url + "/v1", api_key=OPENAI_KEY, max_retries=0, http_client=capture.client()
    )
    with pytest.raises(openai.BadRequestError, match="replays streams"):
        client.chat.completions.create(model="gpt-4o-mini-2024-07-18", messages=[])
    assert capture.paths == []
    assert list((tmp_path / "none").iterdir()) == []


def test_next_names_never_overwrite(server, tmp_path):
    (tmp_path / "rec.jsonl").write_text("keep\n")
    capture = Capture(tmp_path / "rec.jsonl")
    client = openai.OpenAI(
        base_url=server.url + "/v1", api_key=OPENAI_KEY, max_retries=0, http_client=capture.client()
    )
    for _ in range(2):
        with client.chat.completions.stream(
            model="gpt-4o-mini-2024-07-18", messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            stream.get_final_completion()
    assert capture.paths == [tmp_path / "rec-2.jsonl", tmp_path / "rec-3.jsonl"]
    assert (tmp_path / "rec.jsonl").read_text() == "keep\n"
    expected = chunks_of(recording("openai-text-usage-chunk-utf8-split"))
    assert all(read_all(p)[1] == expected for p in capture.paths)


def test_client_that_stops_early_is_recorded_as_interrupted(tmp_path):
    name = "openai-text-usage-chunk-utf8-split"
    with serving([recording(name)], Playback(speed=None, stall=5.0, stall_after=1500)) as s:
        capture = Capture(tmp_path / "early.jsonl")
        client = openai.OpenAI(
            base_url=s.url + "/v1", api_key=OPENAI_KEY, max_retries=0, http_client=capture.client()
        )
        stream = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        first = next(iter(stream))
        stream.close()
    assert first.choices[0].delta.role == "assistant"
    header, chunks, end = read_all(tmp_path / "early.jsonl")
    assert end.reason == "interrupted" and "closed the stream" in end.error
    assert body_of(recording(name)).startswith(b"".join(chunks))
    assert 0 < len(b"".join(chunks)) <= 1500


def test_dropped_connection_is_recorded_and_raised(tmp_path):
    name = "openai-parallel-tool-calls"
    with serving([recording(name)], Playback(speed=None, cut_after=900)) as s:
        capture = Capture(tmp_path / "cut.jsonl")
        client = openai.OpenAI(
            base_url=s.url + "/v1", api_key=OPENAI_KEY, max_retries=0, http_client=capture.client()
        )
        with (
            pytest.raises(openai.APIConnectionError),
            client.chat.completions.stream(
                model="m", messages=[{"role": "user", "content": "hi"}]
            ) as stream,
        ):
            stream.get_final_completion()
    header, chunks, end = read_all(tmp_path / "cut.jsonl")
    assert b"".join(chunks) == body_of(recording(name))[:900]
    assert end.reason == "error" and "connection dropped after 900 bytes" in end.error


# -- sans-IO pieces ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "body, done",
    [
        ("data: {}\n\ndata: [DONE]\n\n", True),
        ("data: {}\n\ndata: [DONE]\n", False),  # the event is not finished yet
        ('event: message_stop\ndata: {"type":"message_stop"}\n\n', True),
        ('data: {"type": "response.completed", "response": {}}\n\n', True),
        ('event: response.output_text.delta\ndata: {"delta": "message_stop"}\n\n', False),
        ('data: {"type":"message_stop"}\n\ndata: {"late": 1}\n\n', False),
    ],
)
def test_stream_end_detector(body, done):
    detector = StreamEndDetector()
    for i in range(0, len(body), 7):
        detector.feed(body[i : i + 7].encode())
    assert detector.terminated is done


def test_request_classification():
    assert provider_and_api("https://api.openai.com/v1/responses", {}) == ("openai", "responses")
    assert provider_and_api("http://127.0.0.1:1/v1/messages", {"anthropic-version": "x"}) == (
        "anthropic",
        "messages",
    )
    assert provider_and_api("https://openrouter.ai/api/v1/chat/completions", {}) == (
        "openrouter",
        "chat.completions",
    )
    assert provider_and_api("http://10.0.0.2:8080/v1/chat/completions", {}) == (
        "openai-compatible",
        "chat.completions",
    )
    assert is_stream_request("http://x/v1beta/models/g:streamGenerateContent?alt=sse", None)
    assert is_stream_request("http://x/v1/chat/completions", {"stream": True})
    assert not is_stream_request("http://x/v1/chat/completions", {"stream": False})


def test_a_request_that_cannot_be_recorded_still_goes_through(server, tmp_path):
    capture = Capture(tmp_path / "keyed.jsonl")
    client = openai.OpenAI(
        base_url=server.url + "/v1", api_key=OPENAI_KEY, max_retries=0, http_client=capture.client()
    )
    prompt = "my key is sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX, keep it safe"
    with (
        pytest.warns(RuntimeWarning, match="refusing to record"),
        client.chat.completions.stream(
            model="gpt-4o-mini-2024-07-18", messages=[{"role": "user", "content": prompt}]
        ) as stream,
    ):
        final = stream.get_final_completion()
    assert final.choices[0].message.content.startswith("Sure!")
    assert capture.paths == [] and not (tmp_path / "keyed.jsonl").exists()
