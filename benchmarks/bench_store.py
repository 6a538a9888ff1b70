"""Tapes on object storage at scale: ``tape pull`` against a sequential loop of GETs, and a
request's lookup in a tape of 100,000 exchanges.

    python benchmarks/bench_store.py [--recordings 1000] [--delay 0.03] [--rounds 3]
        [--exchanges 100000] [--requests 2000] [--skip-pull] [--skip-lookup] [--relay]
        [--work DIR]

1. **pull**: moto's S3 (a process of its own) 30 ms away: every request waits 30 ms in the
   server before moto reads it (a store across a network); a tape of ``--recordings``
   recordings pushed to it. In interleaved rounds (a new cache and folder each time): ``pull``
   (the listing, then every recording fetched at once, checked against its hash, and the
   folder written) against a sequential loop of GETs of the same recordings with the same
   client (obstore). Target: pull at least 5x faster (medians). Printed too: the CPU a pull
   takes here and in moto, and the load average. The server is moto's S3 application alone
   (its dispatcher spends about 1.5 ms of CPU a request finding the service); ``--relay``
   measures the first set-up instead: moto's whole server behind a TCP relay in this process
   that holds every request 30 ms (the relay's CPU, about 1 ms a request, and the dispatcher's
   are then shared with the pull on the same cores).
2. **lookup**: a tape of ``--exchanges`` exchanges in a ``file://`` store, opened as ``serve``
   opens it (listing, fetch into the cache, the tape loaded); then ``--requests`` requests
   answered by the tape's lookup (``TapeLibrary.choose``: the normalized body's key, the
   matching exchange), paired and interleaved with the same lookups in a tape of 1,000
   exchanges. Target: under 2 ms per request (median of the rounds) in the large tape.

Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.generators import OPENAI_CHAT_URL, recording_header  # noqa: E402
from benchmarks.store_servers import BUCKET, DelayRelay, moto_s3_server  # noqa: E402

HEADER = recording_header(
    request={"method": "POST", "url": OPENAI_CHAT_URL}, recorded_at="2026-11-20T10:00:00Z"
)


def body(i: int) -> dict:
    return {
        "model": "gpt-4o-mini",
        "stream": True,
        "messages": [{"role": "user", "content": f"question number {i}: what is {i} * 7?"}],
    }


def recording_bytes(i: int) -> bytes:
    head = {**HEADER, "request": {**HEADER["request"], "body": body(i)}}
    delta = {"choices": [{"index": 0, "delta": {"content": f"{i * 7}"}}], "model": "gpt-4o-mini"}
    lines = [
        head,
        {"type": "chunk", "t": 0.1, "text": f"data: {json.dumps(delta)}\n\n"},
        {"type": "chunk", "t": 0.2, "text": "data: [DONE]\n\n"},
        {"type": "end", "t": 0.2, "reason": "complete", "error": None},
    ]
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def make_folder(folder: Path, n: int) -> None:
    folder.mkdir(parents=True)
    index = []
    for i in range(n):
        name = f"{i + 1:04d}-openai-chat-gpt-4o-mini.jsonl"
        (folder / name).write_bytes(recording_bytes(i))
        index.append(json.dumps({"seq": i + 1, "file": name, "recorded_at": HEADER["recorded_at"]}))
    (folder / "index.jsonl").write_text("\n".join(index) + "\n")


# -- 1. pull ------------------------------------------------------------------------------------
def _cpu_of(pid: int) -> float:
    """CPU seconds a process has used (user and system; Linux's /proc)."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def far_store(args: argparse.Namespace) -> Iterator[tuple[str, str, int]]:
    """A moto S3 ``args.delay`` away: (the origin to push to, the far origin, moto's pid).
    ``--relay``: moto's full server behind :class:`DelayRelay` in this process (the first
    measurements' set-up); else moto's S3 application with the delay in the server."""
    if args.relay:
        with moto_s3_server() as near, DelayRelay(near.origin, args.delay) as far:
            yield near.origin, far.url, near.pid
    else:
        with moto_s3_server(delay=args.delay, s3_only=True) as server:
            yield server.origin, server.origin, server.pid


def bench_pull(args: argparse.Namespace, work: Path) -> bool:
    import obstore

    from streamtool.core.exchange.store_layout import recording_key
    from streamtool.core.net.store import StoreTape
    from streamtool.core.net.store_ops import pull, push

    url = f"s3://{BUCKET}/bench-pull"
    load = os.getloadavg()
    with far_store(args) as (near, far, moto_pid):
        make_folder(work / "source", args.recordings)
        os.environ["STREAMTOOL_CACHE"] = str(work / "push-cache")
        push(work / "source", url)
        digests = [r.recording for r in StoreTape(url).listing().refs]
        os.environ["AWS_ENDPOINT_URL"] = far
        pulls, loops, cpu = [], [], []
        for n in range(args.rounds):
            cache, out = work / f"cache-{n}", work / f"pulled-{n}"
            os.environ["STREAMTOOL_CACHE"] = str(cache)
            before, moto_before = os.times(), _cpu_of(moto_pid)
            t = time.perf_counter()
            entries = pull(url, out)
            pulls.append(time.perf_counter() - t)
            after = os.times()
            cpu.append(
                (
                    after.user - before.user + after.system - before.system,
                    _cpu_of(moto_pid) - moto_before,
                )
            )
            assert len(entries) == args.recordings
            tape = StoreTape(url)  # the same client, a loop of GETs one after the other
            t = time.perf_counter()
            for d in digests:
                obstore.get(tape.store, tape.key(recording_key(d))).bytes()
            loops.append(time.perf_counter() - t)
            shutil.rmtree(cache, ignore_errors=True)
            shutil.rmtree(out, ignore_errors=True)
    load_after = os.getloadavg()
    pull_s, loop_s = statistics.median(pulls), statistics.median(loops)
    ratio = loop_s / pull_s
    ratios = sorted(lp / pl for pl, lp in zip(pulls, loops, strict=True))
    setup = "moto behind a relay here" if args.relay else "moto's S3, the delay in the server"
    print(f"pull of {args.recordings} recordings, {args.delay * 1000:g} ms per request ({setup}):")
    print(f"  tape pull          {pull_s:8.2f} s   (runs: {', '.join(f'{x:.2f}' for x in pulls)})")
    print(f"  sequential GETs    {loop_s:8.2f} s   (runs: {', '.join(f'{x:.2f}' for x in loops)})")
    print(
        f"  pull is {ratio:.1f}x faster (target: at least 5x; pairs: "
        f"{', '.join(f'{r:.1f}x' for r in ratios)})"
    )
    own, moto = statistics.median(c[0] for c in cpu), statistics.median(c[1] for c in cpu)
    print(
        f"  CPU of a pull: {own:.2f} s here (pull, client{', relay' if args.relay else ''}), "
        f"{moto:.2f} s moto's"
    )
    print(
        f"  load average: {load[0]:.1f} before, {load_after[0]:.1f} after ({os.cpu_count()} CPUs)"
    )
    return ratio >= 5.0


# -- 2. lookup ----------------------------------------------------------------------------------
def file_store_tape(root: Path, n: int) -> str:
    """A tape of ``n`` exchanges written into a ``file://`` store in the store's layout."""
    from streamtool.core.exchange.store_layout import content_hash, entry_key, match_key

    for i in range(n):
        data = recording_bytes(i)
        digest = content_hash(data)
        rec = root / "recordings" / f"{digest}.jsonl"
        rec.parent.mkdir(parents=True, exist_ok=True)
        rec.write_bytes(data)
        key = match_key("/chat/completions", body(i))
        entry = root / entry_key(key, "20261120T100000Z", digest)
        entry.parent.mkdir(parents=True, exist_ok=True)
        entry.write_text(
            json.dumps({"format": "streamtool-tape-entry", "recording": digest, "size": len(data)})
        )
    return f"file://{root}"


def bench_lookup(args: argparse.Namespace, work: Path) -> bool:
    import random

    from streamtool.core.net.library import Incoming
    from streamtool.core.net.tape import load_tape

    os.environ["STREAMTOOL_CACHE"] = str(work / "lookup-cache")
    tapes = {}
    for n in (1000, args.exchanges):
        t = time.perf_counter()
        url = file_store_tape(work / f"store-{n}", n)
        made = time.perf_counter() - t
        t = time.perf_counter()
        tapes[n] = (load_tape(url), n)
        opened = time.perf_counter() - t
        print(f"tape of {n} exchanges: written in {made:.1f} s, opened in {opened:.1f} s")

    rng = random.Random(7)

    def lookups(n: int) -> float:
        library, size = tapes[n]
        picks = [rng.randrange(size) for _ in range(args.requests)]
        requests = [
            Incoming(
                path="/v1/chat/completions",
                endpoint="/chat/completions",
                apis=("openai-chat",),
                model="gpt-4o-mini",
                name=None,
                body=body(i),
            )
            for i in picks
        ]
        t = time.perf_counter()
        for request in requests:
            library.choose(request)
        return (time.perf_counter() - t) / len(requests)

    small, large = [], []
    for _ in range(args.rounds * 2):  # paired and interleaved
        small.append(lookups(1000))
        large.append(lookups(args.exchanges))
    s_ms, l_ms = statistics.median(small) * 1000, statistics.median(large) * 1000
    print(f"lookup per request ({args.requests} requests a round, {len(large)} rounds):")
    print(f"  1,000-exchange tape     {s_ms:.3f} ms")
    print(f"  {args.exchanges:,}-exchange tape {l_ms:.3f} ms (target: under 2 ms)")
    return l_ms < 2.0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--recordings", type=int, default=1000)
    ap.add_argument("--delay", type=float, default=0.030)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--exchanges", type=int, default=100_000)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument(
        "--work",
        type=Path,
        help="where the caches and pulled folders are made (default: the system's temporary "
        "folder); a pull creates a file a recording, whose cost is the file system's",
    )
    ap.add_argument("--skip-pull", action="store_true")
    ap.add_argument(
        "--relay",
        action="store_true",
        help="moto's full server behind a TCP relay in this process (the first set-up)",
    )
    ap.add_argument("--skip-lookup", action="store_true")
    args = ap.parse_args()
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench-store-", dir=args.work) as tmp:
        work = Path(tmp)
        if not args.skip_pull:
            ok &= bench_pull(args, work)
        if not args.skip_lookup:
            ok &= bench_lookup(args, work)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
