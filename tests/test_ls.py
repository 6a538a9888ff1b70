"""``streamtool ls``: one row per recording, sorting, filters, JSON, unusable files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from .conftest import RECORDINGS

PICK = [
    "ollama-parallel-calls-same-index.jsonl",
    "anthropic-overloaded-mid-stream.jsonl",
    "openai-text-usage-chunk-utf8-split.jsonl",
    "gemini-parallel-function-calls.jsonl",
]


def run(*args: str, cwd=None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_PARSER")}
    env["COLUMNS"] = "200"
    return subprocess.run(
        [sys.executable, "-m", "streamtool.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
    )


def folder(tmp_path):
    (tmp_path / "sub").mkdir()
    for i, name in enumerate(PICK):
        dest = tmp_path / ("sub" if i % 2 else "") / name
        shutil.copyfile(RECORDINGS / name, dest)
    shutil.copyfile(
        RECORDINGS / "ollama-parallel-calls-same-index.golden.json",
        tmp_path / "ollama-parallel-calls-same-index.golden.json",
    )
    return tmp_path


def test_json_rows_match_the_replay_and_sort(tmp_path):
    folder(tmp_path)
    proc = run("ls", "--format", "json", "--sort", "duration_s", "--reverse", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert sorted(os.path.basename(r["file"]) for r in rows) == sorted(PICK)
    durations = [r["duration_s"] for r in rows]
    assert durations == sorted(durations, reverse=True)
    by_name = {os.path.basename(r["file"]): r for r in rows}
    ollama = by_name["ollama-parallel-calls-same-index.jsonl"]
    summary = json.loads(run("replay", str(RECORDINGS / PICK[0]), "--format", "json").stdout)
    assert ollama["tool_calls"] == [i["name"] for i in summary["invocations"]]
    assert ollama["quirks"] == [q["id"] for q in summary["quirks"]] == ["oai_parallel_same_index"]
    assert ollama["ttft_s"] == summary["stats"]["ttft_s"]
    assert ollama["reads"] == summary["stats"]["chunks"]
    assert (ollama["provider"], ollama["model"], ollama["end"]) == (
        "ollama",
        "qwen3:8b",
        "complete",
    )
    assert by_name["anthropic-overloaded-mid-stream.jsonl"]["errors"]


def test_filters(tmp_path):
    folder(tmp_path)

    def names(*args):
        proc = run("ls", str(tmp_path), "--format", "json", *args)
        assert proc.returncode == 0, proc.stderr
        return sorted(os.path.basename(r["file"]) for r in json.loads(proc.stdout))

    assert names("--has-quirk", "oai_parallel_same_index") == [PICK[0]]
    assert names("--has-error") == [PICK[1]]
    assert names("--provider", "GEMINI") == [PICK[3]]
    assert names("--tool", "get_weather") == sorted([PICK[0], PICK[3]])


def test_text_table_and_unusable_files(tmp_path):
    folder(tmp_path)
    header = (RECORDINGS / PICK[0]).read_text().splitlines()[0]
    (tmp_path / "broken.jsonl").write_text(header + "\nnot json\n")
    proc = run("ls", str(tmp_path))
    assert proc.returncode == 2
    assert (
        proc.stderr
        == f"streamtool: error: {tmp_path / 'broken.jsonl'}:2: not JSON (Expecting value)\n"
    )
    assert "oai_parallel_same_index" in proc.stdout
    assert "4 recordings" in proc.stdout
    # a filter the header decides stops reading there: the broken line is never reached
    proc = run("ls", str(tmp_path), "--provider", "anthropic", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert [os.path.basename(r["file"]) for r in json.loads(proc.stdout)] == [PICK[1]]
    assert run("ls", str(tmp_path / "nope")).returncode == 2
    assert run("ls", "--sort", "colour").returncode == 2


def test_an_exchange_a_writer_has_named_and_not_written_is_listed_cut_off(tmp_path):
    """A tape being recorded: a writer names an exchange's file (made empty) before its answer's
    head comes; ls shows it as an exchange without its end, not as a broken file. An empty file
    outside a numbered tape is still one."""
    tape = tmp_path / "tape"
    tape.mkdir()
    shutil.copy(RECORDINGS / PICK[0], tape / "0001-openai-chat-x.jsonl")
    (tape / "index.jsonl").write_text('{"seq":1,"file":"0001-openai-chat-x.jsonl"}\n')
    (tape / "0002-openai-chat-x.jsonl").write_bytes(b"")
    proc = run("ls", str(tape), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    rows = {os.path.basename(r["file"]): r for r in json.loads(proc.stdout)}
    assert rows["0002-openai-chat-x.jsonl"]["end"] == "cut off"
    assert rows["0002-openai-chat-x.jsonl"]["provider"] is None
    assert rows["0001-openai-chat-x.jsonl"]["end"] == "complete"
    # filtered by what a header says: a file without one passes no such filter
    proc = run("ls", str(tape), "--provider", "openai", "--format", "json")
    assert "0002-openai-chat-x.jsonl" not in proc.stdout
    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "0001-x.jsonl").write_bytes(b"")
    proc = run("ls", str(loose))
    assert proc.returncode == 2 and "empty file: no header" in proc.stderr
