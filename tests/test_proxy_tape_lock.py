"""The proxy and a tape whose lock another writer holds.

The proxy names recordings and appends the index in threads of their own: while another process
holds the tape's lock, the exchanges that need it wait and everything else goes on (the event
loop never waits for the lock); once the lock is free they are named and indexed in order; held
past the lock's timeout, an exchange is relayed and said not recorded.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from streamtool.core.net.proxy import ProxyConfig, ProxyThread, parse_upstreams
from streamtool.core.recording import tape_index
from streamtool.core.recording.reader import Source

from .proxy_helpers import ScriptedUpstream, chunked
from .test_proxy import captured, index_of, raw_post, wait_for_index

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
EVENT = b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
WRITES = [(0.0, HEAD + chunked(EVENT) + b"0\r\n\r\n")]
BODY = {"model": "gpt-test", "stream": True, "messages": []}
# another writer: a process holding the tape's lock (filelock, as streamtool takes it)
HOLDER = (
    "import sys, time\n"
    "from filelock import FileLock\n"
    "lock = FileLock(sys.argv[1])\n"
    "lock.acquire()\n"
    "print('held', flush=True)\n"
    "time.sleep(float(sys.argv[2]))\n"
)


def hold_lock(tape: Path, seconds: float) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tape / ".lock"), str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


def post_all(url: str, n: int) -> tuple[list[threading.Thread], list[tuple[int, bytes]]]:
    got: list[tuple[int, bytes]] = []

    def one() -> None:
        status, reads = raw_post(url + "/v1/chat/completions", BODY)
        got.append((status, b"".join(reads)))

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    return threads, got


def test_exchanges_wait_for_a_lock_held_elsewhere_while_the_loop_goes_on(tmp_path: Path) -> None:
    out = tmp_path / "caps"
    with (
        ScriptedUpstream(WRITES) as up,
        ProxyThread(ProxyConfig(out=out, upstreams=parse_upstreams([up.url]))) as px,
    ):
        assert raw_post(px.url + "/v1/chat/completions", BODY)[0] == 200
        wait_for_index(out, 1)
        holder = hold_lock(out, 1.5)
        threads, got = post_all(px.url, 3)
        # a request that is not recorded is answered at once: the loop does not wait
        start = time.monotonic()
        models = httpx.get(px.url + "/v1/models", timeout=10)
        answered_in = time.monotonic() - start
        time.sleep(0.3)
        indexed_while_held = len(index_of(out))
        still_held = holder.poll() is None
        holder.wait(10)
        for t in threads:
            t.join(10)
        entries = wait_for_index(out, 4)
    assert models.status_code == 200 and answered_in < 1.0
    assert still_held and indexed_while_held == 1  # nothing written under another's lock
    assert sorted(got) == [(200, EVENT)] * 3
    assert [e["seq"] for e in entries] == [1, 2, 3, 4]
    files = captured(out)
    assert [f.name for f in files] == sorted(e["file"] for e in entries)
    for f in files:  # every recording whole: the bytes the client got, and its end
        source = Source(f)
        assert "".join(str(c.data) for c in source.chunks()).encode() == EVENT
        assert source.end is not None and source.end.reason == "complete"


def test_a_lock_held_past_its_timeout_leaves_the_exchange_relayed_and_unrecorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tape_index, "LOCK_TIMEOUT", 0.4)
    out = tmp_path / "caps"
    lines: list[str] = []
    config = ProxyConfig(out=out, upstreams=parse_upstreams([]), log=lines.append)
    with ScriptedUpstream(WRITES) as up:
        config.upstreams = parse_upstreams([up.url])
        with ProxyThread(config) as px:
            assert raw_post(px.url + "/v1/chat/completions", BODY)[0] == 200
            wait_for_index(out, 1)
            holder = hold_lock(out, 2.0)
            status, reads = raw_post(px.url + "/v1/chat/completions", BODY)
            holder.wait(10)
            # the lock is free again: the next exchange is recorded under the next number
            assert raw_post(px.url + "/v1/chat/completions", BODY)[0] == 200
            entries = wait_for_index(out, 2)
    assert (status, b"".join(reads)) == (200, EVENT)
    said = [line for line in lines if "held the tape's lock for 0.4 s" in line]
    assert len(said) == 1 and "not recorded" in said[0] and "\n" not in said[0]
    assert [e["seq"] for e in entries] == [1, 2]
    assert [f.name for f in captured(out)] == [e["file"] for e in entries]
