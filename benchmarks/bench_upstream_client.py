"""The proxy's upstream client: what reading a stream costs, and whether its events come as they
are sent, for httpx (the proxy's client) and for pyreqwest (a Rust reqwest binding) when it is
installed.

    python -m benchmarks.bench_upstream_client [--runs 5] [--mb 1]

Run by hand, never in CI: pyreqwest is not a dependency of streamtool (``pip install pyreqwest``;
skipped when it is not installed). A raw HTTP/1.1 server in a subprocess on 127.0.0.1 writes
two streams, each event in an HTTP chunk of its own (as ``streamtool serve`` and the providers
write them):

1. about ``--mb`` MB of server-sent events at once: the client's CPU time (user + system of this
   process, all its threads) per MB read, median of ``--runs`` rounds, every client once per
   round;
2. five events 100 ms apart: when each reached the client, beyond when it was sent. A proxy has
   to pass each one on as it comes.

pyreqwest is read through its public streaming API (``build_streamed()``,
``body_reader.read_chunk()``), with its read buffer at 0 bytes and at its default. Its streamed
body is read ahead into that buffer until the buffer is full or the body ends (the response
head, too, is returned only then): at its default the paced events all arrive at the end of the
stream, so only a buffer of 0 bytes forwards them as they come.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.procs import exit_on_terminate  # noqa: E402
from benchmarks.raw_http import LAST_CHUNK, STREAM_HEAD, accept_each, chunk, recv_until  # noqa: E402

EVENT = b'data: {"choices":[{"index":0,"delta":{"content":"' + b"x" * 40 + b'"}}]}\n\n'
PACE = 0.1
PACED = 5


# -- the server (a subprocess) ---------------------------------------------------------------------
def serve(mb: float) -> None:
    big = STREAM_HEAD + chunk(EVENT) * int(mb * 1_000_000 / len(EVENT)) + LAST_CHUNK
    sock = socket.create_server(("127.0.0.1", 0))
    print(sock.getsockname()[1], flush=True)

    def answer(conn: socket.socket) -> None:
        with conn:
            data = recv_until(conn, b"\r\n\r\n")
            if b"\r\n\r\n" not in data:
                return
            if data.startswith(b"GET /paced "):
                conn.sendall(STREAM_HEAD)
                for _ in range(PACED):
                    time.sleep(PACE)
                    conn.sendall(chunk(EVENT))
                conn.sendall(LAST_CHUNK)
            else:
                conn.sendall(big)

    def start(conn: socket.socket) -> None:
        threading.Thread(target=answer, args=(conn,), daemon=True).start()

    accept_each(sock, start)
    threading.Event().wait()  # until the benchmark kills this process


# -- the clients -----------------------------------------------------------------------------------
Reader = Callable[[str, Callable[[int], None]], Awaitable[None]]


def httpx_reader() -> tuple[Reader, Callable[[], Awaitable[None]]]:
    import httpx

    client = httpx.AsyncClient(timeout=30)

    async def read(url: str, got: Callable[[int], None]) -> None:
        async with client.stream("GET", url) as resp:
            async for data in resp.aiter_raw():
                got(len(data))

    return read, client.aclose


def pyreqwest_reader(limit: int | None) -> tuple[Reader, Callable[[], Awaitable[None]]]:
    module: Any = importlib.import_module("pyreqwest.client")
    client = module.ClientBuilder().gzip(False).follow_redirects(False).build()

    async def read(url: str, got: Callable[[int], None]) -> None:
        builder = client.get(url)
        if limit is not None:
            builder = builder.streamed_read_buffer_limit(limit)
        async with builder.build_streamed() as resp:
            reader = resp.body_reader
            while (data := await reader.read_chunk()) is not None:
                got(len(data))

    return read, client.close


async def cpu_per_mb(read: Reader, url: str) -> float:
    size = 0

    def got(n: int) -> None:
        nonlocal size
        size += n

    start = time.process_time()
    await read(url, got)
    return (time.process_time() - start) * 1000 / (size / 1e6)


async def paced_lateness(read: Reader, url: str) -> list[float]:
    """Per event, ms after it was sent (about ``PACE`` apart, from the request on)."""
    arrivals: list[float] = []
    size = 0
    start = time.monotonic()

    def got(n: int) -> None:
        nonlocal size
        size += n
        whole = size // len(EVENT)  # events complete so far
        arrivals.extend([time.monotonic() - start] * (whole - len(arrivals)))

    await read(url, got)
    return [(t - (i + 1) * PACE) * 1000 for i, t in enumerate(arrivals)]


async def run(origin: str, runs: int) -> None:
    clients: dict[str, tuple[Reader, Callable[[], Awaitable[None]]]] = {"httpx": httpx_reader()}
    try:
        importlib.import_module("pyreqwest")
    except ImportError:
        print("pyreqwest is not installed: httpx only")
    else:
        clients["pyreqwest, read buffer 0 B"] = pyreqwest_reader(0)
        clients["pyreqwest, read buffer default"] = pyreqwest_reader(None)
    cpu: dict[str, list[float]] = {name: [] for name in clients}
    for read, _ in clients.values():  # warm up
        await cpu_per_mb(read, origin + "/big")
    for i in range(runs):
        names = list(clients) if i % 2 == 0 else list(clients)[::-1]
        for name in names:
            cpu[name].append(await cpu_per_mb(clients[name][0], origin + "/big"))
    print(f"CPU per MB read, median of {runs} rounds (each event one HTTP chunk)")
    for name, values in cpu.items():
        print(
            f"  {name:32s} {statistics.median(values):7.1f} ms/MB  (runs: "
            f"{', '.join(f'{v:.0f}' for v in values)})"
        )
    print(f"{PACED} events {PACE * 1000:.0f} ms apart: ms each came after it was sent")
    for name, (read, close) in clients.items():
        late = await paced_lateness(read, origin + "/paced")
        print(f"  {name:32s} {', '.join(f'{v:.0f}' for v in late)}")
        await close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--mb", type=float, default=1.0)
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    exit_on_terminate()
    if args.serve:
        serve(args.mb)
        return
    server = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.bench_upstream_client", "--serve", "--mb", str(args.mb)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert server.stdout is not None
        origin = f"http://127.0.0.1:{int(server.stdout.readline())}"
        asyncio.run(run(origin, args.runs))
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()
