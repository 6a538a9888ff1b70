"""Converters and handlers are plugins found through entry points.

The end-to-end test builds the documentation's tiny third-party package with its own converter and
parser, installs it into a fresh virtual environment (which sees this streamtool and its
dependencies through a ``.pth`` line, so nothing is downloaded), and replays a recording in that
dialect with ``--converter its-name``, as a user who installed the package would.
"""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from pathlib import Path

import pytest

from streamtool.core.converters import BUILTIN_CONVERTERS, CONVERTERS, make_converter
from streamtool.core.handlers import BUILTIN_PARSERS, PARSERS, make_handler
from streamtool.core.plugins.registry import BUILTINS

from .helpers import pip_install_into, venv_seeing_our_packages

ROOT = Path(__file__).resolve().parents[1]


def _readme_plugin() -> tuple[str, str]:
    """The documented plugin example (the Python API page; the README links to it): the
    module, and the package's pyproject.toml."""
    readme = (ROOT / "docs" / "python-api.md").read_text(encoding="utf-8")
    section = readme.split("### Your own converter or parser: plugins", 1)[1].split("\n## ", 1)[0]
    module = re.search(r"```python\n(.*?)```", section, re.S)
    project = re.search(r"```toml\n(.*?)```", section, re.S)
    assert module and project, "the plugin section lost its example"
    build = (
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
    )
    # and a plugin that names a built-in: it must not replace it
    shadow = 'openai-chat = "streamtool_say:SayConverter"\n'
    toml = build + project.group(1).replace(
        '[project.entry-points."streamtool.handlers"]',
        shadow + '\n[project.entry-points."streamtool.handlers"]',
    )
    return module.group(1), toml


EVENTS = [
    {"say": "Hello, "},
    {"say": "plugin world."},
    {"call": "read_file", "args": {"path": "README.md"}},
]


def _recording(path: Path) -> Path:
    lines = [
        {
            "type": "header",
            "format": "streamtool-recording",
            "version": 1,
            "provider": "say-cloud",
            "api": "say",
            "recorded_at": "2026-01-01T00:00:00Z",
            "request": {"method": "POST", "url": "http://127.0.0.1:9/say", "headers": {}},
            "response": {"status": 200, "headers": {}},
        }
    ]
    t = 0.0
    for event in EVENTS:
        t += 0.01
        lines.append({"type": "chunk", "t": t, "text": f"data: {json.dumps(event)}\n\n"})
    lines.append({"type": "chunk", "t": t + 0.01, "text": "data: bye\n\n"})
    lines.append({"type": "end", "t": t + 0.02, "reason": "complete", "error": None})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_builtins_are_registered_as_entry_points_in_pyproject() -> None:
    """The fast path for built-in names loads exactly what the package registers."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    groups = project["entry-points"]
    assert {g: groups[g] for g in BUILTINS} == BUILTINS
    assert groups["streamtool.converters"] == BUILTIN_CONVERTERS
    assert groups["streamtool.handlers"] == BUILTIN_PARSERS
    for name in BUILTIN_CONVERTERS:
        assert make_converter(name).name == name
    for name in BUILTIN_PARSERS:
        assert type(make_handler(name)).__name__ == BUILTIN_PARSERS[name].rpartition(":")[2]


def test_registry_lists_builtins_first_with_where_they_come_from() -> None:
    rows = CONVERTERS.plugins()
    assert [p.name for p in rows[: len(BUILTIN_CONVERTERS)]] == list(BUILTIN_CONVERTERS)
    assert {p.distribution for p in rows[: len(BUILTIN_CONVERTERS)]} == {"streamtool"}
    assert "nope" not in CONVERTERS and "nope" not in PARSERS
    with pytest.raises(ValueError, match="unknown converter 'nope'"):
        make_converter("nope")


@pytest.fixture(scope="module")
def plugin_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv that sees this streamtool, with the third-party plugin package installed."""
    base = tmp_path_factory.mktemp("plugin")
    src = base / "src"
    src.mkdir()
    module, project = _readme_plugin()
    (src / "pyproject.toml").write_text(project, encoding="utf-8")
    (src / "streamtool_say.py").write_text(module, encoding="utf-8")
    env_dir = base / "venv"
    python = venv_seeing_our_packages(env_dir)
    pip_install_into(python, src)
    return python


def test_a_third_party_converter_replays_a_recording(plugin_venv: Path, tmp_path: Path) -> None:
    rec = _recording(tmp_path / "say.jsonl")
    cmd = [str(plugin_venv), "-m", "streamtool.cli", "replay", str(rec)]
    done = subprocess.run(
        [*cmd, "--converter", "say", "--format", "json"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["converter"] == "say"
    assert summary["text"] == "Hello, plugin world."
    assert summary["finish_reason"] == "stop"
    assert summary["invocations"] == [
        {"id": "say_1", "name": "read_file", "arguments": {"path": "README.md"}}
    ]
    # the plugin's parser is a --parser choice too
    done = subprocess.run(
        [*cmd, "--converter", "say", "--parser", "shout", "--format", "json"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["parser"] == "shout"
    assert summary["text"] == "Hello, plugin world."


def test_streamtool_converters_lists_the_plugin_and_where_it_comes_from(
    plugin_venv: Path,
) -> None:
    done = subprocess.run(
        [str(plugin_venv), "-m", "streamtool.cli", "converters"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    say = next(line for line in lines if line.split()[:1] == ["say"])
    assert "streamtool-say 0.3.0" in say and "streamtool_say:SayConverter" in say
    shout = next(line for line in lines if line.split()[:1] == ["shout"])
    assert "streamtool-say 0.3.0" in shout
    # a plugin cannot take a built-in's name: the built-in is used, the plugin said shadowed
    shadowed = [line for line in lines if line.split()[:1] == ["openai-chat"]]
    assert len(shadowed) == 2 and "shadowed" in shadowed[1] and "streamtool " in shadowed[0]


def test_an_unknown_converter_names_the_plugins_too(plugin_venv: Path, tmp_path: Path) -> None:
    rec = _recording(tmp_path / "say.jsonl")
    done = subprocess.run(
        [str(plugin_venv), "-m", "streamtool.cli", "replay", str(rec), "--converter", "nope"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "say" in done.stderr and "Traceback" not in done.stderr
