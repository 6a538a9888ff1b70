"""``streamtool proxy`` on WebSocket sessions, loopback: direct to a ``websockets`` upstream against
through the proxy, in the same run, every figure from paired, interleaved rounds.

    python -m benchmarks.bench_ws [--rounds 7] [--echoes 300] [--sessions 50] [--burst 400]

The upstream is a ``websockets`` asyncio server in a subprocess (an event sent to it is echoed at
once; ``{"burst": N}`` gets N Realtime-like delta events of about 300 bytes); the proxy is
``streamtool proxy --upstream ws://...`` in a subprocess (recording into a temporary tape, no live
view); the clients are ``websockets`` asyncio clients in this process, the same for direct and
proxied sessions, which alternate (the order swapped every round). Figures and targets:

1. the time the proxy adds to a message: a session sends ``--echoes`` events one at a time and
   waits for each echo (a round trip crosses the proxy twice, one message each way); the median
   round trip through the proxy minus the direct one, per round, halved (per message); median of
   the rounds <= 1 ms;
2. ``--sessions`` sessions at once, each asking for a ``--burst`` of events: messages per second
   through the proxy / direct, per round; median of the rounds >= 0.8x;
3. every message of every session recorded: each recording of the last burst holds the burst.

Beside the proxy, in the same rounds, a floor (a figure to read, not a target): a relay of the
proxy's own libraries used as their documentation shows, nothing recorded (uvicorn's WebSocket
protocol on the asyncio loop, an ASGI app relaying to a ``websockets`` asyncio client, a task
each way). What the proxy costs beyond it is its own work (recording, scrubbing, the guard).

Exits 1 when a target is missed. Run it on an idle machine (``uptime``): the figures are of three
processes sharing the cores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CLI = [sys.executable, "-c", "from streamtool.cli.main import main; main()"]
LATENCY_TARGET_MS = 1.0
THROUGHPUT_TARGET = 0.8
DELTA = "x" * 220  # an event's payload: a Realtime text or transcript delta's size

UPSTREAM = r"""
import asyncio, json, sys
from websockets.asyncio.server import serve

DELTA = sys.argv[1]

async def handler(ws):
    async for message in ws:
        event = json.loads(message)
        n = event.get("burst")
        if n is None:
            await ws.send(message)
            continue
        for i in range(n):
            await ws.send(json.dumps({"type": "response.output_text.delta", "event_id": f"e{i}",
                                      "response_id": "resp_1", "item_id": "item_1",
                                      "output_index": 0, "content_index": 0, "delta": DELTA}))
        await ws.send(json.dumps({"type": "response.done", "response": {"id": "resp_1"}}))

async def main():
    async with serve(handler, "127.0.0.1", 0, compression=None, max_size=None) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        print(f"ws://127.0.0.1:{port}", flush=True)
        await asyncio.Future()

asyncio.run(main())
"""


FLOOR = r"""
import asyncio, sys
import uvicorn
from websockets.asyncio.client import connect

UPSTREAM = sys.argv[1]

async def app(scope, receive, send):
    if scope["type"] != "websocket":
        return
    await receive()
    url = UPSTREAM + scope["path"] + "?" + scope["query_string"].decode()
    async with connect(url, compression=None, max_size=None) as upstream:
        await send({"type": "websocket.accept"})

        async def up():
            while True:
                message = await receive()
                if message["type"] != "websocket.receive":
                    await upstream.close()
                    return
                await upstream.send(message.get("text") or message.get("bytes"))

        async def down():
            async for data in upstream:
                key = "text" if isinstance(data, str) else "bytes"
                await send({"type": "websocket.send", key: data})

        tasks = [asyncio.ensure_future(up()), asyncio.ensure_future(down())]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()

import socket
sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
sock.bind(("127.0.0.1", 0))
sock.listen(1024)
print(f"http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
config = uvicorn.Config(app, ws="websockets-sansio", loop="asyncio", log_level="warning",
                        lifespan="off")
uvicorn.Server(config).run(sockets=[sock])
"""


class Process:
    def __init__(self, command: list[str], pattern: str, stream: str) -> None:
        self.proc = subprocess.Popen(
            command,
            stdout=subprocess.PIPE if stream == "stdout" else subprocess.DEVNULL,
            stderr=subprocess.PIPE if stream == "stderr" else subprocess.DEVNULL,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        out = self.proc.stdout if stream == "stdout" else self.proc.stderr
        assert out is not None
        line = out.readline()
        found = re.search(pattern, line)
        if found is None:
            raise SystemExit(f"did not start: {line!r}")
        self.url = found.group(0)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()


async def echoes(url: str, n: int) -> list[float]:
    """Round trips of ``n`` events sent one at a time (seconds)."""
    from websockets.asyncio.client import connect

    out = []
    async with connect(url + "/v1/realtime?model=bench", compression=None, max_size=None) as ws:
        for i in range(n):
            message = json.dumps({"type": "conversation.item.create", "n": i, "text": DELTA})
            start = time.perf_counter()
            await ws.send(message)
            await ws.recv()
            out.append(time.perf_counter() - start)
    return out


async def bursts(url: str, sessions: int, burst: int) -> float:
    """Messages per second received by ``sessions`` sessions at once, each asking a burst."""
    from websockets.asyncio.client import connect

    async def one() -> int:
        got = 0
        async with connect(url + "/v1/realtime?model=bench", compression=None, max_size=None) as ws:
            await ws.send(json.dumps({"type": "response.create", "burst": burst}))
            while True:
                message = await ws.recv()
                got += 1
                if '"response.done"' in message:
                    return got

    start = time.perf_counter()
    counts = await asyncio.gather(*(one() for _ in range(sessions)))
    took = time.perf_counter() - start
    assert all(c == burst + 1 for c in counts), counts
    return sum(counts) / took


def recorded(tape: Path, burst: int) -> tuple[int, int]:
    """(recordings holding a whole burst, recordings of bursts) in the tape."""
    from streamtool.core.model.records import Message
    from streamtool.core.recording.reader import Source

    whole = total = 0
    for path in sorted(tape.glob("0*.jsonl")):
        records = list(Source(path).session_records())
        server = sum(1 for r in records if type(r) is Message and r.direction == "server")
        if server >= burst:
            total += 1
            whole += server == burst + 1
    return whole, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--echoes", type=int, default=300)
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--burst", type=int, default=400)
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f}")
    upstream = Process([sys.executable, "-c", UPSTREAM, DELTA], r"ws://\S+", "stdout")
    tape = Path(tempfile.mkdtemp(prefix="bench-ws-"))
    proxy = Process(
        [*CLI, "proxy", "--port", "0", "--upstream", upstream.url, "--out", str(tape)]
        + ["--view", "none"],
        r"http://127\.0\.0\.1:\d+",
        "stderr",
    )
    floor = Process([sys.executable, "-c", FLOOR, upstream.url], r"http://\S+", "stdout")
    direct = upstream.url
    proxied = proxy.url.replace("http://", "ws://")
    floored = floor.url.replace("http://", "ws://")
    added: list[float] = []
    ratios: list[float] = []
    floor_added: list[float] = []
    floor_ratios: list[float] = []
    try:
        for i in range(args.rounds):
            order = [(direct, "direct"), (proxied, "proxy"), (floored, "floor")]
            if i % 2:
                order.reverse()
            rtt: dict[str, float] = {}
            rate: dict[str, float] = {}
            for url, side in order:
                rtt[side] = statistics.median(asyncio.run(echoes(url, args.echoes)))
            for url, side in order:
                rate[side] = asyncio.run(bursts(url, args.sessions, args.burst))
            per_message = (rtt["proxy"] - rtt["direct"]) / 2 * 1000
            added.append(per_message)
            ratios.append(rate["proxy"] / rate["direct"])
            floor_added.append((rtt["floor"] - rtt["direct"]) / 2 * 1000)
            floor_ratios.append(rate["floor"] / rate["direct"])
            print(
                f"round {i + 1}: round trip direct {rtt['direct'] * 1000:.3f} ms, proxied "
                f"{rtt['proxy'] * 1000:.3f} ms (+{per_message:.3f} ms a message), floor "
                f"+{floor_added[-1]:.3f} ms; {args.sessions} sessions: direct "
                f"{rate['direct']:,.0f} msg/s, proxied {rate['proxy']:,.0f} msg/s "
                f"({ratios[-1]:.2f}x), floor {rate['floor']:,.0f} msg/s ({floor_ratios[-1]:.2f}x)"
            )
    finally:
        proxy.stop()
        floor.stop()
        upstream.stop()
    whole, total = recorded(tape, args.burst)
    latency = statistics.median(added)
    throughput = statistics.median(ratios)
    print(f"added per message, median of {args.rounds} rounds: {latency:+.3f} ms")
    print(f"messages/s through the proxy / direct, median: {throughput:.2f}x")
    print(
        f"floor (the libraries' relay, nothing recorded): +{statistics.median(floor_added):.3f} "
        f"ms a message, {statistics.median(floor_ratios):.2f}x"
    )
    print(f"recordings holding their whole burst: {whole}/{total}")
    failed = []
    if latency > LATENCY_TARGET_MS:
        failed.append(f"latency {latency:.3f} ms > {LATENCY_TARGET_MS} ms")
    if throughput < THROUGHPUT_TARGET:
        failed.append(f"throughput {throughput:.2f}x < {THROUGHPUT_TARGET}x")
    if whole != total or total < args.sessions:
        failed.append(f"{total - whole} recordings lost messages")
    if failed:
        print("MISSED: " + "; ".join(failed))
        sys.exit(1)
    print("all targets met")


if __name__ == "__main__":
    main()
