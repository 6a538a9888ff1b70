"""The proxy's and serve's edge against hostile requests, as counts (not timings).

    python -m benchmarks.bench_edge

Starts a real upstream, a decoy listener, ``streamtool proxy`` and ``streamtool serve`` on
127.0.0.1 and prints: how many request-target tricks made the proxy open a connection to the
decoy (open relay), and how many requests under a foreign ``Host`` each command answered
(DNS rebinding). Both should be 0.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.procs import proxy_args, wait_answering  # noqa: E402
from benchmarks.raw_http import accept_each, recv_until  # noqa: E402

STREAMTOOL = [sys.executable, "-c", "from streamtool.cli.main import main; main()"]
BODY = b'{"model": "gpt-test", "stream": true, "messages": []}'


def start(args: list[str]) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [*STREAMTOOL, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stderr is not None
    found = re.search(r"http://127\.0\.0\.1:(\d+)", proc.stderr.readline())
    assert found
    port = int(found.group(1))
    wait_answering(port)
    return proc, port


def status_of(port: int, head: str) -> int:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(head.encode("latin-1") + b"\r\n\r\n" + BODY)
        data = recv_until(s, b"\r\n", 4096)
    try:
        return int(data.split()[1])
    except (IndexError, ValueError):
        return 0


def head(target: str, host: str) -> str:
    return (
        f"POST {target} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(BODY)}\r\nConnection: close"
    )


def main() -> None:
    decoy = socket.create_server(("127.0.0.1", 0))
    d = decoy.getsockname()[1]
    hits: list[int] = []

    def hit(conn: socket.socket) -> None:
        hits.append(1)
        conn.close()

    accept_each(decoy, hit)
    rec = str(ROOT / "recordings" / "openai-parallel-tool-calls.jsonl")
    with tempfile.TemporaryDirectory() as tmp:
        serve, sport = start(["serve", rec, "--port", "0", "--speed", "max"])
        proxy, pport = start(proxy_args(tmp, upstream=f"http://127.0.0.1:{sport}"))
        bare, bport = start(proxy_args(tmp))
        try:
            targets = [
                f"@127.0.0.1:{d}/v1/chat/completions",
                f":{d}/v1/chat/completions",
                f"//127.0.0.1:{d}/v1/chat/completions",
                f"http://127.0.0.1:{d}/v1/chat/completions",
            ]
            attempts = 0
            for port in (pport, bport):
                for t in targets:
                    attempts += 1
                    status_of(port, head(t, f"127.0.0.1:{port}"))
            time.sleep(0.5)
            print(f"relay: {len(hits)} of {attempts} target tricks reached the decoy listener")
            hosts = ["evil.example", "attacker.test:80", "10.0.0.1"]
            for name, port, path in (
                ("serve", sport, "/v1/chat/completions"),
                ("proxy", pport, "/v1/chat/completions"),
            ):
                answered = sum(status_of(port, head(path, h)) not in (421, 0) for h in hosts)
                print(f"host: {name} answered {answered} of {len(hosts)} foreign-Host requests")
        finally:
            for p in (serve, proxy, bare):
                p.send_signal(signal.SIGINT)
                p.communicate(timeout=20)
            decoy.close()


if __name__ == "__main__":
    main()
