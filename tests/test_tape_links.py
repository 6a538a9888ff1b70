"""A tape's files are never written through a link: its counter, index, lock, reservations and
recordings, by ``serve --record-missing`` and by the proxy, on real servers on 127.0.0.1. A link
(to a file outside the tape) put where one of them is expected is refused with one line naming
it, or (a reservation's or a recording's name) left alone for the next free number; the file
outside is never changed, the client always gets its answer, and no request fails with a
traceback."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from streamtool.core.model.records import Header, RecordingError
from streamtool.core.net.proxy import ProxyConfig, ProxyThread, parse_upstreams
from streamtool.core.net.tape import merge_into, serving_tape
from streamtool.core.recording.tape_index import (
    IndexEntry,
    Tape,
    append_entry,
    read_index,
    rewrite_index,
)
from streamtool.core.recording.writer import RecordingWriter

from .odd_upstreams import CHAT_BODY, chat_request
from .serve_helpers import STREAMTOOL, start_listening

OUTSIDE = b"precious: not the tape's\n"
# the second exchange's names (model gpt-x, through the chat completions endpoint)
SECOND = "0002-openai-chat-completions-gpt-x.jsonl"
THIRD = "0003-openai-chat-completions-gpt-x.jsonl"


@contextmanager
def tape_writer(kind: str, tape: Path, upstream: str, lines: list[str]) -> Iterator[str]:
    """``serve TAPE --record-missing`` or ``proxy --out TAPE`` on 127.0.0.1: its origin."""
    if kind == "serve":
        with serving_tape(tape, record_missing=True, upstream=upstream, log=lines.append) as s:
            yield s.url
    else:
        config = ProxyConfig(out=tape, upstreams=parse_upstreams([upstream]), log=lines.append)
        with ProxyThread(config) as proxy:
            yield proxy.url


def post(origin: str, turn: int) -> httpx.Response:
    r = httpx.post(origin + "/v1/chat/completions", json=chat_request(f"turn {turn}"), timeout=10)
    assert r.status_code == 200, r.text
    assert r.content == CHAT_BODY  # the client's answer never depends on the tape
    return r


def indexed(tape: Path, n: int) -> list[str]:
    """The tape's index once it lists ``n`` exchanges (the index is written as an exchange
    ends, after the client had its last byte)."""
    deadline = time.monotonic() + 10
    while len(entries := read_index(tape)) < n:
        assert time.monotonic() < deadline, entries
        time.sleep(0.01)
    return [e.file for e in entries]


def link_outside(tmp_path: Path, at: Path) -> Path:
    outside = tmp_path / "outside.txt"
    outside.write_bytes(OUTSIDE)
    at.unlink(missing_ok=True)
    at.symlink_to(outside)
    return outside


@pytest.mark.parametrize("server", ["serve", "proxy"])
@pytest.mark.parametrize("name", [".seq", "index.jsonl", ".lock"])
def test_a_link_put_in_place_of_a_tape_file_is_refused_in_one_line(
    tmp_path: Path, upstream: str, server: str, name: str, caplog: pytest.LogCaptureFixture
) -> None:
    tape = tmp_path / "tape"
    tape.mkdir()
    lines: list[str] = []
    with caplog.at_level(logging.WARNING), tape_writer(server, tape, upstream, lines) as origin:
        post(origin, 1)
        indexed(tape, 1)
        assert (tape / name).is_file()  # the first exchange made it
        outside = link_outside(tmp_path, tape / name)
        for turn in (2, 3):  # each request is answered; each write is refused
            post(origin, turn)
    assert outside.read_bytes() == OUTSIDE
    assert (tape / name).is_symlink()
    refused = [line for line in lines if f"{name}: is a symbolic link" in line]
    assert len(refused) == 2, lines
    assert all("\n" not in line for line in refused)
    # no request failed with a traceback (uvicorn logs an application's exception)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
    assert "Traceback" not in caplog.text
    if name != "index.jsonl":
        assert [e.file for e in read_index(tape)] == ["0001-openai-chat-completions-gpt-x.jsonl"]


@pytest.mark.parametrize("server", ["serve", "proxy"])
def test_a_link_under_the_next_recordings_name_is_passed_over(
    tmp_path: Path, upstream: str, server: str
) -> None:
    tape = tmp_path / "tape"
    tape.mkdir()
    lines: list[str] = []
    with tape_writer(server, tape, upstream, lines) as origin:
        post(origin, 1)
        indexed(tape, 1)
        at = tape / SECOND
        outside = link_outside(tmp_path, at)
        post(origin, 2)
        # the number the link holds is passed over: the exchange is recorded under the next one
        assert indexed(tape, 2)[-1] == THIRD
    assert outside.read_bytes() == OUTSIDE
    assert at.is_symlink()
    assert (tape / THIRD).is_file() and not (tape / THIRD).is_symlink()


@pytest.mark.parametrize("name", [".seq", "index.jsonl", ".lock"])
@pytest.mark.parametrize("command", ["serve", "proxy"])
def test_a_tape_holding_a_link_is_refused_when_a_writer_starts(
    tmp_path: Path, command: str, name: str
) -> None:
    tape = tmp_path / "tape"
    tape.mkdir()
    outside = link_outside(tmp_path, tape / name)
    if command == "serve":
        args = ["serve", str(tape), "--record-missing", "--upstream", "http://127.0.0.1:9"]
    else:
        args = ["proxy", "--out", str(tape), "--view", "none"]
    try:
        done = subprocess.run(
            [*STREAMTOOL, *args, "--port", "0"], capture_output=True, text=True, timeout=30
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the command started instead of refusing the tape")
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line == (
        f"streamtool: error: {tape / name}: is a symbolic link: streamtool writes only its own "
        "files, never through a link"
    )
    assert outside.read_bytes() == OUTSIDE


@pytest.mark.parametrize("command", ["serve", "proxy"])
def test_a_lock_link_gives_one_line_not_a_traceback_on_every_request(
    tmp_path: Path, upstream: str, command: str
) -> None:
    """The commands as a user runs them: the lock replaced by a link while they run."""
    tape = tmp_path / "tape"
    if command == "serve":
        args = ["serve", str(tape), "--record-missing", "--upstream", upstream]
    else:
        args = ["proxy", "--out", str(tape), "--upstream", upstream, "--view", "none"]
    tape.mkdir()
    proc, _, origin = start_listening([*STREAMTOOL, *args, "--port", "0"])
    try:
        post(origin, 1)
        indexed(tape, 1)
        outside = link_outside(tmp_path, tape / ".lock")
        post(origin, 2)
        post(origin, 3)
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    assert outside.read_bytes() == OUTSIDE
    assert "Traceback" not in err and "-> 500" not in err, err
    refused = [line for line in err.splitlines() if ".lock: is a symbolic link" in line]
    assert len(refused) == 2, err


# -- each writing function, on its own ------------------------------------------------------------
def test_the_index_and_counter_are_opened_as_the_tapes_own_files(tmp_path: Path) -> None:
    tape = tmp_path / "tape"
    writer = Tape(tape)
    seq, path = writer.allocate("openai-chat", "m")
    # a second name for the index (a hard link) is refused as a link is: the write would land
    # in the other name too
    append_entry(tape, IndexEntry(seq=seq, file=path.name))
    other = tmp_path / "other-name.jsonl"
    os.link(tape / "index.jsonl", other)
    before = other.read_bytes()
    with pytest.raises(RecordingError, match="has another name"):
        append_entry(tape, IndexEntry(seq=9, file="x.jsonl"))
    assert other.read_bytes() == before
    os.unlink(other)
    outside = link_outside(tmp_path, tape / ".seq")
    with pytest.raises(RecordingError, match=r"\.seq: is a symbolic link"):
        writer.allocate("openai-chat", "m")
    assert outside.read_bytes() == OUTSIDE


def test_rewriting_the_index_never_writes_through_its_temporary_file(tmp_path: Path) -> None:
    tape = tmp_path / "tape"
    Tape(tape)
    outside = link_outside(tmp_path, tape / ".index.jsonl.new")
    rewrite_index(tape, [IndexEntry(seq=1, file="0001-a.jsonl")])
    assert outside.read_bytes() == OUTSIDE
    assert [e.file for e in read_index(tape)] == ["0001-a.jsonl"]
    assert not (tape / "index.jsonl").is_symlink()


def test_a_merge_note_is_never_written_through_a_link(tmp_path: Path) -> None:
    tape, staging = tmp_path / "tape", tmp_path / "staging"
    Tape(tape)
    Tape(staging)
    outside = link_outside(tmp_path, tape / ".note")
    with pytest.raises(RecordingError, match=r"\.note: is a symbolic link"):
        merge_into(tape, staging, note=(".note", "run 1"))
    assert outside.read_bytes() == OUTSIDE


@pytest.mark.parametrize("force", [False, True])
def test_a_recording_is_never_written_through_a_link(tmp_path: Path, force: bool) -> None:
    outside = link_outside(tmp_path, tmp_path / "r.jsonl")
    expected = "is a symbolic link" if force else "exists"
    with pytest.raises(RecordingError, match=expected):
        RecordingWriter(tmp_path / "r.jsonl", Header(provider="openai"), force=force)
    assert outside.read_bytes() == OUTSIDE


def test_record_refuses_a_link_before_any_request_even_with_force(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from streamtool.cli.main import app

    from .odd_upstreams import raw_answer
    from .proxy_helpers import ScriptedUpstream
    from .serve_helpers import record_args

    outside = link_outside(tmp_path, tmp_path / "r.jsonl")
    env = {"OPENAI_API_KEY": "sk-test-FAKElink0123456789abcdef"}
    answer = raw_answer(b"200 OK", [b"content-type: text/event-stream"], CHAT_BODY)
    with ScriptedUpstream([(0, answer)]) as server:
        args = ["record", *record_args(server.url + "/v1"), "--view", "none", "--force", "-o"]
        refused = CliRunner().invoke(app, [*args, str(tmp_path / "r.jsonl")], env=env)
        assert server.requests == []  # refused before the request went out
        # a device named on purpose is still written (nothing of it is a link)
        kept = CliRunner().invoke(app, [*args, os.devnull], env=env)
    assert refused.exit_code == 2
    assert refused.stderr.strip().splitlines() == [
        f"streamtool: error: {tmp_path / 'r.jsonl'}: is a symbolic link: streamtool writes only "
        "its own files, never through a link"
    ]
    assert outside.read_bytes() == OUTSIDE
    assert kept.exit_code == 0, kept.output
