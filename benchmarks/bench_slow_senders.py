"""``streamtool serve`` and ``streamtool proxy`` against clients that send their request bodies
one byte every 2 s: how many normal requests are served while they hold the connections.

    python -m benchmarks.bench_slow_senders [--senders 300] [--requests 15] [--window 30]
                                             [--nofile 1024] [--command serve|proxy|both]

Each command runs as a subprocess whose open-file limit is ``--nofile``; the proxy's connection
limit is then its default (298 for 1,024 descriptors: three each), and serve is given the same
with ``--max-connections`` (its default, one descriptor each, would be three times as many).
``--senders`` raw sockets each send a complete request head and the first byte of a 62-byte
body, then one more byte every 2 s (none to a connection the server has answered or closed);
the body timeout is the default 30 s. From 1 s after they are all connected, a normal request
(httpx, a new connection each) starts every ``--window`` / ``--requests`` seconds. Prints, per
command: the normal requests served byte for byte within the window and their worst time, those
refused with a real 503 response or by a reset, and what the slow senders got (a 503, a 408, a
reset, or still open at the end). Exits 1 when fewer than ``--requests`` - 1 were served.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import select
import shutil
import socket
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.procs import body_of, exit_on_terminate, start_limited  # noqa: E402
from streamtool.core.exchange.playback import Playback  # noqa: E402
from streamtool.core.net.server import serving  # noqa: E402

SMALL = ROOT / "recordings" / "openai-parallel-tool-calls.jsonl"
BODY = b'{"model": "gpt-4o-2024-08-06", "stream": true, "messages": []}'
HEAD = (
    b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    b"content-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(BODY)
)
DRIP = 2.0  # seconds between two bytes of a slow body


@dataclass
class Outcome:
    served: int = 0
    worst: float = 0.0
    refused_503: int = 0
    reset: int = 0
    other: list[str] = field(default_factory=list)


def normal_request(origin: str, expected: bytes, deadline: float, out: Outcome) -> None:
    limits = httpx.Limits(max_keepalive_connections=0)
    started = time.monotonic()
    try:
        with httpx.Client(timeout=max(1.0, deadline - started), limits=limits) as client:
            r = client.post(origin + "/v1/chat/completions", content=BODY)
    except httpx.TransportError as exc:
        text = str(exc).lower()
        if "reset" in text or "disconnected" in text:
            out.reset += 1  # the connection dropped before any response
        else:
            out.other.append(type(exc).__name__)
        return
    took = time.monotonic() - started
    if r.status_code == 200 and r.content == expected and time.monotonic() <= deadline:
        out.served += 1
        out.worst = max(out.worst, took)
    elif r.status_code == 503:
        out.refused_503 += 1
    else:
        out.other.append(str(r.status_code))


def answered(sock: socket.socket) -> bool:
    return bool(select.select([sock], [], [], 0)[0])


def drip(socks: list[socket.socket], stop: threading.Event) -> None:
    sent = 1
    while not stop.wait(DRIP):
        for sock in socks:
            if sent < len(BODY) and not answered(sock):
                with contextlib.suppress(OSError):
                    sock.sendall(BODY[sent : sent + 1])
        sent += 1


def what_came(sock: socket.socket) -> str:
    sock.setblocking(False)
    data = b""
    try:
        while piece := sock.recv(65536):
            data += piece
    except BlockingIOError:
        return data[:12].decode("latin-1") if data else "open"
    except OSError:
        return "reset"
    return data[:12].decode("latin-1") if data else "closed"


def run(command: str, args: argparse.Namespace, upstream: str) -> tuple[Outcome, dict[str, int]]:
    expected = body_of(SMALL)
    log = Path(tempfile.mkdtemp()) / "server.log"
    limit = (args.nofile - max(64, args.nofile // 8)) // 3  # the proxy's default
    if command == "serve":
        cmd = ["serve", str(SMALL), "--speed", "max", "--quiet", "--max-connections", str(limit)]
    else:
        out = log.parent / "caps"
        cmd = ["proxy", "--upstream", upstream, "--out", str(out), "--view", "none"]
    proc, origin = start_limited(cmd, args.nofile, log)
    port = int(origin.rsplit(":", 1)[1])
    socks: list[socket.socket] = []
    stop = threading.Event()
    outcome = Outcome()
    try:
        for _ in range(args.senders):
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            sock.sendall(HEAD + BODY[:1])
            socks.append(sock)
        dripping = threading.Thread(target=drip, args=(socks, stop), daemon=True)
        dripping.start()
        time.sleep(1.0)  # every head taken: the slow senders hold their connections
        t0 = time.monotonic()
        deadline = t0 + args.window
        every = args.window / args.requests
        threads = []
        for i in range(args.requests):
            time.sleep(max(0.0, t0 + i * every - time.monotonic()))
            t = threading.Thread(target=normal_request, args=(origin, expected, deadline, outcome))
            t.start()
            threads.append(t)
        for t in threads:
            t.join()
        stop.set()
        dripping.join()
        senders: dict[str, int] = {}
        for sock in socks:
            got = what_came(sock)
            key = got if got in ("open", "reset", "closed") else got.split(" ")[1:2][0]
            senders[key] = senders.get(key, 0) + 1
    finally:
        stop.set()
        for sock in socks:
            sock.close()
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(log.parent)
    return outcome, senders


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--senders", type=int, default=300)
    parser.add_argument("--requests", type=int, default=15)
    parser.add_argument("--window", type=float, default=30.0)
    parser.add_argument("--nofile", type=int, default=1024)
    parser.add_argument("--command", choices=["serve", "proxy", "both"], default="both")
    args = parser.parse_args()
    exit_on_terminate()
    commands = ["serve", "proxy"] if args.command == "both" else [args.command]
    limit = (args.nofile - max(64, args.nofile // 8)) // 3
    failed = False
    with serving([SMALL], Playback(speed=None)) as upstream:
        for command in commands:
            outcome, senders = run(command, args, upstream.url)
            print(
                f"{command}: {args.senders} slow senders against {limit} connections "
                f"({args.nofile} descriptors)"
            )
            print(
                f"  normal requests served in the first {args.window:g} s: "
                f"{outcome.served} of {args.requests} (worst {outcome.worst:.2f} s)"
            )
            print(
                f"  refused: {outcome.refused_503} with a 503 response, {outcome.reset} by a "
                f"reset; other: {', '.join(outcome.other) or 'none'}"
            )
            got = ", ".join(f"{k}: {v}" for k, v in sorted(senders.items()))
            print(f"  the slow senders at the end: {got}")
            failed |= outcome.served < args.requests - 1
    print(f"load average (1 min): {os.getloadavg()[0]:.1f}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
