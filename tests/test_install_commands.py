"""The commands the README and the docs show after an install of streamtool work after exactly
that install (issue 46, item 4): the quick start, the documentation site (``pip install -e
'.[docs]' && mkdocs serve``), the development checks (tests, lint, layer contracts, types) and
the CI examples.

Each install line of this project that a page shows (``pip install .``, ``pip install -e
'.[test]'``...) gets a virtual environment of its own, made by ``python -m venv`` and that
install line alone; the commands the page shows after it run there, from the project's root
(``streamtool`` commands from a sandbox holding a copy of the recordings). A venv is kept
between runs in the temporary folder while the install line and ``pyproject.toml`` stay the same
(a change of either makes a new one, from nothing); the install line itself runs every time, so
what is installed is the project as it is now.

Three commands are run in a form that ends: ``pytest`` collects the suite (running it would run
this test again) and every module must import (no module skipped for a missing package; a
later ``pytest`` in the same venv, with other options, collects one module);
``mkdocs serve`` serves until the Python API page answers with the functions documented; a
benchmark script shows its ``--help`` (its measurements take minutes and are not tests).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest
from filelock import FileLock

from .conftest import RECORDINGS, ROOT

# an install of this project: pip install [-q] [--no-deps] [-e] .|'.[extras]' [--config-settings X]
PROJECT_INSTALL = re.compile(
    r"pip install(?: -q)?(?: --no-deps)?(?: -e)? (?:\.|'\.\[[\w,]+\]')(?: --config-settings \S+)?"
)
VENV_STEPS = re.compile(r"python3? -m venv \S+|\. \S+/bin/activate")
INSTALL_TIMEOUT = 900
COMMAND_TIMEOUT = 300


def _blocks(text: str) -> list[list[str]]:
    """The command lines of each shell block (```sh), each YAML block's ``run:`` steps, and each
    inline code span that installs and then runs something (``pip install ... && mkdocs serve``)."""
    blocks = []
    for lang, body in re.findall(r"```(sh|bash|yaml)\n(.*?)```", text, re.S):
        lines = re.sub(r"\\\n\s*", " ", body).splitlines()
        if lang == "yaml":
            lines = [m.group(1) for ln in lines if (m := re.match(r"\s*(?:- )?run: (.*)", ln))]
        blocks.append([re.sub(r"\s+#.*$", "", ln).strip() for ln in lines])
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    for span in re.findall(r"`([^`]*pip install[^`]*&&[^`]*)`", prose):
        blocks.append([" ".join(span.split())])
    return blocks


def pairs() -> dict[str, list[tuple[str, str]]]:
    """Install line (as shown, ``-q`` aside) -> [(page, command)] shown after it, in order (a
    command shown on several pages once). A reinstall of the project (``--no-deps``) is one of
    the commands; an install of anything else ends what an install line is followed by."""
    found: dict[str, dict[str, str]] = {}
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for block in _blocks(doc.read_text(encoding="utf-8")):
            install: str | None = None
            for line in block:
                for step in (s.strip() for s in line.split(" && ")):
                    if not step or step.startswith("#") or VENV_STEPS.fullmatch(step):
                        continue
                    if PROJECT_INSTALL.fullmatch(step) and "--no-deps" not in step:
                        install = step.replace(" -q", "")
                        found.setdefault(install, {})
                    elif "pip install" in step and not PROJECT_INSTALL.fullmatch(step):
                        install = None
                    elif install is not None:
                        found[install].setdefault(step, doc.name)
    return {line: [(page, c) for c, page in shown.items()] for line, shown in found.items()}


PAIRS = pairs()


def test_the_install_lines_the_docs_show_are_found() -> None:
    assert set(PAIRS) >= {"pip install .", "pip install -e '.[test]'", "pip install -e '.[docs]'"}
    shown = {c for commands in PAIRS.values() for _, c in commands}
    assert "streamtool replay --sample write-file" in shown
    assert "mkdocs serve" in shown and "python -m pytest" in shown
    assert "mypy -p streamtool.core -p streamtool.cli" in shown


# -- the venvs ------------------------------------------------------------------------------------
def _bash(command: str, cwd: Path, venv: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """``command`` run by bash in ``cwd`` with ``venv`` activated, its output captured."""
    return subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        env=_env(venv),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _env(venv: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    env["COLUMNS"] = "100"
    env["NO_MKDOCS_2_WARNING"] = "1"
    return env


def _venv(install: str) -> tuple[Path, str]:
    """The venv of one install line, the line just run in it; (its path, what went wrong)."""
    pyproject = (ROOT / "pyproject.toml").read_bytes()
    where = hashlib.sha256(f"{ROOT}\n{install}".encode()).hexdigest()[:16]
    state = hashlib.sha256(pyproject + sys.version.encode() + install.encode()).hexdigest()
    home = Path(tempfile.gettempdir()) / "streamtool-install-venvs"
    home.mkdir(exist_ok=True)
    venv = home / where
    with FileLock(str(home / f"{where}.lock")):
        marker = venv / "made-for"
        if not (marker.is_file() and marker.read_text() == state):
            shutil.rmtree(venv, ignore_errors=True)  # from nothing
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            # today's pip, as .ci/run takes it: the pip a venv is born with (the one Python
            # bundled) resolves the same installs in three times the time
            subprocess.run(
                [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--upgrade", "pip"],
                env=_env(venv),
                capture_output=True,
                check=True,
                timeout=INSTALL_TIMEOUT,
            )
        done = _bash(install, ROOT, venv, INSTALL_TIMEOUT)
        if done.returncode != 0:
            return venv, f"{install}: exit {done.returncode}\n{done.stderr[-2000:]}"
        marker.write_text(state)
    return venv, ""


# -- the commands ---------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _mkdocs_serve(venv: Path, log: Path) -> str:
    """``mkdocs serve`` until the Python API page answers with its functions; what went wrong."""
    port = _free_port()
    with open(log, "w+", encoding="utf-8") as err:
        proc = subprocess.Popen(
            ["mkdocs", "serve", "-a", f"127.0.0.1:{port}"],
            cwd=ROOT,
            env=_env(venv),
            stdout=err,
            stderr=err,
            start_new_session=True,
        )
        try:
            page = ""
            deadline = time.monotonic() + COMMAND_TIMEOUT
            while not page and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.5)
                with contextlib.suppress(OSError):
                    url = f"http://127.0.0.1:{port}/python-api/"
                    with urllib.request.urlopen(url, timeout=5) as answer:  # noqa: S310
                        page = answer.read().decode("utf-8")
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        err.seek(0)
        said = err.read()
    if not page:
        return f"mkdocs serve never served the Python API page: {said[-1500:]}"
    if "replay_file" not in page or "check_paths" not in page:
        return "the Python API page lacks replay_file or check_paths"
    return ""


def _run(venv: Path, command: str, sandbox: Path, collected: set[Path]) -> str:
    """Run one command shown after the install; what went wrong ('' when it worked). The first
    ``pytest`` of a venv collects the whole suite; a later one (other options) one module."""
    command = re.sub(r"\$\{\{[^}]*\}\}", "1", command)  # a GitHub Actions expression
    if command == "mkdocs serve":
        return _mkdocs_serve(venv, sandbox / "mkdocs.log")
    words = shlex.split(command)
    cwd = sandbox if words[0] == "streamtool" else ROOT
    check_collection = words[0] == "pytest" or words[:3] == ["python", "-m", "pytest"]
    if check_collection:
        command += " --collect-only -rs -n 0 -p no:cacheprovider"
        if venv in collected:
            command += " tests/test_sse.py"
        collected.add(venv)
    elif words[0] == "python" and words[1].startswith("benchmarks/"):
        command = f"python {words[1]} --help"
    done = _bash(command, cwd, venv, COMMAND_TIMEOUT)
    said = done.stdout + done.stderr
    if done.returncode != 0:
        return f"exit {done.returncode}: {said[-1500:]}"
    if "Traceback" in said:
        return said[-1500:]
    if check_collection and (
        not re.search(r"\d+ tests? collected", said) or "could not import" in said
    ):
        return f"the suite does not collect whole: {said[-1500:]}"
    return ""


@pytest.mark.slow
@pytest.mark.parametrize("install", list(PAIRS))
def test_every_command_shown_after_an_install_works_after_it(install: str, tmp_path: Path) -> None:
    """One install line: its venv, then the commands shown after it, in the order shown (a
    reinstall comes between). Each line is a test of its own, so the suite's workers build the
    venvs side by side."""
    sandbox = tmp_path / "installed"
    shutil.copytree(RECORDINGS, sandbox / "recordings")
    venv, problem = _venv(install)
    assert not problem, problem
    failed: list[str] = []
    collected: set[Path] = set()
    for page, command in PAIRS[install]:
        problem = _run(venv, command, sandbox, collected)
        if problem:
            failed.append(f"{page}: {install} && {command}\n    {problem}")
    assert not failed, "\n".join(failed)
