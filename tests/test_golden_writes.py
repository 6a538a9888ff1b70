"""Writing golden files: no temporary left behind by a killed ``check --update``, synced before the
rename, a symlinked golden file keeps its link and its target, and the file keeps its mode."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

from typer.testing import CliRunner

from streamtool.cli.main import app
from streamtool.core.outputs.golden import golden_name

from .conftest import RECORDINGS

STREAMTOOL = [sys.executable, "-c", "from streamtool.cli.main import main; main()"]
NAME = "openai-parallel-tool-calls.jsonl"
OTHER = "anthropic-text-then-tool-use.golden.json"


def check(*args: str) -> int:
    result = CliRunner().invoke(app, ["check", *args], env={"CI": None})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code


def setup(tmp_path: Path) -> tuple[Path, Path]:
    rec = tmp_path / NAME
    shutil.copy(RECORDINGS / NAME, rec)
    golden = tmp_path / golden_name(NAME)
    shutil.copy(RECORDINGS / OTHER, golden)  # another recording's transcript: drift
    return rec, golden


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_temporaries_are_cleaned_on_the_next_run(tmp_path):
    rec, golden = setup(tmp_path)
    stale = tmp_path / f".{golden.name}.{dead_pid()}.tmp"
    stale.write_text('{"half": ')
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        live = tmp_path / f".{golden.name}.{sleeper.pid}.tmp"  # another check, still writing
        live.write_text("{")
        assert check(str(rec)) == 1  # a plain check (drift) cleans up too
        assert not stale.exists()
        assert live.exists()
    finally:
        sleeper.kill()
        sleeper.wait()
    assert check(str(rec), "--update") == 0
    assert not live.exists()  # its process is gone now
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_kill_9_during_update_leaves_nothing_behind_after_the_next_run(tmp_path):
    folder = tmp_path / "suite"
    folder.mkdir()
    for path in sorted(RECORDINGS.glob("*.jsonl"))[:20]:
        shutil.copy(path, folder / path.name)
    proc = subprocess.Popen([*STREAMTOOL, "check", str(folder), "--update", "-j", "1"])
    time.sleep(1.0)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    check(str(folder), "--update", "-j", "1")
    assert [p.name for p in folder.iterdir() if p.name.endswith(".tmp")] == []
    assert check(str(folder), "-j", "1") == 0


def test_a_symlinked_golden_file_keeps_its_link_and_its_target(tmp_path):
    rec, golden = setup(tmp_path)
    shared = tmp_path / "shared"
    shared.mkdir()
    target = shared / "expected.json"
    golden.rename(target)
    golden.symlink_to(target)
    assert check(str(rec)) == 1
    assert check(str(rec), "--update") == 0
    assert golden.is_symlink() and golden.resolve() == target.resolve()
    assert check(str(rec)) == 0
    assert (RECORDINGS / golden_name(NAME)).read_text() == target.read_text()


def test_the_golden_file_keeps_its_mode(tmp_path):
    rec, golden = setup(tmp_path)
    golden.chmod(0o640)
    assert check(str(rec), "--update") == 0
    assert stat.S_IMODE(golden.stat().st_mode) == 0o640
    assert (RECORDINGS / golden_name(NAME)).read_text() == golden.read_text()


def test_the_new_file_is_synced_before_the_rename(tmp_path, monkeypatch):
    rec, golden = setup(tmp_path)
    order: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        order.append("fsync")
        real_fsync(fd)

    def replace(src, dst) -> None:
        order.append("replace")
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    assert check(str(rec), "--update", "-j", "1") == 0
    assert order[:2] == ["fsync", "replace"]
