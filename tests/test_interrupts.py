"""Ctrl-C and unusable input, on real processes: ``conform`` interrupted while its client reads
a large stream stops the client and the server and exits 130 with one line; ``demo`` exits 130;
a chunk whose ``b64`` holds characters other than ASCII is unusable input (exit 2, the file and
line named)."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from .serve_helpers import STREAMTOOL, chat_chunk, write_recording
from .tape_helpers import CHILD_PYTEST

CLIENT = textwrap.dedent(
    """
    import json, os, sys, time, urllib.request
    marks = sys.argv[1]
    chunking = os.environ["STREAMTOOL_CHUNKING"].replace(" ", "-")
    with open(os.path.join(marks, "pid-" + chunking), "w") as f:
        f.write(str(os.getpid()))
    body = json.dumps({"model": os.environ.get("STREAMTOOL_MODEL", "m"), "stream": True})
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=body.encode(),
        headers={"content-type": "application/json"},
    )
    text = []
    with urllib.request.urlopen(request) as resp:
        first = True
        while True:
            piece = resp.read(512)
            if not piece:
                break
            if first:
                open(os.path.join(marks, "reading-" + chunking), "w").close()
                first = False
            time.sleep(0.002)
    print(json.dumps({"text": "", "tool_calls": [], "finish_reason": "stop"}))
    """
)


def big_recording(path: Path) -> Path:
    """About 600 KB of text in 240 events."""
    reads = [(0.001 * i, chat_chunk("word " * 500, i)) for i in range(240)]
    reads.append((0.5, "data: [DONE]\n\n"))
    return write_recording(path, reads)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by its parent, which is gone too) counts as gone
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("whom", ["group", "conform-only"])
def test_ctrl_c_during_conform_stops_everything_with_one_line(tmp_path: Path, whom: str) -> None:
    rec = big_recording(tmp_path / "big.jsonl")
    client = tmp_path / "client.py"
    client.write_text(CLIENT)
    marks = tmp_path / "marks"
    marks.mkdir()
    proc = subprocess.Popen(
        [
            *STREAMTOOL,
            "conform",
            "--recordings",
            str(rec),
            "--chunkings",
            "2",
            "--",
            sys.executable,
            str(client),
            str(marks),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a shell gives a foreground job
    )
    try:
        deadline = time.monotonic() + 60
        while not (marks / "reading-1-byte").exists():  # the second run, one byte per write
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the client never started reading"
            time.sleep(0.02)
        pid = int((marks / "pid-1-byte").read_text())
        time.sleep(0.3)  # well into the stream
        interrupted = time.monotonic()
        if whom == "group":
            os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        else:
            proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        took = time.monotonic() - interrupted
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "interrupted" in lines[0], err
    assert "socket.send() raised exception" not in err + out
    assert took < 10, took
    time.sleep(0.2)
    assert not alive(pid)


def test_ctrl_c_during_demo_exits_130(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [*STREAMTOOL, "demo", "--speed", "0.05", "--no-color", "-o", str(tmp_path / "d.jsonl")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        proc.stdout.readline()  # step 1 printed: the server is up
        time.sleep(1.0)  # the recording is being made
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err


def test_non_ascii_b64_is_unusable_input_naming_file_and_line(tmp_path: Path) -> None:
    rec = write_recording(
        tmp_path / "r.jsonl", [(0.1, chat_chunk("hi")), (0.2, "data: [DONE]\n\n")]
    )
    lines = rec.read_text(encoding="utf-8").splitlines()
    chunk = json.loads(lines[2])
    chunk["b64"] = base64.b64encode(chunk.pop("text").encode()).decode()[:8] + "é=="
    lines[2] = json.dumps(chunk, ensure_ascii=False)
    rec.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for command in (["replay", str(rec), "--format", "json"], ["check", str(rec)]):
        run = subprocess.run([*STREAMTOOL, *command], capture_output=True, text=True, timeout=30)
        assert run.returncode == 2, run.stderr
        [line] = run.stderr.strip().splitlines()
        assert f"{rec}:3:" in line and "b64" in line, line


def test_ctrl_c_tests_hold_in_a_suite_started_with_sigint_ignored() -> None:
    """A suite started in the background by a shell without job control inherits SIGINT
    ignored, which every process it starts would inherit too: ``tests/conftest.py`` gives the
    suite's processes Python's own handler back, so a test that presses Ctrl-C in a command
    still finds it listening (without that, this child run fails)."""
    root = Path(__file__).resolve().parents[1]
    args = [
        *CHILD_PYTEST, "-n0", "-p", "no:randomly",
        "tests/test_record.py::test_ctrl_c_leaves_a_valid_recording",
    ]  # fmt: skip
    # SIGINT ignored is kept across exec, as a shell's background job starts it
    ignoring = "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
    ignoring += f"os.execv(sys.executable, {args!r})"
    proc = subprocess.run(
        [sys.executable, "-c", ignoring],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")},
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "1 passed" in proc.stdout
