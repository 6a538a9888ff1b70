"""``streamtool proxy`` on WebSocket sessions, loopback: direct to a ``websockets`` upstream against
through the proxy, in the same run, every figure from paired, interleaved rounds.

    python -m benchmarks.bench_ws [--rounds 15] [--echoes 300] [--sessions 50] [--burst 400]
        [--bursts 3] [--against DIR]

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
   through the proxy / direct, per round, timed from the requests to the last message once every
   session is open (the messages the relay relays; the rate with the sessions' opening counted
   in is printed beside it), each side's median of ``--bursts`` bursts a round, interleaved;
   median of the rounds >= 0.8x;
3. every message of every session recorded: each recording of the last burst holds the burst.

Beside the rates, the CPU (user and system) a message costs each relay process and the clients
(this process) over the bursts: figures the cores' sharing moves far less than the rates.

Beside the proxy, in the same rounds, a floor (a figure to read, not a target): a relay of the
proxy's own libraries used as their documentation shows, nothing recorded (uvicorn's WebSocket
protocol on the asyncio loop, an ASGI app relaying to a ``websockets`` asyncio client, a task
each way). What the proxy costs beyond it is its own work (recording, scrubbing, the guard).
Where they are installed, the same relay on other maintained libraries (aiohttp's server and
client; picows's server and client), to tell whether another library would do measurably better
than the proxy's (each also against the floor, paired).

``--against DIR`` adds the proxy of another checkout (``DIR/streamtool`` is the package, imported
through ``PYTHONPATH``), recording into a tape of its own, to the same rounds: the proxy as it is
against the proxy as it was, paired.

Exits 1 when a target is missed. Run it on an idle machine (``uptime``): the figures are of three
processes sharing the cores.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.procs import cpu_seconds, exit_on_terminate  # noqa: E402

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


# the same relay on other maintained libraries, as their documentation shows (not dependencies of
# streamtool: ``pip install aiohttp picows`` to run them; without them these floors are skipped)
FLOOR_AIOHTTP = r"""
import asyncio, socket, sys
from aiohttp import ClientSession, WSMsgType, web

UPSTREAM = sys.argv[1]

async def relay(request):
    agent = web.WebSocketResponse(compress=False, max_msg_size=0)
    async with request.app["client"].ws_connect(
        UPSTREAM + request.rel_url.raw_path_qs, compress=0, max_msg_size=0
    ) as upstream:
        await agent.prepare(request)

        async def pipe(source, sink):  # one direction, message by message
            async for message in source:
                if message.type == WSMsgType.TEXT:
                    await sink.send_str(message.data)
                elif message.type == WSMsgType.BINARY:
                    await sink.send_bytes(message.data)
            await sink.close()

        ways = ((agent, upstream), (upstream, agent))
        tasks = [asyncio.ensure_future(pipe(source, sink)) for source, sink in ways]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()
    return agent

async def start(app):
    app["client"] = ClientSession()

async def stop(app):
    await app["client"].close()

app = web.Application()
app.on_startup.append(start)
app.on_cleanup.append(stop)
app.router.add_get("/{tail:.*}", relay)
sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
sock.bind(("127.0.0.1", 0))
sock.listen(1024)
print(f"http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
web.run_app(app, sock=sock, print=None, access_log=None)
"""

# picows: a frame is relayed from its listener's callback, no task per message; the agent's
# upgrade is answered at once and its first messages wait for the upstream's (picows's server
# calls a listener factory that cannot wait for the upstream's answer)
FLOOR_PICOWS = r"""
import asyncio, sys
from picows import WSListener, WSMsgType, ws_connect, ws_create_server

UPSTREAM = sys.argv[1]
DATA = (WSMsgType.TEXT, WSMsgType.BINARY)

class Upstream(WSListener):
    def __init__(self, agent):
        self.agent = agent

    def on_ws_frame(self, transport, frame):
        if frame.msg_type in DATA:
            self.agent.send(frame.msg_type, frame.get_payload_as_bytes())
        elif frame.msg_type == WSMsgType.CLOSE:
            self.agent.send_close(frame.get_close_code(), frame.get_close_message())
            self.agent.disconnect()

    def on_ws_disconnected(self, transport):
        self.agent.disconnect()

class Agent(WSListener):
    def __init__(self, url):
        self.url = url
        self.upstream = None
        self.waiting = []

    def on_ws_connected(self, transport):
        self.transport = transport
        asyncio.get_running_loop().create_task(self.connect())

    async def connect(self):
        self.upstream, _ = await ws_connect(lambda: Upstream(self.transport), self.url)
        for kind, payload in self.waiting:
            self.upstream.send(kind, payload)
        self.waiting = None

    def on_ws_frame(self, transport, frame):
        if frame.msg_type in DATA:
            if self.upstream is None:
                self.waiting.append((frame.msg_type, frame.get_payload_as_bytes()))
            else:
                self.upstream.send(frame.msg_type, frame.get_payload_as_bytes())
        elif frame.msg_type == WSMsgType.CLOSE and self.upstream is not None:
            self.upstream.send_close(frame.get_close_code(), frame.get_close_message())
            self.upstream.disconnect()
            transport.disconnect()

    def on_ws_disconnected(self, transport):
        if self.upstream is not None:
            self.upstream.disconnect()

async def main():
    server = await ws_create_server(
        lambda request: Agent(UPSTREAM + request.path.decode()), "127.0.0.1", 0, backlog=1024,
        max_frame_size=1 << 30,
    )
    port = server.sockets[0].getsockname()[1]
    print(f"http://127.0.0.1:{port}", flush=True)
    await server.serve_forever()

asyncio.run(main())
"""


class Process:
    def __init__(
        self, command: list[str], pattern: str, stream: str, env: dict[str, str] | None = None
    ) -> None:
        self.proc = subprocess.Popen(
            command,
            stdout=subprocess.PIPE if stream == "stdout" else subprocess.DEVNULL,
            stderr=subprocess.PIPE if stream == "stderr" else subprocess.DEVNULL,
            text=True,
            env={**(env or os.environ), "PYTHONUNBUFFERED": "1"},
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


async def bursts(url: str, sessions: int, burst: int) -> tuple[float, float]:
    """Messages per second received by ``sessions`` sessions at once, each asking a burst: from
    the requests to the last message, once every session is open (what the relay relays), and
    from the first session's opening (what opening a session through the proxy costs counted
    in)."""
    from websockets.asyncio.client import connect

    async def one(ws) -> int:
        got = 0
        await ws.send(json.dumps({"type": "response.create", "burst": burst}))
        while True:
            message = await ws.recv()
            got += 1
            if '"response.done"' in message:
                return got

    opened = time.perf_counter()
    conns = await asyncio.gather(
        *(
            connect(url + "/v1/realtime?model=bench", compression=None, max_size=None)
            for _ in range(sessions)
        )
    )
    try:
        start = time.perf_counter()
        counts = await asyncio.gather(*(one(ws) for ws in conns))
        end = time.perf_counter()
    finally:
        await asyncio.gather(*(ws.close() for ws in conns))
    assert all(c == burst + 1 for c in counts), counts
    return sum(counts) / (end - start), sum(counts) / (end - opened)


def recorded(tape: Path, burst: int) -> tuple[int, int]:
    """(recordings holding a whole burst, recordings of bursts) in the tape."""
    from streamtool.core.model.records import Message
    from streamtool.core.recording.reader import Source

    whole = total = 0
    for path in sorted(tape.glob("[0-9]*.jsonl")):  # 0001-... to 9999-... and on
        records = list(Source(path).session_records())
        asked = [r for r in records if type(r) is Message and r.direction == "client"]
        # a burst's session asked once, for the burst (an echo session sends its events)
        if len(asked) != 1 or '"burst"' not in str(asked[0].data):
            continue
        server = sum(1 for r in records if type(r) is Message and r.direction == "server")
        total += 1
        whole += server == burst + 1
    return whole, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--echoes", type=int, default=300)
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--burst", type=int, default=400)
    parser.add_argument("--bursts", type=int, default=3, help="bursts of each side in a round")
    parser.add_argument(
        "--against",
        metavar="DIR",
        help="also the proxy of another checkout: DIR holds its package as DIR/streamtool",
    )
    args = parser.parse_args()
    exit_on_terminate()
    print(f"load average: {os.getloadavg()[0]:.2f}")
    upstream = Process([sys.executable, "-c", UPSTREAM, DELTA], r"ws://\S+", "stdout")
    tape = Path(tempfile.mkdtemp(prefix="bench-ws-"))
    others: dict[str, Process] = {}
    other_tape: Path | None = None
    proxy = Process(
        [*CLI, "proxy", "--port", "0", "--upstream", upstream.url, "--out", str(tape)]
        + ["--view", "none"],
        r"http://127\.0\.0\.1:\d+",
        "stderr",
    )
    floor = Process([sys.executable, "-c", FLOOR, upstream.url], r"http://\S+", "stdout")
    # the proxy of another checkout (--against), recording into a tape of its own
    if args.against:
        env = {**os.environ, "PYTHONPATH": str(Path(args.against).resolve())}
        other_tape = Path(tempfile.mkdtemp(prefix="bench-ws-against-"))
        command = [*CLI, "proxy", "--port", "0", "--upstream", upstream.url, "--out"]
        others["--against"] = Process(
            [*command, str(other_tape), "--view", "none"],
            r"http://127\.0\.0\.1:\d+",
            "stderr",
            env,
        )
    # the other libraries' relays, where they are installed
    for name, module, script in (
        ("aiohttp", "aiohttp", FLOOR_AIOHTTP),
        ("picows", "picows", FLOOR_PICOWS),
    ):
        if importlib.util.find_spec(module) is None:
            print(f"{name} is not installed: its floor is skipped")
            continue
        others[name] = Process(
            [sys.executable, "-c", script, upstream.url], r"http://\S+", "stdout"
        )
    direct = upstream.url
    proxied = proxy.url.replace("http://", "ws://")
    floored = floor.url.replace("http://", "ws://")
    added: list[float] = []
    ratios: list[float] = []
    opening_ratios: list[float] = []  # the sessions' opening counted in
    floor_added: list[float] = []
    floor_ratios: list[float] = []
    other_added: dict[str, list[float]] = {name: [] for name in others}
    other_ratios: dict[str, list[float]] = {name: [] for name in others}
    # the relays' CPU (user and system) over their bursts, and the messages they relayed
    relays = {"proxy": proxy.proc.pid, "floor": floor.proc.pid}
    if "--against" in others:
        relays["--against"] = others["--against"].proc.pid
    cpu = {side: 0.0 for side in relays}
    relayed = {side: 0 for side in relays}
    # the clients' own CPU (this process's) over each side's bursts, a message received
    client_cpu: dict[str, float] = {}
    received: dict[str, int] = {}
    try:
        for i in range(args.rounds):
            order = [(direct, "direct"), (proxied, "proxy"), (floored, "floor")]
            order += [(p.url.replace("http://", "ws://"), name) for name, p in others.items()]
            if i % 2:
                order.reverse()
            rtt: dict[str, float] = {}
            rate: dict[str, float] = {}
            with_opening: dict[str, float] = {}
            for url, side in order:
                rtt[side] = statistics.median(asyncio.run(echoes(url, args.echoes)))
            # each side's bursts, interleaved with the others', the median of each side's
            samples: dict[str, list[tuple[float, float]]] = {side: [] for _, side in order}
            for _ in range(args.bursts):
                for url, side in order:
                    pid = relays.get(side)
                    before = cpu_seconds(pid) if pid else 0.0
                    mine = time.process_time()
                    samples[side].append(asyncio.run(bursts(url, args.sessions, args.burst)))
                    client_cpu[side] = client_cpu.get(side, 0.0) + time.process_time() - mine
                    received[side] = received.get(side, 0) + args.sessions * (args.burst + 1)
                    if pid:
                        cpu[side] += cpu_seconds(pid) - before
                        relayed[side] += args.sessions * (args.burst + 1)
            for side, taken in samples.items():
                rate[side] = statistics.median(r for r, _ in taken)
                with_opening[side] = statistics.median(w for _, w in taken)
            per_message = (rtt["proxy"] - rtt["direct"]) / 2 * 1000
            added.append(per_message)
            ratios.append(rate["proxy"] / rate["direct"])
            opening_ratios.append(with_opening["proxy"] / with_opening["direct"])
            floor_added.append((rtt["floor"] - rtt["direct"]) / 2 * 1000)
            floor_ratios.append(rate["floor"] / rate["direct"])
            shown = ""
            for name in others:
                other_added[name].append((rtt[name] - rtt["direct"]) / 2 * 1000)
                other_ratios[name].append(rate[name] / rate["direct"])
                shown += (
                    f"; {name} {other_added[name][-1]:+.3f} ms, {rate[name]:,.0f} msg/s "
                    f"({other_ratios[name][-1]:.2f}x)"
                )
            print(
                f"round {i + 1}: round trip direct {rtt['direct'] * 1000:.3f} ms, proxied "
                f"{rtt['proxy'] * 1000:.3f} ms (+{per_message:.3f} ms a message), floor "
                f"+{floor_added[-1]:.3f} ms; {args.sessions} sessions: direct "
                f"{rate['direct']:,.0f} msg/s, proxied {rate['proxy']:,.0f} msg/s "
                f"({ratios[-1]:.2f}x; {opening_ratios[-1]:.2f}x with the sessions' opening), "
                f"floor {rate['floor']:,.0f} msg/s ({floor_ratios[-1]:.2f}x)" + shown,
                flush=True,
            )
    finally:
        proxy.stop()
        floor.stop()
        for p in others.values():
            p.stop()
        upstream.stop()
    try:
        whole, total = recorded(tape, args.burst)
    finally:  # the tapes go (a run leaves nothing behind)
        shutil.rmtree(tape, ignore_errors=True)
        if other_tape is not None:
            shutil.rmtree(other_tape, ignore_errors=True)
    latency = statistics.median(added)
    throughput = statistics.median(ratios)
    print(f"added per message, median of {args.rounds} rounds: {latency:+.3f} ms")
    print(f"messages/s through the proxy / direct, median: {throughput:.2f}x")
    print(
        "the same with the sessions' opening counted in (not a target), median: "
        f"{statistics.median(opening_ratios):.2f}x"
    )
    print(
        f"floor (the libraries' relay, nothing recorded): +{statistics.median(floor_added):.3f} "
        f"ms a message, {statistics.median(floor_ratios):.2f}x"
    )
    for name in others:
        if name == "--against":  # the proxy against the other checkout's, paired
            paired = zip(ratios, other_ratios[name], strict=True)
            print(
                f"the proxy of --against: {statistics.median(other_added[name]):+.3f} ms a "
                f"message, {statistics.median(other_ratios[name]):.2f}x; the proxy against it: "
                f"{statistics.median(p / o for p, o in paired):.2f}x the messages/s (paired)"
            )
            continue
        paired = zip(other_ratios[name], floor_ratios, strict=True)
        print(
            f"other library, {name}'s relay (nothing recorded): "
            f"{statistics.median(other_added[name]):+.3f} ms a message, "
            f"{statistics.median(other_ratios[name]):.2f}x "
            f"({statistics.median(o / f for o, f in paired):.2f}x the floor's messages/s, paired)"
        )
    print(
        "CPU a message relayed in the bursts (user and system): "
        + ", ".join(f"{side} {cpu[side] / relayed[side] * 1e6:.1f} µs" for side in relays)
    )
    print(
        "the clients' CPU a message received (this process; the sessions' opening and closing "
        "counted in): "
        + ", ".join(f"{side} {client_cpu[side] / received[side] * 1e6:.1f} µs" for side in received)
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
