"""The bundled text-parser recordings: expected summaries through ``streamtool replay`` and the
library, and the same summary whatever the network reads' boundaries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from streamtool.cli.main import app
from streamtool.core.drive.replay_file import replay_file
from streamtool.core.engine.replay import ReplayEngine
from streamtool.core.model.records import Chunk
from streamtool.core.recording.reader import Source

from .conftest import RECORDINGS

GREET = (
    "def greet(name: str) -> str:\n"
    '    """Return a greeting for name."""\n'
    "    if not name:\n"
    '        raise ValueError("name must not be empty")\n'
    '    return f"Hello, {name}!"\n'
    "\n\n"
    'if __name__ == "__main__":\n'
    '    print(greet("World"))\n'
)

SETTINGS = '[server]\nhost = "127.0.0.1"\nport = 8080\n\n[log]\nlevel = "info"\n'

EXPECTED: dict[str, dict[str, Any]] = {
    "openai-xml-tool-calls-write-file.jsonl": {
        "parser": "xml",
        "text": "I'll read the current module first, then write the new version.\n\n\n\n\n\n"
        "The new `greet` rejects an empty name.",
        "invocations": [
            {"id": "seg_2", "name": "read_file", "arguments": {"path": "src/greet.py"}},
            {
                "id": "seg_4",
                "name": "write_file",
                "arguments": {"path": "src/greet.py", "content": GREET},
            },
        ],
        "finish_reason": "stop",
        "errors": [],
        "quirks": ["usage_only_chunk"],
    },
    "ollama-json-tool-calls-code-fence.jsonl": {
        "parser": "json",
        "text": "I'll check the weather in both cities.\n\n```json\n\n```",
        "invocations": [
            {
                "id": "seg_2",
                "name": "get_weather",
                "arguments": {"city": "Paris", "unit": "celsius"},
            },
            {
                "id": "seg_3",
                "name": "get_weather",
                "arguments": {"city": "Tokyo", "unit": "celsius"},
            },
        ],
        "finish_reason": "stop",
        "errors": [],
        "quirks": [],
    },
    "together-sentinel-blocks.jsonl": {
        "parser": "sentinel",
        "text": "Writing the settings and running the tests.\n\n\n\n"
        "I'll report back when the tests finish.",
        "invocations": [
            {
                "id": "seg_2",
                "name": "write_file",
                "arguments": {
                    "path": "config/settings.toml",
                    "content": SETTINGS,
                },
            },
            {
                "id": "seg_4",
                "name": "run_bash",
                "arguments": {"command": "pytest -q tests/test_settings.py"},
            },
            {
                "id": "seg_6",
                "name": "report_status",
                "arguments": {"status": "running", "note": "output goes to [[logs]]"},
            },
        ],
        "finish_reason": "stop",
        "errors": [],
        "quirks": [],
    },
    "openrouter-xml-write-file-cut-off.jsonl": {
        "parser": "xml",
        "text": "Running the linter, then saving the notes.\n\n",
        "invocations": [
            {"id": "seg_2", "name": "run_bash", "arguments": {"command": "ruff check src"}},
        ],
        "finish_reason": None,
        "errors": [
            ("truncated", None),
            (
                "segment",
                "unterminated write_file call (seg_4): the stream ended before </write_file>",
            ),
            ("recording_interrupted", None),
        ],
        "quirks": ["sse_comment_keepalive"],
    },
}


def check_summary(summary: dict[str, Any], expected: dict[str, Any]) -> None:
    assert summary["parser"] == expected["parser"]
    assert summary["converter"] == "openai-chat"
    assert summary["text"] == expected["text"]
    assert summary["invocations"] == expected["invocations"]
    assert summary["finish_reason"] == expected["finish_reason"]
    errors = [(e["kind"], e["message"]) for e in summary["errors"]]
    assert len(errors) == len(expected["errors"])
    for (kind, message), (want_kind, want_message) in zip(errors, expected["errors"], strict=True):
        assert kind == want_kind
        if want_message is not None:
            assert message == want_message
    assert [q["id"] for q in summary["quirks"]] == expected["quirks"]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_cli_replay_summary(name: str) -> None:
    expected = EXPECTED[name]
    path = RECORDINGS / name
    result = CliRunner().invoke(
        app, ["replay", str(path), "--parser", expected["parser"], "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    check_summary(json.loads(result.stdout), expected)


def test_cut_off_recording_keeps_the_partial_file_visible() -> None:
    engine = replay_file(
        RECORDINGS / "openrouter-xml-write-file-cut-off.jsonl", parser="xml", keep_events=True
    )
    events = engine.handler.get_all_events()
    partial = "".join(e.delta or "" for e in events if e.segment_id == "seg_4")
    assert partial.startswith("# Lint notes\n\n- src/app.py: unused import `os`\n- src/db")
    end = [e for e in events if e.segment_id == "seg_4"][-1]
    assert end.metadata == {
        "path": "notes/lint.md",
        "incomplete": True,
        "error": "unterminated write_file call (seg_4): the stream ended before </write_file>",
    }


def test_a_text_parser_on_a_stream_with_api_tool_calls_notes_a_quirk() -> None:
    engine = replay_file(RECORDINGS / "openai-parallel-tool-calls.jsonl", parser="xml")
    summary = engine.summary()
    assert summary["invocations"] == []
    quirk = [q for q in summary["quirks"] if q["id"] == "tool_calls_ignored_by_parser"]
    assert len(quirk) == 1 and "xml parser" in quirk[0]["detail"]
    # the api_tool_call parser does see them: the quirk names something real
    assert replay_file(RECORDINGS / "openai-parallel-tool-calls.jsonl").summary()["invocations"]


def replay_rechunked(path: Path, parser: str, cuts: list[int]) -> dict[str, Any]:
    source = Source(path)
    raw = b"".join(
        c.data if isinstance(c.data, bytes) else c.data.encode("utf-8") for c in source.chunks()
    )
    bounds = sorted({c % len(raw) for c in cuts} - {0})
    engine = ReplayEngine(source.header, parser=parser, source=str(path))
    last = 0
    for b in [*bounds, len(raw)]:
        engine.feed_chunk(Chunk(None, raw[last:b]))
        last = b
    engine.finish(source.end)
    summary = engine.summary()
    del summary["stats"]
    return summary


@pytest.mark.parametrize("name", sorted(EXPECTED))
@settings(max_examples=10, deadline=None)
@given(cuts=st.lists(st.integers(min_value=1, max_value=10**6), max_size=60))
def test_network_read_boundaries_do_not_change_the_summary(name: str, cuts: list[int]) -> None:
    path = RECORDINGS / name
    parser = EXPECTED[name]["parser"]
    whole = replay_file(path, parser=parser).summary()
    del whole["stats"]
    assert replay_rechunked(path, parser, cuts) == whole
