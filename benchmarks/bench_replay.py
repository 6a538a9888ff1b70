"""Replay speed and start-up time, against baselines measured in the same run.

    python benchmarks/bench_replay.py [--mb 20] [--repeat 3]

For every stream generator in ``benchmarks/generators.py`` (one per wire API) it writes a recording
of about 20 MB with a long streamed tool call, then times:

- the floor: reading the file's lines, ``json.loads`` of every record and of every SSE data payload,
  nothing else (the least any replay must do);
- ``streamtool replay FILE --format json`` as a user runs it (a subprocess, start-up included).

Target: replay within 2x of the floor (``TARGET``). It also times ``streamtool --help`` and the
replay of a small bundled recording (target: under 300 ms wall each; bench_startup.py holds the
start-up targets) and checks that neither imports the openai or anthropic SDKs. Prints figures
and ratios; exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.generators import GENERATORS  # noqa: E402

TARGET = 2.0  # replay / floor
SMALL = ROOT / "recordings" / "openai-parallel-tool-calls.jsonl"
CLI = [sys.executable, "-m", "streamtool.cli"]


def floor(path: Path) -> float:
    start = time.perf_counter()
    loads = json.loads
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            record = loads(line)
            text = record.get("text")
            if text:
                for sse_line in text.split("\n"):
                    if sse_line.startswith("data:"):
                        payload = sse_line[5:].strip()
                        if payload and payload != "[DONE]":
                            loads(payload)
    return time.perf_counter() - start


def wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"command failed: {' '.join(cmd)}\n{proc.stderr}")
    return elapsed


def best(fn, repeat: int) -> float:
    return min(fn() for _ in range(repeat))


def imports_sdks(args: list[str]) -> list[str]:
    code = (
        "import sys, runpy; sys.argv = ['streamtool', *sys.argv[1:]];\n"
        "try:\n    runpy.run_module('streamtool.cli', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "bad = [m for m in ('openai', 'anthropic') if m in sys.modules]\n"
        "sys.stderr.write(','.join(bad))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    return [m for m in proc.stderr.strip().split(",") if m]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=20.0, help="size of each generated recording")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement (best is kept)")
    args = ap.parse_args()
    ok = True
    head = f"{'stream':<18}{'size MB':>9}{'floor s':>10}{'replay s':>10}{'ratio':>8}"
    print(f"{head}  target <= {TARGET:g}x")
    with tempfile.TemporaryDirectory() as tmp:
        for name, generate in GENERATORS.items():
            path = Path(tmp) / f"{name}.jsonl"
            generate(path, int(args.mb * 1_000_000))
            size = path.stat().st_size / 1e6
            wall(CLI + ["replay", str(path), "--format", "json"])  # warm the file cache
            f = best(lambda p=path: floor(p), args.repeat)
            r = best(lambda p=path: wall(CLI + ["replay", str(p), "--format", "json"]), args.repeat)
            ratio = r / f
            verdict = "ok" if ratio <= TARGET else "MISSED"
            ok &= ratio <= TARGET
            print(f"{name:<18}{size:>9.1f}{f:>10.3f}{r:>10.3f}{ratio:>7.2f}x  {verdict}")

    print()
    print(f"{'start-up':<40}{'wall ms':>9}  target < 300 ms, no SDK imports")
    for label, cmd in (
        ("streamtool --help", ["--help"]),
        (f"streamtool replay {SMALL.name}", ["replay", str(SMALL), "--format", "json"]),
    ):
        ms = best(lambda c=cmd: wall(CLI + c), 5) * 1000
        sdks = imports_sdks(cmd)
        good = ms < 300 and not sdks
        ok &= good
        note = "ok" if good else "MISSED" + (f" (imports {', '.join(sdks)})" if sdks else "")
        print(f"{label:<40}{ms:>9.0f}  {note}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
