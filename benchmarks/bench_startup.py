"""Start-up time of the ``streamtool`` command from a regular (non-editable) install.

    python benchmarks/bench_startup.py [--runs 10] [--keep-venv]

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
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10, help="runs of each command (median kept)")
    ap.add_argument("--keep-venv", action="store_true", help="leave the temporary venv")
    opts = ap.parse_args()

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
        return 1 if failed else 0
    finally:
        if opts.keep_venv:
            print(f"venv kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
