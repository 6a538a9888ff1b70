"""The transcript: what a replay meant, independent of how the bytes were cut or timed."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamtool.core.drive.replay_file import replay_file
from streamtool.core.engine.replay import DetectionError, ReplayEngine
from streamtool.core.model import SegmentEvent, SegmentType
from streamtool.core.model.records import Chunk, chunk_from_read
from streamtool.core.outputs.transcript import build_transcript, coalesce_segments, render
from streamtool.core.recording.reader import Source

from .conftest import RECORDINGS, corpus_params
from .helpers import recording_body

BUNDLED = sorted(RECORDINGS.glob("*.jsonl"))
TIMING_KEYS = {"t", "chunks", "bytes", "sse_events", "comments", "stats", "ttft_s", "duration_s"}


def outcome(run: Any) -> tuple[str, Any]:
    """A replay's transcript, or the error that stopped it (both must not depend on chunking)."""
    try:
        return "transcript", run()
    except DetectionError as exc:
        return "error", str(exc)


def replay_pieces(header: Any, pieces: list[bytes], end: Any, times: list[float]) -> dict:
    engine = ReplayEngine(header, transcript=True)
    for piece, t in zip(pieces, times, strict=True):
        # like a recorder: text when the piece is UTF-8 on its own, bytes otherwise
        engine.feed_chunk(chunk_from_read(t, piece))
    engine.finish(end)
    return build_transcript(engine)


def cut(body: bytes, points: list[int]) -> list[bytes]:
    bounds = [0, *sorted(set(points)), len(body)]
    return [body[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b > a]


@functools.cache
def as_recorded(path: Path) -> tuple[Any, bytes, Any, tuple[str, Any]]:
    """A recording's header, body and end, and the outcome of replaying it as recorded: read
    once per recording, not once per example."""
    header, body, end = recording_body(path)
    return header, body, end, outcome(lambda: build_transcript(replay_file(path, transcript=True)))


@pytest.mark.parametrize(
    "path",
    [pytest.param(p, id=p.name) for p in BUNDLED] + corpus_params("*/*.sse"),
)
# 25 cuttings of each recording, bundled and (where present) of the corpus: the property is
# checked on every one of them, some 1,700 cuttings in all with the corpus
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_rechunking_never_changes_the_transcript(path: Path, data: st.DataObject) -> None:
    header, body, end, expected = as_recorded(path)
    assert body, f"{path} has no body"
    points = data.draw(st.lists(st.integers(1, max(1, len(body) - 1)), max_size=60), "cuts")
    pieces = cut(body, points)
    times = data.draw(
        st.lists(st.floats(0, 5, allow_nan=False), min_size=len(pieces), max_size=len(pieces)).map(
            sorted
        ),
        "times",
    )
    assert outcome(lambda: replay_pieces(header, pieces, end, times)) == expected


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.name)
def test_one_byte_reads_give_the_same_transcript(path: Path) -> None:
    header, body, end = recording_body(path)
    expected = build_transcript(replay_file(path, transcript=True))
    pieces = [body[i : i + 1] for i in range(len(body))]
    got = replay_pieces(header, pieces, end, [i * 0.001 for i in range(len(pieces))])
    assert got == expected
    assert render(got) == render(expected)


def test_bundled_recordings_exist() -> None:
    assert len(BUNDLED) >= 5


def test_transcript_of_parallel_tool_calls() -> None:
    transcript = build_transcript(
        replay_file(RECORDINGS / "openai-parallel-tool-calls.jsonl", transcript=True)
    )
    assert list(transcript) == [
        "converter",
        "parser",
        "model",
        "segments",
        "invocations",
        "finish_reason",
        "finish_class",
        "usage",
        "errors",
        "quirks",
    ]
    assert transcript["converter"] == "openai-chat"
    assert transcript["parser"] == "api_tool_call"
    assert transcript["model"] == "gpt-4o-2024-08-06"
    segments = transcript["segments"]
    assert [s["type"] for s in segments] == ["tool_call", "tool_call"]
    invocations = transcript["invocations"]
    assert [s["id"] for s in segments] == [i["id"] for i in invocations]
    for seg, inv in zip(segments, invocations, strict=True):
        # the coalesced content is the whole argument text; START (tool_name) and END
        # (arguments) metadata are merged
        assert json.loads(seg["content"]) == inv["arguments"]
        assert seg["metadata"]["tool_name"] == inv["name"] == "get_weather"
        assert seg["metadata"]["arguments"] == inv["arguments"]
        assert "ended" not in seg
    assert [i["arguments"]["city"] for i in invocations] == ["Paris", "Tokyo"]
    assert transcript["finish_reason"] == "tool_calls"
    assert transcript["usage"]["input_tokens"] == 82


def test_transcript_keeps_reasoning_text_and_errors() -> None:
    deepseek = build_transcript(
        replay_file(RECORDINGS / "deepseek-reasoning-then-tool-call.jsonl", transcript=True)
    )
    assert [s["type"] for s in deepseek["segments"]] == ["reasoning", "tool_call"]
    assert deepseek["segments"][0]["content"].startswith("The user wants the weather")
    broken = build_transcript(
        replay_file(RECORDINGS / "openrouter-error-in-stream.jsonl", transcript=True)
    )
    assert broken["segments"][0]["type"] == "text"
    assert "provider_error" in [e["kind"] for e in broken["errors"]]
    assert broken["finish_reason"] == "error"


def walk_keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        keys = set(value)
        for v in value.values():
            keys |= walk_keys(v)
        return keys
    if isinstance(value, list):
        return set().union(*(walk_keys(v) for v in value)) if value else set()
    return set()


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.name)
def test_transcript_holds_nothing_about_chunks_or_time(path: Path) -> None:
    transcript = build_transcript(replay_file(path, transcript=True))
    assert not walk_keys({k: v for k, v in transcript.items() if k != "errors"}) & TIMING_KEYS


def test_render_is_stable_readable_json() -> None:
    transcript = build_transcript(
        replay_file(RECORDINGS / "ollama-parallel-calls-same-index.jsonl", transcript=True)
    )
    text = render(transcript)
    assert text == render(
        build_transcript(
            replay_file(RECORDINGS / "ollama-parallel-calls-same-index.jsonl", transcript=True)
        )
    )
    assert text.endswith("}\n")
    assert '\n  "segments": [\n' in text  # two-space indent, one key per line
    assert "北京" in text  # non-ASCII written as is
    assert json.loads(text) == transcript
    # keys keep the order they were given in, nothing is sorted
    assert (
        render({"b": 1, "a": {"z": 1, "y": 2}})
        == '{\n  "b": 1,\n  "a": {\n    "z": 1,\n    "y": 2\n  }\n}\n'
    )


def test_render_escapes_lone_surrogates() -> None:
    value = {"text": "half \ud83d of a pair, and \ude00 the other"}
    text = render(value)
    text.encode("utf-8")  # would raise on a lone surrogate
    assert "\\ud83d" in text and "\\ude00" in text
    assert json.loads(text) == value


def test_unfinished_replay_has_no_transcript() -> None:
    engine = ReplayEngine(Source(RECORDINGS / "openai-parallel-tool-calls.jsonl").header)
    engine.feed_chunk(Chunk(0.1, "data: {}\n\n"))
    with pytest.raises(ValueError, match="not finished"):
        build_transcript(engine)


def test_coalesce_merges_end_metadata_and_marks_unended_segments() -> None:
    events = [
        SegmentEvent.start("seg_1", SegmentType.TEXT, {"a": 1, "b": 1}),
        SegmentEvent.content("seg_1", "Hel"),
        SegmentEvent.start("w", SegmentType.WRITE_FILE, {"path": "x.py"}),
        SegmentEvent.content("seg_1", "lo"),
        SegmentEvent.content("w", "print()"),
        SegmentEvent.end("seg_1", {"b": 2, "c": 3}),
    ]
    assert coalesce_segments(events) == [
        {"type": "text", "id": "seg_1", "content": "Hello", "metadata": {"a": 1, "b": 2, "c": 3}},
        {
            "type": "write_file",
            "id": "w",
            "content": "print()",
            "metadata": {"path": "x.py"},
            "ended": False,
        },
    ]
