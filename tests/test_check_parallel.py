"""``check -j N`` (a process pool, same report) and ``check --shard I/N`` (a stable split)."""

from __future__ import annotations

import gc
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from streamtool.cli.main import app
from streamtool.core.drive.check import (
    LARGEST_BATCH,
    SMALLEST_BATCH,
    batches,
    check_paths,
    shard_of,
)
from streamtool.core.outputs.golden import golden_name

from .conftest import RECORDINGS
from .serve_helpers import STREAMTOOL


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["check", *args], env={"CI": None})
    return result.exit_code, result.stdout, result.stderr


def suite(tmp_path: Path) -> Path:
    """Every bundled recording with its golden file, in two folders, plus one of each failure:
    drift, missing golden file, orphaned golden file, unusable recording."""
    folder = tmp_path / "suite"
    for i, rec in enumerate(sorted(RECORDINGS.glob("*.jsonl"))):
        where = folder / ("a" if i % 2 else "b")
        where.mkdir(parents=True, exist_ok=True)
        shutil.copy(rec, where / rec.name)
        gold = rec.with_name(golden_name(rec.name))
        if gold.exists():
            shutil.copy(gold, where / gold.name)
    drifted = next((folder / "a").glob("*.golden.json"))
    text = drifted.read_text(encoding="utf-8")
    drifted.write_text(text.replace('"model": "', '"model": "other-', 1), encoding="utf-8")
    shutil.copy(RECORDINGS / "openai-parallel-tool-calls.jsonl", folder / "b" / "new.jsonl")
    (folder / "b" / "gone.golden.json").write_text(
        (RECORDINGS / "openai-parallel-tool-calls.golden.json").read_text(encoding="utf-8"),
        encoding="utf-8",
    )
    (folder / "a" / "broken.jsonl").write_text('{"type": "header"\n', encoding="utf-8")
    return folder


def test_jobs_give_the_same_report_in_the_same_order(tmp_path: Path) -> None:
    folder = suite(tmp_path)
    one = check_paths([folder], jobs=1)
    two = check_paths([folder], jobs=2)
    assert two.to_dict() == one.to_dict()
    statuses = {r.status for r in one.results}
    assert {"match", "drift", "missing", "orphan", "error"} <= statuses
    assert len(one.results) > 30


def test_cli_jobs_output_is_identical(tmp_path: Path) -> None:
    folder = suite(tmp_path)
    outputs = [run("-j", str(j), str(folder)) for j in (1, 2, 3)]
    assert outputs[0][0] == 2  # the unusable recording
    assert "DRIFT" in outputs[0][1] and "MISSING" in outputs[0][1]
    assert outputs[1] == outputs[0]
    assert outputs[2] == outputs[0]
    as_json = [run("-j", str(j), "--format", "json", str(folder))[1] for j in (1, 2)]
    assert json.loads(as_json[0]) == json.loads(as_json[1])


def test_update_in_processes_writes_what_one_process_writes(tmp_path: Path) -> None:
    a = tmp_path / "a"
    b = tmp_path / "b"
    for folder in (a, b):
        folder.mkdir()
        for rec in sorted(RECORDINGS.glob("openai-*.jsonl")):
            shutil.copy(rec, folder / rec.name)
    one = check_paths([a], update=True, jobs=1)
    two = check_paths([b], update=True, jobs=2)
    assert [r.status for r in one.results] == [r.status for r in two.results]
    assert {r.status for r in one.results} == {"created"}
    for gold in sorted(a.glob("*.golden.json")):
        assert (b / gold.name).read_bytes() == gold.read_bytes()


def test_shards_cover_every_golden_file_exactly_once(tmp_path: Path) -> None:
    folder = suite(tmp_path)
    everything = [(r.golden, r.status) for r in check_paths([folder], jobs=1).results]
    for n in (1, 2, 3, 7):
        parts = [check_paths([folder], jobs=1, shard=(i, n)).results for i in range(1, n + 1)]
        seen = sorted((r.golden or "", r.status) for part in parts for r in part)
        assert seen == sorted((g or "", s) for g, s in everything), n
        # each shard keeps the order of the full run
        for part in parts:
            order = [everything.index((r.golden, r.status)) for r in part]
            assert order == sorted(order)


def test_cli_shards_add_up(tmp_path: Path) -> None:
    folder = suite(tmp_path)
    full = json.loads(run("--format", "json", str(folder))[1])
    files = []
    for i in (1, 2, 3):
        code, out, _ = run("--shard", f"{i}/3", "--format", "json", "-j", "2", str(folder))
        files += json.loads(out)["files"]
    key = lambda f: (f["golden"] or "", f["status"])  # noqa: E731
    assert sorted(files, key=key) == sorted(full["files"], key=key)


@settings(max_examples=60, deadline=None)
@given(
    names=st.lists(st.text("abcxyz/._-é", min_size=1, max_size=20), min_size=1, max_size=30),
    n=st.integers(1, 9),
)
def test_shard_of_is_a_partition(names: list[str], n: int) -> None:
    for name in names:
        path = Path("recordings") / (name + ".golden.json")
        shard = shard_of(path, n)
        assert 1 <= shard <= n
        # the same file written another way is the same file
        assert shard_of(Path("./recordings") / (name + ".golden.json"), n) == shard
        assert shard_of(path.absolute(), n) == shard


def test_shard_is_the_same_in_another_process() -> None:
    """Not Python's salted hash(): another interpreter (another hash seed) agrees."""
    paths = [f"recordings/r{i}.golden.json" for i in range(40)]
    here = [shard_of(Path(p), 4) for p in paths]
    code = (
        "import json, sys; from pathlib import Path;"
        "from streamtool.core.drive.check import shard_of;"
        "print(json.dumps([shard_of(Path(p), 4) for p in json.loads(sys.argv[1])]))"
    )
    for seed in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", code, json.dumps(paths)],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        assert json.loads(out) == here
    assert len(set(here)) == 4  # 40 files reach every one of 4 shards


def test_bad_shard_and_jobs_are_one_sentence() -> None:
    for value in ("0/3", "4/3", "3", "a/b", "1/0"):
        code, out, err = run("--shard", value, str(RECORDINGS))
        assert code == 2
        assert f"Invalid value for '--shard': '{value}' is not a shard" in out + err
    code, out, err = run("-j", "0", str(RECORDINGS))
    assert code == 2
    assert "0 is not a number of processes" in out + err


def test_default_jobs_start_processes_only_for_enough_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from streamtool.core.drive import check as check_module

    folder = suite(tmp_path)
    used: list[int] = []
    real = check_module._in_processes

    def spy(options: tuple, pairs: list, jobs: int, *rest: object) -> object:
        used.append(jobs)
        return real(options, pairs, jobs, *rest)

    monkeypatch.setattr(check_module, "_in_processes", spy)
    monkeypatch.setattr(check_module, "default_jobs", lambda: 2)
    small = check_paths([folder], jobs=None)
    assert used == []  # the bundled recordings are far below the threshold: one process
    monkeypatch.setattr(check_module, "POOL_MIN_BYTES", 1)
    big = check_paths([folder], jobs=None)
    assert used == [2]
    assert big.to_dict() == small.to_dict() == check_paths([folder], jobs=1).to_dict()


@settings(max_examples=60, deadline=None)
@given(
    weights=st.lists(st.integers(1, 5_000_000), min_size=1, max_size=400),
    jobs=st.integers(2, 8),
)
def test_batches_cover_the_work_in_order_and_stay_within_their_bounds(
    weights: list[int], jobs: int
) -> None:
    spans = batches(weights, jobs)
    # consecutive, not empty, everything once
    assert spans[0][0] == 0 and spans[-1][1] == len(weights)
    assert all(a < b for a, b in spans)
    assert all(spans[i][1] == spans[i + 1][0] for i in range(len(spans) - 1))
    total = sum(weights)
    for a, b in spans:
        # a batch of more than one item is never more than its share of the whole
        assert b - a == 1 or sum(weights[a:b]) <= total / (jobs * LARGEST_BATCH)
    if len(weights) > 1:
        assert len(spans) > 1  # a second process always gets something to do


def test_batches_get_smaller_towards_the_end_so_processes_finish_together() -> None:
    spans = batches([10_000] * 2000, 2)
    sizes = [b - a for a, b in spans]
    assert max(sizes) <= 2000 // (2 * LARGEST_BATCH)
    assert sizes[-1] <= 2000 // (2 * SMALLEST_BATCH) + 1
    assert sizes == sorted(sizes, reverse=True)[: len(sizes) - 1] + sizes[-1:]  # never grow
    # weighed by bytes: one large file is a batch of its own, many small ones share one
    spans = batches([4_000_000] + [1_000] * 400, 2)
    assert spans[0] == (0, 1)
    assert any(b - a > 10 for a, b in spans[1:])


def test_this_process_checks_batches_beside_its_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from streamtool.core.drive import check as check_module

    folder = suite(tmp_path)
    here: list[str] = []  # what this process checked (a forked worker's list stays there)
    real = check_module._check_target

    def counting(recording: Path | None, golden: Path, *options: object) -> object:
        here.append(str(golden))
        return real(recording, golden, *options)

    monkeypatch.setattr(check_module, "_check_target", counting)
    switch = sys.getswitchinterval()
    two = check_paths([folder], jobs=2)
    assert 0 < len(here) < len(two.results)  # a share, not all
    assert sys.getswitchinterval() == switch  # shortened for the run only
    assert gc.get_freeze_count() == 0  # nothing left frozen
    assert two.to_dict() == check_paths([folder], jobs=1).to_dict()


def big_suite(tmp_path: Path, copies: int = 30) -> Path:
    """About 2,000 recordings without golden files (each is replayed, then reported missing)."""
    folder = tmp_path / "big"
    folder.mkdir()
    for rec in sorted(RECORDINGS.glob("*.jsonl")):
        data = rec.read_bytes()
        for i in range(copies):
            (folder / f"{i:02d}-{rec.name}").write_bytes(data)
    return folder


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.parametrize("how", ["ctrl-c", "kill-9"])
def test_stopping_check_stops_its_workers(tmp_path: Path, how: str) -> None:
    # three times the usual suite: a loaded machine's check still runs when its workers are seen
    folder = big_suite(tmp_path, copies=90)
    err_file = tmp_path / "stderr"
    proc = subprocess.Popen(
        [*STREAMTOOL, "check", "-j", "2", str(folder)],
        stdout=subprocess.DEVNULL,
        stderr=err_file.open("w"),  # a file: a worker left behind cannot hold a pipe open
        start_new_session=True,  # its own process group, as a shell gives a foreground job
    )
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while not workers:
            assert proc.poll() is None, f"check ended first: {err_file.read_text()[-500:]}"
            assert time.monotonic() < deadline, "no worker started"
            workers = children(proc.pid)
            time.sleep(0.005)
        time.sleep(0.05)  # at work
        if how == "ctrl-c":
            os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        else:
            proc.kill()
        proc.wait(timeout=30)
        deadline = time.monotonic() + 10
        while any(alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not [w for w in workers if alive(w)]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for w in workers:
            if alive(w):
                os.kill(w, signal.SIGKILL)
    if how == "ctrl-c":
        assert proc.returncode == 130
        assert "Traceback" not in err_file.read_text()
    else:
        assert proc.returncode == -signal.SIGKILL


_CTRL_C_IN_A_WORKER = """
import os, signal, sys, time
from streamtool.core.drive import check
check._end_with_parent()  # what the pool runs first in every worker
os.kill(os.getpid(), signal.SIGINT)  # waiting for a batch: not taken
time.sleep(0.05)
print("waiting: went on", flush=True)
try:
    check._check_batch((False, True, None, None), [])  # a batch: Ctrl-C stops it
    check._checking = True
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(1)
    print("checking: went on", flush=True)
except KeyboardInterrupt:
    print("checking: interrupted", flush=True)
"""


@pytest.mark.skipif(not hasattr(signal, "SIGINT"), reason="no SIGINT")
def test_ctrl_c_stops_a_workers_batch_but_not_its_wait() -> None:
    # a worker waiting for its next batch when Ctrl-C comes must not end with a traceback (the
    # pool ends it); one checking a batch stops it, and the pool hands that back to check
    proc = subprocess.run(
        [sys.executable, "-c", _CTRL_C_IN_A_WORKER], capture_output=True, text=True, timeout=60
    )
    assert proc.stdout.splitlines() == ["waiting: went on", "checking: interrupted"], proc.stderr
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
