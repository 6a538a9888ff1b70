"""Time and peak memory of ``inspect``, ``inspect --reads``, ``inspect --format json`` and
``report`` on a recording of a million events.

    python -m benchmarks.bench_big_recording [--events 1000000] [--rounds 1]
                                             [--python OTHER_PYTHON] [--only inspect,report]

Writes a recording of ``--events`` OpenAI Chat Completions events (text deltas, one network read
each, a stall of 1.5 s every 100,000 reads), then runs each command on it in a child process and
reads the child's peak resident memory from the kernel (``wait4``'s ``ru_maxrss``) and its wall
time. ``--python`` names the interpreter of another installation of streamtool (an older
version, for a before/after figure): each round runs every command with both interpreters, one
after the other (paired, interleaved), and the medians of the rounds are printed side by side.
The report's page size and the size of its player data are printed too.

Targets (this installation): every command's peak RSS at most ``MAX_RSS_MB`` and the report's
page at most ``MAX_PAGE_MB``. Exit code 1 when one is missed. Slow at the default size (minutes
per command): use ``--events 100000`` while working.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.generators import recording_header

MAX_RSS_MB = 300.0
MAX_PAGE_MB = 8.0
COMMANDS = {
    "inspect": ["inspect", "{rec}"],
    "reads": ["inspect", "--reads", "{rec}"],
    "json": ["inspect", "--format", "json", "{rec}"],
    "report": ["report", "{rec}", "-o", "{page}"],
}


def write_recording(path: Path, events: int) -> None:
    base = '{"id":"chatcmpl-big","object":"chat.completion.chunk","created":1763700000,'
    base += '"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":'
    words = ["alpha", " beta", " gamma", " delta", " epsilon", ",", " zeta", " eta.", "\n"]
    header = recording_header(body={"model": "gpt-4o-2024-08-06", "stream": True})
    dumps = json.dumps
    t = 0.3
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(dumps(header) + "\n")

        def read(text: str) -> None:
            fh.write(dumps({"type": "chunk", "t": round(t, 6), "text": text}) + "\n")

        read(f'data: {base}{{"role":"assistant","content":""}},"finish_reason":null}}]}}\n\n')
        for i in range(events - 3):
            t += 1.5 if i % 100_000 == 99_999 else 0.0005
            delta = dumps({"content": words[i % len(words)]})
            read(f'data: {base}{delta},"finish_reason":null}}]}}\n\n')
        t += 0.0005
        read(f'data: {base}{{}},"finish_reason":"stop"}}]}}\n\n')
        read("data: [DONE]\n\n")
        fh.write(dumps({"type": "end", "t": round(t, 6), "reason": "complete"}) + "\n")


def run(python: str, argv: list[str]) -> tuple[float, float, int]:
    """Wall seconds, peak RSS (MB) and exit code of ``python -m streamtool.cli ARGV``."""
    env = dict(os.environ, COLUMNS="120", NO_COLOR="1")
    env.pop("AUTOBYTEUS_STREAM_PARSER", None)
    start = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        proc = subprocess.Popen(
            [python, "-m", "streamtool.cli", *argv],
            stdout=sink,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            env=env,
        )
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss / 1024, proc.returncode


def player_bytes(page: Path) -> int:
    """The size of the report's embedded player data (its JSON script element)."""
    text = page.read_text(encoding="utf-8")
    m = re.search(r'<script type="application/json" id="player-data">(.*?)</script>', text, re.S)
    return len(m.group(1)) if m else -1


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--python", default=None, help="another installation's interpreter")
    ap.add_argument("--only", default=",".join(COMMANDS))
    args = ap.parse_args()
    names = [n for n in args.only.split(",") if n]
    pythons = {"this": sys.executable}
    if args.python:
        pythons = {"other": args.python, "this": sys.executable}
    figures: dict[tuple[str, str], list[tuple[float, float]]] = {}
    pages: dict[str, tuple[int, int]] = {}
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        rec = Path(tmp) / "big.jsonl"
        write_recording(rec, args.events)
        print(f"recording: {args.events:,} events, {rec.stat().st_size / 1e6:.0f} MB")
        for _ in range(args.rounds):
            for name in names:
                for who, python in pythons.items():
                    page = Path(tmp) / f"{who}.report.html"
                    argv = [a.format(rec=rec, page=page) for a in COMMANDS[name]]
                    wall, rss, code = run(python, argv)
                    if code not in (0, 1):
                        print(f"{who} {name}: exit {code}")
                        failed = True
                    figures.setdefault((name, who), []).append((wall, rss))
                    if name == "report" and page.exists():
                        pages[who] = (page.stat().st_size, player_bytes(page))
    for name in names:
        cells = []
        for who in pythons:
            runs = figures[(name, who)]
            wall = statistics.median(w for w, _ in runs)
            rss = statistics.median(r for _, r in runs)
            cells.append(f"{who}: {wall:6.1f} s {rss:7.0f} MB")
            if who == "this" and rss > MAX_RSS_MB:
                failed = True
        print(f"{name:<8} " + "   ".join(cells))
    for who, (size, player) in pages.items():
        print(f"report page ({who}): {size / 1e6:.1f} MB, player data {player / 1e6:.1f} MB")
        if who == "this" and size / 1e6 > MAX_PAGE_MB:
            failed = True
    print(f"targets: peak RSS <= {MAX_RSS_MB:.0f} MB, report page <= {MAX_PAGE_MB:.0f} MB")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
