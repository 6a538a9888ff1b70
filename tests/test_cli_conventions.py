"""The command line's conventions: lazy commands, --version, -h, completion."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

import streamtool.core
from streamtool.cli.main import COMMANDS, app

HEAVY = ("openai", "anthropic", "pydantic", "httpx", "starlette", "uvicorn")

# runs the command in a fresh interpreter and prints which modules it imported
_PROBE = """
import json, sys
from streamtool.cli.main import main
sys.argv = ["streamtool", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit:
    pass
sys.stdout.flush()
sys.stderr.write("\\nMODULES " + json.dumps(sorted(sys.modules)) + "\\n")
"""


def run_probe(*args: str) -> tuple[str, set[str]]:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(list(args))],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "100"},
    )
    line = proc.stderr.rsplit("MODULES ", 1)[1]
    return proc.stdout, set(json.loads(line))


def _loaded(modules: set[str], name: str) -> bool:
    return name in modules or any(m.startswith(name + ".") for m in modules)


def test_help_lists_every_command_and_imports_none_of_them() -> None:
    out, modules = run_probe("--help")
    flat = " ".join(out.split())
    for name, (_, short_help) in COMMANDS.items():
        assert f" {name} {short_help}" in flat, name
    command_modules = {f"streamtool.cli.{module}" for module, _ in COMMANDS.values()}
    assert not command_modules & modules
    for heavy in HEAVY:
        assert not _loaded(modules, heavy), heavy


def test_a_command_imports_its_own_module_only() -> None:
    out, modules = run_probe("completion", "bash")
    assert "complete -o default" in out
    others = {f"streamtool.cli.{m}" for name, (m, _) in COMMANDS.items() if name != "completion"}
    assert "streamtool.cli.completion" in modules
    assert not others & modules
    for heavy in ("openai", "anthropic", "httpx", "starlette"):
        assert not _loaded(modules, heavy), heavy


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_registered_module_registers_its_command(name: str) -> None:
    from streamtool.cli.main import load_command

    command = load_command(name)
    assert command.name == name
    # the one-line help in the list is the command's own short help
    assert command.get_short_help_str() == COMMANDS[name][1]


def test_version() -> None:
    for flag in ("--version", "-V"):
        result = CliRunner().invoke(app, [flag])
        assert result.exit_code == 0
        assert result.output == f"streamtool {streamtool.core.__version__}\n"
    from importlib.metadata import version

    assert streamtool.core.__version__ == version("streamtool")


def test_short_help_flag_on_every_command() -> None:
    root = CliRunner().invoke(app, ["-h"])
    assert root.exit_code == 0 and "Commands:" in root.output
    for name in COMMANDS:
        result = CliRunner().invoke(app, [name, "-h"])
        assert result.exit_code == 0, (name, result.output)
        assert result.output.startswith(f"Usage: streamtool {name} ")


def test_unknown_command_suggests_one_not_yet_imported() -> None:
    result = CliRunner().invoke(app, ["complteion"])
    assert result.exit_code == 2
    assert "Did you mean 'completion'?" in result.output


def _complete(env: dict[str, str]) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "streamtool.cli"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "_STREAMTOOL_COMPLETE": "complete_bash", **env},
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_completion_script_and_answers() -> None:
    for shell in ("bash", "zsh", "fish", "powershell"):
        result = CliRunner().invoke(app, ["completion", shell])
        assert result.exit_code == 0
        assert "_STREAMTOOL_COMPLETE" in result.output
    # what the bash script asks, answered: command names, then a command's options and choices
    assert _complete({"COMP_WORDS": "streamtool re", "COMP_CWORD": "1"}) == ["record", "replay"]
    assert "--format" in _complete({"COMP_WORDS": "streamtool replay --fo", "COMP_CWORD": "2"})
    choices = _complete({"COMP_WORDS": "streamtool replay x --format ", "COMP_CWORD": "4"})
    assert choices == ["tree", "text", "json", "jsonl"]


def test_every_command_module_imports_cleanly() -> None:
    for module, _ in COMMANDS.values():
        importlib.import_module(f"streamtool.cli.{module}")
