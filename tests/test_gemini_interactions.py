"""Google's Interactions API: the ``gemini-interactions`` converter, and google-genai reading
what ``serve`` replays."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from streamtool.cli.main import app
from streamtool.core.engine.replay import ReplayEngine
from streamtool.core.exchange.playback import Playback
from streamtool.core.model.records import Chunk, End, Header
from streamtool.core.net.server import serving

from .helpers import recording_summary as summary
from .serve_helpers import body_of as body
from .serve_helpers import recording as rec

genai = pytest.importorskip("google.genai")

NAMES = [
    "gemini-interactions-thought-search-text",
    "gemini-interactions-parallel-function-calls",
    "gemini-interactions-error-mid-stream",
    "gemini-interactions-content-events-function-call",
]
STEPS = NAMES[:3]


def events(lines: list[dict[str, Any]]) -> bytes:
    return b"".join(f"event: {e['event_type']}\ndata: {json.dumps(e)}\n\n".encode() for e in lines)


def replay(data: bytes) -> dict[str, Any]:
    engine = ReplayEngine(converter="gemini-interactions")
    engine.feed_chunk(Chunk(0.0, data))
    engine.finish(End(0.1, "complete"))
    return engine.summary()


# -- the converter -----------------------------------------------------------------------------
def test_thought_search_and_text() -> None:
    result = summary(rec("gemini-interactions-thought-search-text"))
    assert result["converter"] == "gemini-interactions"
    assert result["reasoning"] == "**Finding the tallest penguin**\n\nI should check a source."
    assert result["text"] == (
        "The emperor penguin is the tallest penguin: adults stand about 1.1 m tall."
    )
    [search] = result["invocations"]
    assert (search["id"], search["name"], search["arguments"]) == (
        "8k2x1q7d",
        "google_search",
        {"queries": ["tallest penguin species height"]},
    )
    assert search["server_side"] is True
    assert search["metadata"]["result"]["result"][0]["title"] == "Emperor penguin - Wikipedia"
    assert [c["url"] for c in result["citations"]] == [
        "https://en.wikipedia.org/wiki/Emperor_penguin"
    ]
    assert result["finish_reason"] == "completed"
    # the output counts the thoughts, as Gemini's usage is read
    assert result["usage"] == {
        "input_tokens": 18,
        "output_tokens": 98,
        "reasoning_tokens": 57,
        "total_tokens": 328,
    }
    assert result["errors"] == [] and result["quirks"] == []


def test_parallel_function_calls_with_streamed_arguments() -> None:
    result = summary(rec("gemini-interactions-parallel-function-calls"))
    assert result["text"] == "I'll look up both cities at once."
    assert [(i["id"], i["name"], i["arguments"]) for i in result["invocations"]] == [
        ("q1n5z7rk", "get_weather", {"city": "Paris", "unit": "celsius"}),
        ("x8c2m4wd", "get_weather", {"city": "Tokyo", "unit": "celsius"}),
    ]
    assert result["finish_reason"] == "requires_action"
    assert result["errors"] == [] and result["quirks"] == []


def test_error_event_mid_stream() -> None:
    result = summary(rec("gemini-interactions-error-mid-stream"))
    assert result["text"] == "Here is a plan for your trip:\n1. Day one: the old town"
    assert [e["message"] for e in result["errors"]] == [
        "resource_exhausted: The model is overloaded. Please try again later."
    ]
    assert [q["id"] for q in result["quirks"]] == ["interactions_error_event"]
    assert result["finish_reason"] is None


def test_older_content_events() -> None:
    result = summary(rec("gemini-interactions-content-events-function-call"))
    assert result["text"] == "Let me check the weather in Paris."
    assert [(i["id"], i["arguments"]) for i in result["invocations"]] == [
        ("3mt7gq0s", {"city": "Paris", "unit": "celsius"})
    ]
    assert result["usage"] == {"input_tokens": 71, "output_tokens": 27, "total_tokens": 98}
    assert [q["id"] for q in result["quirks"]] == ["interactions_content_events"]


def test_failed_status_cut_stream_and_orphans() -> None:
    failed = replay(
        events(
            [
                {"event_type": "interaction.created", "interaction": {"id": "i", "status": "x"}},
                {
                    "event_type": "interaction.completed",
                    "interaction": {
                        "id": "i",
                        "status": "failed",
                        "errors": [{"code": "internal", "message": "boom"}],
                    },
                },
            ]
        )
    )
    assert failed["finish_reason"] == "failed"
    assert [e["message"] for e in failed["errors"]] == ["the interaction failed: internal: boom"]
    start = {"event_type": "step.start", "index": 0}
    cut = replay(
        events(
            [
                {"event_type": "interaction.created", "interaction": {"id": "i"}},
                {**start, "step": {"type": "function_call", "id": "c1", "name": "f"}},
                {
                    "event_type": "step.delta",
                    "index": 0,
                    "delta": {"type": "arguments_delta", "arguments": '{"a": '},
                },
                {
                    "event_type": "step.delta",
                    "index": 5,
                    "delta": {"type": "arguments_delta", "arguments": "1"},
                },
            ]
        )
    )
    truncated = [e for e in cut["errors"] if e["kind"] == "truncated"]
    assert len(truncated) == 1 and "c1" in truncated[0]["message"]
    assert "interactions_orphan_arguments_delta" in [q["id"] for q in cut["quirks"]]
    orphan = replay(
        events(
            [
                {
                    **start,
                    "step": {"type": "code_execution_result", "call_id": "zz", "result": "4"},
                },
                {"event_type": "step.stop", "index": 0},
                {"event_type": "interaction.completed", "interaction": {"status": "completed"}},
            ]
        )
    )
    assert [q["id"] for q in orphan["quirks"]] == ["interactions_orphan_result"]
    assert orphan["errors"] == []


def test_a_call_without_pieces_takes_its_start_arguments() -> None:
    result = replay(
        events(
            [
                {
                    "event_type": "step.start",
                    "index": 0,
                    "step": {
                        "type": "function_call",
                        "id": "c9",
                        "name": "lookup",
                        "arguments": {"q": "x"},
                    },
                },
                {"event_type": "step.stop", "index": 0},
                {
                    "event_type": "interaction.completed",
                    "interaction": {"status": "requires_action"},
                },
            ]
        )
    )
    assert [(i["id"], i["arguments"]) for i in result["invocations"]] == [("c9", {"q": "x"})]


@pytest.mark.parametrize("name", NAMES)
def test_detected_from_the_stream_alone(name: str) -> None:
    assert summary(rec(name), header=False)["converter"] == "gemini-interactions"


def test_the_interactions_url_is_read_by_this_converter_not_gemini() -> None:
    for url in (
        "https://generativelanguage.googleapis.com/v1beta/interactions",
        "http://127.0.0.1:8080/v1/interactions",
    ):
        header = Header(provider="gemini", request={"method": "POST", "url": url})
        engine = ReplayEngine(header)
        engine.feed_chunk(Chunk(None, body(rec("gemini-interactions-parallel-function-calls"))))
        engine.finish(End(None, "complete"))
        assert engine.converter_name == "gemini-interactions"


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=20_000), max_size=15))
def test_any_cut_gives_the_same_meaning(points: list[int]) -> None:
    for name in ("gemini-interactions-thought-search-text", NAMES[1], NAMES[3]):
        path = rec(name)
        data = body(path)
        cuts = sorted({p % (len(data) + 1) for p in points} | {0, len(data)})
        reads = [data[a:b] for a, b in zip(cuts, cuts[1:], strict=False) if b > a]
        expected, got = summary(path), summary(path, reads)
        for key in (
            "text",
            "reasoning",
            "invocations",
            "finish_reason",
            "usage",
            "errors",
            "citations",
        ):
            assert got[key] == expected[key], key


# -- the real SDK, against serve ---------------------------------------------------------------
def _sdk_reading(url: str) -> dict[str, Any]:
    from google.genai import types

    client = genai.Client(api_key="fake-key-local", http_options=types.HttpOptions(base_url=url))
    text, thoughts, calls, status, error = "", "", {}, None, None
    for event in client.interactions.create(
        model="gemini-3-flash-preview", input="hi", stream=True
    ):
        raw = event.raw if getattr(event, "is_unknown", False) else None
        kind = raw["event_type"] if raw is not None else event.event_type
        if raw is not None:  # the older content events: the SDK passes them on as they are
            delta = raw.get("delta", {})
            if kind == "content.delta" and delta.get("type") == "text":
                text += delta["text"]
            elif kind == "content.delta" and delta.get("type") == "function_call":
                calls[raw["index"]] = [delta["id"], delta["name"], json.dumps(delta["arguments"])]
            elif kind == "interaction.complete":
                status = raw["interaction"]["status"]
        elif kind == "step.start" and event.step.type == "function_call":
            calls[event.index] = [event.step.id, event.step.name, ""]
        elif kind == "step.delta" and event.delta.type == "text":
            text += event.delta.text
        elif kind == "step.delta" and event.delta.type == "thought_summary":
            thoughts += event.delta.content.text
        elif kind == "step.delta" and event.delta.type == "arguments_delta":
            calls[event.index][2] += event.delta.arguments or ""
        elif kind == "interaction.completed":
            status = event.interaction.status
        elif kind == "error":
            error = f"{event.error.code}: {event.error.message}"
    return {
        "text": text,
        "reasoning": thoughts,
        "calls": [(i, n, json.loads(a)) for i, n, a in calls.values()],
        "status": status,
        "error": error,
    }


@pytest.mark.parametrize("name", NAMES)
def test_google_genai_reads_what_the_replay_reads(name: str) -> None:
    path = rec(name)
    expected = summary(path)
    with serving([path], Playback(speed=None)) as server:
        got = _sdk_reading(server.url)
    assert got["text"] == expected["text"]
    assert got["reasoning"] == expected["reasoning"]
    client_calls = [i for i in expected["invocations"] if not i.get("server_side")]
    assert got["calls"] == [(i["id"], i["name"], i["arguments"]) for i in client_calls]
    assert got["status"] == expected["finish_reason"]
    assert got["error"] == (expected["errors"][0]["message"] if expected["errors"] else None)


def test_serve_route_is_byte_exact() -> None:
    import httpx

    path = rec("gemini-interactions-parallel-function-calls")
    with serving([path], Playback(speed=None)) as server:
        for route in ("/v1beta/interactions", "/v1/interactions"):
            response = httpx.post(
                server.url + route, json={"model": "m", "input": "hi", "stream": True}, timeout=10
            )
            assert response.status_code == 200
            assert response.content == body(path)


# -- the views ---------------------------------------------------------------------------------
runner = CliRunner()


@pytest.mark.parametrize("name", NAMES)
def test_every_view_works(name: str, tmp_path: Path) -> None:
    path = str(rec(name))
    expected = summary(rec(name))
    tree = runner.invoke(app, ["replay", path, "--speed", "max"], env={"COLUMNS": "120"})
    assert tree.exit_code == 0, tree.output
    assert expected["text"].split()[0] in tree.output
    inspected = runner.invoke(app, ["inspect", path, "--format", "json"])
    assert inspected.exit_code == 0, inspected.output
    assert json.loads(inspected.output)["reads"]
    check = runner.invoke(app, ["check", path])
    assert check.exit_code == 0, check.output
    out = tmp_path / "r.html"
    report = runner.invoke(app, ["report", path, "-o", str(out)])
    assert report.exit_code == 0, report.output
    assert expected["text"][:12] in out.read_text()


def test_conform_with_google_genai_as_the_client() -> None:
    """google-genai reads the step events as the replay does (an error event reported as one);
    written for steps, it reads nothing from the older content events: conform fails that
    recording and names the quirk that explains it."""
    client = Path(__file__).parent / "clients" / "gemini_interactions_client.py"
    result = runner.invoke(
        app,
        [
            "conform",
            *[a for n in NAMES for a in ("-r", str(rec(n)))],
            "--chunkings",
            "1",
            "--format",
            "json",
            "--",
            sys.executable,
            str(client),
        ],
    )
    assert result.exit_code == 1, result.output
    runs = {r["recording"]: r for r in json.loads(result.output)["results"]}
    assert {n: r["status"] for n, r in runs.items()} == {
        **dict.fromkeys(STEPS, "pass"),
        NAMES[3]: "fail",
    }
    legacy = runs[NAMES[3]]
    assert {d["field"] for d in legacy["differences"]} == {"text", "tool_calls"}
    assert [q["id"] for q in legacy["quirks"]] == ["interactions_content_events"]
