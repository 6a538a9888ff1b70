"""``report -o`` writes only a regular file or a new path (a device, FIFO or folder is exit 2,
``--force`` or not; ``-o -`` is stdout), and a long recording's page stays small and quick in
Chromium: bars for runs of reads, the raw reads drawn when opened, the player and the tree
capped with a note saying so. (The open time of a 50 MB recording is measured by
benchmarks/bench_report.py.)"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from streamtool.core.outputs import report as report_mod
from streamtool.core.outputs.inspect import Inspector
from streamtool.core.recording.reader import Source

from .conftest import RECORDINGS
from .helpers import chat_chunk
from .serve_helpers import write_recording
from .test_report import browser, open_page  # noqa: F401  (the chromium fixture)

SMALL = RECORDINGS / "openai-parallel-tool-calls.jsonl"


def report(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "streamtool.cli", "report", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
    )


@pytest.mark.parametrize("force", [False, True])
def test_o_refuses_a_device_a_fifo_and_a_folder(tmp_path: Path, force: bool) -> None:
    device = tmp_path / "null-copy"
    os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # what /dev/null is
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    folder = tmp_path / "folder"
    folder.mkdir()
    extra = ["--force"] if force else []
    for target, words in (
        (device, "not a regular file"),
        (fifo, "not a regular file"),
        (folder, "is a folder"),
    ):
        run = report(str(SMALL), "-o", str(target), *extra)  # a FIFO must not hang it
        assert run.returncode == 2, (target, run.stderr)
        [line] = run.stderr.strip().splitlines()
        assert str(target) in line and words in line, line
    assert stat.S_ISCHR(device.stat().st_mode)  # still the device node
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert list(folder.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder", "null-copy", "pipe"]


def test_o_dash_is_stdout_and_a_new_or_regular_path_is_written(tmp_path: Path) -> None:
    run = report(str(SMALL), "-o", "-")
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("<!DOCTYPE html>") and report_mod.__name__
    new = tmp_path / "new.html"
    assert report(str(SMALL), "-o", str(new)).returncode == 0
    assert new.read_text(encoding="utf-8") == run.stdout
    mine = tmp_path / "mine.html"
    mine.write_text("<p>mine</p>")
    assert report(str(SMALL), "-o", str(mine)).returncode == 2  # not a report: not replaced
    assert report(str(SMALL), "-o", str(mine), "--force").returncode == 0
    assert stat.S_ISREG(mine.stat().st_mode) and "streamtool report" in mine.read_text()


def long_recording(path: Path, reads: int) -> Path:
    """``reads`` text reads, one small event each (words numbered, so order shows)."""
    events = [(0.001 * i, json.dumps(chat_chunk({"content": f"w{i} "}))) for i in range(reads)]
    body = [(t, f"data: {e}\n\n") for t, e in events]
    body.append((0.001 * reads, "data: [DONE]\n\n"))
    return write_recording(path, body)


def test_a_long_recording_page_draws_bars_per_run_and_reads_on_demand(
    browser,  # noqa: F811
    tmp_path: Path,
) -> None:
    rec = long_recording(tmp_path / "long.jsonl", 3400)
    page_file = tmp_path / "long.html"
    run = report(str(rec), "-o", str(page_file))
    assert run.returncode == 0, run.stderr
    page, problems = open_page(browser, page_file)
    reads = 3401
    per = -(-reads // report_mod.MAX_BARS)
    assert page.locator("#timeline-svg rect.read").count() == -(-reads // per)
    assert f"each bar stands for {per} reads" in page.inner_text("#timeline-note")
    assert page.locator("#raw-list li").count() == 0  # nothing drawn until opened
    page.click("#raw summary")
    rows = page.locator("#raw-list li")
    rows.nth(report_mod.RAW_PAGE - 1).wait_for(timeout=10000)
    assert rows.count() == report_mod.RAW_PAGE
    page.click("#raw-more")
    rows.nth(2 * report_mod.RAW_PAGE - 1).wait_for(timeout=10000)
    assert rows.count() == 2 * report_mod.RAW_PAGE
    assert page.inner_text("#read-1 pre").startswith("data: ")
    assert f"first {report_mod.MAX_RAW_READS:,} of {reads:,} reads" in page.inner_text("#raw")
    for _ in range(per + 1):
        page.click("#step")
    lit = page.locator("#timeline-svg rect.read.on")
    assert lit.count() == 1 and lit.get_attribute("data-read") == str(per)
    assert problems == []


def _inspected(rec: Path) -> Inspector:
    """The inspector of recording ``rec``, fed all of it, its items kept (as a report wants)."""
    src = Source(rec)
    ins = Inspector(src.header, source=str(rec), keep_items=True)
    for chunk in src.chunks():
        ins.feed(chunk)
    ins.finish(src.end)
    return ins


def test_the_player_and_tree_stop_at_the_cap_and_say_so(
    browser,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(report_mod, "MAX_PLAYER_CHARS", 3000)
    monkeypatch.setattr(report_mod, "MAX_TREE_CHARS", 2000)
    ins = _inspected(long_recording(tmp_path / "long.jsonl", 1200))
    full = "".join(f"w{i} " for i in range(1200))
    page_file = tmp_path / "capped.html"
    page_file.write_text(report_mod.build_report(ins), encoding="utf-8")
    page, problems = open_page(browser, page_file)
    note = page.inner_text("#player-note")
    assert "The player stops at read" in note and "3,000 characters" in note
    held = int(note.split("stops at read ")[1].split(" ")[0].replace(",", ""))
    page.select_option("#speed", "Infinity")
    page.click("#play")
    page.locator("#pstatus", has_text=f"read {held} / {held}").wait_for(timeout=20000)
    played = page.inner_text("#out").split("\n", 1)[1].strip()
    assert 2500 < len(played) <= 3000 and full.startswith(played)  # in order, none skipped
    tree = page.inner_text("#tree")
    assert full[:2000].strip() in tree and full[2100:2200] not in tree
    assert f"{len(full) - 2000:,} more characters not shown" in tree
    assert problems == []


# -- any size, any name -------------------------------------------------------------------------
def test_the_player_holds_the_first_reads_and_the_page_says_where_it_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(report_mod, "MAX_PLAYER_READS", 500)
    ins = _inspected(long_recording(tmp_path / "long.jsonl", 1200))
    page = report_mod.build_report(ins)
    data = page.split('<script type="application/json" id="player-data">', 1)[1]
    player = json.loads(data.split("</script>", 1)[0])
    assert [r["i"] for r in player["reads"]] == list(range(500))
    assert player["total"] == 1201 and player["tail"] == []
    played = "".join(e[2] for r in player["reads"] for e in r["ev"] if e[0] == "c")
    assert played == "".join(f"w{i} " for i in range(500))
    assert (
        "The player stops at read 500 of 1,201: the page holds at most 500 reads and "
        f"{report_mod.MAX_PLAYER_CHARS:,} characters of the stream" in page
    )


def test_a_report_keeps_the_facts_and_items_it_shows_only(tmp_path: Path) -> None:
    from streamtool.core.drive.inspect_file import inspect_file

    rec = long_recording(tmp_path / "long.jsonl", 1200)
    ins = inspect_file(rec, keep_items=True, keep_reads=50, items_limit=100)
    assert [r.index for r in ins.reads] == list(range(50))
    assert ins.count == 1201 and len(ins.points) == 1201
    assert ins.items and max(where for where, _ in ins.items if where is not None) == 99
    assert all(where is not None for where, _ in ins.items)  # the end is past the page
    page = report_mod.build_report(ins)
    assert "Raw reads (1,201)" in page and "read 49 at" in page


def test_a_report_on_a_file_name_that_is_not_utf8(tmp_path: Path) -> None:
    name = os.fsdecode(b"r\xff\xfe.jsonl")
    rec = tmp_path / name
    rec.write_bytes(SMALL.read_bytes())
    # a strict UTF-8 standard output (a UTF-8 locale other than C.UTF-8 has one)
    env = dict(os.environ, PYTHONIOENCODING="utf-8:strict")
    run = subprocess.run(
        [sys.executable, "-m", "streamtool.cli", "report", name],
        capture_output=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert run.stderr == b"wrote r\xff\xfe.report.html\n"  # the name's own bytes
    page = (tmp_path / os.fsdecode(b"r\xff\xfe.report.html")).read_bytes().decode("utf-8")
    assert "<title>streamtool report: r\ufffd\ufffd.jsonl</title>" in page
    to_stdout = subprocess.run(
        [sys.executable, "-m", "streamtool.cli", "report", name, "-o", "-"],
        capture_output=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
    )
    assert to_stdout.returncode == 0, to_stdout.stderr
    assert to_stdout.stdout.decode("utf-8") == page
    for args in (["inspect", "--reads"], ["inspect", "--format", "json"], ["replay"]):
        other = subprocess.run(
            [sys.executable, "-m", "streamtool.cli", *args, name],
            capture_output=True,
            cwd=tmp_path,
            env=env,
            timeout=60,
        )
        assert other.returncode == 0, (args, other.stderr)
        assert b"Traceback" not in other.stderr
