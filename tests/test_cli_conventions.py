"""The command line's conventions: lazy commands, --version, -h, completion."""

from __future__ import annotations

import importlib
import inspect
import json
import os
import re
import subprocess
import sys
from enum import Enum
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import streamtool.core
from streamtool.cli.main import COMMANDS, app

RECORDING = Path(__file__).parent.parent / "recordings" / "anthropic-text-then-tool-use.jsonl"
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
    for heavy in HEAVY:
        assert not _loaded(modules, heavy), heavy


def test_replay_json_imports_no_sdk_and_no_pydantic() -> None:
    out, modules = run_probe("replay", str(RECORDING), "--format", "json")
    assert json.loads(out)["converter"] == "anthropic"
    assert "streamtool.cli.replay" in modules
    for heavy in HEAVY:
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
    expected = ["record", "replay", "report"]
    assert _complete({"COMP_WORDS": "streamtool re", "COMP_CWORD": "1"}) == expected
    assert "--format" in _complete({"COMP_WORDS": "streamtool replay --fo", "COMP_CWORD": "2"})
    choices = _complete({"COMP_WORDS": "streamtool replay x --format ", "COMP_CWORD": "4"})
    assert choices == ["tree", "text", "json", "jsonl"]


def test_every_command_module_imports_cleanly() -> None:
    for module, _ in COMMANDS.values():
        importlib.import_module(f"streamtool.cli.{module}")


# what typer would print for a Python type: <str>, <list[Path]>, {file}, <path>
PYTHON_TYPES = re.compile(
    r"<(?:str|int|float|bool|path|file|dir|Path|list\[[^>]*\])>|\{[a-z_]+\}|list\["
)


@pytest.mark.parametrize("name", list(COMMANDS))
def test_help_shows_no_python_types(name: str) -> None:
    result = CliRunner().invoke(app, [name, "--help"], terminal_width=200)
    assert result.exit_code == 0
    assert not PYTHON_TYPES.search(result.output), result.output
    command = importlib.import_module("streamtool.cli.main").load_command(name)
    lines = result.output.splitlines()
    for param in command.params:
        annotation = param.type_descriptor.annotation
        if isinstance(annotation, type) and issubclass(annotation, Enum):
            # choices are listed as choices, on the parameter's own line
            listed = "[" + "|".join(str(m.value) for m in annotation) + "]"
            own = [ln for ln in lines if ln.lstrip().startswith((*param.opts, param.name.upper()))]
            assert any(listed in ln for ln in own), (param.name, own)


def test_parser_and_converter_options_list_the_registries() -> None:
    from streamtool.core.converters import converter_names
    from streamtool.core.handlers import parser_names

    result = CliRunner().invoke(app, ["replay", "--help"], terminal_width=200)
    assert "--parser [" + "|".join(parser_names()) + "]" in result.output
    assert "--converter [" + "|".join(["auto", *converter_names()]) + "]" in result.output


def _bad_values(name: str) -> list[tuple[list[str], str, str]]:
    """(arguments, how click names the option, the expected sentence) per typed option."""
    command = importlib.import_module("streamtool.cli.main").load_command(name)
    cases = []
    for param in command.params:
        annotation = param.type_descriptor.annotation
        opt = param.opts[0] if param.param_type_name == "option" else None
        if opt is None:
            continue
        hint = " / ".join(repr(o) for o in param.opts)
        if isinstance(annotation, type) and issubclass(annotation, Enum):
            values = [str(m.value) for m in annotation]
            expected = "'nope' is not one of " + (
                values[0] if len(values) == 1 else ", ".join(values[:-1]) + " or " + values[-1]
            )
            cases.append(([opt, "nope"], hint, expected + "."))
        elif annotation is int:
            cases.append(([opt, "1.5"], hint, "'1.5' is not a whole number."))
        elif annotation is float:
            cases.append(([opt, "fast"], hint, "'fast' is not a number."))
    return cases


def _required(name: str) -> list[str]:
    """Values for a command's required parameters, so that only the bad value is wrong."""
    command = importlib.import_module("streamtool.cli.main").load_command(name)
    args: list[str] = []
    for param in command.params:
        if not param.required:
            continue
        annotation = param.type_descriptor.annotation
        if isinstance(annotation, type) and issubclass(annotation, Enum):
            value = str(next(iter(annotation)).value)
        else:
            value = str(RECORDING)
        args += [value] if param.param_type_name == "argument" else [param.opts[0], value]
    return args


@pytest.mark.parametrize("name", list(COMMANDS))
def test_bad_values_are_one_plain_sentence(name: str) -> None:
    for args, hint, sentence in _bad_values(name):
        result = CliRunner().invoke(app, [name, *_required(name), *args])
        assert result.exit_code == 2, (args, result.output)
        error = [ln for ln in result.output.splitlines() if ln.startswith("Error:")]
        assert error == [f"Error: Invalid value for {hint}: {sentence}"], result.output
        assert "Value error" not in result.output and "Input should" not in result.output


def test_a_bad_shell_is_one_plain_sentence() -> None:
    result = CliRunner().invoke(app, ["completion", "tcsh"])
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == (
        "Error: Invalid value for 'SHELL': 'tcsh' is not one of bash, zsh, fish or powershell."
    )


def test_the_exit_does_not_take_every_object_apart() -> None:
    """At exit the command's objects are moved out of the garbage collector's reach: the
    interpreter's shutdown would otherwise walk them all, 10-20 ms of every command."""
    script = """
import atexit, gc, json, sys
from streamtool.cli.main import main
# registered first, so it runs last: after everything the command registered
atexit.register(lambda: sys.stderr.write(f"\\nFROZEN {gc.get_freeze_count()}\\n"))
sys.argv = ["streamtool", *json.loads(sys.argv[1])]
main()
"""
    args = ["replay", str(RECORDING), "--format", "json"]
    proc = subprocess.run(
        [sys.executable, "-c", script, json.dumps(args)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["finish_reason"]  # the output is whole
    frozen = int(proc.stderr.rsplit("FROZEN ", 1)[1])
    assert frozen > 10_000  # the modules' objects and what the command kept


def _typer_reads(callback: Any) -> list[Any]:
    """The functions whose signature typer reads to build a command: its callback, and each
    option's ``callback=`` and ``autocompletion=``."""
    functions = [callback]
    for annotation in inspect.get_annotations(callback).values():
        for info in getattr(annotation, "__metadata__", ()):
            functions += [
                f
                for f in (getattr(info, "callback", None), getattr(info, "autocompletion", None))
                if f
            ]
    return functions


@pytest.mark.parametrize("name", list(COMMANDS))
def test_typer_evaluates_no_annotation_written_as_text(name: str) -> None:
    # typer compiles and evaluates an annotation written as text (``from __future__ import
    # annotations``) at every start of the command: about 10 ms of a small replay
    from streamtool.cli.main import command_info

    info = command_info(name)
    group = getattr(info, "typer_instance", None)  # a group of commands (tape): each of them
    callbacks = [c.callback for c in group.registered_commands] if group else [info.callback]
    assert app.registered_callback is not None and app.registered_callback.callback is not None
    reads = [f for callback in callbacks for f in _typer_reads(callback)]
    for function in [*reads, *_typer_reads(app.registered_callback.callback)]:
        text = {k: v for k, v in inspect.get_annotations(function).items() if isinstance(v, str)}
        assert not text, (function.__qualname__, text)
