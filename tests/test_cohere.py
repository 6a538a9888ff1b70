"""Cohere v2 chat streams: the ``cohere`` converter, and the cohere SDK reading what ``serve``
replays."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from streamtool.cli.main import app
from streamtool.core.exchange.playback import Playback
from streamtool.core.net.server import serving

from .helpers import recording_summary as summary
from .serve_helpers import body_of as body
from .serve_helpers import recording as rec

cohere = pytest.importorskip("cohere")

NAMES = [
    "cohere-text-citations",
    "cohere-tool-plan-parallel-tool-calls",
    "cohere-error-in-message-end",
]


def test_tool_plan_is_reasoning_and_calls_are_tracked() -> None:
    result = summary(rec("cohere-tool-plan-parallel-tool-calls"))
    assert result["converter"] == "cohere"
    assert (
        result["reasoning"] == "I will look up the weather in Paris and in Tokyo at the same time."
    )
    assert [(i["id"], i["arguments"]) for i in result["invocations"]] == [
        ("get_weather_m2x4pq8a1k3v", {"city": "Paris", "unit": "celsius"}),
        ("get_weather_7yn0d2c5rw9h", {"city": "Tokyo", "unit": "celsius"}),
    ]
    assert result["finish_reason"] == "TOOL_CALL"
    assert result["usage"] == {"input_tokens": 802, "output_tokens": 66}


def test_citations_and_errors() -> None:
    text = summary(rec("cohere-text-citations"))
    assert [c.get("cited_text") for c in text["citations"]] == ["emperor penguin", "122 cm"]
    assert all(c["title"] == "Penguin species" for c in text["citations"])
    failed = summary(rec("cohere-error-in-message-end"))
    assert [e["kind"] for e in failed["errors"]] == ["provider_error"]
    assert [q["id"] for q in failed["quirks"]] == ["cohere_error_in_message_end"]


@pytest.mark.parametrize("name", NAMES)
def test_detected_from_the_stream_alone(name: str) -> None:
    assert summary(rec(name), header=False)["converter"] == "cohere"


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=20_000), max_size=15))
def test_any_cut_gives_the_same_meaning(points: list[int]) -> None:
    path = rec("cohere-tool-plan-parallel-tool-calls")
    data = body(path)
    cuts = sorted({p % (len(data) + 1) for p in points} | {0, len(data)})
    reads = [data[a:b] for a, b in zip(cuts, cuts[1:], strict=False) if b > a]
    expected, got = summary(path), summary(path, reads)
    for key in ("text", "reasoning", "invocations", "finish_reason", "usage", "errors"):
        assert got[key] == expected[key], key


@pytest.mark.parametrize("name", NAMES)
def test_cohere_sdk_chat_stream_reads_what_the_replay_reads(name: str) -> None:
    path = rec(name)
    expected = summary(path)
    with serving([path], Playback(speed=None)) as server:
        client = cohere.ClientV2(api_key="test-key-local", base_url=server.url, timeout=10)
        text, plan, calls, finish, error = "", "", {}, None, None
        for event in client.chat_stream(
            model="command-a-03-2025", messages=[{"role": "user", "content": "hi"}]
        ):
            if event.type == "content-delta":
                text += event.delta.message.content.text or ""
            elif event.type == "tool-plan-delta":
                plan += event.delta.message.tool_plan or ""
            elif event.type == "tool-call-start":
                call = event.delta.message.tool_calls
                calls[event.index] = [call.id, call.function.name, call.function.arguments or ""]
            elif event.type == "tool-call-delta":
                calls[event.index][2] += event.delta.message.tool_calls.function.arguments or ""
            elif event.type == "message-end":
                finish = event.delta.finish_reason
                error = event.delta.error
    assert text == expected["text"]
    assert plan == expected["reasoning"]
    assert [(i, n, json.loads(a)) for i, n, a in calls.values()] == [
        (i["id"], i["name"], i["arguments"]) for i in expected["invocations"]
    ]
    assert finish == expected["finish_reason"]
    assert (error is not None) == bool(expected["errors"])


def test_serve_route_and_views(tmp_path: Path) -> None:
    import httpx

    path = rec("cohere-tool-plan-parallel-tool-calls")
    with serving([path], Playback(speed=None)) as server:
        response = httpx.post(
            server.url + "/v2/chat", json={"model": "m", "messages": [], "stream": True}, timeout=10
        )
        assert response.content == body(path)
        refused = httpx.post(server.url + "/v2/chat", json={"model": "m"}, timeout=10)
        assert refused.status_code == 400 and "message" in refused.json()
    runner = CliRunner()
    for args in (
        ["check", str(path)],
        ["inspect", str(path)],
        ["replay", str(path), "--speed", "max"],
    ):
        result = runner.invoke(app, args, env={"COLUMNS": "120"})
        assert result.exit_code == 0, result.output
    out = tmp_path / "r.html"
    assert runner.invoke(app, ["report", str(path), "-o", str(out)]).exit_code == 0
    assert "get_weather" in out.read_text()
