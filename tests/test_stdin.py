"""``-`` reads standard input in replay, check, diff and inspect."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from .conftest import RECORDINGS
from .helpers import stdin_and_file_json

REC = RECORDINGS / "openai-parallel-tool-calls.jsonl"
GOLDEN = RECORDINGS / "openai-parallel-tool-calls.golden.json"


def run(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "CI" and not k.endswith("_PARSER")}
    return subprocess.run(
        [sys.executable, "-m", "streamtool.cli", *args], capture_output=True, input=stdin, env=env
    )


def test_replay_reads_a_recording_from_stdin():
    from_stdin, from_file = stdin_and_file_json(run, "replay", REC)
    assert from_stdin["source"] == "-"
    assert {k: v for k, v in from_stdin.items() if k != "source"} == {
        k: v for k, v in from_file.items() if k != "source"
    }


def test_replay_reads_a_raw_body_from_stdin_and_bad_input_is_one_line():
    body = b'data: {"choices": [{"index": 0, "delta": {"content": "hi"}}]}\n\ndata: [DONE]\n\n'
    proc = run("replay", "-", "--format", "json", stdin=body)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["text"] == "hi"
    header = REC.read_text().splitlines()[0]
    proc = run("replay", "-", stdin=(header + "\n{oops\n").encode())
    assert proc.returncode == 2
    assert (
        proc.stderr.decode() == "streamtool: error: <stdin>:2: not JSON "
        "(Expecting property name enclosed in double quotes)\n"
    )


def test_check_compares_stdin_with_the_golden_file_named():
    proc = run("check", "-", "--golden", str(GOLDEN), stdin=REC.read_bytes())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert b"1 match" in proc.stdout
    other = RECORDINGS / "anthropic-write-file.jsonl"
    proc = run("check", "-", "--golden", str(GOLDEN), stdin=other.read_bytes())
    assert proc.returncode == 1
    assert b"DRIFT" in proc.stdout
    proc = run("check", "-", stdin=REC.read_bytes())
    assert proc.returncode == 2
    assert b"needs --golden" in proc.stderr


def test_diff_reads_stdin_once_for_both_sides_and_refuses_it_twice():
    proc = run("diff", "-", "--parser-b", "passthrough", "--format", "json", stdin=REC.read_bytes())
    assert proc.returncode == 1, proc.stderr  # the passthrough side has no tool calls
    result = json.loads(proc.stdout)
    assert len(result["a"]["tool_calls"]) == 2 and result["b"]["tool_calls"] == []
    proc = run("diff", "-", str(REC), stdin=REC.read_bytes())
    assert proc.returncode == 0, proc.stderr
    proc = run("diff", "-", "-", stdin=REC.read_bytes())
    assert proc.returncode == 2
    assert b"only one of the two sides" in proc.stderr
