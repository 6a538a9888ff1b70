"""``python -m streamtool`` runs the command line, from any folder, installed or editable."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from streamtool.core import __version__

ROOT = Path(__file__).resolve().parent.parent
RECORDING = ROOT / "recordings" / "anthropic-text-then-tool-use.jsonl"


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "streamtool", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_python_m_streamtool_runs_the_cli(tmp_path: Path) -> None:
    done = run("--version", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"streamtool {__version__}"
    done = run("replay", str(RECORDING), "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert '"converter": "anthropic"' in done.stdout
    # an error is the command's own (one line, exit 2), not the interpreter's
    done = run("replay", str(tmp_path / "nope.jsonl"), cwd=tmp_path)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and "nope.jsonl" in done.stderr


def test_the_wheel_ships_streamtool_main(tmp_path: Path) -> None:
    """A regular install (not this editable one) has ``streamtool/__main__.py`` and nothing
    else of the project root."""
    source = tmp_path / "source"  # a copy: the build writes nothing into the project
    shutil.copytree(
        ROOT, source,
        ignore=shutil.ignore_patterns(
            ".*", "build", "*.egg-info", "__pycache__", "tests", "benchmarks", "docs"
        ),
    )  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(tmp_path / "dist"), str(source)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (wheel,) = (tmp_path / "dist").glob("streamtool-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "streamtool/__main__.py" in names
    top = {n.split("/")[1] for n in names if n.startswith("streamtool/")}
    assert top == {"__main__.py", "cli", "core"}
    # every API package's row, its manifest (package data)
    manifests = [p.relative_to(ROOT).as_posix() for p in ROOT.glob("core/apis/*/api.json")]
    assert len(manifests) > 10
    assert {f"streamtool/{m}" for m in manifests} <= set(names)
