"""``streamtool replay`` in a real pseudo-terminal: the live tree is drawn, paced, and its final
frame is what a user sees on the screen (a terminal emulator, pyte, reads the bytes)."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from typing import Any

import pyte
import pytest

from streamtool.core.drive.replay_file import replay_file

from .conftest import RECORDINGS

SGR_COLOR = re.compile(rb"\x1b\[[0-9;]*(?:3[0-7]|38;[0-9;]+|9[0-7])m")


class Run:
    def __init__(
        self,
        raw: bytes,
        code: int,
        elapsed: float,
        cols: int,
        rows: int,
        reads: list[int] | None = None,
    ) -> None:
        self.raw = raw
        self.code = code
        self.elapsed = elapsed
        self.cols, self.rows = cols, rows
        self.reads = reads or []  # the output's length after each read from the terminal
        screen = pyte.Screen(cols, rows)
        pyte.ByteStream(screen).feed(raw)
        self.screen = [line.rstrip() for line in screen.display]

    def frames(self) -> list[tuple[list[str], dict[int, dict[int, Any]]]]:
        """The screen as it stood after each read (what a user saw while the stream played):
        its lines, and its characters with their attributes by row and column."""
        screen = pyte.Screen(self.cols, self.rows)
        stream = pyte.ByteStream(screen)
        out = []
        done = 0
        for end in self.reads:
            stream.feed(self.raw[done:end])
            done = end
            chars = {y: dict(screen.buffer[y]) for y in range(self.rows)}
            out.append(([line.rstrip() for line in screen.display], chars))
        return out


def _controlling_terminal() -> None:
    """In the child: a new session whose controlling terminal is the pty (so Ctrl-C is SIGINT)."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def run_in_pty(
    args: list[str],
    *,
    cols: int = 100,
    rows: int = 40,
    env: dict[str, str] | None = None,
    interrupt_after: float | None = None,
    interrupt_when: Callable[[], bool] | None = None,
    timeout: float = 20.0,
) -> Run:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    environ["TERM"] = "xterm-256color"
    environ.update(env or {})
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamtool.cli", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=environ,
        close_fds=True,
        preexec_fn=_controlling_terminal,
    )
    os.close(slave)
    out = bytearray()
    reads: list[int] = []
    sent = False
    try:
        while True:
            now = time.monotonic()
            if now - start > timeout:
                proc.kill()
                raise AssertionError(f"no exit after {timeout} s: {bytes(out[-400:])!r}")
            # Ctrl-C once the tree is on the screen (a loaded machine may start slowly)
            due = interrupt_after is not None and out and now - start >= interrupt_after
            if not sent and (due or (interrupt_when is not None and interrupt_when())):
                os.write(master, b"\x03")  # Ctrl-C, through the terminal's line discipline
                sent = True
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # the child closed the terminal
                    break
                if not data:
                    break
                out.extend(data)
                reads.append(len(out))
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=5)
    finally:
        os.close(master)
        if proc.poll() is None:  # pragma: no cover - only on a failure above
            os.killpg(proc.pid, signal.SIGKILL)
    return Run(bytes(out), code, time.monotonic() - start, cols, rows, reads)


def test_live_tree_in_a_terminal_ends_on_the_whole_tree() -> None:
    path = RECORDINGS / "openrouter-keepalive-comments-tool-call.jsonl"  # 2.48 s recorded
    run = run_in_pty(["replay", str(path), "--speed", "4"])
    assert run.code == 0, run.raw[-500:]
    assert run.elapsed >= 2.4 / 4  # paced at four times the recorded speed
    # drawn live: the cursor hidden while frames were redrawn in place, then shown again
    assert b"\x1b[?25l" in run.raw and b"\x1b[?25h" in run.raw and b"\x1b[2K" in run.raw
    assert SGR_COLOR.search(run.raw)
    screen = [line for line in run.screen if line]
    start = screen.index(str(path))
    frame = screen[start:]
    converter = replay_file(path).converter_name
    head = f"provider openrouter · converter {converter} · parser api_tool_call"
    assert frame[1].startswith(head)
    assert "├── reasoning  1 line · 31 chars" in frame
    assert "│   I need to list the files first." in frame
    assert "│   Let me look at the folder." in frame
    call = frame.index("├── tool_call list_files  functions.list_files:0")
    assert frame[call + 1 : call + 5] == [
        "│   {",
        '│     "path": "src",',
        '│     "recursive": true',
        "│   }",
    ]
    assert (
        "├── quirk sse_comment_keepalive: SSE comment lines such as 'OPENROUTER PROCESSING'"
        in frame
    )
    assert frame[-5:-3] == [
        "└── invocations (1)",
        '    └── list_files({"path": "src", "recursive": true})  functions.list_files:0',
    ]
    assert frame[-3].startswith(
        "16 chunks · 4,507 bytes · 12 events · elapsed 2.48 s · TTFT 1.36 s"
    )
    assert frame[-2] == "usage: in 120 · out 38 · reasoning 9 · cached 0 · total 158"
    assert frame[-1] == "finish_reason: tool_calls  2 quirks"
    # the final tree is printed once below the (erased) live frames: the root appears once
    assert screen.count(str(path)) == 1


def test_no_color_and_terminal_width_are_honoured() -> None:
    path = RECORDINGS / "openai-parallel-tool-calls.jsonl"
    run = run_in_pty(["replay", str(path), "--speed", "max"], cols=64, env={"NO_COLOR": "1"})
    assert run.code == 0, run.raw[-500:]
    assert not SGR_COLOR.search(run.raw)
    text = re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", run.raw).decode()
    widths = [len(line) for line in re.split(r"\r?\n|\r", text)]
    assert 50 < max(widths) <= 64  # wrapped to the terminal's 64 columns, not rich's 80
    assert '    └── get_weather({"city": "Tokyo", "unit": "celsius"})' in run.screen
    flag = run_in_pty(["replay", str(path), "--speed", "max", "--no-color"], cols=64)
    assert flag.code == 0 and not SGR_COLOR.search(flag.raw)


def test_ctrl_c_stops_the_replay_and_leaves_the_tree_so_far() -> None:
    path = RECORDINGS / "ollama-parallel-calls-same-index.jsonl"  # first call at 2.8 s
    run = run_in_pty(["replay", str(path), "--speed", "1", "--max-gap", "inf"], interrupt_after=1.0)
    assert run.code == 130
    screen = [line for line in run.screen if line]
    assert str(path) in screen
    assert any("interrupted: the replay was stopped here" in line for line in screen)
    assert not any("get_weather" in line for line in screen)  # stopped before the first call
    assert any(line.startswith("0 chunks · 0 bytes") for line in screen)
    assert b"Traceback" not in run.raw
    assert b"\x1b[?25h" in run.raw  # the cursor is given back


def test_bad_line_mid_stream_takes_the_live_tree_down_for_a_one_line_error(tmp_path) -> None:
    lines = (RECORDINGS / "openai-parallel-tool-calls.jsonl").read_text().splitlines()
    bad = tmp_path / "openai-bad-line.jsonl"
    bad.write_text("\n".join([*lines[:8], "garbage{", *lines[8:]]) + "\n")
    # paced so the live tree is on the screen (from a redraw interval in) before the bad line
    run = run_in_pty(["replay", str(bad), "--speed", "1"])
    assert run.code == 2
    screen = "".join(run.screen)  # one line (the terminal wraps a long path)
    assert screen == f"streamtool: error: {bad}:9: not JSON (Expecting value)"
    assert b"\x1b[?25l" in run.raw  # the live tree had been drawn...
    assert run.raw.rfind(b"\x1b[?25h") > run.raw.rfind(b"\x1b[?25l")  # ...and the cursor restored


@pytest.mark.parametrize(
    ("name", "first_line"),
    [
        ("openai-write-file.jsonl", "import re"),
        ("anthropic-write-file.jsonl", "import pytest"),
    ],
)
def test_a_streaming_write_file_shows_its_path_and_highlighted_code_mid_stream(
    name: str, first_line: str
) -> None:
    """The path (the call's first argument) is shown as soon as it is complete, while the file
    still streams, and the code is highlighted for the path's extension."""
    path = RECORDINGS / name
    run = run_in_pty(["replay", str(path), "--speed", "1"], rows=30)
    assert run.code == 0, run.raw[-500:]
    live = []  # frames of the open call that show some of the file
    for lines, chars in run.frames():
        header = next((i for i, line in enumerate(lines) if "write_file " in line), None)
        if header is None or not lines[header].endswith("▍"):
            continue  # not drawn yet, or the call has ended
        if any(re.match(r"^[│ ] +\d+ ", line) for line in lines[header + 1 :]):
            live.append((chars, lines, header))
    assert len(live) >= 3, "the file was not seen streaming"
    for _screen, lines, header in live:
        assert "(path not known yet)" not in lines[header]
        assert re.search(r"write_file (src/blog|tests)/\w+\.py  \d+ lines?  ", lines[header])
    # highlighted as Python while streaming: the keyword has a colour of its own
    chars, lines, header = next(
        item for item in live if any(first_line in line for line in item[1])
    )
    row = next(i for i, line in enumerate(lines) if first_line in line)
    col = lines[row].index(first_line)
    assert chars[row][col].fg not in ("default", "")
