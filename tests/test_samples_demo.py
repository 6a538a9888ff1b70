"""Samples installed with streamtool, ``streamtool samples``, ``replay --sample`` and
``streamtool demo`` (issue 19, item 8), in the repository and from a wheel installed elsewhere."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

from typer.testing import CliRunner

from streamtool.cli.main import app
from streamtool.core.samples import SAMPLES, sample_path

from .conftest import RECORDINGS, ROOT
from .helpers import venv_seeing_our_packages


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_samples_are_unchanged_copies_of_the_project_recordings() -> None:
    assert len(SAMPLES) >= 5
    for sample in SAMPLES.values():
        source = RECORDINGS / sample.file
        assert sample.path.read_bytes() == source.read_bytes(), sample.name
        assert source.with_name(source.name.replace(".jsonl", ".golden.json")).exists()
    shipped = sorted(p.name for p in sample_path("write-file").parent.glob("*.jsonl"))
    assert shipped == sorted(s.file for s in SAMPLES.values())


def test_samples_lists_every_sample_and_replay_sample_plays_it() -> None:
    code, out, _ = invoke("samples")
    assert code == 0
    listed = [line.split()[0] for line in out.split("\n\n")[0].splitlines()]
    assert listed == list(SAMPLES)
    code, out, _ = invoke("samples", "--paths")
    assert out.splitlines()[0] == f"write-file\t{sample_path('write-file')}"
    code, out, _ = invoke("replay", "--sample", "write-file", "--format", "json")
    assert code == 0
    by_sample = json.loads(out)
    code, out, _ = invoke("replay", str(RECORDINGS / "openai-write-file.jsonl"), "--format", "json")
    direct = json.loads(out)
    assert by_sample.pop("source") == str(sample_path("write-file"))
    direct.pop("source")
    assert by_sample == direct
    assert by_sample["invocations"][0]["arguments"]["path"] == "src/blog/slugify.py"


def test_demo_serves_records_and_checks_a_sample(tmp_path) -> None:
    out = tmp_path / "demo.jsonl"
    code, text, err = invoke(
        "demo", "--sample", "anthropic-write-file", "-o", str(out), "--speed", "max"
    )
    assert code == 0, err
    lines = text.splitlines()
    assert lines[0].startswith("1/3 serving the sample 'anthropic-write-file'")
    assert any(line.startswith("2/3 recording POST http://127.0.0.1:") for line in lines)
    assert any("write_file tests/test_slugify.py" in line for line in lines)
    assert any(line.startswith("3/3 the new recording replays to the same") for line in lines)
    assert f"  streamtool replay {out}" in "\n".join(lines)
    # a real recording, made over HTTP: the sample's header request, the server's response
    header = json.loads(out.read_text().splitlines()[0])
    assert header["request"]["url"].startswith("http://127.0.0.1:")
    assert header["request"]["url"].endswith("/v1/messages")
    assert header["response"]["status"] == 200
    # never overwrites what the user has
    code, _, err = invoke("demo", "-o", str(out))
    assert code == 2 and "exists" in err


def _venv_with_the_wheel(tmp_path: Path) -> Path:
    """A new virtualenv holding streamtool from a freshly built wheel (its dependencies are
    read from this environment's site-packages, where no streamtool package lives)."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for name in ("core", "cli"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    wheels = tmp_path / "wheels"
    import setuptools

    # build with this environment's setuptools when it reads the SPDX license (no download)
    new_enough = int(setuptools.__version__.split(".")[0]) >= 77
    isolation = ["--no-build-isolation"] if new_enough else []
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation, "-w", wheels, src],
        check=True,
        capture_output=True,
    )
    (wheel,) = wheels.glob("streamtool-*.whl")
    with zipfile.ZipFile(wheel) as whl:
        metadata = whl.read("streamtool-0.1.0.dist-info/METADATA").decode()
        assert "License-Expression: MIT" in metadata.splitlines()  # the SPDX form
        assert "streamtool/core/samples/openai-write-file.jsonl" in whl.namelist()
    venv = tmp_path / "venv"
    python = venv_seeing_our_packages(venv, their_pth_files=False)
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", wheel],
        check=True,
        capture_output=True,
    )
    return venv


def test_the_wheel_ships_the_samples_and_the_demo_works_from_any_folder(tmp_path) -> None:
    venv = _venv_with_the_wheel(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "COLUMNS", "NO_COLOR")}
    exe = str(venv / "bin" / "streamtool")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [exe, *args], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=90
        )

    listed = run("samples", "--paths")
    assert listed.returncode == 0, listed.stderr
    installed = Path(listed.stdout.splitlines()[0].split("\t")[1])
    assert installed.is_relative_to(venv) and installed.is_file()  # from the wheel, not ROOT
    summary = json.loads(run("replay", "--sample", "write-file", "--format", "json").stdout)
    assert summary["invocations"][0]["name"] == "write_file"
    start = time.monotonic()
    demo = run("demo", "-o", "demo.jsonl")  # at the recorded pace, as a user sees it
    elapsed = time.monotonic() - start
    assert demo.returncode == 0, demo.stderr
    assert elapsed < 60
    assert "write_file src/blog/slugify.py" in demo.stdout
    assert "3/3 the new recording replays to the same" in demo.stdout
    assert "next, try:" in demo.stdout
    assert sorted(p.name for p in elsewhere.iterdir()) == ["demo.jsonl"]
    replayed = json.loads(run("replay", "demo.jsonl", "--format", "json").stdout)
    assert replayed["invocations"] == summary["invocations"]
