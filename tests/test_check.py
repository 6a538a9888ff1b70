"""``streamtool check``: golden files beside recordings, drift, --update, CI, unusable input."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from streamtool.cli.main import app
from streamtool.core.handlers import parser_names
from streamtool.core.model.records import RecordingError
from streamtool.core.outputs.golden import golden_name, is_golden_name, parse_golden
from streamtool.core.recording.writer import RecordingWriter

from .conftest import RECORDINGS
from .helpers import recording_body

TOOLS = "openai-parallel-tool-calls.jsonl"
TEXT = "openai-text-usage-chunk-utf8-split.jsonl"


def run(*args: str, ci: str | None = None) -> tuple[int, str, str]:
    # click's runner overlays ``env`` on os.environ; a None value removes the variable, so the
    # test sees the same result whether or not it runs under CI itself
    env: dict[str, str | None] = {"CI": ci}
    result = CliRunner().invoke(app, ["check", *args], env=env)
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit
    ), result.exception
    return result.exit_code, result.stdout, result.stderr


def run_json(*args: str, ci: str | None = None) -> tuple[int, dict]:
    code, out, _ = run(*args, "--format", "json", ci=ci)
    return code, json.loads(out)


@pytest.fixture
def recs(tmp_path: Path) -> Path:
    folder = tmp_path / "recs"
    folder.mkdir()
    for name in (TOOLS, TEXT):
        shutil.copy(RECORDINGS / name, folder / name)
    return folder


def golden_of(path: Path) -> Path:
    return path.with_name(golden_name(path.name))


# -- the project's own recordings ----------------------------------------------------------
def bundled() -> list[Path]:
    """The bundled recordings, those of the recorded sessions' tapes (folders) with them."""
    found = [*RECORDINGS.rglob("*.jsonl"), *RECORDINGS.rglob("*.sse")]
    return sorted(p for p in found if p.name != "index.jsonl")


def test_every_bundled_recording_has_a_golden_file() -> None:
    recordings = bundled()
    assert recordings
    for rec in recordings:
        assert golden_of(rec).is_file(), f"{rec.name} has no golden file"
    claimed = {golden_of(rec).name for rec in recordings}
    for gold in RECORDINGS.glob("*.golden.json"):
        assert gold.name in claimed, f"{gold.name} has no recording"


def streamtool_command() -> list[str]:
    """The installed ``streamtool`` script (or the same entry point through this Python)."""
    script = Path(sys.executable).with_name("streamtool")
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", "from streamtool.cli.main import main; main()"]


def test_streamtool_check_recordings_passes() -> None:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    proc = subprocess.run(
        [*streamtool_command(), "check", str(RECORDINGS)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stderr == ""
    # the recordings of the recorded sessions' tapes (MCP, WebSocket) among them
    n = len(bundled())
    assert proc.stdout.count("\nok ") + proc.stdout.startswith("ok ") == n
    assert proc.stdout.rstrip().endswith(f"{n} checked: {n} match")


# -- missing, created, matching ------------------------------------------------------------
def test_missing_golden_fails_with_a_hint_and_creates_nothing(recs: Path) -> None:
    code, out, err = run(str(recs))
    assert code == 1
    assert out.count("MISSING") == 2
    assert f"streamtool check --update {recs / TOOLS}" in out
    assert not list(recs.glob("*.golden.json"))
    assert err == ""


def test_update_creates_golden_files_that_then_match(recs: Path) -> None:
    code, out, _ = run("--update", str(recs))
    assert code == 0, out
    assert [line.split()[0] for line in out.splitlines()[:2]] == ["created", "created"]
    gold = golden_of(recs / TOOLS)
    doc = parse_golden(gold.read_text(encoding="utf-8"), str(gold)).document
    assert doc["recording"] == TOOLS
    assert doc["replay"] == {"converter": "auto", "parser": "api_tool_call"}
    assert doc["transcript"]["converter"] == "openai-chat"
    assert [i["arguments"]["city"] for i in doc["transcript"]["invocations"]] == ["Paris", "Tokyo"]
    code, out, _ = run(str(recs))
    assert code == 0
    assert out.count("ok ") == 2 and out.rstrip().endswith("2 checked: 2 match")


def test_ci_refuses_to_create_golden_files_unless_asked(recs: Path) -> None:
    code, out, _ = run("--update", str(recs), ci="true")
    assert code == 1
    assert out.count("MISSING") == 2
    assert "CI is set" in out and "--create-missing" in out
    assert not list(recs.glob("*.golden.json"))
    code, out, _ = run("--update", "--create-missing", str(recs), ci="true")
    assert code == 0
    assert len(list(recs.glob("*.golden.json"))) == 2


def test_ci_false_is_not_ci(recs: Path) -> None:
    code, _, _ = run("--update", str(recs / TEXT), ci="false")
    assert code == 0
    assert golden_of(recs / TEXT).is_file()


def test_update_in_ci_still_refreshes_existing_golden_files(recs: Path) -> None:
    run("--update", str(recs))
    rec = recs / TOOLS
    rec.write_text(rec.read_text(encoding="utf-8").replace("Paris", "Lyon"), encoding="utf-8")
    code, out, _ = run("--update", str(rec), ci="1")
    assert code == 0 and "updated" in out
    assert "Lyon" in golden_of(rec).read_text(encoding="utf-8")


# -- drift ---------------------------------------------------------------------------------
def test_drift_shows_a_unified_diff_and_leaves_the_golden_file(recs: Path) -> None:
    run("--update", str(recs))
    rec = recs / TOOLS
    gold = golden_of(rec)
    before = gold.read_bytes()
    rec.write_text(rec.read_text(encoding="utf-8").replace("Paris", "Lyon"), encoding="utf-8")
    code, out, err = run(str(recs))
    assert code == 1
    assert err == ""
    assert f"DRIFT    {rec}" in out
    assert f"--- {gold} (golden)" in out
    assert f"+++ {rec} (replayed now)" in out
    lines = out.splitlines()
    assert any(line.startswith("-") and "Paris" in line for line in lines)
    assert any(line.startswith("+") and "Lyon" in line for line in lines)
    assert "@@" in out
    assert "ok       " + str(recs / TEXT) in out  # the other recording still matches
    assert gold.read_bytes() == before

    code, out, _ = run("--update", str(recs))
    assert code == 0
    assert f"updated  {rec} -> {gold}" in out
    assert "+" in out and "Lyon" in out  # the update shows what changed
    assert run(str(recs))[0] == 0


def test_rechunked_recording_still_matches(recs: Path, tmp_path: Path) -> None:
    """The same bytes cut into other reads at other times: the golden file still holds."""
    run("--update", str(recs))
    rec = recs / TOOLS
    header, body, _ = recording_body(rec)
    rec.unlink()
    with RecordingWriter(rec, header) as writer:
        for i in range(0, len(body), 7):
            writer.write_read(1.0 + i / 1000, body[i : i + 7])
    assert len(rec.read_text(encoding="utf-8").splitlines()) > 100
    code, out, _ = run(str(rec))
    assert code == 0, out


def test_reformatted_golden_file_is_not_drift(recs: Path) -> None:
    run("--update", str(recs))
    gold = golden_of(recs / TEXT)
    gold.write_text(json.dumps(json.loads(gold.read_text(encoding="utf-8"))), encoding="utf-8")
    assert run(str(recs / TEXT))[0] == 0


def test_changed_value_in_golden_file_is_drift(recs: Path) -> None:
    run("--update", str(recs))
    gold = golden_of(recs / TEXT)
    doc = json.loads(gold.read_text(encoding="utf-8"))
    doc["transcript"]["finish_reason"] = "length"
    gold.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    code, out, _ = run(str(recs / TEXT))
    assert code == 1
    assert '-    "finish_reason": "length",' in out
    assert '+    "finish_reason": "stop",' in out


# -- replay options named by the golden file -----------------------------------------------
def test_golden_file_names_the_parser_check_replays_with(recs: Path) -> None:
    run("--update", str(recs))
    rec = recs / TOOLS
    gold = golden_of(rec)
    doc = json.loads(gold.read_text(encoding="utf-8"))
    doc["replay"]["parser"] = "passthrough"
    gold.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    code, out, _ = run(str(rec))
    assert code == 1  # replayed through passthrough now: no invocations
    assert '+    "parser": "passthrough",' in out
    code, _, _ = run("--update", str(rec))
    assert code == 0
    updated = json.loads(gold.read_text(encoding="utf-8"))
    assert updated["replay"]["parser"] == "passthrough"  # --update keeps the pinned parser
    assert updated["transcript"]["parser"] == "passthrough"
    assert updated["transcript"]["invocations"] == []
    assert run(str(rec))[0] == 0


def test_update_with_parser_rewrites_the_options(recs: Path) -> None:
    rec = recs / TOOLS
    code, _, _ = run("--update", "--parser", "passthrough", "--converter", "openai-chat", str(rec))
    assert code == 0
    doc = json.loads(golden_of(rec).read_text(encoding="utf-8"))
    assert doc["replay"] == {"converter": "openai-chat", "parser": "passthrough"}
    assert [q["id"] for q in doc["transcript"]["quirks"]].count("tool_calls_ignored_by_parser") == 1


def test_parser_option_without_update_is_refused(recs: Path) -> None:
    code, out, err = run("--parser", "passthrough", str(recs))
    assert code == 2
    assert err.startswith("streamtool: error:") and err.count("\n") == 1
    assert "--update" in err


def test_unknown_parser_for_update_is_unusable(recs: Path) -> None:
    code, _, err = run("--update", "--parser", "nope", str(recs))
    assert code == 2
    assert "unknown parser 'nope'" in err and err.count("\n") == 1
    assert not list(recs.glob("*.golden.json"))


# -- orphans and discovery -----------------------------------------------------------------
def test_golden_file_whose_recording_is_gone_is_reported(recs: Path) -> None:
    run("--update", str(recs))
    (recs / TOOLS).unlink()
    gold = golden_of(recs / TOOLS)
    code, out, _ = run(str(recs))
    assert code == 1
    assert f"ORPHAN   {gold}" in out
    assert "its recording is gone" in out
    code, out, _ = run(str(gold))  # named directly
    assert code == 1 and "ORPHAN" in out
    code, out, _ = run("--update", str(recs))  # --update never deletes it
    assert code == 1 and "ORPHAN" in out
    assert gold.is_file()


def test_golden_file_named_directly_checks_its_recording(recs: Path) -> None:
    run("--update", str(recs))
    code, data = run_json(str(golden_of(recs / TEXT)))
    assert code == 0
    assert [f["recording"] for f in data["files"]] == [str(recs / TEXT)]


def test_folder_search_skips_golden_files_and_hidden_folders(recs: Path) -> None:
    run("--update", str(recs))
    sub = recs / "more"
    sub.mkdir()
    shutil.copy(RECORDINGS / TEXT, sub / "again.jsonl")
    hidden = recs / ".cache"
    hidden.mkdir()
    shutil.copy(RECORDINGS / TEXT, hidden / "skipped.jsonl")
    (recs / "notes.txt").write_text("not a recording\n", encoding="utf-8")
    code, data = run_json(str(recs), ci="true")
    assert code == 1  # the copy in more/ has no golden file yet
    files = {f["recording"]: f["status"] for f in data["files"]}
    assert files == {
        str(recs / TOOLS): "match",
        str(recs / TEXT): "match",
        str(sub / "again.jsonl"): "missing",
    }
    assert not any(is_golden_name(Path(r).name) for r in files)


def test_raw_sse_body_gets_a_golden_file(tmp_path: Path) -> None:
    body = tmp_path / "capture.sse"
    body.write_bytes(recording_body(RECORDINGS / TEXT)[1])
    assert run("--update", str(tmp_path))[0] == 0
    gold = tmp_path / "capture.golden.json"
    doc = json.loads(gold.read_text(encoding="utf-8"))
    assert doc["recording"] == "capture.sse"
    assert doc["transcript"]["segments"][0]["content"].startswith("Sure!")
    assert run(str(tmp_path))[0] == 0


def test_two_recordings_cannot_share_a_golden_file(recs: Path) -> None:
    (recs / "openai-parallel-tool-calls.sse").write_text("data: [DONE]\n\n", encoding="utf-8")
    code, out, err = run("--update", str(recs))
    assert code == 2
    assert "is taken by" in err and "openai-parallel-tool-calls.sse" in err
    assert "created" in out  # the others were still handled


# -- unusable input ------------------------------------------------------------------------
def test_broken_recording_is_one_line_exit_2(recs: Path) -> None:
    rec = recs / TEXT
    lines = rec.read_text(encoding="utf-8").splitlines(keepends=True)
    lines.insert(3, "this is not json\n")
    rec.write_text("".join(lines), encoding="utf-8")
    code, out, err = run("--update", str(recs))
    assert code == 2
    assert err == f"streamtool: error: {rec}:4: not JSON (Expecting value)\n"
    assert "Traceback" not in out + err
    assert not golden_of(rec).exists()
    assert golden_of(recs / TOOLS).is_file()  # the good one was still written


def test_broken_golden_file_is_one_line_exit_2_and_kept(recs: Path) -> None:
    gold = golden_of(recs / TEXT)
    gold.write_text('{\n  "format": "streamtool-golden",\n  "version": 1,\n  oops\n}\n')
    before = gold.read_bytes()
    for args in ((), ("--update",)):
        code, _, err = run(*args, str(recs / TEXT))
        assert code == 2
        assert err.startswith(f"streamtool: error: {gold}:4: golden file is not JSON")
        assert err.count("\n") == 1
        assert gold.read_bytes() == before
    assert "fix or delete it" in err


def test_golden_file_naming_an_unknown_parser(recs: Path) -> None:
    run("--update", str(recs))
    gold = golden_of(recs / TEXT)
    gold.write_text(gold.read_text(encoding="utf-8").replace('"api_tool_call"', '"nope"', 1))
    code, _, err = run(str(recs / TEXT))
    assert code == 2
    assert err == (
        f"streamtool: error: {gold}:7: unknown parser 'nope'; valid: {', '.join(parser_names())}\n"
    )


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("[]", 1, "not a streamtool golden file"),
        ('{"format": "streamtool-golden", "version": 9}', 1, "unsupported golden file version"),
        ('{"format": "streamtool-golden",\n"version": 1,\n"replay": []}', 3, '"replay"'),
        ('{"format": "streamtool-golden", "version": 1}', 1, '"transcript" must be an object'),
    ],
)
def test_parse_golden_rejects(text: str, line: int, message: str) -> None:
    with pytest.raises(RecordingError) as info:
        parse_golden(text, "g.golden.json")
    assert info.value.line == line
    assert message in info.value.message


def test_missing_path_and_empty_folder(tmp_path: Path) -> None:
    code, _, err = run(str(tmp_path / "nope"))
    assert code == 2
    assert err == f"streamtool: error: {tmp_path / 'nope'}: no such file or folder\n"
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = run(str(empty))
    assert code == 2 and "no recordings" in err


# -- machine-readable output ---------------------------------------------------------------
def test_json_format(recs: Path) -> None:
    code, data = run_json(str(recs))
    assert code == 1
    assert data["ok"] is False and data["exit_code"] == 1
    assert data["counts"]["missing"] == 2 and data["counts"]["match"] == 0
    run("--update", str(recs))
    rec = recs / TOOLS
    rec.write_text(
        rec.read_text(encoding="utf-8").replace('\\"Tok\\"', '\\"Osa\\"'), encoding="utf-8"
    )
    code, data = run_json(str(recs))
    assert code == 1
    by_status = {f["status"]: f for f in data["files"]}
    assert set(by_status) == {"drift", "match"}
    drift = by_status["drift"]
    assert drift["recording"] == str(rec)
    assert drift["golden"] == str(golden_of(rec))
    assert "Osayo" in drift["diff"]  # Tok+yo -> Osa+yo and drift["diff"].startswith("---")
    assert data["counts"] == {
        "match": 1,
        "drift": 1,
        "missing": 0,
        "orphan": 0,
        "created": 0,
        "updated": 0,
        "error": 0,
    }


@pytest.mark.parametrize(
    ("recording", "golden"),
    [
        ("foo.jsonl", "foo.golden.json"),
        ("foo.sse", "foo.golden.json"),
        ("a.b.jsonl", "a.b.golden.json"),
        ("noext", "noext.golden.json"),
    ],
)
def test_golden_file_names(recording: str, golden: str) -> None:
    assert golden_name(recording) == golden
    assert is_golden_name(golden) and not is_golden_name(recording)


@pytest.mark.parametrize("ci", [None, "true"])
def test_an_unusable_recording_without_golden_file_is_unusable_not_missing(
    tmp_path: Path, ci: str | None
) -> None:
    lines = (RECORDINGS / TOOLS).read_text(encoding="utf-8").splitlines()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([*lines[:3], "garbage {", *lines[3:]]) + "\n", encoding="utf-8")
    before = bad.read_bytes()
    code, out, err = run(str(bad), ci=ci)
    assert code == 2
    assert "MISSING" not in out and "--update" not in out
    assert f"{bad}:4: not JSON" in err and err.count("\n") == 1 and "Traceback" not in err
    code, _, err = run("--update", str(bad), ci=ci)
    assert code == 2 and f"{bad}:4: not JSON" in err
    assert bad.read_bytes() == before and not list(tmp_path.glob("*.golden.json"))


def test_a_golden_file_reached_by_several_paths_is_checked_once(recs: Path, tmp_path: Path) -> None:
    """The same folder named twice, through a link to it, and one of its golden files named
    alone or through a link to that file: every golden file is checked once."""
    assert run("--update", str(recs))[0] == 0
    (tmp_path / "via").symlink_to(recs)
    golden = golden_of(recs / TOOLS)
    other = tmp_path / "other"
    other.mkdir()
    (other / golden.name).symlink_to(golden)
    code, report = run_json(
        str(recs), str(recs), str(tmp_path / "via"), str(golden), str(other / golden.name)
    )
    assert code == 0, report
    assert sorted(Path(f["golden"]).name for f in report["files"]) == sorted(
        golden_name(n) for n in (TOOLS, TEXT)
    )
