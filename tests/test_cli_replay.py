"""``streamtool replay``: formats, parser selection, and errors that list the valid names."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from .conftest import RECORDINGS

REC = str(RECORDINGS / "openai-parallel-tool-calls.jsonl")


def run(*args: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_PARSER")}
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-m", "streamtool.cli", *args], capture_output=True, text=True, env=env
    )


def test_json_is_the_summary_field_for_field():
    proc = run("replay", REC, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert list(summary) == [
        "source",
        "converter",
        "parser",
        "text",
        "refusal",
        "reasoning",
        "invocations",
        "citations",
        "finish_reason",
        "finish_class",
        "usage",
        "errors",
        "quirks",
        "stats",
    ]
    assert {"chunks", "bytes", "sse_events", "duration_s", "ttft_s"} <= set(summary["stats"])
    assert summary["source"] == REC and summary["parser"] == "api_tool_call"


def test_jsonl_streams_every_segment_event_and_invocation():
    proc = run("replay", REC, "--format", "jsonl")
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    kinds = [r["type"] for r in records]
    assert kinds[-1] == "summary"
    segs = [r for r in records if r["type"] == "segment"]
    assert [r["event"] for r in segs if r["event"] != "SEGMENT_CONTENT"] == [
        "SEGMENT_START",
        "SEGMENT_START",
        "SEGMENT_END",  # chat completions close parallel calls only at finish_reason
        "SEGMENT_END",
    ]
    first_call = segs[0]["segment_id"]
    args = "".join(
        r["delta"]
        for r in segs
        if r["event"] == "SEGMENT_CONTENT" and r["segment_id"] == first_call
    )
    assert json.loads(args) == {"city": "Paris", "unit": "celsius"}
    invocations = [r for r in records if r["type"] == "invocation"]
    assert [i["id"] for i in invocations] == [
        s["segment_id"] for s in segs if s["event"] == "SEGMENT_START"
    ]
    # each invocation is printed right after its segment ends
    ends = [i for i, r in enumerate(records) if r.get("event") == "SEGMENT_END"]
    assert kinds.index("invocation") == ends[0] + 1
    assert all("t" in r for r in records[:-1])


def test_text_format_is_readable():
    proc = run("replay", REC, "--format", "text")
    assert proc.returncode == 0
    assert "get_weather" in proc.stdout and '"city": "Tokyo"' in proc.stdout
    assert "finish_reason: tool_calls" in proc.stdout


def test_parser_default_comes_from_the_environment():
    proc = run("replay", REC, "--format", "json", env_extra={"STREAMTOOL_PARSER": "passthrough"})
    assert json.loads(proc.stdout)["parser"] == "passthrough"
    # the older name is still read; the new one wins over it
    proc = run(
        "replay", REC, "--format", "json", env_extra={"AUTOBYTEUS_STREAM_PARSER": "passthrough"}
    )
    assert json.loads(proc.stdout)["parser"] == "passthrough"
    both = {"STREAMTOOL_PARSER": "xml", "AUTOBYTEUS_STREAM_PARSER": "passthrough"}
    assert (
        json.loads(run("replay", REC, "--format", "json", env_extra=both).stdout)["parser"] == "xml"
    )
    proc = run(
        "replay",
        REC,
        "--format",
        "json",
        "--parser",
        "api_tool_call",
        env_extra={"AUTOBYTEUS_STREAM_PARSER": "passthrough"},
    )
    assert json.loads(proc.stdout)["parser"] == "api_tool_call"


def test_unknown_names_list_the_valid_ones():
    proc = run("replay", REC, "--parser", "yaml")
    assert proc.returncode == 2
    assert "unknown parser 'yaml'" in proc.stderr and "api_tool_call" in proc.stderr
    assert "passthrough" in proc.stderr and proc.stderr.count("\n") == 1
    proc = run("replay", REC, "--converter", "mistral-native")
    assert proc.returncode == 2
    assert "unknown converter 'mistral-native'" in proc.stderr and "openai-chat" in proc.stderr
    proc = run("replay", REC, "--parser", "nope", env_extra={"AUTOBYTEUS_STREAM_PARSER": "nope"})
    assert proc.returncode == 2 and "unknown parser 'nope'" in proc.stderr
    proc = run("replay", REC, "--format", "yaml")
    assert proc.returncode == 2 and "json" in proc.stderr


def test_undetectable_stream_is_a_clear_error(tmp_path):
    body = tmp_path / "odd.sse"
    body.write_text('data: {"hello": "world"}\n\n')
    proc = run("replay", str(body))
    assert proc.returncode == 2
    assert "cannot tell which API" in proc.stderr and "--converter" in proc.stderr
    assert "Traceback" not in proc.stderr
    proc = run("replay", str(body), "--converter", "openai-chat", "--format", "json")
    assert json.loads(proc.stdout)["converter"] == "openai-chat"
    # an object without choices means nothing to openai-chat: it says so (exit 1)
    assert proc.returncode == 1 and "converter understood none of its 1 event:" in proc.stderr


def test_help_does_not_import_the_sdks():
    code = (
        "import sys; from streamtool.cli.main import app; import typer.testing as t;"
        "r = t.CliRunner().invoke(app, ['--help']); assert r.exit_code == 0, r.output;"
        "r = t.CliRunner().invoke(app, ['replay', sys.argv[1], '--format', 'json']);"
        "assert r.exit_code == 0, r.output;"
        "bad = [m for m in ('openai', 'anthropic', 'starlette', 'uvicorn') if m in sys.modules];"
        "assert not bad, bad"
    )
    proc = subprocess.run([sys.executable, "-c", code, REC], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_each_invocation_follows_the_end_of_its_own_segment():
    proc = run("replay", REC, "--format", "jsonl")
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    ends = [i for i, r in enumerate(records) if r.get("event") == "SEGMENT_END"]
    assert len(ends) == 2
    for i in ends:
        assert records[i + 1]["type"] == "invocation"
        assert records[i + 1]["id"] == records[i]["segment_id"]
