"""Tapes that can be trusted: two writers at once, a kill -9 mid-stream, an index line without
its newline, links out of the tape, a plain folder, a folder of tapes.

Every writer is real: ``streamtool proxy`` and ``streamtool serve --record-missing`` run as
subprocesses against an upstream on 127.0.0.1 (``serving``), and the crash is a real SIGKILL.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from streamtool.cli.main import app
from streamtool.core.exchange.playback import Playback
from streamtool.core.net.server import serving
from streamtool.core.net.tape import serving_tape
from streamtool.core.recording.tape_index import (
    INDEX_NAME,
    IndexEntry,
    Tape,
    append_entry,
    read_index,
)

from .serve_helpers import STREAMTOOL, body_of, recording, start_listening
from .tape_helpers import openai_tape, recorded_reads, write_exchange

UPSTREAM = recording("openai-text-usage-chunk-utf8-split")
CHAT = "https://api.openai.com/v1/chat/completions"


def ask(prompt: str) -> dict:
    return {
        "model": "gpt-4o-mini",
        "stream": True,
        "messages": [{"role": "user", "content": prompt}],
    }


def prompt_of(path: Path) -> str:
    header = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    return header["request"]["body"]["messages"][0]["content"]


def has_end(path: Path) -> bool:
    return json.loads(path.read_text(encoding="utf-8").splitlines()[-1]).get("type") == "end"


def recordings_in(tape: Path) -> list[Path]:
    return sorted(p for p in tape.glob("*.jsonl") if p.name != INDEX_NAME)


def check_index(tape: Path) -> list[IndexEntry]:
    """No sequence number or file twice, each entry names a file of its own number."""
    entries = read_index(tape)
    assert len({e.seq for e in entries}) == len(entries), "a sequence number repeated"
    assert len({e.file for e in entries}) == len(entries), "a file indexed twice"
    for e in entries:
        assert e.file.startswith(f"{e.seq:04d}-"), e
        assert (tape / e.file).is_file(), e
    return entries


# -- the index ---------------------------------------------------------------------------------
def test_an_append_keeps_a_last_entry_that_has_no_newline(tmp_path: Path) -> None:
    (tmp_path / INDEX_NAME).write_text('{"seq": 1, "file": "0001-a.jsonl"}')  # no newline
    assert [e.file for e in read_index(tmp_path)] == ["0001-a.jsonl"]
    append_entry(tmp_path, IndexEntry(seq=2, file="0002-b.jsonl"))
    assert [e.file for e in read_index(tmp_path)] == ["0001-a.jsonl", "0002-b.jsonl"]
    assert (tmp_path / INDEX_NAME).read_text().count("\n") == 2


def test_appends_from_many_processes_are_whole_lines(tmp_path: Path) -> None:
    """Four processes append 50 entries each at once: 200 entries, every line whole."""
    code = (
        "import sys\n"
        "from streamtool.core.recording.tape_index import IndexEntry, append_entry\n"
        "w = int(sys.argv[2])\n"
        "for i in range(50):\n"
        "    append_entry(sys.argv[1], IndexEntry(seq=w * 1000 + i, file=f'{w}-{i}.jsonl',"
        " model='m' * (i * 37 % 300)))\n"
    )
    procs = [
        subprocess.Popen([*STREAMTOOL[:1], "-c", code, str(tmp_path), str(w)]) for w in range(4)
    ]
    assert all(p.wait(timeout=60) == 0 for p in procs)
    lines = (tmp_path / INDEX_NAME).read_text().splitlines()
    assert len(lines) == 200
    assert sorted(json.loads(line)["seq"] for line in lines) == sorted(
        w * 1000 + i for w in range(4) for i in range(50)
    )


# -- two writers on one tape -------------------------------------------------------------------
def test_two_proxies_on_one_out_folder_record_every_exchange_once(tmp_path: Path) -> None:
    out = tmp_path / "tape"
    n = 120
    prompts = [f"request {i}" for i in range(n)]
    with serving([UPSTREAM], Playback(speed=None)) as up:
        proxies = [
            start_listening(
                [*STREAMTOOL, "proxy", "--port", "0", "--upstream", up.url, "--out", str(out)],
                env={"COLUMNS": "200"},
            )
            for _ in range(2)
        ]
        origins = [origin for _, _, origin in proxies]
        try:
            with httpx.Client(timeout=30) as client:

                def send(i: int) -> bytes:
                    url = origins[i % 2] + "/v1/chat/completions"
                    resp = client.post(url, json=ask(prompts[i]), headers={"authorization": "x"})
                    assert resp.status_code == 200
                    return resp.content

                with ThreadPoolExecutor(16) as pool:
                    bodies = list(pool.map(send, range(n)))
        finally:
            for proc, _, _ in proxies:
                proc.send_signal(signal.SIGINT)
            errors = [proc.communicate(timeout=30)[1] for proc, _, _ in proxies]
    assert all(b == body_of(UPSTREAM) for b in bodies)
    assert all("exists" not in err for err in errors), errors
    entries = check_index(out)
    files = recordings_in(out)
    # every exchange recorded once, each index entry naming the file of its own exchange
    assert len(entries) == n and {e.file for e in entries} == {f.name for f in files}
    assert sorted(prompt_of(out / e.file) for e in entries) == sorted(prompts)
    assert all(has_end(f) for f in files)
    assert not Tape(out, create=False).in_flight()  # every recording indexed, none left empty
    print(f"two writers: {n} requests, {len(entries)} exchanges indexed, seqs unique")


# -- kill -9 mid-stream ------------------------------------------------------------------------
def test_a_kill_9_leaves_cut_off_exchanges_that_are_never_served_and_are_recorded_again(
    tmp_path: Path,
) -> None:
    tape = tmp_path / "tape"
    write_exchange(tape, "0001-openai-chat-seed.jsonl", url=CHAT, body=ask("seed"),
                   reads=recorded_reads(UPSTREAM.stem), index=1)  # fmt: skip
    in_flight = 6
    prompts = [f"in flight {i}" for i in range(in_flight)]
    started = threading.Barrier(in_flight + 1, timeout=30)

    def hold(origin: str, prompt: str) -> None:
        try:
            with httpx.stream("POST", origin + "/v1/chat/completions", json=ask(prompt),
                              timeout=30) as resp:  # fmt: skip
                reads = resp.iter_raw()
                next(reads)
                started.wait()
                for _ in reads:
                    pass
        except (httpx.HTTPError, threading.BrokenBarrierError):
            pass  # the server was killed: the connection drops

    # an upstream that sends 300 bytes, then stalls: the streams are in flight when killed
    with serving([UPSTREAM], Playback(speed=None, stall=8.0, stall_after=300)) as slow:
        proc, _, origin = start_listening(
            [*STREAMTOOL, "serve", str(tape), "--record-missing", "--upstream", slow.url,
             "--port", "0", "--speed", "max"]
        )  # fmt: skip
        threads = [threading.Thread(target=hold, args=(origin, p)) for p in prompts]
        for t in threads:
            t.start()
        try:
            started.wait()  # every client got its first bytes
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
            proc.stderr.close()
        for t in threads:
            t.join(timeout=30)

    leftovers = [f for f in recordings_in(tape) if f.name != "0001-openai-chat-seed.jsonl"]
    assert len(leftovers) == in_flight and not any(has_end(f) for f in leftovers)
    assert [e.file for e in read_index(tape)] == ["0001-openai-chat-seed.jsonl"]
    assert sorted(prompt_of(f) for f in leftovers) == sorted(prompts)

    # ls and inspect say they were cut off
    listing = CliRunner().invoke(app, ["ls", str(tape), "--format", "json"])
    assert listing.exit_code == 0, listing.output
    ends = {Path(r["file"]).name: r["end"] for r in json.loads(listing.stdout)}
    assert [ends[f.name] for f in leftovers] == ["cut off"] * in_flight
    inspected = CliRunner().invoke(app, ["inspect", str(leftovers[0])])
    assert "cut off (no end record)" in inspected.stdout

    # offline, none of them is served: each request is a miss
    with serving_tape(tape) as server:
        misses = [
            httpx.post(server.url + "/v1/chat/completions", json=ask(p)).status_code
            for p in prompts
        ]
        skipped = dict(server.library.skipped)
    served_cut_off = sum(status == 200 for status in misses)
    assert served_cut_off == 0 and misses == [404] * in_flight
    assert all("cut off" in skipped[f.name] for f in leftovers)

    # with --record-missing they are recorded again, under new numbers, and indexed
    with (
        serving([UPSTREAM], Playback(speed=None)) as fast,
        serving_tape(tape, record_missing=True, upstream=fast.url) as server,
    ):
        again = [
            httpx.post(server.url + "/v1/chat/completions", json=ask(p)).content for p in prompts
        ]
    assert again == [body_of(UPSTREAM)] * in_flight
    entries = check_index(tape)
    assert len(entries) == 1 + in_flight
    assert sorted(prompt_of(tape / e.file) for e in entries[1:]) == sorted(prompts)
    assert not {e.file for e in entries} & {f.name for f in leftovers}
    assert all(has_end(tape / e.file) for e in entries)
    print(f"kill -9: {in_flight} exchanges in flight, {served_cut_off} served cut off afterwards")


# -- a tape serves only its own files ----------------------------------------------------------
def test_links_out_of_the_tape_are_refused_with_one_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tape = tmp_path / "tape"
    openai_tape(tape)
    secret = write_exchange(
        tmp_path, "secret.jsonl", url=CHAT, body=ask("secret"),
        reads=[(0.1, 'data: {"choices":[{"delta":{"content":"TOP SECRET"}}]}\n\n')],
    )  # fmt: skip
    (tape / "0003-openai-chat-secret.jsonl").symlink_to(Path("..") / secret.name)
    append_entry(tape, IndexEntry(seq=3, file="0003-openai-chat-secret.jsonl"))
    (tape / "0004-passwd.txt").symlink_to("/etc/passwd")
    with caplog.at_level(logging.WARNING), serving_tape(tape) as server:
        resp = httpx.post(server.url + "/v1/chat/completions", json=ask("secret"))
        raw = httpx.post(server.url + "/v1/messages", json={"model": "x", "stream": True})
        names = [r["name"] for r in httpx.get(server.url + "/").json()["recordings"]]
    assert resp.status_code == 404 and b"TOP SECRET" not in resp.content
    assert raw.status_code == 404 and b"root:" not in raw.content
    assert names == ["0001-openai-chat-gpt-4o", "0002-openai-chat-gpt-4o"]
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(lines) == 2
    assert any("0003-openai-chat-secret.jsonl: not served: a symbolic link" in m for m in lines)
    assert any("0004-passwd.txt: not served: a symbolic link" in m for m in lines)


# -- a plain folder, a folder of tapes ---------------------------------------------------------
def test_a_folder_without_an_index_is_served_as_a_tape_by_the_command(tmp_path: Path) -> None:
    folder = tmp_path / "retries"
    body = ask("the same turn, retried")
    first = write_exchange(folder, "a-first.jsonl", url=CHAT, body=body,
                           reads=recorded_reads("openai-parallel-tool-calls"))  # fmt: skip
    second = write_exchange(folder, "b-second.jsonl", url=CHAT, body=body,
                            reads=recorded_reads(UPSTREAM.stem))  # fmt: skip
    proc, line, origin = start_listening(
        [*STREAMTOOL, "serve", str(folder), "--port", "0", "--speed", "max"]
    )
    try:
        url = origin + "/v1/chat/completions"
        got = [httpx.post(url, json=body) for _ in range(3)]
        # a request no recording matches: the rules for files (the only one for the model)
        other = httpx.post(url, json={**body, "model": "gpt-4o-2024-08-06", "messages": []})
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert "as a tape (2 recordings)" in line
    assert [r.status_code for r in got] == [200, 200, 200]
    assert [r.content for r in got] == [body_of(first), body_of(second), body_of(first)]
    assert other.status_code == 400  # two recordings for the endpoint, none for the model

    # --tape: request matching only, a miss is a 404 naming the closest exchange
    with serving_tape(folder) as server:
        miss = httpx.post(server.url + "/v1/chat/completions", json=ask("another"))
    assert miss.status_code == 404 and "closest is a-first" in miss.text


def test_replay_and_serve_say_what_to_do_with_a_tape_or_a_folder_of_tapes(
    tmp_path: Path,
) -> None:
    tapes = tmp_path / "tapes"
    files = openai_tape(tapes / "test_agent" / "weather")
    openai_tape(tapes / "test_agent" / "other")
    runner = CliRunner()
    replay = runner.invoke(app, ["replay", str(tapes / "test_agent" / "weather")])
    assert replay.exit_code == 2
    message = replay.stderr.strip()
    assert len(message.splitlines()) == 1
    assert "is a tape of 2 exchanges" in message
    assert message.index(str(files[0])) < message.index(str(files[1]))
    serve = runner.invoke(app, ["serve", str(tapes), "--port", "0"])
    assert serve.exit_code == 2
    message = serve.stderr.strip()
    assert len(message.splitlines()) == 1
    assert "holds no recordings of its own but 2 tapes" in message
    assert f"streamtool serve {tapes / 'test_agent' / 'other'}" in message
    assert "Traceback" not in serve.output + replay.output


def test_a_tape_reader_never_sees_an_exchange_being_merged_as_served(tmp_path: Path) -> None:
    """What another process finds while a writer is mid-exchange: an unfinished recording
    the index does not list, not served."""
    tape = tmp_path / "tape"
    openai_tape(tape)
    with (
        serving([UPSTREAM], Playback(speed=None, stall=3.0, stall_after=300)) as slow,
        serving_tape(tape, record_missing=True, upstream=slow.url) as writer,
        httpx.stream(
            "POST", writer.url + "/v1/chat/completions", json=ask("mid"), timeout=20
        ) as resp,
    ):
        reads = resp.iter_raw()
        next(reads)
        running = Tape(tape, create=False).in_flight()
        hidden = [p.name for p in tape.iterdir() if p.name.endswith(".reserved")]
        with serving_tape(tape) as reader:
            status = httpx.post(reader.url + "/v1/chat/completions", json=ask("mid"))
        deadline = time.monotonic() + 10
        for _ in reads:
            assert time.monotonic() < deadline
    assert len(running) == 1 and running[0].startswith("0003-") and not hidden
    assert status.status_code == 404
    assert [e.seq for e in check_index(tape)] == [1, 2, 3]


def test_a_proxy_killed_before_the_answers_heads_leaves_named_empty_exchanges(
    tmp_path: Path,
) -> None:
    """A real SIGKILL while every exchange is named (its file made empty) and no answer's head
    has come: the empty files are listed cut off, never served, their numbers never handed out
    again; the next writer records under new numbers."""
    from .proxy_helpers import ScriptedUpstream, chunked

    tape = tmp_path / "tape"
    n = 4
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
    event = b'data: {"choices":[{"index":0,"delta":{"content":"late"}}]}\n\n'
    late = [(8.0, head + b"\r\n" + chunked(event) + b"0\r\n\r\n")]  # the head after 8 s

    def post(origin: str, prompt: str) -> None:
        with pytest.raises(httpx.HTTPError):  # the proxy is killed: the connection drops
            httpx.post(origin + "/v1/chat/completions", json=ask(prompt), timeout=30)

    with ScriptedUpstream(late) as up:
        command = [*STREAMTOOL, "proxy", "--port", "0", "--upstream", up.url, "--out", str(tape)]
        proc, _, origin = start_listening([*command, "--view", "none"])
        threads = [threading.Thread(target=post, args=(origin, f"p{i}")) for i in range(n)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 10
        while len(recordings_in(tape)) < n and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        assert proc.stderr is not None
        proc.stderr.close()
        for t in threads:
            t.join(timeout=30)
    named = recordings_in(tape)
    assert len(named) == n and all(f.stat().st_size == 0 for f in named)
    assert read_index(tape) == []
    listing = CliRunner().invoke(app, ["ls", str(tape), "--format", "json"])
    assert listing.exit_code == 0, listing.output
    assert [r["end"] for r in json.loads(listing.stdout)] == ["cut off"] * n
    with serving_tape(tape) as server:
        skipped = dict(server.library.skipped)
    assert skipped == {f.name: "empty: an exchange named and not written yet" for f in named}
    # the next writer: a new number, past the ones named before the kill
    with (
        serving([UPSTREAM], Playback(speed=None)) as fast,
        serving_tape(tape, record_missing=True, upstream=fast.url) as server,
    ):
        body = httpx.post(server.url + "/v1/chat/completions", json=ask("after")).content
    assert body == body_of(UPSTREAM)
    [entry] = check_index(tape)
    assert entry.seq == n + 1 and prompt_of(tape / entry.file) == "after"
