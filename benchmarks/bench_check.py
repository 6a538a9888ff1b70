"""Golden suites at scale: ``streamtool check -j 1`` against ``-j 2``, and the shard split.

    python benchmarks/bench_check.py [--small 2000] [--large 200] [--large-mb 1] [--runs 5]

Builds a suite in a temporary folder: ``--small`` copies of the bundled recordings (a few KB each,
spread over 20 folders) and ``--large`` recordings of about ``--large-mb`` MB made by the stream
generators of every wire API, then writes their golden files (``check --update``, not timed).
Then, as a user runs it (whole processes, medians of ``--runs`` paired, interleaved rounds):

- the replay-only floor: one process that replays every recording as ``check`` does and
  compares nothing; ``check -j 1`` against it is what checking costs per file (target <= 1.2x);
- ``streamtool check SUITE -j 1`` and ``-j 2``, on the small files and the large ones (target:
  ``-j 2`` >= 1.7x faster on the small files, on an idle 2-core machine):
  wall time and CPU time (the processes' user + system, workers included: on a machine whose
  cores are busy with other work, the wall-time gain cannot show, the CPU figures say what the
  pool costs); their outputs must be identical (exit 1 otherwise);
- ``--shard I/N`` for N = 2, 4, 8: files and bytes per shard (the split is by path hash), and
  every golden file checked exactly once across the N shards (exit 1 otherwise).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.generators import GENERATORS  # noqa: E402

CLI = [sys.executable, "-m", "streamtool.cli", "check"]


def build(suite: Path, small: int, large: int, large_mb: float) -> None:
    bundled = sorted((ROOT / "recordings").glob("*.jsonl"))
    for i in range(small):
        where = suite / "small" / f"group{i % 20:02d}"
        where.mkdir(parents=True, exist_ok=True)
        src = bundled[i % len(bundled)]
        shutil.copyfile(src, where / f"{i:05d}-{src.name}")
    generators = list(GENERATORS.items())
    where = suite / "large"
    where.mkdir(parents=True)
    for i in range(large):
        name, generate = generators[i % len(generators)]
        generate(where / f"{i:04d}-{name}.jsonl", int(large_mb * 1_000_000))


_cpu = [0.0]  # CPU seconds (user + system) of the last check run, its workers included


def check(args: list[str]) -> tuple[float, int, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [*CLI, *args], capture_output=True, text=True, env={**os.environ, "CI": ""}
    )
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    _cpu[0] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, proc.returncode, proc.stdout


def size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*.jsonl"))


REPLAY_ONLY = """
import sys
from pathlib import Path
from streamtool.core.drive.replay_file import replay_file
from streamtool.core.outputs.transcript import build_transcript
for path in sorted(Path(sys.argv[1]).rglob("*.jsonl")):
    build_transcript(replay_file(path, batched=True, transcript=True))
"""


def replay_only(folder: Path) -> float:
    """A process that replays every recording under ``folder`` as check does (same options,
    transcript built), and compares nothing: the floor of ``check -j 1``."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", REPLAY_ONLY, str(folder)], check=True)
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--small", type=int, default=2000)
    ap.add_argument("--large", type=int, default=200)
    ap.add_argument("--large-mb", type=float, default=1.0)
    ap.add_argument("--runs", type=int, default=5, help="paired rounds (median kept; at least 5)")
    opts = ap.parse_args()
    runs_n = max(5, opts.runs)
    ok = True
    with tempfile.TemporaryDirectory(prefix="streamtool-check-") as tmp:
        suite = Path(tmp)
        build(suite, opts.small, opts.large, opts.large_mb)
        _, code, out = check(["--update", "-j", "2", str(suite)])
        if code != 0:
            print(out)
            raise SystemExit("could not write the golden files")
        print(
            f"suite: {opts.small} small recordings ({size(suite / 'small') / 1e6:.1f} MB), "
            f"{opts.large} large ({size(suite / 'large') / 1e6:.1f} MB); "
            f"{os.cpu_count()} cores; medians of {runs_n} paired rounds; "
            f"load {os.getloadavg()[0]:.2f} (1 min)"
        )
        print(
            f"{'paths':<8}{'replay s':>9}{'-j 1 s':>9}{'-j 2 s':>9}{'check/replay':>13}"
            f"{'-j2 speed-up':>13}{'CPU -j 1':>10}{'CPU -j 2':>10}  same output"
        )
        for label, folder in (("small", suite / "small"), ("large", suite / "large")):
            args = [str(folder)]
            replays: list[float] = []
            runs: dict[int, list[tuple[float, int, str]]] = {1: [], 2: []}
            cpu: dict[int, list[float]] = {1: [], 2: []}
            for _ in range(runs_n):  # interleaved: load hits every command alike
                replays.append(replay_only(folder))
                for j in (1, 2):
                    runs[j].append(check(["-j", str(j), *args]))
                    cpu[j].append(_cpu[0])
            med = {j: statistics.median(r[0] for r in runs[j]) for j in runs}
            per_file = statistics.median(r[0] / f for r, f in zip(runs[1], replays, strict=True))
            speedup = statistics.median(a[0] / b[0] for a, b in zip(runs[1], runs[2], strict=True))
            outputs = {r[2] for j in runs for r in runs[j]}
            codes = {r[1] for j in runs for r in runs[j]}
            same = len(outputs) == 1 and codes == {0}
            ok &= same
            print(
                f"{label:<8}{statistics.median(replays):>9.2f}{med[1]:>9.2f}{med[2]:>9.2f}"
                f"{per_file:>12.2f}x{speedup:>12.2f}x"
                f"{statistics.median(cpu[1]):>10.2f}{statistics.median(cpu[2]):>10.2f}"
                f"  {'yes' if same else 'NO'}",
                flush=True,
            )
        print("targets: check/replay <= 1.2x; -j 2 >= 1.7x faster on the small files (idle)")

        _, _, out = check(["--format", "json", "-j", "2", str(suite)])
        everything = sorted(f["golden"] for f in json.loads(out)["files"])
        sizes = {f["golden"]: Path(f["recording"]).stat().st_size for f in json.loads(out)["files"]}
        print()
        print(
            f"{'shards':<8}{'files per shard':<34}{'max/mean files':>15}{'max/mean MB':>13}  once"
        )
        for n in (2, 4, 8):
            parts = []
            for i in range(1, n + 1):
                _, _, out = check(
                    ["--format", "json", "-j", "2", "--shard", f"{i}/{n}", str(suite)]
                )
                parts.append([f["golden"] for f in json.loads(out)["files"]])
            once = sorted(g for part in parts for g in part) == everything
            ok &= once
            counts = [len(p) for p in parts]
            mbs = [sum(sizes[g] for g in p) / 1e6 for p in parts]
            mean_count = sum(counts) / n
            mean_mb = sum(mbs) / n
            shown = " ".join(str(c) for c in counts)
            print(
                f"{n:<8}{shown:<34}{max(counts) / mean_count:>15.2f}"
                f"{max(mbs) / mean_mb:>13.2f}  {'yes' if once else 'NO'}"
            )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
