"""A full disk under the proxy and ``serve --record-missing``, run as a user runs them: one line
on the terminal whatever ``--view`` (or ``--quiet``) says, and a recording that could not be
written is neither indexed nor counted as an exchange; the agent gets its whole answer.

Two ways to fill a disk: a real one, a small tmpfs mounted for the test (``No space left on
device``; needs root, skipped otherwise), and, everywhere, the file size limit
(``RLIMIT_FSIZE``; with ``SIGXFSZ`` ignored, as Python ignores it, a write past it fails with
``File too large``)."""

from __future__ import annotations

import errno
import os
import re
import resource
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from streamtool.core.recording.tape_index import read_index

from .odd_upstreams import BIG_BODY, CHAT_BODY, chat_request
from .serve_helpers import STREAMTOOL, start_listening

PAGE = 4096


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 KB tmpfs of the test's own."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a small tmpfs is mounted as root only")
    where = tmp_path / "disk"
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(disk: Path, room_pages: int) -> None:
    """Fill ``disk`` to the last page, then free ``room_pages`` of them."""
    fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        while True:
            os.write(fd, b"\0" * PAGE)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    if room_pages:
        os.ftruncate(fd, os.fstat(fd).st_size // PAGE * PAGE - room_pages * PAGE)
    os.close(fd)


def ask(origin: str, content: str) -> bytes:
    r = httpx.post(origin + "/v1/chat/completions", json=chat_request(content), timeout=15)
    assert r.status_code == 200
    return r.content


def stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=20)
    return err


def indexed(tape: Path) -> list[str]:
    return [e.file for e in read_index(tape)]


def command(kind: str, tape: Path, upstream: str, view: str) -> list[str]:
    if kind == "proxy":
        return ["proxy", "--out", str(tape), "--upstream", upstream, "--view", view]
    quiet = ["--quiet"] if view == "none" else []
    return ["serve", str(tape), "--record-missing", "--upstream", upstream, *quiet]


@pytest.mark.parametrize(
    "kind, room",
    [
        ("proxy", 0),  # not even the recording's header fits
        ("proxy", 1),  # the header and a few reads fit: the stream's middle does not
        ("serve", 0),
        ("serve", 1),
    ],
)
def test_a_full_disk_is_one_line_and_no_exchange(
    small_disk: Path, upstream: str, kind: str, room: int
) -> None:
    tape = small_disk / "tape"
    proc, _, origin = start_listening(
        [*STREAMTOOL, *command(kind, tape, upstream, "none"), "--port", "0"]
    )
    try:
        assert ask(origin, "small") == CHAT_BODY
        first = wait_indexed(tape, 1)
        fill(small_disk, room)
        assert ask(origin, "big") == BIG_BODY  # the agent's stream is whole
        assert ask(origin, "big again") == BIG_BODY
    finally:
        err = stop(proc)
    assert indexed(tape) == first  # nothing more indexed
    full = [line for line in err.splitlines() if "No space left on device" in line]
    assert len(full) == 2, err  # one line per exchange that could not be written
    assert "Traceback" not in err
    names = sorted(p.name for p in tape.glob("0*.jsonl"))
    if kind == "proxy":
        assert re.search(r"proxy stopped; 1 exchange recorded", err), err
        if room == 0:  # no empty file left behind
            assert names == first, names
        else:  # what was written before is kept, outside the index
            assert len(names) == 2 and (tape / names[1]).stat().st_size > 0
    else:
        assert names == first  # a tape keeps only what it could write whole


def wait_indexed(tape: Path, n: int) -> list[str]:
    import time

    deadline = time.monotonic() + 10
    while len(files := indexed(tape)) < n:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return files


def _file_size_limit(limit: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


@pytest.mark.parametrize("view", ["none", "journal"])
def test_the_file_size_limit_is_one_line_and_no_exchange(
    tmp_path: Path, upstream: str, view: str
) -> None:
    """The portable stand-in for a full disk: no file of the proxy may grow past 8 KB."""
    tape = tmp_path / "tape"
    args = [*STREAMTOOL, *command("proxy", tape, upstream, view), "--port", "0"]
    proc = subprocess.Popen(
        args,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "400"},
        preexec_fn=_file_size_limit(8 * 1024),
    )
    assert proc.stderr is not None
    found = re.search(r"http://127\.0\.0\.1:\d+", proc.stderr.readline())
    assert found
    origin = found.group(0)
    try:
        assert ask(origin, "small") == CHAT_BODY
        first = wait_indexed(tape, 1)
        assert ask(origin, "big") == BIG_BODY
    finally:
        err = stop(proc)
    assert indexed(tape) == first
    too_large = [line for line in err.splitlines() if "File too large" in line]
    assert len(too_large) == 1, err
    assert "proxy stopped; 1 exchange recorded" in err
