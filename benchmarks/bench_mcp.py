"""``streamtool proxy`` in front of an MCP server on loopback: a tool call direct against through
the proxy, every figure from paired, interleaved runs.

    python -m benchmarks.bench_mcp [--calls 201] [--rounds 7] [--clients 50] [--seconds 3]
        [--client httpx|sdk] [--against DIR]

The upstream is a real MCP server, the ``mcp`` SDK's own (``MCPServer``, FastMCP in the 1.x
line) over Streamable HTTP with sessions, in a process of its own; ``streamtool proxy
--upstream`` records every exchange into a temporary folder (no live view), in another. The
client is httpx (asyncio) in this process, speaking the protocol itself (``initialize``, then
``tools/call`` of a tool adding two numbers, answered as an SSE stream, read to its end), the same
for direct and proxied calls. Beside the proxy, in the same rounds, two floors
(``benchmarks/floor_relay.py``): the proxy's libraries as a plain relay (uvicorn, aiohttp's
client) and a TCP relay, the figures to read the proxy's against; and the same plain relay on
other maintained libraries where they are installed (aiohttp's server and client; uvicorn with
httpx, or with httpx2, as the client), to tell whether another library would do measurably
better.
Figures and targets:

1. one tool call's time (the request sent to the stream's last byte), on a kept-alive
   connection of an open session, direct and proxied alternating (the order swapped every
   pair): the median of the paired differences proxied - direct <= +2 ms;
2. ``--clients`` clients at once, each its own connection and session, calling for
   ``--seconds`` seconds: tool calls per second through the proxy / direct, rounds alternating
   (the order swapped every round), the median of ``--rounds`` ratios >= 0.8x.

The clients' own CPU a call (this process) is printed for direct and proxied calls, and with it
what the three processes' CPU a call leaves the proxy for 0.8x: on two cores, with every process
busy, calls a second go as one over the CPU a call takes in all three. ``--client sdk`` makes the
rounds' clients the ``mcp`` SDK's own ``Client`` (2.x, the 2025 generation), as an agent calls;
the target's figure is httpx's.

``--against DIR`` adds the proxy of another checkout (``DIR/streamtool`` is the package, imported
through ``PYTHONPATH``), recording into a folder of its own, to the same paired calls and rounds:
the proxy as it is against the proxy as it was.

Every proxied call's recording is checked at the end: one per call, holding the bytes the client
read. Exits 1 when a target is missed. Run it on an idle machine (``uptime``): the three processes
share the cores.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.procs import Process, cpu_seconds, exit_on_terminate  # noqa: E402
from streamtool.core.recording.reader import Source  # noqa: E402

CLI = [sys.executable, "-c", "from streamtool.cli.main import main; main()"]
LATENCY_TARGET_MS = 2.0
OTHER_LIBRARIES = ("aiohttp", "http", "httpx2")
FLOOR_LABELS = {
    "uvicorn-aiohttp": "floor: uvicorn + aiohttp client",
    "tcp": "floor: TCP relay",
    "aiohttp": "other library: aiohttp relay",
    "http": "other library: uvicorn + httpx",
    "httpx2": "other library: uvicorn + httpx2",
}
# the module each relay needs, where it is not a dependency of streamtool
_NEEDS = {"aiohttp": "aiohttp", "http": "httpx", "httpx2": "httpx2"}
THROUGHPUT_TARGET = 0.8
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    },
}


def upstream_server(port: int) -> None:
    """The MCP server (run in its own process: ``--upstream-server PORT``)."""
    import logging

    import uvicorn

    try:
        from mcp.server.mcpserver import MCPServer

        server = MCPServer("bench")
        app = server.streamable_http_app()
    except ImportError:  # the 1.x line
        from mcp.server.fastmcp import FastMCP

        server = FastMCP("bench", log_level="WARNING")
        app = server.streamable_http_app()

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    logging.disable(logging.INFO)
    # idle connections kept longer than the proxy's pool keeps them: a request never meets a
    # connection the server is closing (the proxy does not send a POST twice)
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="on",
        timeout_keep_alive=120,
    )


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_up(url: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.post(url + "/mcp", json=INIT, headers=ACCEPT, timeout=2)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise SystemExit("the MCP server did not start")


class Session:
    """One client's connection and MCP session."""

    def __init__(self, client: httpx.AsyncClient, url: str) -> None:
        self.client = client
        self.url = url + "/mcp"
        self.headers = dict(ACCEPT)
        self.n = 0

    async def open(self) -> None:
        answer = await self.client.post(self.url, json=INIT, headers=self.headers)
        answer.raise_for_status()
        self.headers["mcp-session-id"] = answer.headers["mcp-session-id"]
        self.headers["mcp-protocol-version"] = "2025-11-25"
        done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await self.client.post(self.url, json=done, headers=self.headers)

    async def close(self) -> None:
        """End the session (DELETE), as the SDK's client does when it exits: a server holding
        every session a run opened would slow down from round to round."""
        await self.client.delete(self.url, headers=self.headers)

    async def call(self) -> tuple[float, bytes]:
        """One tools/call read to its stream's end: (seconds, the body)."""
        self.n += 1
        body = {
            "jsonrpc": "2.0",
            "id": self.n,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": self.n, "b": 1}},
        }
        start = time.perf_counter()
        got = bytearray()
        async with self.client.stream("POST", self.url, json=body, headers=self.headers) as resp:
            async for data in resp.aiter_raw():
                got += data
        elapsed = time.perf_counter() - start
        if f'"text":"{self.n + 1}"'.encode() not in got:
            raise SystemExit(f"a wrong answer: {bytes(got)[:200]!r}")
        return elapsed, bytes(got)


async def latency(urls: list[str], calls: int) -> tuple[list[list[float]], list[bytes]]:
    """Calls through each origin in turn (the order turned every round), kept-alive: each
    origin's seconds, and the bodies read through the second (the proxy)."""
    clients = [httpx.AsyncClient(timeout=30) for _ in urls]
    try:
        sessions = [Session(c, u) for c, u in zip(clients, urls, strict=True)]
        for s in sessions:
            await s.open()
        for _ in range(10):  # warm up every path
            for s in sessions:
                await s.call()
        times: list[list[float]] = [[] for _ in urls]
        bodies: list[bytes] = []
        for i in range(calls):
            for k in [(j + i) % len(urls) for j in range(len(urls))]:
                seconds, body = await sessions[k].call()
                times[k].append(seconds)
                if k == 1:
                    bodies.append(body)
        for s in sessions:
            await s.close()
    finally:
        for c in clients:
            await c.aclose()
    return times, bodies


async def rate(
    url: str, clients: int, seconds: float, pids: tuple[int, ...], sdk: bool = False
) -> tuple[float, int, list[float]]:
    """Tool calls per second of ``clients`` clients calling at once for ``seconds``, the calls
    made, and the CPU seconds each of ``pids`` spent on them (the sessions' opening and closing
    left out). ``sdk``: the clients are the ``mcp`` SDK's own."""
    if sdk:
        return await rate_sdk(url, clients, seconds, pids)
    limits = httpx.Limits(max_connections=1)
    pool = [httpx.AsyncClient(timeout=60, limits=limits) for _ in range(clients)]
    try:
        sessions = [Session(c, url) for c in pool]
        await asyncio.gather(*(s.open() for s in sessions))
        stop = time.perf_counter() + seconds
        done = 0

        async def run(s: Session) -> None:
            nonlocal done
            while time.perf_counter() < stop:
                await s.call()
                done += 1

        before = [cpu_seconds(pid) for pid in pids]
        start = time.perf_counter()
        await asyncio.gather(*(run(s) for s in sessions))
        elapsed = time.perf_counter() - start
        spent = [cpu_seconds(pid) - b for pid, b in zip(pids, before, strict=True)]
        await asyncio.gather(*(s.close() for s in sessions))
    finally:
        for c in pool:
            await c.aclose()
    return done / elapsed, done, spent


async def rate_sdk(
    url: str, clients: int, seconds: float, pids: tuple[int, ...]
) -> tuple[float, int, list[float]]:
    """:func:`rate` with the ``mcp`` SDK's ``Client`` (2.x; the 2025 generation, with
    sessions, as the server speaks it) as each client, calling ``add``: what an agent built on
    the SDK sees."""
    from mcp import Client

    done = 0
    opened = 0
    all_open = asyncio.Event()
    go = asyncio.Event()
    stop = asyncio.Event()

    async def run() -> None:
        nonlocal done, opened
        async with Client(url + "/mcp", mode="legacy") as client:
            opened += 1
            if opened == clients:
                all_open.set()
            await go.wait()
            n = 0
            while not stop.is_set():
                n += 1
                result = await client.call_tool("add", {"a": n, "b": 1})
                if result.content[0].text != str(n + 1):  # type: ignore[union-attr]
                    raise SystemExit(f"a wrong answer: {result!r:.200}")
                done += 1

    tasks = [asyncio.ensure_future(run()) for _ in range(clients)]
    try:
        await asyncio.wait_for(all_open.wait(), 60)
        before = [cpu_seconds(pid) for pid in pids]
        start = time.perf_counter()
        first = done
        go.set()
        await asyncio.sleep(seconds)
        made = done - first
        elapsed = time.perf_counter() - start
        spent = [cpu_seconds(pid) - b for pid, b in zip(pids, before, strict=True)]
        stop.set()
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
    return made / elapsed, made, spent


def spent_in_order(spent: list[float], i: int, n: int) -> list[float]:
    """The relays' CPU per call, measured in round ``i``'s turned order, in their own order."""
    order = [(j + i) % (n + 1) for j in range(n + 1)]
    relays = [k for k in order if k]
    return [spent[relays.index(k)] for k in range(1, n + 1)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=201, help="paired calls (>= 21)")
    ap.add_argument("--rounds", type=int, default=7, help="paired throughput rounds (>= 3)")
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=3.0, help="one throughput round's length")
    ap.add_argument(
        "--against",
        metavar="DIR",
        help="also the proxy of another checkout: DIR holds its package as DIR/streamtool",
    )
    ap.add_argument(
        "--client",
        choices=("httpx", "sdk"),
        default="httpx",
        help="the clients of the rounds of --clients at once: httpx speaking the protocol "
        "(the target's figure), or the mcp SDK's Client, as an agent calls",
    )
    ap.add_argument("--upstream-server", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    exit_on_terminate()
    if args.upstream_server:
        upstream_server(args.upstream_server)
        return
    if args.calls < 21 or args.rounds < 3:
        raise SystemExit("--calls needs at least 21 and --rounds at least 3")
    with open("/proc/loadavg") as f:
        print(f"load average before: {' '.join(f.read().split()[:3])}")
    # the floors: the proxy's libraries (uvicorn, aiohttp's client), a TCP relay, and the same
    # relay on other maintained libraries where they are installed (aiohttp's server; httpx, the
    # proxy's client before aiohttp; httpx2 comes with the openai SDK)
    kinds = ["uvicorn-aiohttp", "tcp"]
    for kind in OTHER_LIBRARIES:
        if importlib.util.find_spec(_NEEDS[kind]) is None:
            print(f"{kind} is not installed: its floor is skipped")
        else:
            kinds.append(kind)
    if args.client == "sdk":
        # each SDK client keeps a GET stream open beside its calls; with 50 of them a floor's
        # relay stalled (the SDK's read timed out): the floors are left out
        print("--client sdk: the floors are left out; direct against the proxy")
        kinds = []
    port = free_port()
    upstream = Process(
        [sys.executable, "-m", "benchmarks.bench_mcp", "--upstream-server", str(port)],
        url=f"http://127.0.0.1:{port}",
    )
    failed = []
    try:
        wait_up(upstream.url)
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "captures"
            out.mkdir()
            proxy = Process(
                [
                    *CLI,
                    "proxy",
                    "--upstream",
                    upstream.url,
                    "--out",
                    str(out),
                    "--view",
                    "none",
                    "--port",
                    "0",
                ]  # fmt: skip
            )
            floors = [
                Process([sys.executable, "-m", "benchmarks.floor_relay", kind, upstream.url])
                for kind in kinds
            ]
            relays = [proxy, *floors]
            if args.against:
                other_out = Path(tmp) / "against"
                other_out.mkdir()
                env = {**os.environ, "PYTHONPATH": str(Path(args.against).resolve())}
                command = [*CLI, "proxy", "--upstream", upstream.url, "--out", str(other_out)]
                relays.append(Process([*command, "--view", "none", "--port", "0"], env=env))
            try:
                urls = [upstream.url, *(r.url for r in relays)]
                times, bodies = asyncio.run(latency(urls, args.calls))
                rounds = []  # per round: calls/s direct, then through each relay
                cpu: list[list[float]] = []  # per round: CPU per call of each relay, upstream's
                client_cpu: list[tuple[float, float]] = []  # per round: direct, through the proxy
                sdk = args.client == "sdk"
                for i in range(args.rounds):
                    got: dict[str, float] = {}
                    spent: list[float] = []
                    mine: dict[int, float] = {}
                    for k in [(j + i) % len(urls) for j in range(len(urls))]:
                        pid = relays[k - 1].pid if k else upstream.pid
                        pids = (pid, upstream.pid, os.getpid())
                        per_second, done, used = asyncio.run(
                            rate(urls[k], args.clients, args.seconds, pids, sdk)
                        )
                        got[urls[k]] = per_second
                        mine[k] = used[2] / done
                        if k:
                            spent.append(used[0] / done)
                        if k == 1:
                            upstream_cpu = used[1] / done
                    rounds.append([got[u] for u in urls])
                    cpu.append([*spent_in_order(spent, i, len(relays)), upstream_cpu])
                    client_cpu.append((mine[0], mine[1]))
            finally:
                for r in relays:
                    r.stop()
            recorded = [
                Source(out / e["file"])
                for e in map(json.loads, (out / "index.jsonl").read_text().splitlines())
                if e["model"] == "tools/call add"
            ]
            # every paired proxied call's body, as the client read it, held by a recording (the
            # rounds of 50 clients recorded more calls, some with the same ids and answers)
            held = {
                b"".join(c.data.encode() if isinstance(c.data, str) else c.data for c in s.chunks())
                for s in recorded
            }
            exact = sum(1 for body in bodies if body in held)
    finally:
        upstream.stop()

    direct = times[0]
    labels = ["proxy", *(FLOOR_LABELS[kind] for kind in kinds)]
    if args.against:
        labels.append("proxy of --against")
    print(f"one tool call, kept-alive session, {args.calls} rounds of calls through each path")
    print(f"  direct {statistics.median(direct) * 1000:6.2f} ms")
    extras = []
    for label, through in zip(labels, times[1:], strict=True):
        extra = statistics.median(p - d for d, p in zip(direct, through, strict=True)) * 1000
        extras.append(extra)
        print(
            f"  {label:<30} {statistics.median(through) * 1000:6.2f} ms   "
            f"paired median {extra:+.2f} ms"
        )
    print(f"  target: the proxy <= +{LATENCY_TARGET_MS} ms")
    if extras[0] > LATENCY_TARGET_MS:
        failed.append("latency")
    who = "the mcp SDK's Client" if args.client == "sdk" else "httpx"
    print(
        f"{args.clients} clients at once ({who}), {args.seconds:g} s rounds, {args.rounds} rounds"
    )
    for row in rounds:
        shown = "   ".join(f"{r / row[0]:.2f}x" for r in row[1:])
        print(f"  direct {row[0]:7.1f} calls/s   proxy {row[1]:7.1f} calls/s   ({shown})")
    for k, label in enumerate(labels, 1):
        ratio = statistics.median(row[k] / row[0] for row in rounds)
        per_call = statistics.median(c[k - 1] for c in cpu) * 1000
        print(f"  {label:<30} median {ratio:.2f}x   CPU per call {per_call:.2f} ms")
        if k == 1 and ratio < THROUGHPUT_TARGET:
            failed.append("throughput")
    for kind in kinds[2:]:  # another library's relay against the proxy's libraries', paired
        k = 2 + kinds.index(kind)
        ratio = statistics.median(row[k] / row[2] for row in rounds)
        extra = statistics.median(o - f for o, f in zip(times[k], times[2], strict=True)) * 1000
        print(
            f"  {FLOOR_LABELS[kind]} against the proxy's libraries' relay: {ratio:.2f}x the "
            f"calls/s, {extra:+.2f} ms a call (paired medians)"
        )
    if args.against:  # the proxy against the other checkout's, paired
        k = len(labels)
        ratio = statistics.median(row[1] / row[k] for row in rounds)
        extra = statistics.median(p - o for p, o in zip(times[1], times[k], strict=True)) * 1000
        print(
            f"  the proxy against the proxy of --against: {ratio:.2f}x the calls/s, "
            f"{extra:+.2f} ms a call (paired medians)"
        )
    upstream_ms = statistics.median(c[-1] for c in cpu) * 1000
    print(f"  the MCP server's CPU per call {upstream_ms:.2f} ms")
    client_direct = statistics.median(c[0] for c in client_cpu) * 1000
    client_proxied = statistics.median(c[1] for c in client_cpu) * 1000
    print(
        f"  the clients' CPU per call (this process): direct {client_direct:.2f} ms, "
        f"through the proxy {client_proxied:.2f} ms"
    )
    # the cores are shared: when every process is busy, calls/s go as 1 / the CPU of a call in
    # all three; the proxy's CPU a call that leaves 0.8x of direct, by that count
    room = (client_direct + upstream_ms) / THROUGHPUT_TARGET - (client_proxied + upstream_ms)
    proxy_ms = statistics.median(c[0] for c in cpu) * 1000
    print(
        f"  by the CPU of a call in all three processes, {THROUGHPUT_TARGET}x of direct leaves "
        f"the proxy {room:.2f} ms a call; it took {proxy_ms:.2f} ms"
    )
    print(f"  target: the proxy >= {THROUGHPUT_TARGET}x")
    print(f"recordings of the paired proxied calls holding the bytes read: {exact}/{len(bodies)}")
    if exact < len(bodies):
        failed.append("recordings")
    if failed:
        print(f"MISSED: {', '.join(failed)}")
        raise SystemExit(1)


if __name__ == "__main__":
    main()
