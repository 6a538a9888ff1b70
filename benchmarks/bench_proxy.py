"""``streamtool proxy`` overhead on loopback: direct to ``streamtool serve`` against through the
proxy, in the same run, every figure from paired, interleaved runs.

    python -m benchmarks.bench_proxy [--rounds 9] [--requests 101] [--size-kb 4096]
                                     [--streams 100] [--body-trials 7]

Starts ``streamtool serve`` (the upstream) and ``streamtool proxy --upstream`` (recording into a
temporary folder, no live view) as subprocesses on 127.0.0.1; the client is httpx (asyncio) in
this process, the same for direct and proxied requests, which alternate (the order swapped every
pair) so both see the same machine load. Figures and targets:

1. the proxy's CPU per MB relayed beside the CPU per MB the ``serve`` upstream spends producing
   the same stream (user + system time of both processes from ``/proc/<pid>/stat``, read around
   each proxied transfer of the large stream); their ratio, median of ``--rounds``: <= 0.5x;
2. time to first body byte, small streams, median of the paired differences proxied - direct:
   with a fresh client connection for every request (``Connection: close``; the proxy's own
   upstream pool as it is) <= +3 ms, and on a kept-alive connection <= +1 ms;
3. burst throughput on a large generated recording at ``--speed max``: proxied / direct per
   pair, median of ``--rounds`` >= 0.9x. ``serve`` writes one HTTP chunk per recorded read
   (thousands of small server-sent events); the proxy records one chunk per read, reads less
   than 1 ms apart gathered (how many its recordings hold is printed);
4. ``--streams`` concurrent streams through the proxy: every one byte-exact, and every recording
   holds exactly the bytes served;
5. a 9.5 MB request body sent through the proxy beside a stream paced at one event per 100 ms:
   how late the paced stream's reads came (the latest read's lateness beyond the earliest's),
   trials with the body alternating with trials without it, medians of ``--body-trials``;
   target < 50 ms with the body.

Beside the proxy, in the same rounds, two floors (``benchmarks/floor_relay.py``, figures to
read, not targets): a bare TCP relay (the hop between processes, no HTTP read) and a relay of the
proxy's own libraries used as their documentation shows (uvicorn's h11 protocol on the asyncio
loop, ``httpx.AsyncClient``; nothing recorded, checked or gathered): their CPU per MB and
first-byte overheads, from the same paired rounds. What the proxy costs beyond the second is
its own work.

Exits 1 when a target is missed. Run it on an idle machine (``uptime``): the CPU and time
figures are of two processes sharing the cores with this one.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import itertools
import json
import re
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.generators import GENERATORS  # noqa: E402
from benchmarks.procs import Process, body_of, cpu_seconds, exit_on_terminate, proxy_args  # noqa: E402
from benchmarks.raw_http import (  # noqa: E402
    LAST_CHUNK,
    STREAM_HEAD,
    accept_each,
    chunk,
    read_arrivals,
    recv_until,
)
from streamtool.core.recording.reader import Source  # noqa: E402

SMALL = ROOT / "recordings" / "openai-parallel-tool-calls.jsonl"
CPU_TARGET = 0.5
FRESH_TARGET_MS = 3.0
KEPT_TARGET_MS = 1.0
THROUGHPUT_TARGET = 0.9
BODY_DELAY_TARGET_MS = 50.0


async def fetch(client: httpx.AsyncClient, url: str, headers: dict) -> tuple[float, float, bytes]:
    """(seconds to the first body byte, seconds to the last, the body)."""
    got = bytearray()
    first = None
    start = time.perf_counter()
    async with client.stream(
        "POST", url + "/v1/chat/completions", json={"stream": True}, headers=headers
    ) as resp:
        async for data in resp.aiter_raw():
            if first is None:
                first = time.perf_counter() - start
            got += data
    total = time.perf_counter() - start
    return first or total, total, bytes(got)


def turned(n: int, i: int) -> list[int]:
    """``range(n)`` turned by ``i``: round ``i``'s order of ``n`` origins."""
    return [(k + i) % n for k in range(n)]


async def ttfb(urls: list[str], n: int, expected: bytes, *, fresh: bool) -> list[list[float]]:
    """First-byte times in ms for each of ``urls`` (the first is direct), ``n`` rounds, every
    origin once per round, the order turned by one each round."""
    pick = {"x-streamtool-recording": SMALL.stem}
    if fresh:
        pick["connection"] = "close"
    times: list[list[float]] = [[] for _ in urls]
    async with httpx.AsyncClient(timeout=30) as client:
        for url in urls * 2:  # warm every side
            await fetch(client, url, pick)
        for i in range(n):
            for k in turned(len(urls), i):
                first, _, body = await fetch(client, urls[k], pick)
                if body != expected:
                    raise SystemExit("FAIL: a small stream differs from the recording")
                times[k].append(first * 1000)
    return times


async def throughput(
    direct: str,
    relays: list[tuple[str, int]],
    name: str,
    expected: bytes,
    rounds: int,
    serve: int,
) -> list[tuple[float, ...]]:
    """Per round: (direct MB/s, then for each relay ``(origin, pid)``: its MB/s, its CPU s/MB
    and the serve upstream's CPU s/MB, both read around that relay's transfer). Every origin
    once per round, the order turned by one each round."""
    pick = {"x-streamtool-recording": name}
    mb = len(expected) / 1e6
    out = []
    urls = [direct, *(url for url, _ in relays)]
    pids = [0, *(pid for _, pid in relays)]
    async with httpx.AsyncClient(timeout=120) as client:
        for url in urls:
            await fetch(client, url, pick)
        for i in range(rounds):
            got: list[tuple[float, ...]] = [()] * len(urls)
            for k in turned(len(urls), i):
                s0, p0 = cpu_seconds(serve), cpu_seconds(pids[k]) if pids[k] else 0.0
                _, total, body = await fetch(client, urls[k], pick)
                s1, p1 = cpu_seconds(serve), cpu_seconds(pids[k]) if pids[k] else 0.0
                if body != expected:
                    raise SystemExit("FAIL: a large stream differs from the recording")
                got[k] = (
                    (mb / total,) if not pids[k] else (mb / total, (p1 - p0) / mb, (s1 - s0) / mb)
                )
            out.append(tuple(x for g in got for x in g))
    return out


async def concurrent(proxied: str, n: int, expected: bytes) -> int:
    pick = {"x-streamtool-recording": SMALL.stem}
    limits = httpx.Limits(max_connections=n + 10, max_keepalive_connections=n + 10)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        results = await asyncio.gather(*(fetch(client, proxied, pick) for _ in range(n)))
    return sum(1 for _, _, body in results if body == expected)


# -- a large request body beside a paced stream ------------------------------------------------
PACE = 0.1
EVENTS = 25


def event(i: int) -> bytes:
    return b'data: {"choices":[{"index":0,"delta":{"content":"%d "}}]}\n\n' % i


class PacedUpstream:
    """Raw HTTP/1.1 on 127.0.0.1: reads each request whole, then streams :data:`EVENTS` events
    one per :data:`PACE` seconds and closes."""

    def __enter__(self) -> PacedUpstream:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        accept_each(self.sock, self._start)
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()

    def _start(self, conn: socket.socket) -> None:
        threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                data = recv_until(conn, b"\r\n\r\n")
                if b"\r\n\r\n" not in data:
                    return
                head, rest = data.split(b"\r\n\r\n", 1)
                length = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", head)
                need = int(length.group(1)) if length else 0
                while len(rest) < need:
                    piece = conn.recv(1 << 20)
                    if not piece:
                        return
                    rest += piece
                conn.sendall(STREAM_HEAD)
                for i in range(EVENTS):
                    time.sleep(PACE)
                    conn.sendall(chunk(event(i)))
                conn.sendall(LAST_CHUNK)
            except OSError:
                return


def paced_delay(origin: str, big: bytes | None) -> float:
    """Seconds the paced stream's latest read came late, beyond its earliest read's lateness,
    with ``big`` posted through the proxy once the stream is under way."""
    body = {"model": "m", "stream": True}
    reader, arrivals = read_arrivals(origin + "/v1/chat/completions", body, timeout=30)
    while len(arrivals) < 4 and reader.is_alive():
        time.sleep(0.005)
    if big is not None:
        with httpx.Client(timeout=60) as client:
            r = client.post(
                origin + "/v1/chat/completions",
                content=big,
                headers={"content-type": "application/json"},
            )
        if r.status_code != 200:
            raise SystemExit(f"FAIL: the large request was answered {r.status_code}")
    reader.join()
    ends = list(itertools.accumulate(len(event(i)) for i in range(EVENTS)))
    if not arrivals or arrivals[-1][1] != ends[-1]:
        raise SystemExit("FAIL: the paced stream did not arrive whole")
    lateness = []
    for t, got in arrivals:
        done = bisect.bisect_right(ends, got)
        if done:
            lateness.append(t - (done - 1) * PACE)
    return max(lateness) - min(lateness)


def large_body() -> bytes:
    message = {"role": "user", "content": "lorem ipsum dolor sit amet " * 16}
    count = 9_500_000 // len(json.dumps(message))
    big = json.dumps({"model": "gpt-test", "stream": True, "messages": [message] * count})
    return big.encode()


def body_delays(trials: int, out: Path) -> tuple[list[float], list[float]]:
    """(delays without the body, delays with it), in ms, alternating trials."""
    big = large_body()
    quiet: list[float] = []
    loaded: list[float] = []
    with PacedUpstream() as up:
        proxy = Process.streamtool(proxy_args(out, upstream=up.url))
        try:
            paced_delay(proxy.url, None)  # warm up
            for i in range(trials):
                pair = ((None, quiet), (big, loaded))
                for body, into in pair if i % 2 == 0 else pair[::-1]:
                    into.append(paced_delay(proxy.url, body) * 1000)
        finally:
            proxy.stop()
    return quiet, loaded


def paired_median(a: list[float], b: list[float]) -> float:
    return statistics.median(y - x for x, y in zip(a, b, strict=True))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=9, help="paired large transfers (>= 7)")
    ap.add_argument("--requests", type=int, default=101, help="paired small requests per mode")
    ap.add_argument("--size-kb", type=int, default=4096)
    ap.add_argument("--streams", type=int, default=100)
    ap.add_argument("--body-trials", type=int, default=7, help="paced-stream trials each way")
    args = ap.parse_args()
    exit_on_terminate()
    if args.rounds < 7 or args.requests < 7 or args.body_trials < 0:
        raise SystemExit("--rounds and --requests need at least 7")
    failed = []
    with open("/proc/loadavg") as f:
        print(f"load average before: {' '.join(f.read().split()[:3])}")
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "openai-chat-big.jsonl"
        GENERATORS["openai-chat"](big, args.size_kb * 1024)
        small_body, big_body = body_of(SMALL), body_of(big)
        big_chunks = sum(1 for _ in Source(big).chunks())
        out = Path(tmp) / "captures"
        upstream = Process.streamtool(["serve", str(SMALL), str(big), "--speed", "max", "-q"])
        try:
            proxy = Process.streamtool(proxy_args(out, upstream=upstream.url))
            floors = [
                Process([sys.executable, "-m", "benchmarks.floor_relay", kind, upstream.url])
                for kind in ("http", "tcp")
            ]
            try:
                d, u = upstream.url, proxy.url
                urls = [d, u, *(f.url for f in floors)]
                fa, fb, fh, ft = asyncio.run(ttfb(urls, args.requests, small_body, fresh=True))
                ka, kb, kh, kt = asyncio.run(ttfb(urls, args.requests, small_body, fresh=False))
                relays = [(p.url, p.pid) for p in (proxy, *floors)]
                rounds = asyncio.run(
                    throughput(d, relays, big.stem, big_body, args.rounds, upstream.pid)
                )
                exact = asyncio.run(concurrent(u, args.streams, small_body))
            finally:
                for p in (proxy, *floors):
                    p.stop()
        finally:
            upstream.stop()
        recordings = sorted(p for p in out.glob("*.jsonl") if p.name != "index.jsonl")
        bodies = {p: body_of(p) for p in recordings}
        recorded_exact = sum(1 for body in bodies.values() if body in (small_body, big_body))
        big_reads = [
            sum(1 for _ in Source(p).chunks()) for p in recordings if bodies[p] == big_body
        ]
        quiet, loaded = ([], [])
        if args.body_trials:
            body_out = Path(tmp) / "body-captures"
            body_out.mkdir()
            quiet, loaded = body_delays(args.body_trials, body_out)

    mb = len(big_body) / 1e6
    proxy_cpu = statistics.median(r[2] for r in rounds) * 1000
    serve_cpu = statistics.median(r[3] for r in rounds) * 1000
    cpu_ratio = statistics.median(r[2] / r[3] for r in rounds if r[3] > 0)
    print(
        f"CPU per MB relayed, {mb:.1f} MB at --speed max, median of {args.rounds} rounds "
        f"(/proc user+system, during the proxied transfer)"
    )
    print(
        f"  proxy {proxy_cpu:6.1f} ms/MB   serve upstream {serve_cpu:6.1f} ms/MB   "
        f"ratio {cpu_ratio:.2f}x (target <= {CPU_TARGET}x)"
    )
    for label, at in (("uvicorn + httpx relay", 4), ("TCP relay", 7)):
        floor_cpu = statistics.median(r[at + 1] for r in rounds) * 1000
        floor_ratio = statistics.median(r[at + 1] / r[at + 2] for r in rounds if r[at + 2] > 0)
        print(f"  floor: {label:<22} {floor_cpu:6.1f} ms/MB   ratio {floor_ratio:.2f}x")
    fresh = paired_median(fa, fb)
    kept = paired_median(ka, kb)
    print(f"time to first byte, {args.requests} pairs each (alternating order)")
    print(
        f"  fresh connection: direct p50 {statistics.median(fa):6.2f} ms   proxied p50 "
        f"{statistics.median(fb):6.2f} ms   overhead (median of pairs) {fresh:+.2f} ms "
        f"(target <= +{FRESH_TARGET_MS:.0f} ms)"
    )
    print(
        f"  kept-alive:       direct p50 {statistics.median(ka):6.2f} ms   proxied p50 "
        f"{statistics.median(kb):6.2f} ms   overhead (median of pairs) {kept:+.2f} ms "
        f"(target <= +{KEPT_TARGET_MS:.0f} ms)"
    )
    for label, f_times, k_times in (
        ("uvicorn + httpx relay", fh, kh),
        ("TCP relay", ft, kt),
    ):
        print(
            f"  floor: {label:<22} fresh {paired_median(fa, f_times):+.2f} ms   "
            f"kept-alive {paired_median(ka, k_times):+.2f} ms"
        )
    ratio = statistics.median(r[1] / r[0] for r in rounds)
    print(
        f"throughput, {mb:.1f} MB in {big_chunks} reads at --speed max, "
        f"median of {args.rounds} pairs"
    )
    print(
        f"  direct {statistics.median(r[0] for r in rounds):7.1f} MB/s   through the proxy "
        f"{statistics.median(r[1] for r in rounds):7.1f} MB/s   ratio {ratio:.2f}x "
        f"(target >= {THROUGHPUT_TARGET}x)"
    )
    if big_reads:
        print(
            f"  the proxy recorded it in {statistics.median(big_reads):.0f} reads "
            f"(median of {len(big_reads)}; fewest {min(big_reads)}, most {max(big_reads)})"
        )
    total = len(recordings)
    print(
        f"{args.streams} concurrent streams through the proxy: {exact}/{args.streams} byte-exact; "
        f"{recorded_exact}/{total} recordings hold exactly the bytes served"
    )
    if loaded:
        print(
            f"a {len(large_body()) / 1e6:.1f} MB request body beside a stream paced at "
            f"{PACE * 1000:.0f} ms, {len(loaded)} trials each way (alternating)"
        )
        print(
            f"  the paced stream's latest read: without the body median "
            f"{statistics.median(quiet):.1f} ms (max {max(quiet):.1f}); "
            f"with it median {statistics.median(loaded):.1f} ms "
            f"(max {max(loaded):.1f}) (target < {BODY_DELAY_TARGET_MS:.0f} ms)"
        )
        if statistics.median(loaded) >= BODY_DELAY_TARGET_MS:
            failed.append("large request body")
    with open("/proc/loadavg") as f:
        print(f"load average after: {' '.join(f.read().split()[:3])}")
    if cpu_ratio > CPU_TARGET:
        failed.append("CPU per MB")
    if fresh > FRESH_TARGET_MS:
        failed.append("time to first byte (fresh)")
    if kept > KEPT_TARGET_MS:
        failed.append("time to first byte (kept-alive)")
    if ratio < THROUGHPUT_TARGET:
        failed.append("throughput")
    if exact != args.streams or recorded_exact != total:
        failed.append("byte-exact streams")
    if failed:
        print(f"FAIL: {', '.join(failed)}")
        raise SystemExit(1)
    print("all targets met")


if __name__ == "__main__":
    main()
