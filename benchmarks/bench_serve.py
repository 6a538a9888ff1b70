"""``streamtool serve`` under concurrent streaming clients, on loopback.

    python -m benchmarks.bench_serve [--clients 50] [--size-kb 1024]

Starts ``streamtool serve`` as a subprocess on 127.0.0.1 and streams with httpx (asyncio) from
this process. Every stream is checked byte for byte against the recording. Figures:

1. throughput at ``--speed max`` on a large generated recording: one client alone (the baseline
   measured in the same run), then N clients at once; the ratio is aggregate / baseline;
2. pacing at ``--speed 1`` on a bundled recording: how late each client's last byte arrives
   against the recorded schedule, one client alone and N at once.

Both client and server run on this machine, so the figures are a floor, not the server's limit.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.generators import GENERATORS  # noqa: E402
from benchmarks.procs import exit_on_terminate  # noqa: E402
from streamtool.core.recording.reader import Source  # noqa: E402

PACED = ROOT / "recordings" / "openai-responses-text-then-function-call.jsonl"


def body_and_end(path: Path) -> tuple[bytes, float]:
    source = Source(path)
    chunks = list(source.chunks())
    data = b"".join(c.data if isinstance(c.data, bytes) else c.data.encode() for c in chunks)
    last = max((c.t or 0.0) for c in chunks) if chunks else 0.0
    return data, last


class Server:
    def __init__(self, path: Path, speed: str) -> None:
        code = "from streamtool.cli.main import main; main()"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code, "serve", str(path), "--port", "0", "--speed", speed, "-q"],
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        if "http://" not in line:
            self.proc.kill()
            raise SystemExit(f"serve did not start: {line!r}")
        self.url = line.strip().rsplit(" ", 1)[-1]
        deadline = time.monotonic() + 15
        while True:
            try:
                httpx.get(self.url + "/", timeout=1)
                return
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=15)


async def one(client: httpx.AsyncClient, url: str, path: str) -> tuple[float, bytes]:
    got = bytearray()
    start = time.monotonic()
    async with client.stream("POST", url + path, json={"stream": True}) as resp:
        async for data in resp.aiter_raw():
            got += data
    return time.monotonic() - start, bytes(got)


async def many(url: str, path: str, n: int) -> tuple[float, list[tuple[float, bytes]]]:
    limits = httpx.Limits(max_connections=n + 10, max_keepalive_connections=n + 10)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        await one(client, url, path)  # warm up: imports, first connection
        start = time.monotonic()
        results = await asyncio.gather(*(one(client, url, path) for _ in range(n)))
        return time.monotonic() - start, list(results)


def check(results: list[tuple[float, bytes]], expected: bytes) -> int:
    bad = sum(1 for _, got in results if got != expected)
    if bad:
        raise SystemExit(f"FAIL: {bad} of {len(results)} streams differ from the recording")
    return len(results)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def one_then_many(rec: Path, speed: str, path: str, n: int, body: bytes) -> tuple[Any, ...]:
    """Serve ``rec`` at ``speed``; ``path`` streamed by one client, then by ``n`` at once, each
    stream checked byte-exact: (wall time, results) of the one, then of the many."""
    server = Server(rec, speed)
    try:
        t1, r1 = asyncio.run(many(server.url, path, 1))
        check(r1, body)
        tn, rn = asyncio.run(many(server.url, path, n))
        check(rn, body)
    finally:
        server.stop()
    return t1, r1, tn, rn


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--size-kb", type=int, default=1024)
    args = ap.parse_args()
    exit_on_terminate()
    n = args.clients
    if not 1 <= n <= 200:
        raise SystemExit("--clients: 1..200 (loopback only, keep it bounded)")

    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "openai-chat-big.jsonl"
        GENERATORS["openai-chat"](big, args.size_kb * 1024)
        body, _ = body_and_end(big)
        chunks = sum(1 for _ in Source(big).chunks())
        t1, _, tn, rn = one_then_many(big, "max", "/v1/chat/completions", n, body)
    mb = len(body) / 1e6
    base_rate = mb / t1
    agg_rate = n * mb / tn
    per = [d for d, _ in rn]
    print(f"throughput, --speed max: {mb:.2f} MB recording, {chunks} chunks (one write each)")
    print(f"  1 client:   {t1 * 1000:8.1f} ms   {base_rate:7.1f} MB/s   (baseline)")
    print(
        f"  {n} clients: {tn * 1000:8.1f} ms   {agg_rate:7.1f} MB/s aggregate   "
        f"ratio {agg_rate / base_rate:.2f}x baseline   "
        f"per stream p50 {statistics.median(per) * 1000:.0f} ms, p95 {pct(per, 0.95) * 1000:.0f} ms"
    )
    print(f"  byte-exact: {n + 1}/{n + 1} streams")

    body, last_t = body_and_end(PACED)
    _, a1, wall, an = one_then_many(PACED, "1", "/v1/responses", n, body)
    late1 = (a1[0][0] - last_t) * 1000
    lates = [(d - last_t) * 1000 for d, _ in an]
    print(f"pacing, --speed 1: {PACED.name}, last chunk at {last_t:.3f} s")
    print(f"  1 client:   last byte {late1:+6.1f} ms against the recording (baseline)")
    print(
        f"  {n} clients: last byte p50 {statistics.median(lates):+6.1f} ms, "
        f"p95 {pct(lates, 0.95):+6.1f} ms, max {max(lates):+6.1f} ms; "
        f"wall {wall:.3f} s = {wall / last_t:.2f}x the recording"
    )
    print(f"  byte-exact: {n + 1}/{n + 1} streams")


if __name__ == "__main__":
    main()
