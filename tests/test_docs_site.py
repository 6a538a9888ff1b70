"""The documentation site: its pages are the ones mkdocs.yml lists, its command-line reference is
the commands' own, and every shell example of the site and of the README runs.

A shell example runs in a sandbox folder holding the bundled recordings and the small files the
examples name (``rec.jsonl``, ``capture.sse``, ``client.py``...), with dummy keys and every HTTP
proxy variable pointing at a closed port on 127.0.0.1: an example that talks to a provider
fails there for want of a network (it never leaves the machine), one that serves is stopped
after a few seconds. What an example must never do is fail as a command line: an unknown
command or option, a value the option refuses, a missing argument, a traceback.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from streamtool.cli.reference import reference_markdown

from .conftest import RECORDINGS, ROOT

DOCS = ROOT / "docs"
USAGE_ERRORS = (
    "No such option",
    "No such command",
    "Invalid value",
    "Missing argument",
    "Missing option",
    "Got unexpected extra argument",
    "Traceback",
)
# commands that keep running (a server, a proxy, conform over every recording): stopped here
# after LONG_SECONDS, long past where a command line is refused (typer reads it first)
LONG = ("serve", "proxy", "conform", "demo")
LONG_SECONDS = 3
# the steps that install streamtool before an example (the quick start's): the sandbox has no
# project to install, and the streamtool that runs is this suite's
INSTALL_STEP = re.compile(r"(python3? -m venv \S+|\. \S+/bin/activate|pip install \S+)")


def test_the_cli_reference_is_current() -> None:
    assert (DOCS / "cli.md").read_text(encoding="utf-8") == reference_markdown(), (
        "docs/cli.md is stale: python -m streamtool.cli.reference > docs/cli.md"
    )


def test_every_page_is_in_the_nav_and_every_nav_entry_exists() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))

    def pages(node: object) -> list[str]:
        if isinstance(node, str):
            return [node]
        if isinstance(node, dict):
            return [p for v in node.values() for p in pages(v)]
        if isinstance(node, list):
            return [p for v in node for p in pages(v)]
        return []

    listed = pages(config["nav"])
    assert sorted(listed) == sorted(p.name for p in DOCS.glob("*.md"))


def test_the_readme_stays_short() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    # the quick start's first two commands stay as they are
    quick = readme.split("## Quick start\n", 1)[1].split("```sh\n", 1)[1].splitlines()
    assert quick[:2] == [
        "python3 -m venv .venv && . .venv/bin/activate && pip install . && "
        "streamtool replay --sample write-file",
        "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[test]' && "
        "python -m pytest",
    ]


# -- every shell example -----------------------------------------------------------------------
def _examples() -> list[tuple[str, str]]:
    """(where, command line) of every ``streamtool`` line in a ```sh block."""
    found = []
    for doc in [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        for block in re.findall(r"```sh\n(.*?)```", text, re.S):
            joined = re.sub(r"\\\n\s*", " ", block)
            for line in joined.splitlines():
                command = re.sub(r"\s+#.*$", "", line).strip()
                if "streamtool " in command and not command.startswith("#"):
                    steps = command.split(" && ")
                    while len(steps) > 1 and INSTALL_STEP.fullmatch(steps[0]):
                        steps.pop(0)
                    found.append((doc.name, " && ".join(steps)))
    return found


EXAMPLES = _examples()


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Path:
    box = tmp_path_factory.mktemp("examples")
    shutil.copytree(RECORDINGS, box / "recordings")
    rec = RECORDINGS / "openai-parallel-tool-calls.jsonl"
    for name in ("rec.jsonl", "a.jsonl", "b.jsonl", "my.jsonl", "openai.jsonl", "claude.jsonl"):
        shutil.copy(rec, box / name)
    body = "".join(
        json.loads(line)["text"]
        for line in rec.read_text().splitlines()
        if json.loads(line)["type"] == "chunk"
    )
    (box / "capture.sse").write_text(body, encoding="utf-8")
    (box / "tools.json").write_text(
        json.dumps([{"name": "get_weather", "description": "Weather", "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}}}}]),
        encoding="utf-8",
    )  # fmt: skip
    (box / "chat.json").write_text('[{"role": "user", "content": "hi"}]', encoding="utf-8")
    (box / "request.json").write_text('{"model": "m", "stream": true, "messages": []}')
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    client = re.search(r"```python\n# client\.py\n(.*?)```", readme, re.S)
    if client:
        (box / "client.py").write_text(client.group(1), encoding="utf-8")
    script = re.search(r"```yaml\n(# loop\.yaml.*?)```", readme, re.S)
    if script:  # the README's script of turns
        (box / "loop.yaml").write_text(script.group(1), encoding="utf-8")
    (box / "tapes").mkdir()
    shutil.copy(rec, box / "tapes" / "0001-chat.jsonl")
    return box


def _run(command: str, box: Path) -> tuple[int | None, str]:
    closed = "http://127.0.0.1:9"
    env = {
        **os.environ,
        "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
        "COLUMNS": "100",
        "OPENAI_API_KEY": "sk-dummy",
        "ANTHROPIC_API_KEY": "sk-ant-dummy",
        "GEMINI_API_KEY": "dummy",
        "HTTP_PROXY": closed,
        "HTTPS_PROXY": closed,
        "ALL_PROXY": closed,
        "NO_PROXY": "127.0.0.1,localhost",
    }
    words = command.split()
    sub = words[words.index("streamtool") + 1] if "streamtool" in words[:-1] else ""
    timeout = LONG_SECONDS if sub in LONG else 60
    proc = subprocess.Popen(
        ["bash", "-c", command],
        cwd=box,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        _, err = proc.communicate(timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        code = None
    # the example's session: what it left running in the background (serve ... &) goes too
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    if code is None:
        _, err = proc.communicate()
    return code, err


def test_every_shell_example_runs(sandbox: Path) -> None:
    assert len(EXAMPLES) >= 30
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda e: (e, _run(e[1], sandbox)), EXAMPLES))
    broken = [
        f"{where}: {command}\n    {err.strip()[-300:]}"
        for (where, command), (_, err) in results
        if any(marker in err for marker in USAGE_ERRORS)
    ]
    assert not broken, "\n".join(broken)
