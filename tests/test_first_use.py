"""What a new user trips on: each case as they met it, through the real command."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import openai

from streamtool.core.exchange.playback import Playback
from streamtool.core.net.listen import ServerThread
from streamtool.core.net.server import serving
from streamtool.core.outputs.report import build_report

from .conftest import RECORDINGS
from .serve_helpers import STREAMTOOL, run_streamtool, start_listening, write_recording

ROOT = Path(__file__).resolve().parent.parent
REFUSAL = RECORDINGS / "openai-chat-refusal.jsonl"


def run(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120, cwd: Path | None = None
):
    return run_streamtool(*args, env=env, timeout=timeout, cwd=cwd)


# -- options that take ids and severities ---------------------------------------------------------
def test_fail_on_refuses_a_misspelt_severity_or_quirk_id() -> None:
    bad = run("inspect", str(REFUSAL), "--fail-on", "warning")
    assert bad.returncode == 2
    assert "did you mean 'warn'?" in bad.stderr
    typo = run("inspect", str(REFUSAL), "--fail-on", "error,oai_parallel_same_idx")
    assert typo.returncode == 2
    assert "did you mean 'oai_parallel_same_index'?" in typo.stderr
    assert "Traceback" not in bad.stderr + typo.stderr
    # valid names still gate: the refusal recording has usage_only_chunk (info)
    assert run("inspect", str(REFUSAL), "--fail-on", "usage_only_chunk").returncode == 1
    assert run("inspect", str(REFUSAL), "--fail-on", "warn,provider_error").returncode == 0


# -- the README's conform client and a refusal ----------------------------------------------------
def _readme_client() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"```python\n# client\.py\n(.*?)```", text, re.S)
    assert found, "the README's conform client"
    return found.group(1)


def test_the_readme_conform_client_passes_a_refusal(tmp_path: Path) -> None:
    client = tmp_path / "client.py"
    client.write_text(_readme_client(), encoding="utf-8")
    proc = run(
        "conform", "-r", str(REFUSAL), "--chunkings", "2", "--format", "json", "--",
        sys.executable, str(client),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads(proc.stdout)["results"]
    assert [r["status"] for r in results] == ["pass", "pass"]


def test_a_client_that_reads_the_refusal_as_text_is_told_why(tmp_path: Path) -> None:
    client = tmp_path / "merged.py"
    client.write_text(
        "import json, os, urllib.request\n"
        "base = os.environ['OPENAI_BASE_URL']\n"
        "req = urllib.request.Request(base + '/chat/completions', data=b'{\"stream\": true}',"
        " headers={'content-type': 'application/json'})\n"
        "text = ''\n"
        "for line in urllib.request.urlopen(req).read().decode().splitlines():\n"
        "    if line.startswith('data: {'):\n"
        "        for c in json.loads(line[6:])['choices']:\n"
        "            text += c['delta'].get('content') or c['delta'].get('refusal') or ''\n"
        "print(json.dumps({'text': text, 'tool_calls': []}))\n",
        encoding="utf-8",
    )
    proc = run(
        "conform", "-r", str(REFUSAL), "--chunkings", "1", "--format", "json", "--",
        sys.executable, str(client),
    )  # fmt: skip
    assert proc.returncode == 1
    [result] = json.loads(proc.stdout)["results"]
    messages = " ".join(d["message"] for d in result["differences"])
    assert "refusal, which is not text, went into the text" in messages
    assert 'has no "refusal" key' in messages and "message.refusal" in messages


def test_conform_stops_at_the_first_run_when_the_client_cannot_start(tmp_path: Path) -> None:
    starts = tmp_path / "starts"
    client = tmp_path / "broken.py"
    client.write_text(
        "import sys\n"
        f"open({str(starts)!r}, 'a').write('started\\n')\n"
        "sys.exit('ModuleNotFoundError: No module named \\'nothere\\'')\n",
        encoding="utf-8",
    )
    proc = run("conform", "--jobs", "2", "--", sys.executable, str(client))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "the client could not start" in lines[0]
    assert "No module named 'nothere'" in lines[0]
    # at most one run per job began: the other recordings x chunkings were never run
    assert 1 <= starts.read_text().count("started") <= 2
    assert proc.stdout == ""
    missing = run("conform", "--", sys.executable, str(tmp_path / "missing.py"))
    assert missing.returncode == 2
    assert "could not start" in missing.stderr and "missing.py" in missing.stderr


# -- demo -o --------------------------------------------------------------------------------------
def test_demo_force_overwrites_what_its_message_says_it_would(tmp_path: Path) -> None:
    out = tmp_path / "demo.jsonl"
    out.write_text("mine\n", encoding="utf-8")
    refused = run("demo", "-o", str(out), "--speed", "max", "--no-color")
    assert refused.returncode == 2 and "use --force" in refused.stderr
    assert out.read_text(encoding="utf-8") == "mine\n"  # nothing the user had is lost
    forced = run("demo", "-o", str(out), "--speed", "max", "--no-color", "--force")
    assert forced.returncode == 0, forced.stderr
    assert out.read_text(encoding="utf-8").startswith('{"type":"header"')


# -- proxy and serve output -----------------------------------------------------------------------
def test_proxy_off_a_terminal_prints_a_line_per_exchange_and_no_uvicorn_lines(
    tmp_path: Path,
) -> None:
    rec = RECORDINGS / "openai-parallel-tool-calls.jsonl"
    out = tmp_path / "caps"
    with serving([rec], Playback(speed=None)) as up:
        proc, _, origin = start_listening(
            [*STREAMTOOL, "proxy", "--port", "0", "--upstream", up.url, "--out", str(out)],
            env={"COLUMNS": "200"},
        )
        try:
            client = openai.OpenAI(base_url=origin + "/v1", api_key="sk-x", max_retries=0)
            for _ in range(2):
                list(client.chat.completions.create(model="gpt-test", messages=[], stream=True))
            time.sleep(0.6)  # a line is printed once its exchange ended
        finally:
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=20)
    files = sorted(f.name for f in out.glob("0*.jsonl"))
    assert len(files) == 2
    for name in files:
        assert sum(name in line for line in err.splitlines()) == 1, err
    assert "INFO:" not in err


def test_serve_prints_its_own_log_and_no_uvicorn_info_lines() -> None:
    rec = RECORDINGS / "openai-parallel-tool-calls.jsonl"
    proc, _, url = start_listening([*STREAMTOOL, "serve", str(rec), "--port", "0"])
    try:
        client = openai.OpenAI(base_url=url + "/v1", api_key="sk-x", max_retries=0)
        list(client.chat.completions.create(model="gpt-4o", messages=[], stream=True))
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    assert "POST /v1/chat/completions" in err  # serve's own request log
    assert "INFO:" not in err and "Uvicorn" not in err


# -- check under CI -------------------------------------------------------------------------------
def test_the_missing_golden_hint_works_with_ci_set(tmp_path: Path) -> None:
    rec = tmp_path / "a.jsonl"
    shutil.copy(REFUSAL, rec)
    shutil.copy(RECORDINGS / "openai-parallel-tool-calls.jsonl", tmp_path / "b.jsonl")
    missing = run("check", str(rec), env={"CI": "1"})
    assert missing.returncode == 1
    hint = next(line for line in missing.stdout.splitlines() if "create it with:" in line)
    command = hint.split("create it with: ", 1)[1].split()
    assert command[:2] == ["streamtool", "check"] and "--create-missing" in command
    created = run(*command[1:], env={"CI": "1"})
    assert created.returncode == 0, created.stdout
    assert (tmp_path / "a.golden.json").is_file()
    (tmp_path / "a.golden.json").unlink()
    several = run("check", str(tmp_path), env={"CI": "1"})
    summary = several.stdout.strip().splitlines()[-1]
    assert summary.startswith("to accept every replay as it is now: streamtool check --update ")
    assert "--create-missing" in summary


# -- ls -------------------------------------------------------------------------------------------
def test_ls_keeps_both_ends_of_long_file_names(tmp_path: Path) -> None:
    names = [
        "0001-chat.completions-gpt-4o-2024-08-06.jsonl",
        "0002-chat.completions-gpt-4o-2024-08-06.jsonl",
    ]
    for name in names:
        shutil.copy(RECORDINGS / "ollama-parallel-calls-same-index.jsonl", tmp_path / name)
    for columns in ("80", "140"):
        proc = run("ls", str(tmp_path), env={"COLUMNS": columns})
        assert proc.returncode == 0, proc.stderr
        rows = [line for line in proc.stdout.splitlines() if line.startswith("0")]
        assert [r[:4] for r in rows] == ["0001", "0002"], proc.stdout
        assert all(".jsonl" in r.split()[0] for r in rows), proc.stdout
        assert all(len(r) <= int(columns) for r in rows)


# -- inspect | head -------------------------------------------------------------------------------
def test_inspect_into_a_closed_pipe_exits_0() -> None:
    proc = subprocess.Popen(
        [*STREAMTOOL, "inspect", str(RECORDINGS), "--reads"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "COLUMNS": "100"},
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(200)
    proc.stdout.close()
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=60) == 0
    assert b"Traceback" not in err


# -- report, tree ---------------------------------------------------------------------------------
def test_the_report_player_names_a_file_segment_once(tmp_path: Path) -> None:
    from streamtool.core.drive.inspect_file import inspect_file

    inspector = inspect_file(str(RECORDINGS / "anthropic-write-file.jsonl"), keep_items=True)
    html = build_report(inspector)
    found = re.search(
        r'<script type="application/json" id="player-data">(.*?)</script>', html, re.S
    )
    assert found
    data = json.loads(found.group(1))
    starts = [ev for read in data["reads"] for ev in read["ev"] if ev[0] == "s"]
    assert ["write_file", ""] in [ev[2:] for ev in starts]
    assert not any(ev[2] == ev[3] for ev in starts)


def test_unparsable_arguments_show_their_raw_text_unescaped() -> None:
    from streamtool.cli.tree_view import _arguments_text
    from streamtool.core.model import ToolInvocation

    raw = '{"code": "def f():\\n    \\"\\"\\"doc'
    inv = ToolInvocation(id="call_1", name="write", arguments=None, raw_arguments=raw)
    shown = _arguments_text(inv, compact=True)
    assert shown == f"null (raw: {raw})"
    assert "\\\\" not in shown


# -- record ---------------------------------------------------------------------------------------
def test_record_against_a_local_server_needs_no_key_and_counts_one_chunk(tmp_path: Path) -> None:
    rec = write_recording(
        tmp_path / "one.jsonl",
        [
            (
                0.1,
                'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}'
                "\n\ndata: [DONE]\n\n",
            )
        ],
        provider="openai",
        model="local-model",
        api="chat.completions",
    )
    from streamtool.core.net.library import Library
    from streamtool.core.net.server import create_app

    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    with ServerThread(create_app(Library.from_paths([rec]), Playback(speed=None), None)) as s:
        proc = subprocess.run(
            [
                *STREAMTOOL, "record", "-p", "openai-chat", "-m", "local-model",
                "--prompt", "hi", "--base-url", s.url + "/v1", "--view", "none",
                "-o", str(tmp_path / "out.jsonl"),
            ],
            capture_output=True, text=True, timeout=60, env=env,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert ": HTTP 200, 1 chunk," in proc.stderr
    assert "1 chunks" not in proc.stderr
    # a remote host still needs one
    remote = subprocess.run(
        [*STREAMTOOL, "record", "-p", "openai-chat", "-m", "m", "--prompt", "hi",
         "-o", str(tmp_path / "r.jsonl")],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert remote.returncode == 2 and "no API key" in remote.stderr


# -- bodies that are not UTF-8 text ---------------------------------------------------------------
def test_gzip_and_utf16_bodies_are_named(tmp_path: Path) -> None:
    body = b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
    (tmp_path / "z.sse").write_bytes(gzip.compress(body))
    (tmp_path / "u.sse").write_bytes(body.decode().encode("utf-16"))
    (tmp_path / "le.sse").write_bytes(body.decode().encode("utf-16-le"))
    for name, said in (("z", "gzip-compressed"), ("u", "UTF-16 text"), ("le", "UTF-16 text")):
        proc = run("replay", str(tmp_path / f"{name}.sse"))
        assert proc.returncode == 2
        assert said in proc.stderr and f"{name}.sse" in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1


# -- the suite's own warnings ---------------------------------------------------------------------
def test_the_suite_turns_warnings_into_failures() -> None:
    """pytest's configuration makes any warning a test did not choose to allow fail that test,
    so the suite prints no warning summary (the SDK accumulator test used to print ~40 lines)."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert config["tool"]["pytest"]["ini_options"]["filterwarnings"][0] == "error"
    proc = subprocess.run(
        [
            sys.executable, "-m", "pytest", "-q", "-n0", "-p", "no:cacheprovider",
            "tests/test_converter_responses.py", "-k", "bundled_recordings_equal_the_sdk",
        ],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert "warning" not in proc.stdout.lower(), proc.stdout[-2000:]
