"""What of a tape to commit: every way a tape is started writes its ``.gitignore``, and after
recording ``git status`` (real git) lists only the index, the recordings and the ``.gitignore``.
A user's own ``.gitignore`` is never overwritten; writers at once, and one killed (kill -9),
never leave half of one."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from streamtool.core.exchange.playback import Playback
from streamtool.core.net.server import serving
from streamtool.core.net.tape import serving_tape
from streamtool.core.recording.tape_gitignore import GITIGNORE_TEXT, write_gitignore

from .serve_helpers import STREAMTOOL, recording, start_listening
from .tape_helpers import CHILD_PYTEST

REC = recording("openai-text-usage-chunk-utf8-split")
# git without the machine's or the user's configuration (a global excludes file, say)
GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(repo: Path, *args: str) -> str:
    exe = shutil.which("git")
    if exe is None:
        pytest.skip("git is not installed")
    done = subprocess.run(
        [exe, *args], cwd=repo, env=GIT_ENV, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def untracked(repo: Path) -> list[str]:
    """What ``git status`` would have committed: untracked files, not ignored, one per line."""
    out = git(repo, "status", "--porcelain", "--untracked-files=all")
    return sorted(line[3:] for line in out.splitlines())


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    return root


def ask(url: str, prompt: str) -> None:
    body = {
        "model": "gpt-4o-mini",
        "stream": True,
        "messages": [{"role": "user", "content": prompt}],
    }
    with httpx.stream("POST", url + "/v1/chat/completions", json=body, timeout=20) as response:
        assert response.status_code == 200
        response.read()


def expected(repo: Path, tape: str, n: int) -> list[str]:
    """The paths git should list for a tape of ``n`` exchanges: no more."""
    files = sorted(p.name for p in (repo / tape).glob("0*.jsonl"))
    assert len(files) == n
    return sorted([f"{tape}/.gitignore", f"{tape}/index.jsonl", *(f"{tape}/{f}" for f in files)])


def test_proxy_and_serve_record_missing_tapes_commit_only_what_they_should(repo: Path) -> None:
    with serving([REC], Playback(speed=None)) as upstream:
        for command, tape in (
            (["proxy", "--view", "none", "--upstream", upstream.url, "-o"], "captures"),
            (["serve", "--record-missing", "--upstream", upstream.url], "tape"),
        ):
            proc, _, origin = start_listening(
                [*STREAMTOOL, *command, str(repo / tape), "--port", "0"]
            )
            try:
                ask(origin, "one")
                ask(origin, "two")
                # while the writer runs: its lock and counter are there, and ignored
                hidden = {p.name for p in (repo / tape).iterdir() if p.name.startswith(".")}
                assert {".gitignore", ".lock", ".seq"} <= hidden
                listed = [p for p in untracked(repo) if p.startswith(tape + "/")]
                assert listed == expected(repo, tape, 2)
            finally:
                proc.send_signal(signal.SIGINT)
                proc.wait(timeout=30)
    assert (repo / "captures" / ".gitignore").read_text(encoding="utf-8") == GITIGNORE_TEXT
    assert untracked(repo) == sorted(expected(repo, "captures", 2) + expected(repo, "tape", 2))


def test_pytest_plugin_and_tape_build_tapes(repo: Path) -> None:
    (repo / "test_one.py").write_text(
        "import httpx, os\n\n"
        "def test_one(stream_tape):\n"
        "    messages = [{'role': 'user', 'content': 'x'}]\n"
        "    body = {'model': 'm', 'stream': True, 'messages': messages}\n"
        "    url = os.environ['OPENAI_BASE_URL'] + '/chat/completions'\n"
        "    assert httpx.post(url, json=body, timeout=20).status_code == 200\n",
        encoding="utf-8",
    )
    script = repo / "loop.yaml"
    script.write_text("turns:\n  - reply: {text: hello}\n", encoding="utf-8")
    with serving([REC], Playback(speed=None)) as upstream:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
        done = subprocess.run(
            [*CHILD_PYTEST, "-q", "--stream-tape-mode=once",
             f"--stream-tape-upstream={upstream.url}"],
            cwd=repo, env=env, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
    built = subprocess.run(
        [*STREAMTOOL, "tape", "build", "loop.yaml", "--api", "anthropic", "-o", "built"],
        cwd=repo, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    tape = "tapes/test_one/test_one"
    # the plugin's note of the run that recorded the tape is hidden, and ignored too
    assert (repo / tape / ".recorded-by-run").is_file()
    assert untracked(repo) == sorted(
        ["loop.yaml", "test_one.py", *expected(repo, tape, 1), *expected(repo, "built", 1)]
    )


def test_a_users_own_gitignore_or_folder_is_left_as_it_is(repo: Path) -> None:
    mine = repo / "mine"  # the user's own .gitignore
    mine.mkdir()
    (mine / ".gitignore").write_text("*.jsonl\n", encoding="utf-8")
    theirs = repo / "theirs"  # a folder of the user's that holds files (no index yet)
    theirs.mkdir()
    (theirs / "notes.md").write_text("mine\n", encoding="utf-8")
    with serving([REC], Playback(speed=None)) as upstream:
        for folder in (mine, theirs):
            with serving_tape(folder, record_missing=True, upstream=upstream.url) as server:
                ask(server.url, "one")
        assert (mine / ".gitignore").read_text(encoding="utf-8") == "*.jsonl\n"
        assert not (theirs / ".gitignore").exists()
        # a .gitignore the user removed from a tape stays removed
        (mine / ".gitignore").unlink()
        with serving_tape(mine, record_missing=True, upstream=upstream.url) as server:
            ask(server.url, "two")
    assert not (mine / ".gitignore").exists()
    assert len(list(mine.glob("0*.jsonl"))) == 2 and (theirs / "index.jsonl").is_file()


def test_writers_at_once_write_one_whole_gitignore(tmp_path: Path) -> None:
    folders = [tmp_path / f"t{i}" for i in range(40)]
    for folder in folders:
        folder.mkdir()
    results: list[bool] = []

    def write_all() -> None:
        for folder in folders:
            results.append(write_gitignore(folder))

    threads = [threading.Thread(target=write_all) for _ in range(4)]
    code = (
        "import sys\n"
        "from streamtool.core.recording.tape_gitignore import write_gitignore\n"
        "print(sum(write_gitignore(f) for f in sys.argv[1:]))\n"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, *map(str, folders)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    written = sum(results) + sum(int(p.communicate(timeout=60)[0]) for p in procs)
    assert written == len(folders)  # one writer per folder wrote it
    for folder in folders:
        assert [p.name for p in folder.iterdir()] == [".gitignore"]  # no temporary file left
        assert (folder / ".gitignore").read_text(encoding="utf-8") == GITIGNORE_TEXT


def test_a_writer_killed_never_leaves_half_a_gitignore(tmp_path: Path, repo: Path) -> None:
    """kill -9 of a process writing .gitignore files into new folders as fast as it can: every
    .gitignore there is whole, and what a kill left behind is hidden and ignored by git."""
    code = (
        "import sys, pathlib\n"
        "from streamtool.core.recording.tape_gitignore import write_gitignore\n"
        "root = pathlib.Path(sys.argv[1])\n"
        "print('ready', flush=True)\n"
        "i = 0\n"
        "while True:\n"
        "    folder = root / f't{i}'\n"
        "    folder.mkdir()\n"
        "    write_gitignore(folder)\n"
        "    i += 1\n"
    )
    for attempt in range(3):
        root = repo / f"run{attempt}"
        root.mkdir()
        proc = subprocess.Popen(
            [sys.executable, "-c", code, str(root)], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        time.sleep(0.2 + 0.05 * attempt)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        folders = list(root.iterdir())
        assert folders
        for folder in folders:
            ignore = folder / ".gitignore"
            if ignore.exists():
                assert ignore.read_text(encoding="utf-8") == GITIGNORE_TEXT
            else:  # killed before it was linked into place: its hidden temporary file only
                assert all(p.name.startswith(".gitignore.") for p in folder.iterdir())
            assert all(p.name.startswith(".gitignore") for p in folder.iterdir())
    # the next writer of such a folder writes it: then git lists the .gitignore files only
    for folder in repo.glob("run*/t*"):
        write_gitignore(folder)
    assert untracked(repo) and all(Path(p).name == ".gitignore" for p in untracked(repo))
