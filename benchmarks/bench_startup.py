"""Start-up time of the ``streamtool`` command from a regular (non-editable) install.

    python benchmarks/bench_startup.py [--runs 10] [--keep-venv] [--against REV [--instructions]]

It makes a temporary virtual environment, installs this project into it as a regular
(non-editable) package (``pip install --no-deps``; the dependencies are taken from the
interpreter running the benchmark, through a ``.pth`` line, so nothing is downloaded), then
times whole processes, round-robin so that load on the machine hits every command alike:

- ``python -c pass`` from that environment: the baseline;
- ``streamtool --help``: target <= 150 ms, and <= 6x the baseline;
- ``streamtool replay SMALL --format json`` on a small bundled recording: target <= 200 ms,
  and <= 8x the baseline.

Two floors run in the same rounds, from the same environment, no target of their own:

- ``import typer``: what any command built on typer pays before it parses a word;
- a typer program of one command taking the replay's arguments (a path and ``--format``), its
  ``Typer`` made with streamtool's settings and its parameters declared as typer documents them
  (typer 0.29 converts each value through a pydantic adapter, which streamtool's ``cli/params.py``
  avoids).

Both end as streamtool ends, their objects frozen (``gc.freeze`` at exit: no collection walks
them as the interpreter tears down), so the floors count only what the library costs.

Medians of ``--runs`` runs are printed with their ratios. On a loaded machine the ratios are the
figures to read. It also checks that neither command imports the openai or anthropic SDKs or
pydantic. Exits 1 when a ratio target is missed or a heavy module is imported.

With ``--against REV`` (a git revision of this repository: ``--against 5bcc13d^``), that tree is
installed in a venv of its own the same way, and five commands of both trees run in the same
rounds, alternating: ``--help``, the small replay as JSON and as the tree, and the raw bodies
of two bundled recordings' streams (Chat Completions, whose events have no name, and Anthropic
Messages, named), whose API is told from their first event. Printed: each tree's median and the
median of the rounds' ratios (this tree over the older one). With ``--instructions`` as well
(valgrind installed), each command of both trees is also counted in CPU instructions (valgrind's
cachegrind, no cache simulation, the same ``PYTHONHASHSEED``), which do not move with the
machine's load: run from an empty folder with the cyclic collector off (``gc.disable()`` before
the command's import: where a collection falls moves a count by millions), outside any project,
and once more from a folder holding a ``pyproject.toml``, where a command reads its
``[tool.streamtool]`` defaults.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SMALL = ROOT / "recordings" / "anthropic-text-then-tool-use.jsonl"
HEAVY = ("openai", "anthropic", "pydantic")
TARGETS = {"--help": (0.150, 6.0), "replay": (0.200, 8.0)}


def make_env(where: Path, source: Path = ROOT) -> tuple[Path, Path]:
    """A venv with this project (or the tree at ``source``) installed regularly; returns its
    python and streamtool."""
    venv.EnvBuilder(with_pip=True).create(where)
    bindir = where / ("Scripts" if os.name == "nt" else "bin")
    python = bindir / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # the dependencies: the running interpreter's site-packages, after the venv's own
    Path(purelib, "_bench_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # the wheel is built as pip builds it (isolated), then installed as users install it
    wheels = where / "wheels"
    quiet = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    pip = ["-m", "pip", "-q"]
    subprocess.run(
        [sys.executable, *pip, "wheel", "--no-deps", "-w", wheels, source],
        check=True,
        env=quiet,
        cwd=where,
    )
    (wheel,) = wheels.glob("streamtool-*.whl")
    subprocess.run([python, *pip, "install", "--no-deps", wheel], check=True, env=quiet, cwd=where)
    return python, bindir / "streamtool"


def export_tree(rev: str, where: Path) -> Path:
    """The files of this repository at ``rev``, written below ``where``."""
    archive = where / "tree.tar"
    subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", "-o", str(archive), rev], check=True
    )
    source = where / "tree"
    with tarfile.open(archive) as tar:
        tar.extractall(source, filter="data")
    archive.unlink()
    return source


def instructions(cmd: list[str], cwd: Path | None = None) -> int:
    """The CPU instructions ``cmd`` runs, counted by valgrind (cachegrind, no cache simulation)."""
    proc = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
        + cmd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},  # both trees hash strings alike
        cwd=cwd,
    )
    found = re.search(r"I\s+refs:\s+([\d,]+)", proc.stderr)
    if proc.returncode != 0 or found is None:
        raise SystemExit(f"valgrind failed on: {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def write_sse(jsonl: Path, sse: Path) -> None:
    """The raw body of a recording: its chunks' text, as the network delivered it."""
    with open(jsonl, encoding="utf-8") as src, open(sse, "w", encoding="utf-8") as out:
        next(src)
        for line in src:
            obj = json.loads(line)
            if obj.get("type") == "chunk":
                out.write(obj["text"])


# the documented typer floor: one command, the replay's two parameters, streamtool's Typer settings
FLOOR_IMPORT = "import atexit, gc; atexit.register(gc.freeze); import typer"
FLOOR_PROGRAM = """\
import atexit
import gc
from pathlib import Path
from typing import Annotated

import typer

atexit.register(gc.freeze)
app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)


@app.command()
def replay(
    path: Annotated[Path, typer.Argument()],
    format: Annotated[str, typer.Option("--format")] = "tree",
) -> None:
    print(len(path.read_bytes()), format)


@app.command()
def other() -> None:
    pass


app()
"""


def run(cmd: list[str], cwd: Path | None = None) -> float:
    """A command's wall time, run to its end (its output dropped); a failure stops the
    benchmark with its error output."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=cwd)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{proc.stderr.decode(errors='replace')}")
    return elapsed


_PROBE = (
    "import json, sys\n"
    "from streamtool.cli.main import main\n"
    "sys.argv = ['streamtool', *json.loads(sys.argv[1])]\n"
    "try:\n    main()\nexcept SystemExit:\n    pass\n"
    "sys.stderr.write('\\nMODULES ' + json.dumps(sorted(sys.modules)))\n"
)


def heavy_imports(python: Path, args: list[str], cwd: Path) -> list[str]:
    proc = subprocess.run(
        [python, "-c", _PROBE, json.dumps(args)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
    )
    modules = json.loads(proc.stderr.rsplit("MODULES ", 1)[1])
    return sorted({m.split(".")[0] for m in modules if m.split(".")[0] in HEAVY})


# the commands --against compares, by name: their arguments (RAW_*: the raw bodies' files)
RAW_CHAT = "openai-chat-refusal.jsonl"
RAW_ANTHROPIC = "anthropic-text-then-tool-use.jsonl"
AGAINST = {
    "--help": ["--help"],
    "replay, JSON": ["replay", SMALL.name, "--format", "json"],
    "replay, the tree": ["replay", SMALL.name],
    "raw Chat body, JSON": ["replay", "chat.sse", "--format", "json"],
    "raw Anthropic body, JSON": ["replay", "anthropic.sse", "--format", "json"],
}
# a command run with the cyclic collector off, for a count that is the same from run to run
_COUNTED = (
    "import gc, sys; gc.disable(); sys.argv = ['streamtool', *sys.argv[1:]]; "
    "from streamtool.cli.main import main; main()"
)


def against(opts: argparse.Namespace, tmp: Path, python: Path, work: Path) -> None:
    """This tree's start-up beside ``opts.against``'s, in the same rounds (and counted)."""
    old_python, _ = make_env(tmp / "old-venv", export_tree(opts.against, tmp))
    write_sse(ROOT / "recordings" / RAW_CHAT, work / "chat.sse")
    write_sse(ROOT / "recordings" / RAW_ANTHROPIC, work / "anthropic.sse")
    trees = {"this": python, "old": old_python}
    cmds = {
        (name, tree): [str(py), "-m", "streamtool.cli", *args]
        for name, args in AGAINST.items()
        for tree, py in trees.items()
    }
    for cmd in cmds.values():  # warm the page cache
        run(cmd, work)
    times: dict[tuple[str, str], list[float]] = {key: [] for key in cmds}
    for _ in range(opts.runs):
        for key, cmd in cmds.items():  # each command's two trees one after the other
            times[key].append(run(cmd, work))
    print(f"\nagainst {opts.against}: medians of {opts.runs} rounds, and of the rounds' ratios")
    print(f"  {'command':28} {'this tree':>10} {opts.against:>10} {'ratio':>8}")
    for name in AGAINST:
        new, old = times[(name, "this")], times[(name, "old")]
        ratio = statistics.median(n / o for n, o in zip(new, old, strict=True))
        print(
            f"  {name:28} {statistics.median(new) * 1000:8.1f} ms "
            f"{statistics.median(old) * 1000:7.1f} ms {ratio:7.3f}x"
        )
    if not opts.instructions:
        return
    empty = tmp / "empty"  # no file of its own: python looks here first for every module
    empty.mkdir()
    project = tmp / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "an-agent"\n')
    print(f"\nCPU instructions (valgrind), this tree's and {opts.against}'s, the collector off")
    print(f"  {'command':28} {'this tree':>12} {opts.against:>12} {'ratio':>8}")
    for name, args in AGAINST.items():
        for folder, where in ((empty, ""), (project, ", in a project")):
            if where and name != "replay, JSON":
                continue
            files = [str(work / a) if (work / a).is_file() else a for a in args]
            new, old = (
                instructions([str(py), "-c", _COUNTED, *files], cwd=folder) for py in trees.values()
            )
            print(f"  {name + where:28} {new / 1e6:10.1f}M {old / 1e6:10.1f}M {new / old:7.3f}x")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10, help="runs of each command (median kept)")
    ap.add_argument("--keep-venv", action="store_true", help="leave the temporary venv")
    ap.add_argument(
        "--against",
        metavar="REV",
        help="also time five commands against the tree at this git revision, in the same rounds",
    )
    ap.add_argument(
        "--instructions",
        action="store_true",
        help="with --against: also count each command's CPU instructions in both trees (valgrind)",
    )
    opts = ap.parse_args()
    if opts.instructions and not opts.against:
        ap.error("--instructions compares with --against's tree")
    if opts.instructions and shutil.which("valgrind") is None:
        ap.error("--instructions needs valgrind on PATH")

    tmp = Path(tempfile.mkdtemp(prefix="streamtool-startup-"))
    try:
        python, streamtool = make_env(tmp / "venv")
        work = tmp / "work"  # not the source tree: the installed package is what runs
        work.mkdir()
        small = work / SMALL.name
        shutil.copyfile(SMALL, small)
        origin = subprocess.run(
            [python, "-c", "import streamtool.cli.main as m; print(m.__file__)"],
            capture_output=True,
            text=True,
            cwd=work,
            check=True,
        ).stdout.strip()
        floor = work / "typer_floor.py"
        floor.write_text(FLOOR_PROGRAM)
        commands = {
            "python -c pass": [str(python), "-c", "pass"],
            "import typer": [str(python), "-c", FLOOR_IMPORT],
            "typer program": [str(python), str(floor), "replay", small.name, "--format", "json"],
            "--help": [str(streamtool), "--help"],
            "replay": [str(streamtool), "replay", small.name, "--format", "json"],
        }
        for cmd in commands.values():  # warm the page cache and the bytecode
            run(cmd, work)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(opts.runs):
            for name, cmd in commands.items():
                times[name].append(run(cmd, work))
        medians = {name: statistics.median(t) for name, t in times.items()}
        base = medians["python -c pass"]

        print(f"installed from: {origin}")
        print(f"medians of {opts.runs} runs (round-robin), on {os.cpu_count()} cores")
        print(f"  {'python -c pass':54} {base * 1000:7.1f} ms   (baseline)")
        for name, label in (
            ("import typer", "import typer (floor)"),
            ("typer program", "a one-command typer program (floor)"),
        ):
            print(f"  {label:54} {medians[name] * 1000:7.1f} ms   {medians[name] / base:5.1f}x")
        failed = False
        labels = {"--help": "streamtool --help", "replay": f"streamtool replay {SMALL.name}"}
        for name, (limit, ratio_limit) in TARGETS.items():
            ratio = medians[name] / base
            ok = ratio <= ratio_limit
            failed |= not ok
            print(
                f"  {labels[name]:54} {medians[name] * 1000:7.1f} ms   {ratio:5.1f}x "
                f"(target <= {ratio_limit:g}x, <= {limit * 1000:.0f} ms: "
                f"{'ok' if ok else 'MISSED'}; absolute "
                f"{'ok' if medians[name] <= limit else 'over'})"
            )
        own = medians["replay"] - medians["import typer"]
        print(
            f"  the replay beyond import typer: {own * 1000:.1f} ms "
            f"({own / base:.1f}x the baseline; typer alone {medians['import typer'] / base:.1f}x)"
        )
        for name, args in (("--help", ["--help"]), ("replay", commands["replay"][2:])):
            heavy = heavy_imports(python, args, work)
            print(f"  {labels[name]} imports: {', '.join(heavy) or 'no SDK, no pydantic'}")
            failed |= bool(heavy)
        if opts.against:
            against(opts, tmp, python, work)
        return 1 if failed else 0
    finally:
        if opts.keep_venv:
            print(f"venv kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
