"""Replay speed against two floors, measured in the same run, paired and interleaved.

    python benchmarks/bench_replay.py [--mb 20] [--runs 5] [--only NAME,...] [--against REV]
                                      [--instructions]

For every stream generator in ``benchmarks/generators.py`` (one per wire API: chat, kimi,
anthropic, responses) it writes a recording of about ``--mb`` MB with a long streamed tool call
(``.jsonl``), and the same stream as a raw body (``.sse``: the chunks' text, one after another).
For each file, round after round (every command once per round, so load on the machine hits
them alike), it times whole processes:

- the stdlib floor: a ``python`` process that reads the file's lines and ``json.loads`` every
  record and every SSE ``data:`` payload, nothing else;
- the orjson floor: the same loop with ``orjson.loads``, reading bytes (the least any replay
  written in Python must do);
- ``streamtool replay FILE --format json`` as a user runs it (start-up included), from a regular
  install in a temporary venv (``--editable``: this interpreter's install instead).

Every ratio is the median of the per-round ratios (``--runs`` rounds, at least 5). Target:
replay within 1.5x of the orjson floor (``TARGET``).

With ``--against REV`` (a git revision of this repository: ``--against 5bcc13d^``), that tree is
exported (``git archive``) and installed the same way into a venv of its own, and its
``streamtool replay FILE --format json`` runs in the same rounds on every file: ``/REV`` is the
median of the per-round ratios of this tree's replay to that tree's. Target: within 1.05x
(``AGAINST_TARGET``). Both must replay the generators' recordings (a failed command stops the
benchmark); whether their summaries are the same is printed for each file, and the older tree's
start-up (its replay of the small recording, in the same rounds) beside this tree's.

Beside it, for what the target's ratio is made of: the same commands on a recording of the same
stream of a few KB (``start-up``: the process, its imports, a first replay; timed in the same
rounds), and the ratio of what each whole-process time adds to its own start-up
(``/orjson beyond start-up``). These are figures to read, not targets.

With ``--instructions`` as well (and valgrind installed), each replay of ``--against``'s comparison
is also counted in CPU instructions (valgrind's cachegrind, no cache simulation, the same
``PYTHONHASHSEED`` for both trees): once per file, since the count does not move with the load
on the machine as times do. Printed for each file: this tree's count over the older tree's, for
the whole process and beyond start-up (the count on the file minus the count on the small
recording of the same stream). Figures to read beside the timed target.

It also checks that neither ``--help`` nor a small replay imports the openai or anthropic SDKs
(bench_startup.py holds the start-up targets).
Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_startup import export_tree, instructions, make_env, write_sse  # noqa: E402
from benchmarks.bench_startup import run as wall  # noqa: E402
from benchmarks.generators import GENERATORS  # noqa: E402

TARGET = 1.5  # replay / orjson floor
AGAINST_TARGET = 1.05  # replay / the replay of the tree --against names
SMALL_BYTES = 4_000  # the start-up recordings
SMALL = ROOT / "recordings" / "openai-parallel-tool-calls.jsonl"
CLI = [sys.executable, "-m", "streamtool.cli"]  # replaced by an installed copy (see main)
OLD_CLI: list[str] = []  # the streamtool of the tree --against names (see main)
PYTHON = [sys.executable]

# The floors, each run as its own process (start-up included, as the replay's is).
# One script for both: ``{b}`` makes the orjson floor work on bytes, as orjson reads them.
_FLOOR = """
import {module}, sys
loads = {module}.loads
path = sys.argv[1]
def payloads(data):
    for sse_line in data.split({b}"\\n"):
        if sse_line.startswith({b}"data:"):
            payload = sse_line[5:].strip()
            if payload and payload != {b}"[DONE]":
                loads(payload)
with open(path, {mode}) as fh:
    if path.endswith(".sse"):
        payloads(fh.read())
    else:
        for line in fh:
            text = loads(line).get("text")
            if text:
                payloads(text{encode})
"""
STDLIB_FLOOR = _FLOOR.format(module="json", b="", mode='encoding="utf-8"', encode="")
ORJSON_FLOOR = _FLOOR.format(module="orjson", b="b", mode='"rb"', encode=".encode()")


def summary(cmd: list[str]) -> dict[str, object]:
    """The JSON summary a ``replay --format json`` command prints."""
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"command failed: {' '.join(cmd)}\n{proc.stderr}")
    return dict(json.loads(proc.stdout))


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


def measure(path: Path, small: Path, runs: int) -> dict[str, list[float]]:
    """Whole-process times of the floors and the replay on ``path`` (and the older tree's
    replay, with --against), and of the orjson floor and the replay on ``small`` (their
    start-up), every command once per round."""
    commands = {
        "stdlib": [*PYTHON, "-c", STDLIB_FLOOR, str(path)],
        "orjson": [*PYTHON, "-c", ORJSON_FLOOR, str(path)],
        "replay": CLI + ["replay", str(path), "--format", "json"],
        "orjson0": [*PYTHON, "-c", ORJSON_FLOOR, str(small)],
        "replay0": CLI + ["replay", str(small), "--format", "json"],
    }
    if OLD_CLI:
        commands["old"] = OLD_CLI + ["replay", str(path), "--format", "json"]
        commands["old0"] = OLD_CLI + ["replay", str(small), "--format", "json"]
    for cmd in commands.values():  # warm the page cache and the bytecode
        wall(cmd)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, cmd in commands.items():
            times[name].append(wall(cmd))
    return times


def same_summary(path: Path) -> str:
    """Whether this tree's replay and the older tree's summarise ``path`` alike."""
    new, old = (summary(cli + ["replay", str(path), "--format", "json"]) for cli in (CLI, OLD_CLI))
    differ = sorted(k for k in new.keys() | old.keys() if new.get(k) != old.get(k))
    return "same summary" if not differ else "summaries differ in: " + ", ".join(differ)


def counted(path: Path, small: Path) -> str:
    """This tree's instructions over the older tree's on ``path``: whole, and beyond start-up."""
    count = {
        (name, file): instructions(cli + ["replay", str(file), "--format", "json"])
        for name, cli in (("new", CLI), ("old", OLD_CLI))
        for file in (path, small)
    }
    whole = count["new", path] / count["old", path]
    beyond = (count["new", path] - count["new", small]) / (count["old", path] - count["old", small])
    return (
        f"{path.name:<24}{count['new', path] / 1e6:>10.1f}M{count['old', path] / 1e6:>10.1f}M"
        f"{whole:>9.3f}x{beyond:>9.3f}x"
    )


def paired(times: dict[str, list[float]], over: str) -> float:
    return statistics.median(r / f for r, f in zip(times["replay"], times[over], strict=True))


def beyond_start_up(times: dict[str, list[float]]) -> float:
    """Per round: (replay - its start-up) / (orjson floor - its start-up); the median."""
    rounds = zip(times["replay"], times["replay0"], times["orjson"], times["orjson0"], strict=True)
    return statistics.median((r - r0) / (f - f0) for r, r0, f, f0 in rounds)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=20.0, help="size of each generated recording")
    ap.add_argument("--runs", type=int, default=5, help="rounds per file (at least 5)")
    ap.add_argument("--only", default="", help="comma-separated generator names")
    ap.add_argument(
        "--editable",
        action="store_true",
        help="run the streamtool of this interpreter (an editable install's finder costs "
        "start-up time a user's install does not) instead of a regular install",
    )
    ap.add_argument(
        "--against",
        metavar="REV",
        default="",
        help="also time the replay of this repository's tree at git revision REV, installed "
        f"as a user would, in the same rounds; target: within {AGAINST_TARGET:g}x of it",
    )
    ap.add_argument(
        "--instructions",
        action="store_true",
        help="with --against: also count each replay's CPU instructions in both trees "
        "(needs valgrind)",
    )
    args = ap.parse_args()
    if args.instructions and not args.against:
        ap.error("--instructions compares with --against's tree")
    if args.instructions and shutil.which("valgrind") is None:
        ap.error("--instructions needs valgrind on PATH")
    runs = max(5, args.runs)
    names = [n for n in GENERATORS if not args.only or n in args.only.split(",")]
    ok = True
    head = (
        f"{'recording':<24}{'MB':>6}{'stdlib s':>10}{'orjson s':>10}{'replay s':>10}"
        f"{'/stdlib':>9}{'/orjson':>9}"
    )
    if args.against:
        head += f"{'old s':>10}{'/' + args.against:>12}"
    parts: list[str] = []  # the start-up lines, printed after the table
    summaries: list[str] = []  # with --against: whether both trees summarise a file alike
    counts: list[str] = []  # with --instructions: the two trees' instructions
    with tempfile.TemporaryDirectory() as tmp:
        if not args.editable:  # as users run it: a regular install (bench_startup.py's)
            python, streamtool = make_env(Path(tmp) / "venv")
            CLI[:] = [str(streamtool)]
            PYTHON[:] = [str(python)]
        if args.against:
            source = export_tree(args.against, Path(tmp))
            OLD_CLI[:] = [str(make_env(Path(tmp) / "venv-old", source)[1])]
            print(f"against {args.against}: {' '.join(OLD_CLI)}")
        print(f"streamtool: {' '.join(CLI)}")
        print(f"medians of {runs} paired rounds; load: {os.getloadavg()[0]:.2f} (1 min)")
        against = f", <= {AGAINST_TARGET:g}x {args.against}" if args.against else ""
        print(f"{head}  target <= {TARGET:g}x the orjson floor{against}")
        for name in names:
            jsonl = Path(tmp) / f"{name}.jsonl"
            GENERATORS[name](jsonl, int(args.mb * 1_000_000))
            sse = jsonl.with_suffix(".sse")
            write_sse(jsonl, sse)
            small_jsonl = Path(tmp) / f"{name}-small.jsonl"
            GENERATORS[name](small_jsonl, SMALL_BYTES)
            small_sse = small_jsonl.with_suffix(".sse")
            write_sse(small_jsonl, small_sse)
            for path, small in ((jsonl, small_jsonl), (sse, small_sse)):
                times = measure(path, small, runs)
                old0 = f"{statistics.median(times['old0']):>10.3f}" if args.against else ""
                parts.append(
                    f"{path.name:<24}{statistics.median(times['orjson0']):>10.3f}"
                    f"{statistics.median(times['replay0']):>10.3f}{beyond_start_up(times):>11.2f}x"
                    f"{' ' * 14}{old0}"
                )
                med = {k: statistics.median(v) for k, v in times.items()}
                vs_orjson = paired(times, "orjson")
                good = vs_orjson <= TARGET
                old = ""
                if args.against:
                    vs_old = paired(times, "old")
                    good &= vs_old <= AGAINST_TARGET
                    old = f"{med['old']:>10.3f}{vs_old:>11.3f}x"
                    summaries.append(f"{path.name:<24}{same_summary(path)}")
                if args.instructions:
                    counts.append(counted(path, small))
                ok &= good
                print(
                    f"{path.name:<24}{path.stat().st_size / 1e6:>6.1f}{med['stdlib']:>10.3f}"
                    f"{med['orjson']:>10.3f}{med['replay']:>10.3f}"
                    f"{paired(times, 'stdlib'):>8.2f}x{vs_orjson:>8.2f}x{old}"
                    f"  {'ok' if good else 'MISSED'}",
                    flush=True,
                )
                path.unlink()
        print(
            f"\nstart-up (the same commands on a {SMALL_BYTES // 1000} KB recording of the same "
            "stream), and what the whole process adds to it"
        )
        print(
            f"{'recording':<24}{'orjson s':>10}{'replay s':>10}  /orjson beyond start-up"
            + (f"{'old s':>10}" if args.against else "")
        )
        for line in parts:
            print(line)
        if summaries:
            print(f"\nthe replay's JSON summary, this tree's and {args.against}'s")
            for line in summaries:
                print(line)
        if counts:
            print(
                f"\nCPU instructions (valgrind), this tree's and {args.against}'s: whole process, "
                "and beyond start-up (less the small recording's)"
            )
            print(f"{'recording':<24}{'this':>11}{'old':>11}{'whole':>10}{'beyond':>10}")
            for line in counts:
                print(line)

    for label, cmd in (
        ("streamtool --help", ["--help"]),
        (f"streamtool replay {SMALL.name}", ["replay", str(SMALL), "--format", "json"]),
    ):
        sdks = imports_sdks(cmd)
        ok &= not sdks
        print(f"{label}: {'imports ' + ', '.join(sdks) if sdks else 'no SDK imported'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
