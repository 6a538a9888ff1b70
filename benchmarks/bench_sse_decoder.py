"""The SSE decoder's time against the number of events, for bodies that arrive in one read.

    python -m benchmarks.bench_sse_decoder [--events 25000,100000] [--rounds 3]
                                           [--python OTHER_PYTHON] [--timeout 300]

Each shape is a body of N events given to one ``SSEDecoder.feed`` (a raw ``.sse`` file, a body
a buffering proxy delivered whole): events with ``data`` (the common shapes), events without
``data`` (``event: ping``, ``id: 1``: nothing to dispatch), and the common shapes with something
else every 10 or 100 events (a comment, an event without data). Each figure is the best of three
decodes in a child process; ``--python`` names another installation's interpreter (an older
version): each round runs every shape in both, one after the other, and the medians of the
rounds are printed side by side.

Target (this installation): linear work, every shape at 4x the events in at most 8x the time
(the median of the rounds). Exit code 1 when a shape misses it.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

SHAPES = {
    "data": 'data: {"a":"hello"}\n\n',
    "event+data": 'event: content_block_delta\ndata: {"a":1}\n\n',
    "no data (event:)": "event: ping\n\n",
    "no data (id:)": "id: 7\n\n",
    "data, comment per 100": 'data: {"a":1}\n\n' * 99 + ": OPENROUTER PROCESSING\n\n",
    "data, no-data per 10": 'event: a\ndata: {"a":1}\n\n' * 9 + "event: ping\n\n",
}
MAX_GROWTH = 8.0  # time at 4x the events / time at 1x (quadratic work: 16x)
CHILD = """
import sys, time
from streamtool.core.wire.sse import SSEDecoder
unit, n = sys.argv[1], int(sys.argv[2])
blocks = unit.count("\\n\\n")
body = unit * max(1, n // blocks)
best = None
for _ in range(3):
    start = time.perf_counter()
    d = SSEDecoder()
    d.feed(body)
    d.finish()
    took = time.perf_counter() - start
    best = took if best is None else min(best, took)
print(best)
"""


def decode_time(python: str, unit: str, n: int, timeout: float) -> float:
    try:
        run = subprocess.run(
            [python, "-c", CHILD, unit, str(n)],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=True,
        )
    except subprocess.TimeoutExpired:
        return float("inf")
    return float(run.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", default="25000,100000")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--python", default=None, help="another installation's interpreter")
    ap.add_argument("--timeout", type=float, default=300.0)
    args = ap.parse_args()
    sizes = [int(n) for n in args.events.split(",")]
    pythons = {"this": sys.executable}
    if args.python:
        pythons = {"other": args.python, "this": sys.executable}
    times: dict[tuple[str, str, int], list[float]] = {}
    for _ in range(args.rounds):
        for shape, unit in SHAPES.items():
            for n in sizes:
                for who, python in pythons.items():
                    key = (shape, who, n)
                    if times.get(key) and times[key][-1] == float("inf"):
                        continue  # timed out once: not run again
                    times.setdefault(key, []).append(decode_time(python, unit, n, args.timeout))
    failed = False
    head = "".join(f"{who + ' ' + format(n, ','):>18}" for who in pythons for n in sizes)
    print(f"{'shape':<24}{head}")
    for shape in SHAPES:
        cells = []
        for who in pythons:
            for n in sizes:
                t = statistics.median(times[(shape, who, n)])
                cells.append(f"> {args.timeout:.0f} s" if t == float("inf") else f"{t:.3f} s")
        print(f"{shape:<24}" + "".join(f"{c:>18}" for c in cells))
        if len(sizes) >= 2:
            small = statistics.median(times[(shape, "this", sizes[0])])
            large = statistics.median(times[(shape, "this", sizes[-1])])
            allowed = MAX_GROWTH * sizes[-1] / sizes[0] / 4
            if large > small * allowed:
                print(f"  this: {large / small:.1f}x the time for {sizes[-1] / sizes[0]:.0f}x")
                failed = True
    print(f"target: at 4x the events at most {MAX_GROWTH:g}x the time")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
