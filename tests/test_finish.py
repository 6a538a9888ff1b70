"""The normalized finish class: one mapping for the summary, transcript, diff and emitter."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from streamtool.cli.emit import OpenAISSESink
from streamtool.core.drive.replay_file import replay_file
from streamtool.core.model.finish import CLASSES, REASONS, finish_class
from streamtool.core.outputs.diff import diff_streams
from streamtool.core.outputs.transcript import build_transcript

from .conftest import RECORDINGS

ALL_RECORDINGS = sorted(RECORDINGS.glob("*.jsonl"))


@pytest.mark.parametrize(
    ("reason", "kw", "expected"),
    [
        ("tool_use", {}, "tool_calls"),
        ("function_call", {}, "tool_calls"),
        ("STOP", {"client_calls": True}, "tool_calls"),  # Gemini: STOP after function calls
        ("completed", {"client_calls": True}, "tool_calls"),  # Responses with function calls
        ("stop", {"client_calls": True}, "tool_calls"),  # Chat servers that say "stop"
        ("completed", {}, "stop"),
        ("end_turn", {}, "stop"),
        ("pause_turn", {}, "stop"),
        ("max_tokens", {}, "length"),
        ("MAX_TOKENS", {}, "length"),
        ("max_output_tokens", {}, "length"),
        ("model_context_window_exceeded", {}, "length"),
        ("SAFETY", {}, "content_filter"),
        ("content_filter", {}, "content_filter"),
        ("refusal", {}, "refusal"),
        ("completed", {"refusal": True}, "refusal"),  # a Responses refusal part
        ("failed", {}, "error"),
        ("error", {}, "error"),
        ("MALFORMED_FUNCTION_CALL", {}, "error"),
        ("cancelled", {}, "cancelled"),
        (None, {}, "unknown"),
        (None, {"errors": True}, "error"),
        ("something_new", {}, "unknown"),
        ("length", {"client_calls": True}, "length"),  # a limit stays a limit
    ],
)
def test_finish_class(reason: str | None, kw: dict[str, bool], expected: str) -> None:
    assert finish_class(reason, **kw) == expected


def test_every_mapped_reason_has_a_known_class() -> None:
    assert set(REASONS.values()) <= set(CLASSES)


@pytest.mark.parametrize("path", ALL_RECORDINGS, ids=lambda p: p.stem)
def test_summary_and_transcript_carry_the_class(path: Path) -> None:
    engine = replay_file(path, transcript=True)
    summary = engine.summary()
    transcript = build_transcript(engine)
    assert summary["finish_class"] == transcript["finish_class"] in CLASSES
    client = [i for i in summary["invocations"] if not i.get("server_side")]
    if client and summary["finish_reason"] is not None:
        assert summary["finish_class"] in ("tool_calls", "length")


def test_gemini_and_responses_tool_calls_mean_the_same_finish() -> None:
    gemini = replay_file(RECORDINGS / "gemini-text-then-function-call.jsonl", transcript=True)
    responses = replay_file(
        RECORDINGS / "openai-responses-text-then-function-call.jsonl", transcript=True
    )
    assert (gemini.finish_reason, responses.finish_reason) == ("STOP", "completed")
    result = diff_streams(gemini, responses)
    row = next(r for r in result.rows if r.field == "finish_reason")
    assert row.same and row.note == "both mean 'tool_calls'"
    assert "finish_reason" not in result.differences


@pytest.mark.parametrize("path", ALL_RECORDINGS, ids=lambda p: p.stem)
def test_emitted_openai_stream_means_the_same(tmp_path: Path, path: Path) -> None:
    out = io.BytesIO()
    sink = OpenAISSESink(out)
    original = replay_file(path, on_items=sink.on_items, transcript=True)
    sink.close(original)
    emitted = tmp_path / f"{path.stem}.sse"
    emitted.write_bytes(out.getvalue())
    result = diff_streams(original, replay_file(emitted, transcript=True))
    assert result.differences == []


def test_chat_refusal_is_kept_apart_from_the_text_and_its_class() -> None:
    """A refusal (``delta.refusal``) is the summary's ``refusal``, not its ``text``, as the SDKs
    keep ``message.refusal`` apart from ``message.content``; the transcript's segment is the
    text segment marked ``refusal``."""
    engine = replay_file(RECORDINGS / "openai-chat-refusal.jsonl", transcript=True)
    summary = engine.summary()
    assert summary["text"] == ""
    assert summary["refusal"] == "I'm sorry, I can't help with that."
    assert (summary["finish_reason"], summary["finish_class"]) == ("stop", "refusal")
    (text,) = [s for s in build_transcript(engine)["segments"] if s["type"] == "text"]
    assert text["metadata"] == {"refusal": True}
