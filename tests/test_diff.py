"""``streamtool diff``: two replays side by side; exit 0 when they mean the same."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from streamtool.cli.main import app
from streamtool.core.drive.replay_file import replay_file
from streamtool.core.model.records import Header
from streamtool.core.outputs.diff import (
    align,
    describe,
    diff_descriptions,
    finish_class,
    first_difference,
)
from streamtool.core.recording.writer import RecordingWriter

from .conftest import RECORDINGS
from .helpers import chat_chunk, recording_body, sse

TOOLS = RECORDINGS / "openai-parallel-tool-calls.jsonl"
ERROR = RECORDINGS / "openrouter-error-in-stream.jsonl"


def run(*args: str) -> tuple[int, str, str]:
    env = dict(os.environ, COLUMNS="200")
    result = CliRunner().invoke(app, ["diff", *args], env=env)
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit
    ), result.exception
    return result.exit_code, result.stdout, result.stderr


def run_json(*args: str) -> tuple[int, dict[str, Any]]:
    code, out, err = run(*args, "--format", "json")
    assert err == ""
    return code, json.loads(out)


def rows(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["field"]: r for r in data["rows"]}


def write(path: Path, header: Header, body: bytes, size: int, step: float = 0.01) -> Path:
    with RecordingWriter(path, header) as writer:
        for n, i in enumerate(range(0, len(body), size)):
            writer.write_read(0.5 + n * step, body[i : i + size])
    return path


def chat_header(model: str = "gpt-4o-2024-08-06") -> Header:
    return Header(
        provider="openai",
        api="chat.completions",
        request={
            "method": "POST",
            "url": "https://api.openai.com/v1/chat/completions",
            "headers": {"content-type": "application/json"},
            "body": {"model": model, "stream": True},
        },
        response={"status": 200, "headers": {"content-type": "text/event-stream"}},
    )


def chat_body(deltas: list[tuple[dict[str, Any], str | None]], usage: dict | None = None) -> bytes:
    """An OpenAI Chat Completions stream: one event per ``(delta, finish_reason)``."""
    chunks = [chat_chunk(delta, finish) for delta, finish in deltas]
    if usage:
        chunks.append(chat_chunk(choices=[], usage=usage))
    return sse(*chunks)


def tool_stream(call_id: str, pieces: list[str], text: str = "Checking.") -> bytes:
    head = {"index": 0, "id": call_id, "type": "function"}
    deltas: list[tuple[dict[str, Any], str | None]] = [
        ({"role": "assistant", "content": text}, None),
        ({"tool_calls": [dict(head, function={"name": "get_weather", "arguments": ""})]}, None),
    ]
    for piece in pieces:
        deltas.append(({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}, None))
    deltas.append(({}, "tool_calls"))
    return chat_body(deltas, {"prompt_tokens": 10, "completion_tokens": len(pieces)})


# -- same meaning --------------------------------------------------------------------------
def test_a_recording_against_itself() -> None:
    code, data = run_json(str(TOOLS), str(TOOLS))
    assert code == 0
    assert data["same_meaning"] is True and data["differences"] == []
    assert all(r["same"] for r in data["rows"])
    assert data["a"] == data["b"]


def test_rechunked_crlf_copy_means_the_same_but_arrived_differently(tmp_path: Path) -> None:
    header, body, _ = recording_body(TOOLS)
    assert b"\r" not in body
    crlf = write(tmp_path / "crlf.jsonl", header, body.replace(b"\n", b"\r\n"), 13, 0.2)
    code, data = run_json(str(TOOLS), str(crlf))
    assert code == 0, data["differences"]
    r = rows(data)
    assert r["crlf"]["a"] is False and r["crlf"]["b"] is True and not r["crlf"]["same"]
    assert r["chunks"]["a"] == 10 and r["chunks"]["b"] > 100
    assert r["ttft_s"]["a"] != r["ttft_s"]["b"]
    assert not any(x["meaning"] for x in data["rows"] if not x["same"])
    assert data["b"]["tool_calls"] == data["a"]["tool_calls"]


def test_keepalive_comments_are_arrival_not_meaning(tmp_path: Path) -> None:
    header, body, _ = recording_body(TOOLS)
    events = body.split(b"\n\n")
    with_comments = b"\n\n".join(b": OPENROUTER PROCESSING\n\n" + e if e else e for e in events)
    other = write(tmp_path / "comments.jsonl", header, with_comments, 64)
    code, data = run_json(str(TOOLS), str(other))
    assert code == 0
    r = rows(data)
    assert r["comments"]["a"] == 0 and r["comments"]["b"] == len([e for e in events if e])
    assert "sse_comment_keepalive" in r["quirks"]["b"]
    assert not r["quirks"]["same"] and not r["quirks"]["meaning"]


def test_other_ids_and_usage_mean_the_same(tmp_path: Path) -> None:
    a = write(
        tmp_path / "a.jsonl",
        chat_header(),
        tool_stream("call_AAA111", ['{"city": ', '"Rome"}']),
        50,
    )
    b_body = tool_stream("call_BBB222", ['{"city": ', '"Rome"}']).replace(
        b'"prompt_tokens": 10', b'"prompt_tokens": 99'
    )
    b = write(tmp_path / "b.jsonl", chat_header(), b_body, 50)
    code, data = run_json(str(a), str(b))
    assert code == 0
    r = rows(data)
    assert r["tool call 1 id"]["a"] == "call_AAA111" and r["tool call 1 id"]["b"] == "call_BBB222"
    assert not r["tool call 1 id"]["same"] and not r["tool call 1 id"]["meaning"]
    assert r["usage"]["a"]["input_tokens"] == 10 and r["usage"]["b"]["input_tokens"] == 99
    assert r["tool call 1"]["same"] and r["tool call 1"]["meaning"]
    # segments line up by content; their ids are shown but not compared
    assert r["segment 2"]["a"]["id"] == "call_AAA111" and r["segment 2"]["same"]


def test_arguments_all_at_once_or_incremental(tmp_path: Path) -> None:
    whole = write(
        tmp_path / "whole.jsonl", chat_header(), tool_stream("call_1", ['{"city":"Rome"}']), 4096
    )
    parts = ['{"ci', 'ty": "Ro', 'me"', "}"]
    pieces = write(tmp_path / "pieces.jsonl", chat_header(), tool_stream("call_1", parts), 4096)
    code, data = run_json(str(whole), str(pieces))
    assert code == 0  # {"city":"Rome"} and {"city": "Rome"} are the same arguments
    r = rows(data)
    assert r["tool call 1 arguments"]["a"] == "all at once"
    assert r["tool call 1 arguments"]["b"] == "incremental (4 fragments)"
    assert data["a"]["tool_calls"][0]["fragments"] == 1
    assert not r["segment 2"]["same"]  # the raw argument text differs (a space)


# -- different meaning ---------------------------------------------------------------------
def test_one_recording_through_two_parsers() -> None:
    code, data = run_json(str(TOOLS), "--parser-a", "api_tool_call", "--parser-b", "passthrough")
    assert code == 1
    assert data["differences"] == ["tool call 1", "tool call 2"]
    r = rows(data)
    assert r["parser"]["a"] == "api_tool_call" and r["parser"]["b"] == "passthrough"
    assert r["tool call 1"]["a"] == {
        "name": "get_weather",
        "arguments": {"city": "Paris", "unit": "celsius"},
    }
    assert r["tool call 1"]["b"] is None
    assert "tool_calls_ignored_by_parser" in r["quirks"]["b"]


def test_changed_text_and_arguments(tmp_path: Path) -> None:
    a = write(
        tmp_path / "a.jsonl",
        chat_header(),
        tool_stream("call_1", ['{"city": "Rome"}'], "Checking the weather."),
        40,
    )
    b = write(
        tmp_path / "b.jsonl",
        chat_header(),
        tool_stream("call_1", ['{"city": "Oslo"}'], "Checking the climate."),
        40,
    )
    code, data = run_json(str(a), str(b))
    assert code == 1
    assert data["differences"] == ["text", "tool call 1"]
    r = rows(data)
    assert r["text"]["note"] == "first difference at character 13"
    assert r["tool call 1"]["a"]["arguments"] == {"city": "Rome"}
    assert r["tool call 1"]["b"]["arguments"] == {"city": "Oslo"}
    assert r["finish_reason"]["same"] and r["reasoning"]["same"]


def test_a_cut_off_copy_differs_in_errors(tmp_path: Path) -> None:
    lines = ERROR.read_text(encoding="utf-8").splitlines(keepends=True)
    assert '"type":"end"' in lines[-1].replace(" ", "")
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(lines[:-1]), encoding="utf-8")
    code, data = run_json(str(ERROR), str(cut))
    assert code == 1
    assert data["differences"] == ["errors"]
    assert any(e.startswith("recording_cut_off:") for e in rows(data)["errors"]["b"])


def test_unparsed_arguments_are_compared_as_raw_text(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", chat_header(), tool_stream("call_1", ['{"city": "Ro']), 4096)
    b = write(tmp_path / "b.jsonl", chat_header(), tool_stream("call_1", ['{"city": "Os']), 4096)
    code, data = run_json(str(a), str(b))
    assert code == 1
    call = rows(data)["tool call 1"]
    assert call["a"] == {"name": "get_weather", "arguments": None, "raw_arguments": '{"city": "Ro'}
    assert "tool call 1" in data["differences"]
    assert run_json(str(a), str(a))[0] == 0


# -- the sans-IO pieces --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("tool_calls", "tool_use", True),
        ("stop", "end_turn", True),
        ("STOP", "stop", True),
        ("length", "max_tokens", True),
        ("MAX_TOKENS", "length", True),
        ("content_filter", "SAFETY", True),
        ("stop", "tool_calls", False),
        ("length", "stop", False),
        (None, "stop", False),
    ],
)
def test_finish_reason_classes(a: str | None, b: str | None, same: bool) -> None:
    assert (finish_class(a) == finish_class(b)) is same


def test_finish_reason_vocabularies_mean_the_same() -> None:
    side = describe(replay_file(TOOLS, transcript=True))
    assert side["finish_class"] == "tool_calls"
    other = dict(side, finish_reason="tool_use")
    result = diff_descriptions(side, other)
    assert result.same_meaning
    row = next(r for r in result.rows if r.field == "finish_reason")
    assert row.a == "tool_calls" and row.b == "tool_use" and row.same
    assert row.note == "both mean 'tool_calls'"
    longer = diff_descriptions(side, dict(side, finish_reason="length", finish_class="length"))
    assert not longer.same_meaning
    row = next(r for r in longer.rows if r.field == "finish_reason")
    assert row.note == "'tool_calls' vs 'length'"


def test_errors_compare_by_kind_not_by_count_nor_the_capture_end() -> None:
    side = describe(replay_file(TOOLS, transcript=True))
    err = {"kind": "provider_error", "message": "x"}
    once = dict(side, errors=[err])
    twice = dict(side, errors=[err, dict(err, message="y")])
    assert diff_descriptions(once, twice).same_meaning
    ended = dict(once, errors=[err, {"kind": "recording_error", "message": "HTTP 529"}])
    assert diff_descriptions(once, ended).same_meaning
    restated = dict(once, errors=[err, {"kind": "text_mismatch", "message": "done differs"}])
    assert diff_descriptions(once, restated).same_meaning
    cut = dict(once, errors=[err, {"kind": "recording_cut_off", "message": "cut"}])
    assert diff_descriptions(once, cut).differences == ["errors"]
    assert diff_descriptions(side, once).differences == ["errors"]


def test_align_pairs_equal_items_and_leaves_gaps() -> None:
    assert align("abc", "ac", str) == [("a", "a"), ("b", None), ("c", "c")]
    assert align("ab", "xb", str) == [("a", "x"), ("b", "b")]
    assert align("", "xy", str) == [(None, "x"), (None, "y")]


def test_first_difference() -> None:
    assert first_difference("hello", "help") == 3
    assert first_difference("abc", "abcdef") == 3
    assert first_difference("", "x") == 0
    assert first_difference("x" * 10_000 + "a", "x" * 10_000 + "b") == 10_000


# -- text view and bad input ---------------------------------------------------------------
def test_text_view_side_by_side() -> None:
    code, out, err = run(str(TOOLS), "--parser-b", "passthrough")
    assert code == 1 and err == ""
    assert "A: openai-parallel-tool-calls.jsonl (openai-chat, api_tool_call)" in out
    assert "B: openai-parallel-tool-calls.jsonl (openai-chat, passthrough)" in out
    for title in ("MEANING", "SEGMENTS", "ARRIVAL"):
        assert title in out
    line = next(x for x in out.splitlines() if "tool call 1 " in x and "get_weather" in x)
    assert '"Paris"' in line and "≠" in line
    assert "incremental (10 fragments)" in out
    assert out.rstrip().endswith("meaning differs: tool call 1, tool call 2")


def test_text_view_same_meaning() -> None:
    code, out, _ = run(str(TOOLS), str(TOOLS))
    assert code == 0
    assert out.rstrip().endswith("same meaning")
    assert "≠" not in out.split("= same")[0]


def test_broken_input_is_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(TOOLS.read_text(encoding="utf-8").splitlines()[0] + "\n{oops\n")
    code, out, err = run(str(TOOLS), str(bad))
    assert code == 2
    assert err.startswith(f"streamtool: error: {bad}:2: not JSON (Expecting property name")
    assert err.count("\n") == 1
    assert out == ""
    code, _, err = run(str(TOOLS), "--parser-b", "nope")
    assert code == 2 and "unknown parser 'nope'" in err and err.count("\n") == 1
    code, _, err = run(str(tmp_path / "missing.jsonl"), str(TOOLS))
    assert code == 2 and err.count("\n") == 1 and "missing.jsonl" in err


def test_incremental_arguments_are_counted_for_every_wire_api() -> None:
    """Anthropic and Responses fragments are appended as they are; they still count."""
    from streamtool.core.drive.replay_file import replay_file
    from streamtool.core.outputs.diff import describe

    for name in ("anthropic-text-then-tool-use", "openai-responses-text-then-function-call"):
        calls = describe(replay_file(RECORDINGS / f"{name}.jsonl", transcript=True))["tool_calls"]
        assert calls and calls[0]["fragments"] > 1, name
        assert calls[0]["arguments_arrived"].startswith("incremental"), name
