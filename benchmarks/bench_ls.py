"""``streamtool ls`` over a folder of 2,000 recordings, against a floor measured in the same run.

    python benchmarks/bench_ls.py [--files 2000] [--repeat 3]

It fills a temporary folder with copies of the bundled recordings (2,000 files in ten
sub-folders), then times, as subprocesses (start-up included), best of ``--repeat``:

- the floor: a Python process that reads every file's lines, ``json.loads`` every record and
  every SSE ``data:`` payload in it (the least a listing that looks at every event must do);
- ``streamtool ls FOLDER --format json`` (every file replayed: TTFT, tool calls, quirks);
- ``streamtool ls FOLDER --provider none`` (decided by each file's header: one line read per file).

Both wall time and CPU time (user + system of the child) are printed: on a busy machine the wall
time grows with the load, the CPU time much less. Targets: the full listing within 4x of the floor
(CPU) and under 5 s of CPU; the header-only listing under the floor. Exits 1 when one is missed.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "streamtool.cli"]

FLOOR = """
import json, os, sys
n = 0
for dirpath, _, names in os.walk(sys.argv[1]):
    for name in names:
        with open(os.path.join(dirpath, name), encoding="utf-8") as fh:
            for line in fh:
                record = json.loads(line)
                for sse_line in (record.get("text") or "").split("\\n"):
                    if sse_line.startswith("data:"):
                        payload = sse_line[5:].strip()
                        if payload and payload != "[DONE]":
                            try:
                                json.loads(payload)
                            except ValueError:
                                pass
                n += 1
print(n)
"""


def timed(cmd: list[str]) -> tuple[float, float]:
    """(wall, cpu) seconds of one subprocess run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"command failed: {' '.join(cmd)}\n{proc.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def best(cmd: list[str], repeat: int) -> tuple[float, float]:
    runs = [timed(cmd) for _ in range(repeat)]
    return min(r[0] for r in runs), min(r[1] for r in runs)


def fill(folder: Path, files: int) -> int:
    sources = sorted((ROOT / "recordings").glob("*.jsonl"))
    total = 0
    for i in range(files):
        src = sources[i % len(sources)]
        sub = folder / f"d{i * 10 // files}"
        sub.mkdir(exist_ok=True)
        shutil.copyfile(src, sub / f"{i:04d}-{src.name}")
        total += src.stat().st_size
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        size = fill(folder, args.files)
        print(f"{args.files} recordings, {size / 1e6:.1f} MB")
        floor = best([sys.executable, "-c", FLOOR, str(folder)], args.repeat)
        full = best([*CLI, "ls", str(folder), "--format", "json"], args.repeat)
        header = best([*CLI, "ls", str(folder), "--provider", "none"], args.repeat)
    print(
        f"  floor (every record and payload loaded) wall {floor[0]:6.2f} s  cpu {floor[1]:6.2f} s"
    )
    print(f"  ls --format json (every file replayed) wall {full[0]:6.2f} s  cpu {full[1]:6.2f} s")
    print(
        f"  ls --provider none (headers only)      wall {header[0]:6.2f} s  cpu {header[1]:6.2f} s"
    )
    ratio = full[1] / floor[1]
    print(f"  ls / floor (cpu): {ratio:.2f}x (target <= 4x)")
    print(
        f"  ls cpu: {full[1]:.2f} s (target < 5 s); headers only / floor (cpu): "
        f"{header[1] / floor[1]:.2f}x (target < 1x)"
    )
    ok = ratio <= 4 and full[1] < 5 and header[1] < floor[1]
    print("ok" if ok else "TARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    os.environ.pop("STREAMTOOL_PARSER", None)
    os.environ.pop("AUTOBYTEUS_STREAM_PARSER", None)
    sys.exit(main())
