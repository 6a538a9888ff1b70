"""Colour and width where the output meets a terminal (issue 19, item 6): ``check`` colours its
statuses on a terminal, ``diff`` follows the terminal's (or COLUMNS') width, drops colour with
``--no-color`` and shows only what differs with ``--only-differences``; and ``record`` draws the
path of a streaming write_file before the call ends."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from streamtool.cli.record import LiveFeed
from streamtool.cli.tree import TreeSink, make_console
from streamtool.core.exchange.playback import Playback
from streamtool.core.net.http_capture import record_request
from streamtool.core.net.library import Library
from streamtool.core.net.listen import ServerThread
from streamtool.core.net.server import create_app

from .conftest import RECORDINGS
from .test_tree_pty import SGR_COLOR, run_in_pty

A = RECORDINGS / "openai-write-file.jsonl"
B = RECORDINGS / "openai-write-file-path-after-content.jsonl"


def test_check_colours_drift_on_a_terminal_and_not_in_a_pipe(tmp_path: Path) -> None:
    shutil.copy(RECORDINGS / "openai-parallel-tool-calls.jsonl", tmp_path / "a.jsonl")
    golden = (RECORDINGS / "openai-parallel-tool-calls.golden.json").read_text()
    (tmp_path / "a.golden.json").write_text(golden.replace("Tokyo", "Kyoto"))
    run = run_in_pty(["check", str(tmp_path)], cols=120)
    assert run.code == 1
    assert re.search(rb"\x1b\[1;31mDRIFT\x1b\[0m +" + re.escape(str(tmp_path).encode()), run.raw)
    piped = subprocess.run(
        [sys.executable, "-m", "streamtool.cli", "check", str(tmp_path)],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "CI": ""},
    )
    assert piped.returncode == 1 and "\x1b[" not in piped.stdout
    assert re.search(r"^DRIFT +\S+a\.jsonl$", piped.stdout, re.M)
    no_color = run_in_pty(["check", str(tmp_path)], cols=120, env={"NO_COLOR": "1"})
    assert b"DRIFT" in no_color.raw and not SGR_COLOR.search(no_color.raw)


def _diff(*args: str, columns: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin"}
    if columns:
        env["COLUMNS"] = columns
    return subprocess.run(
        [sys.executable, "-m", "streamtool.cli", "diff", *args],
        capture_output=True,
        text=True,
        env=env,
    )


def test_diff_is_as_wide_as_columns_else_80_off_a_terminal() -> None:
    for columns, width in ((None, 80), ("100", 100)):
        proc = _diff(str(A), str(B), columns=columns)
        assert proc.returncode == 1
        widths = [len(line) for line in proc.stdout.splitlines()]
        assert max(widths) == width, columns  # the table fills the width, no more


def test_diff_only_differences_keeps_the_rows_that_differ() -> None:
    full = json.loads(_diff(str(A), str(B), "--format", "json").stdout)
    only = json.loads(_diff(str(A), str(B), "--format", "json", "--only-differences").stdout)
    assert only["rows"] == [row for row in full["rows"] if not row["same"]]
    assert only["rows"] and len(only["rows"]) < len(full["rows"])
    assert only["differences"] == full["differences"]
    text = _diff(str(A), str(B), "--only-differences", columns="200").stdout
    marks = re.findall(r"│ ([=≠~]) │$", text, re.M)
    assert marks and "=" not in marks
    same = _diff(str(A), str(A), "--only-differences")
    assert same.returncode == 0 and same.stdout.startswith("no differences\n")


def test_diff_colours_on_a_terminal_unless_no_color() -> None:
    coloured = run_in_pty(["diff", str(A), str(B)], cols=100)
    assert coloured.code == 1 and SGR_COLOR.search(coloured.raw)
    plain = run_in_pty(["diff", str(A), str(B), "--no-color"], cols=100)
    assert plain.code == 1 and not SGR_COLOR.search(plain.raw)
    assert any("meaning differs" in line for line in plain.screen)


class _Watch:
    """A record view: the tree sink, and the write_file segment as it stood after each read."""

    def __init__(self, sink: TreeSink) -> None:
        self.sink = sink
        self.seen: list[tuple[bool, str | None, int]] = []  # (closed, path, lines)

    def on_items(self, engine: Any, t: float | None, items: list[Any]) -> None:
        self.sink.on_items(engine, t, items)
        for seg in self.sink.state.segments.values():
            if seg.kind.value == "write_file":
                self.seen.append((seg.closed, seg.path, seg.lines))

    def close(self, engine: Any) -> None:
        self.sink.close(engine)


@pytest.mark.parametrize("name", ["openai-write-file.jsonl", "anthropic-write-file.jsonl"])
def test_record_draws_the_path_while_the_write_file_streams(tmp_path: Path, name: str) -> None:
    """Through the real HTTP path: the tree sink of ``record`` knows the file's path (and shows
    it) from the fragment that completed it, long before the call ends."""
    from streamtool.cli.demo import replay_request

    library = Library.from_paths([RECORDINGS / name])
    with open(tmp_path / "tree.txt", "w") as out:
        watch = _Watch(TreeSink(make_console(file=out), live=False))
        with ServerThread(create_app(library, Playback(speed=None), None)) as server:
            prepared = replay_request(RECORDINGS / name, server.url)
            live = LiveFeed(prepared, watch, converter="auto", parser="api_tool_call", source="x")
            result = record_request(
                prepared, tmp_path / name, on_start=live.on_start, on_chunk=live.on_chunk
            )
            live.finish(result)
    assert result.reason == "complete"
    open_reads = [(path, lines) for closed, path, lines in watch.seen if not closed]
    assert len(open_reads) >= 5
    streaming_with_path = [lines for path, lines in open_reads if path and lines]
    assert len(streaming_with_path) >= 3  # file lines shown under a known path
    final = watch.seen[-1][1]
    assert final and all(path == final for path, _ in open_reads if path)
    assert f"write_file {final}" in (tmp_path / "tree.txt").read_text()
