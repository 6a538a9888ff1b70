"""``streamtool serve`` under a slowloris flood: a client's request time with 1,100 half-sent
requests open against a server limited to 1,024 descriptors, beside the same client's time with
none, in the same run.

    python -m benchmarks.bench_guard [--requests 50] [--flood 1100] [--nofile 1024]

Starts ``streamtool serve`` (``--speed max``, ``--header-timeout 3``) as a subprocess whose
open-file limit is ``--nofile``; the client is httpx, a new connection per request (what a
client kept out would try). Prints the p50 and worst request time without and with the flood
open and their ratio, the server's open descriptors under the flood (Linux), and how long the
header timeout takes to close the half-sent connections still open. Exits 1 when a request
fails or is not byte-exact.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.procs import body_of, exit_on_terminate, start_limited  # noqa: E402

SMALL = ROOT / "recordings" / "openai-parallel-tool-calls.jsonl"
HALF_SENT = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
HEADER_TIMEOUT = 3.0


def start(nofile: int, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """serve as a subprocess; its stderr goes to ``log`` (a pipe left unread would fill up)."""
    args = ["serve", str(SMALL), "--speed", "max", "--quiet"]
    args += ["--header-timeout", str(HEADER_TIMEOUT)]
    return start_limited(args, nofile, log)


def timed_requests(origin: str, count: int, expected: bytes) -> tuple[list[float], int]:
    """Seconds per request (new connection each), and how many failed or differed."""
    times, bad = [], 0
    limits = httpx.Limits(max_keepalive_connections=0)  # no connection is reused
    with httpx.Client(timeout=10, limits=limits) as client:
        for _ in range(count):
            started = time.perf_counter()
            try:
                r = client.post(
                    origin + "/v1/chat/completions",
                    json={"model": "gpt-4o-2024-08-06", "stream": True, "messages": []},
                )
                ok = r.status_code == 200 and r.content == expected
            except httpx.TransportError:
                ok = False
            times.append(time.perf_counter() - started)
            bad += not ok
    return times, bad


def server_fds(pid: int) -> int | None:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


def still_open(socks: list[socket.socket]) -> int:
    count = 0
    for sock in socks:
        sock.setblocking(False)
        try:
            while sock.recv(65536):
                pass
        except BlockingIOError:
            count += 1
        except OSError:
            pass
    return count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--flood", type=int, default=1100)
    parser.add_argument("--nofile", type=int, default=1024)
    args = parser.parse_args()
    exit_on_terminate()
    expected = body_of(SMALL)
    log = Path(tempfile.mkdtemp()) / "serve.log"
    proc, origin = start(args.nofile, log)
    port = int(origin.rsplit(":", 1)[1])
    flood: list[socket.socket] = []
    try:
        timed_requests(origin, 5, expected)  # warm-up
        quiet, quiet_bad = timed_requests(origin, args.requests, expected)
        opened = time.monotonic()
        for _ in range(args.flood):
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            sock.sendall(HALF_SENT)
            flood.append(sock)
        time.sleep(0.2)  # the last accepted
        fds = server_fds(proc.pid)
        flooded, flooded_bad = timed_requests(origin, args.requests, expected)
        during = time.monotonic() - opened
        left = still_open(flood)
        while left and time.monotonic() - opened < HEADER_TIMEOUT + 10:
            time.sleep(0.1)
            left = still_open(flood)
        cleared = time.monotonic() - opened
    finally:
        for sock in flood:
            sock.close()
        proc.terminate()
        proc.wait(timeout=20)
        errors = log.read_text().count("Too many open files")
        shutil.rmtree(log.parent)

    def ms(values: list[float], q: str) -> float:
        return 1000 * (statistics.median(values) if q == "p50" else max(values))

    print(
        f"serve limited to {args.nofile} descriptors; {args.requests} requests, "
        f"a new connection each"
    )
    print(
        f"  no flood:                     p50 {ms(quiet, 'p50'):7.2f} ms   "
        f"worst {ms(quiet, 'max'):8.2f} ms   failed {quiet_bad}"
    )
    print(
        f"  {args.flood} half-sent requests open: p50 {ms(flooded, 'p50'):7.2f} ms   "
        f"worst {ms(flooded, 'max'):8.2f} ms   failed {flooded_bad}"
    )
    print(
        f"  ratio (flood / none, p50): {statistics.median(flooded) / statistics.median(quiet):.2f}x"
    )
    if fds is not None:
        print(f"  server descriptors open under the flood: {fds} (limit {args.nofile})")
    print(f"  the flooded requests ran {during:.1f} s after the flood began")
    print(f"  'Too many open files' in the server's log: {errors} times")
    print(
        f"  half-sent connections all closed {cleared:.1f} s after the flood began "
        f"(--header-timeout {HEADER_TIMEOUT:g}); {left} still open"
    )
    if quiet_bad or flooded_bad or errors:
        print("FAIL: requests failed or were not byte-exact, or the server ran out of descriptors")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
