"""``streamtool proxy`` overhead on loopback: direct to ``streamtool serve`` against through the
proxy, in the same run.

    python -m benchmarks.bench_proxy [--requests 200] [--size-kb 4096] [--streams 100]

Starts ``streamtool serve`` (the upstream) and ``streamtool proxy --upstream`` (recording into a
temporary folder, no live view) as subprocesses on 127.0.0.1; the client is httpx (asyncio, one
keep-alive connection pool) in this process. Direct and proxied requests alternate, so both see
the same machine load. Figures and targets:

1. time to first byte, p50 over ``--requests`` small streams: proxied - direct <= 3 ms;
2. throughput on a large generated recording at ``--speed max`` (best of 5 each):
   proxied / direct >= 0.9. ``serve`` writes one HTTP chunk per recorded read (thousands of
   small server-sent events); the proxy records one chunk per socket read, so how many reads
   its recordings of that stream hold (printed) tells how much the kernel gathered per read;
3. ``--streams`` concurrent streams through the proxy: every one byte-exact, and every recording
   holds exactly the bytes served.

Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.generators import GENERATORS  # noqa: E402
from streamtool.core.recording.reader import Source  # noqa: E402

SMALL = ROOT / "recordings" / "openai-parallel-tool-calls.jsonl"
CLI = [sys.executable, "-c", "from streamtool.cli.main import main; main()"]
TTFB_TARGET_MS = 3.0
THROUGHPUT_TARGET = 0.9


def body_of(path: Path) -> bytes:
    return b"".join(
        c.data if isinstance(c.data, bytes) else c.data.encode() for c in Source(path).chunks()
    )


class Process:
    """A streamtool command on port 0; its origin is read from the first stderr line."""

    def __init__(self, args: list[str]) -> None:
        self.proc = subprocess.Popen(
            [*CLI, *args, "--port", "0"], stderr=subprocess.PIPE, text=True
        )
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        found = re.search(r"(http://127\.0\.0\.1:\d+)", line)
        if not found:
            self.proc.kill()
            raise SystemExit(f"{args[0]} did not start: {line!r}")
        self.url = found.group(1)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()


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


async def ttfb(direct: str, proxied: str, n: int, expected: bytes) -> tuple[list, list]:
    pick = {"x-streamtool-recording": SMALL.stem}
    a: list[float] = []
    b: list[float] = []
    async with httpx.AsyncClient(timeout=30) as client:
        for url in (direct, proxied):  # warm both connections
            await fetch(client, url, pick)
        for _ in range(n):
            for url, out in ((direct, a), (proxied, b)):
                first, _, body = await fetch(client, url, pick)
                if body != expected:
                    raise SystemExit("FAIL: a small stream differs from the recording")
                out.append(first * 1000)
    return a, b


async def throughput(direct: str, proxied: str, name: str, expected: bytes) -> tuple[float, float]:
    pick = {"x-streamtool-recording": name}
    best = {direct: float("inf"), proxied: float("inf")}
    async with httpx.AsyncClient(timeout=120) as client:
        for url in (direct, proxied):
            await fetch(client, url, pick)
        for _ in range(5):
            for url in (direct, proxied):
                _, total, body = await fetch(client, url, pick)
                if body != expected:
                    raise SystemExit("FAIL: a large stream differs from the recording")
                best[url] = min(best[url], total)
    mb = len(expected) / 1e6
    return mb / best[direct], mb / best[proxied]


async def concurrent(proxied: str, n: int, expected: bytes) -> int:
    pick = {"x-streamtool-recording": SMALL.stem}
    limits = httpx.Limits(max_connections=n + 10, max_keepalive_connections=n + 10)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        results = await asyncio.gather(*(fetch(client, proxied, pick) for _ in range(n)))
    return sum(1 for _, _, body in results if body == expected)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--size-kb", type=int, default=4096)
    ap.add_argument("--streams", type=int, default=100)
    args = ap.parse_args()
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "openai-chat-big.jsonl"
        GENERATORS["openai-chat"](big, args.size_kb * 1024)
        small_body, big_body = body_of(SMALL), body_of(big)
        big_chunks = sum(1 for _ in Source(big).chunks())
        out = Path(tmp) / "captures"
        upstream = Process(["serve", str(SMALL), str(big), "--speed", "max", "-q"])
        try:
            proxy = Process(
                ["proxy", "--upstream", upstream.url, "--out", str(out), "--view", "none"]
            )
            try:
                a, b = asyncio.run(ttfb(upstream.url, proxy.url, args.requests, small_body))
                direct_rate, proxied_rate = asyncio.run(
                    throughput(upstream.url, proxy.url, big.stem, big_body)
                )
                exact = asyncio.run(concurrent(proxy.url, args.streams, small_body))
            finally:
                proxy.stop()
        finally:
            upstream.stop()
        recordings = sorted(p for p in out.glob("*.jsonl") if p.name != "index.jsonl")
        bodies = {p: body_of(p) for p in recordings}
        recorded_exact = sum(1 for body in bodies.values() if body in (small_body, big_body))
        big_reads = [
            sum(1 for _ in Source(p).chunks()) for p in recordings if bodies[p] == big_body
        ]

    overhead = statistics.median(b) - statistics.median(a)
    print(f"time to first byte, {args.requests} small streams each way (keep-alive, alternating)")
    print(
        f"  direct  p50 {statistics.median(a):6.2f} ms   through the proxy p50 "
        f"{statistics.median(b):6.2f} ms   overhead {overhead:+.2f} ms "
        f"(target <= +{TTFB_TARGET_MS:.0f} ms)"
    )
    ratio = proxied_rate / direct_rate
    print(
        f"throughput, {len(big_body) / 1e6:.1f} MB in {big_chunks} reads at --speed max "
        f"(best of 5 each)"
    )
    print(
        f"  direct {direct_rate:7.1f} MB/s   through the proxy {proxied_rate:7.1f} MB/s   "
        f"ratio {ratio:.2f}x (target >= {THROUGHPUT_TARGET}x)"
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
    if overhead > TTFB_TARGET_MS:
        failed.append("time to first byte")
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
