"""Progress of long runs: rich's bar (count, rate, time left) on standard error when it is a
terminal (a real pseudo-terminal here), and nothing at all when it is not."""

from __future__ import annotations

import json
import os
import pty
import re
import shutil
import subprocess
import sys
from pathlib import Path

from .conftest import RECORDINGS
from .serve_helpers import STREAMTOOL

ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")


def run_on_a_terminal(args: list[str], cwd: Path | None = None) -> tuple[int, str, str]:
    """Run with standard error on a pseudo-terminal; (exit code, stdout, what the terminal got
    with the escape sequences removed)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [*STREAMTOOL, *args],
        stdout=subprocess.PIPE,
        stderr=slave,
        stdin=subprocess.DEVNULL,
        cwd=cwd,
        env={**os.environ, "TERM": "xterm-256color", "COLUMNS": "120"},
    )
    os.close(slave)
    screen = b""
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the other end closed: the process is done with the terminal
            break
        if not data:
            break
        screen += data
    os.close(master)
    assert proc.stdout is not None
    out = proc.stdout.read().decode()
    proc.stdout.close()
    return proc.wait(timeout=120), out, ANSI.sub(b"", screen).decode("utf-8", "replace")


def run_off_a_terminal(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*STREAMTOOL, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "120"},
    )


def many(tmp_path: Path, n: int) -> Path:
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(n):
        shutil.copy(RECORDINGS / "openai-chat-refusal.jsonl", folder / f"{i:04d}.jsonl")
    return folder


def test_ls_and_check_over_many_recordings(tmp_path: Path) -> None:
    folder = many(tmp_path, 60)
    code, out, screen = run_on_a_terminal(["ls", str(folder)])
    assert code == 0
    assert "60 recordings" in out
    assert "listing" in screen and "60/60" in screen and "/s" in screen, screen
    quiet = run_off_a_terminal(["ls", str(folder)])
    assert quiet.stdout == out and quiet.stderr == ""

    code, out, screen = run_on_a_terminal(["check", "--update", "--create-missing", str(folder)])
    assert code == 0, out
    assert "updating" in screen and "60/60" in screen
    assert "60 checked: 60 created" in out
    quiet = run_off_a_terminal(["check", str(folder)])
    assert quiet.returncode == 0 and quiet.stderr == ""


def test_a_few_recordings_draw_no_bar(tmp_path: Path) -> None:
    folder = many(tmp_path, 3)
    code, _, screen = run_on_a_terminal(["ls", str(folder)])
    assert code == 0 and "listing" not in screen


def test_conform_counts_its_runs(tmp_path: Path) -> None:
    client = tmp_path / "client.py"
    client.write_text(
        "import json, os, urllib.request\n"
        "req = urllib.request.Request(os.environ['OPENAI_BASE_URL'] + '/chat/completions',"
        " data=b'{}', headers={'content-type': 'application/json'})\n"
        "urllib.request.urlopen(req).read()\n"
        "print(json.dumps({'text': '', 'tool_calls': []}))\n",
        encoding="utf-8",
    )
    args = [
        "conform", "-r", str(RECORDINGS / "openai-chat-refusal.jsonl"),
        "-r", str(RECORDINGS / "openai-parallel-tool-calls.jsonl"),
        "--chunkings", "2", "--", sys.executable, str(client),
    ]  # fmt: skip
    code, out, screen = run_on_a_terminal(args)
    assert code == 1  # the client reads nothing: every run fails
    assert "conform" in screen and "4/4" in screen, screen
    assert "0 passed, 4 failed" in out
    quiet = run_off_a_terminal(args)
    assert quiet.stderr == ""


def test_report_of_a_large_recording(tmp_path: Path) -> None:
    header = json.loads((RECORDINGS / "openai-chat-refusal.jsonl").read_text().splitlines()[0])
    lines = [json.dumps(header)]
    delta = {"content": "word " * 12}
    chunk = {"id": "c", "object": "chat.completion.chunk", "model": "m",
             "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}  # fmt: skip
    data = f"data: {json.dumps(chunk)}\n\n"
    n = 20_500
    lines += [json.dumps({"type": "chunk", "t": i / 1000, "text": data}) for i in range(n)]
    lines.append(json.dumps({"type": "chunk", "t": n / 1000, "text": "data: [DONE]\n\n"}))
    lines.append(json.dumps({"type": "end", "t": n / 1000, "reason": "complete", "error": None}))
    rec = tmp_path / "big.jsonl"
    rec.write_text("\n".join(lines) + "\n")
    code, out, screen = run_on_a_terminal(["report", str(rec), "-o", str(tmp_path / "r.html")])
    assert code == 0, screen
    assert "reading" in screen and f"{n + 1:,}/{n + 1:,}".replace(",", "") in screen.replace(
        ",", ""
    ), screen[-500:]
