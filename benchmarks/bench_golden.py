"""Cost of golden files and diffs against a plain replay, measured in the same run.

Writes OpenAI Chat Completions recordings with one long streamed ``write_file`` call (the
``openai-chat`` generator) of SIZE and 2 x SIZE bytes, then times (best of ``--repeat``):

1. baseline: ``replay_file`` (decoder, converter, handler, adapter);
2. golden: a replay, its transcript and the rendered golden document (what ``--update`` writes);
3. check: ``check_paths`` on a golden file that matches (replay, read, parse, compare);
4. diff: ``diff_streams`` of the recording with itself (two replays, both described, rows).

Prints the figures and the ratios to the baseline; targets: golden and check at most 1.5 x the
replay, diff at most 3.0 x (it replays twice), and doubling the size at most 2.4 x the time
(linear work). Exit code 1 if a target is missed.

    python benchmarks/bench_golden.py [--mb 8] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from streamtool.core.drive.check import check_paths
from streamtool.core.drive.replay_file import replay_file
from streamtool.core.outputs.diff import diff_streams
from streamtool.core.outputs.golden import ReplayOptions, make_golden
from streamtool.core.outputs.transcript import build_transcript, render

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generators import GENERATORS  # noqa: E402

TARGETS = {"golden": 1.5, "check": 1.5, "diff": 3.0}
LINEAR_TARGET = 2.4


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def measure(path: Path, repeat: int) -> dict[str, float]:
    def golden() -> str:
        engine = replay_file(path, transcript=True)
        return render(make_golden(path.name, ReplayOptions(), build_transcript(engine)))

    report = check_paths([path], update=True)  # write the golden file once
    assert report.exit_code == 0, report.to_dict()

    def check() -> None:
        assert check_paths([path]).exit_code == 0

    def diff() -> None:
        a, b = replay_file(path, transcript=True), replay_file(path, transcript=True)
        assert diff_streams(a, b).same_meaning

    return {
        "replay": best(lambda: replay_file(path), repeat),
        "golden": best(golden, repeat),
        "check": best(check, repeat),
        "diff": best(diff, repeat),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=8.0, help="size of the smaller recording (MB)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        sizes = [int(args.mb * 1_000_000), int(args.mb * 2_000_000)]
        results = []
        for size in sizes:
            path = Path(tmp) / f"bench-{size}.jsonl"
            GENERATORS["openai-chat"](path, size)
            mb = path.stat().st_size / 1e6
            figures = measure(path, args.repeat)
            results.append(figures)
            base = figures["replay"]
            print(f"{path.name}: {mb:.1f} MB")
            print(f"  replay  {base:7.3f} s  {mb / base:6.1f} MB/s  (baseline)")
            for name in ("golden", "check", "diff"):
                ratio = figures[name] / base
                verdict = "ok" if ratio <= TARGETS[name] else "MISSED"
                ok &= ratio <= TARGETS[name]
                print(
                    f"  {name:7} {figures[name]:7.3f} s  x{ratio:5.2f}  "
                    f"(target <= {TARGETS[name]})  {verdict}"
                )
        print("doubling the size:")
        for name in ("replay", "golden", "check", "diff"):
            growth = results[1][name] / results[0][name]
            verdict = "ok" if growth <= LINEAR_TARGET else "MISSED"
            ok &= growth <= LINEAR_TARGET
            print(f"  {name:7} x{growth:5.2f}  (target <= {LINEAR_TARGET})  {verdict}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
