"""Legacy Completions (``text_completion``) streams: the ``openai-completions`` converter, text
parsers on it, and the openai SDK's ``completions.create(stream=True)`` against ``serve``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamtool.core.engine.replay import ReplayEngine
from streamtool.core.exchange.playback import Playback
from streamtool.core.model.records import Chunk, End
from streamtool.core.net.server import serving
from streamtool.core.recording.reader import Source

from .conftest import RECORDINGS

NAMES = [
    "openai-completions-text-usage",
    "openai-completions-vllm-xml-tool-calls",
    "openai-completions-vllm-error-mid-stream",
]


def rec(name: str) -> Path:
    return RECORDINGS / f"{name}.jsonl"


def summary(path: Path, parser: str = "api_tool_call", header: bool = True) -> dict[str, Any]:
    source = Source(path)
    engine = ReplayEngine(source.header if header else None, parser=parser)
    for c in source.chunks():
        engine.feed_chunk(c)
    engine.finish(source.end)
    return engine.summary()


def test_text_and_usage() -> None:
    result = summary(rec("openai-completions-text-usage"))
    assert result["converter"] == "openai-completions"
    assert result["text"] == "\n\nRoses are red,\nviolets are blue."
    assert result["finish_reason"] == "stop"
    assert result["usage"] == {"input_tokens": 9, "output_tokens": 11, "total_tokens": 20}


def test_xml_parser_reads_tool_calls_in_completion_text() -> None:
    result = summary(rec("openai-completions-vllm-xml-tool-calls"), parser="xml")
    assert [(i["name"], i["arguments"]) for i in result["invocations"]] == [
        ("get_weather", {"city": "Paris", "unit": "celsius"}),
        ("get_weather", {"city": "Tokyo", "unit": "celsius"}),
    ]
    assert result["text"].startswith("I'll look up both cities at once.")


def test_error_mid_stream_and_logprobs() -> None:
    result = summary(rec("openai-completions-vllm-error-mid-stream"))
    assert result["text"] == " The answer is"
    assert [e["kind"] for e in result["errors"]] == ["provider_error"]


@pytest.mark.parametrize("name", NAMES)
def test_detected_without_header(name: str) -> None:
    assert summary(rec(name), header=False)["converter"] == "openai-completions"


def test_chat_chunks_with_legacy_text_stay_chat() -> None:
    from streamtool.core.converters import detect_from_event
    from streamtool.core.wire.sse import SSEEvent

    chat = '{"choices":[{"index":0,"text":"hi","delta":{"content":"hi"}}]}'
    assert detect_from_event(SSEEvent(chat)) == "openai-chat"
    legacy = '{"choices":[{"index":0,"text":"hi","finish_reason":null}]}'
    assert detect_from_event(SSEEvent(legacy)) == "openai-completions"


def test_extra_choices_are_kept_not_mixed_in() -> None:
    engine = ReplayEngine(converter="openai-completions")
    for index, text in [(0, "a"), (1, "X"), (0, "b"), (1, "Y")]:
        choice = f'{{"index":{index},"text":"{text}"}}'
        data = f'data: {{"object":"text_completion","choices":[{choice}]}}\n\n'
        engine.feed_chunk(Chunk(None, data))
    engine.feed_chunk(Chunk(None, "data: [DONE]\n\n"))
    engine.finish(End(None, "complete"))
    result = engine.summary()
    assert result["text"] == "ab"
    assert [q["id"] for q in result["quirks"]][0] == "completions_extra_choices"


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=20_000), max_size=15))
def test_any_cut_same_meaning(points: list[int]) -> None:
    path = rec("openai-completions-vllm-xml-tool-calls")
    data = b"".join(
        c.data if isinstance(c.data, bytes) else c.data.encode() for c in Source(path).chunks()
    )
    cuts = sorted({p % (len(data) + 1) for p in points} | {0, len(data)})
    engine = ReplayEngine(Source(path).header, parser="xml")
    for a, b in zip(cuts, cuts[1:], strict=False):
        if b > a:
            engine.feed_chunk(Chunk(None, data[a:b]))
    engine.finish(End(None, "complete"))
    got, expected = engine.summary(), summary(path, parser="xml")
    for key in ("text", "invocations", "finish_reason", "usage", "errors"):
        assert got[key] == expected[key], key


@pytest.mark.parametrize("name", NAMES)
def test_openai_sdk_completions_stream_reads_what_the_replay_reads(name: str) -> None:
    path = rec(name)
    expected = summary(path)
    with serving([path], Playback(speed=None)) as server:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="sk-test-local", max_retries=0)
        text, finish, error = "", None, None
        try:
            for chunk in client.completions.create(model="m", prompt="p", stream=True):
                for choice in chunk.choices:
                    text += choice.text
                    finish = choice.finish_reason or finish
        except openai.APIError as exc:
            error = str(exc)
    assert text == expected["text"]
    assert finish == expected["finish_reason"]
    assert (error is not None) == bool(expected["errors"])
