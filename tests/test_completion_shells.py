"""Shell completion, run in the real shells: the script ``streamtool completion SHELL`` prints is
loaded into bash, zsh and fish, and the shell is asked what it would offer."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from streamtool.cli.main import COMMANDS, app
from streamtool.core.converters import BUILTIN_CONVERTERS
from streamtool.core.drive.listing import COLUMNS
from streamtool.core.exchange.requests import APIS
from streamtool.core.handlers import BUILTIN_PARSERS
from streamtool.core.model.quirks import CATALOGUE
from streamtool.core.samples import SAMPLES

BIN = str(Path(sys.executable).parent)
ENV = {**os.environ, "PATH": BIN + os.pathsep + os.environ.get("PATH", "")}


def shell(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (.ci/run installs it)")
    return found


def complete(sh: str, words: list[str]) -> list[str]:
    """What ``sh`` offers for the last of ``words`` (``""``: a new word)."""
    if sh == "bash":
        script = (
            'eval "$(streamtool completion bash)"; COMP_WORDS=("$@"); '
            "COMP_CWORD=$(( $# - 1 )); _streamtool_completion streamtool; "
            'printf "%s\\n" "${COMPREPLY[@]}"'
        )
        args = [shell("bash"), "-c", script, "bash", *words]
    elif sh == "zsh":
        # compsys is not loaded in zsh -c: its functions print what they were given instead
        script = (
            'compdef() { :; }; compadd() { print -l -- "$@"; }; '
            '_describe() { print -l -- "${(P)2}"; }; _arguments() { print -l -- "$@"; }; '
            'eval "$(streamtool completion zsh)"; words=("$@"); CURRENT=$#; '
            "_streamtool_completion"
        )
        args = [shell("zsh"), "-c", script, "zsh", *words]
    else:
        line = " ".join(words)
        args = [shell("fish"), "-c", "streamtool completion fish | source; complete -C $argv", line]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=60, env=ENV)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    if sh == "zsh":
        # _arguments '*: :(("a" "b"))' or _describe's "name:help" lines
        quoted = re.findall(r'"((?:[^"\\]|\\.)*)"', out)
        if quoted:
            return sorted(q.replace("\\:", ":") for q in quoted)
        return sorted(line.split(":")[0] for line in out.splitlines() if line and line != "--")
    return sorted(line.split("\t")[0] for line in out.splitlines() if line)


CASES = [
    (["replay", "--parser", ""], sorted(BUILTIN_PARSERS)),
    (["replay", "--converter", ""], sorted(["auto", *BUILTIN_CONVERTERS])),
    (["record", "-p", ""], sorted(APIS)),
    (["ls", "--sort", ""], sorted(COLUMNS)),
    (["ls", "--has-quirk", "oai_parallel"], ["oai_parallel_same_index"]),
    (["inspect", "--fail-on", "wa"], ["warn"]),
    (["inspect", "--fail-on", "error,usage_o"], ["error,usage_only_chunk"]),
    (
        ["conform", "--api", "openai-"],
        ["openai-chat", "openai-completions", "openai-realtime", "openai-responses"],
    ),
    (["demo", "--sample", ""], sorted(SAMPLES)),
    (["completion", ""], ["bash", "fish", "powershell", "zsh"]),
    (["mutate", "r.jsonl", "--quirk", "oai_args_c"], ["oai_args_cumulative"]),
    (["mutate", "r.jsonl", "-q", "reads_single,reads_u"], ["reads_single,reads_utf8_split"]),
    (["serve", "recordings", "--mutate", "al"], ["all"]),
    (["serve", "recordings", "--mutate", "finish_d"], ["finish_double"]),
    (["conform", "--mutate", "eof_no_done,sse_comment"], ["eof_no_done,sse_comment_keepalive"]),
]


@pytest.mark.parametrize("sh", ["bash", "zsh", "fish"])
@pytest.mark.parametrize("words, expected", CASES, ids=[" ".join(c[0]) for c in CASES])
def test_choices_complete_in_every_shell(sh: str, words: list[str], expected: list[str]) -> None:
    assert complete(sh, ["streamtool", *words]) == expected


def test_quirk_ids_offered_are_the_generatable_ones() -> None:
    from streamtool.core.mutations import registered

    declared = registered()
    generatable = sorted(i.id for i in CATALOGUE.values() if i.id in declared)
    not_generatable = {i.id for i in CATALOGUE.values() if i.id not in declared}
    assert len(generatable) >= 30 and not_generatable
    assert complete("bash", ["streamtool", "mutate", "r.jsonl", "--quirk", ""]) == generatable
    assert complete("bash", ["streamtool", "serve", "x", "--mutate", ""]) == sorted(
        ["all", *generatable]
    )
    # after a comma: the ids not given yet, "all" no more
    offered = complete("bash", ["streamtool", "serve", "x", "--mutate", "eof_no_done,"])
    assert offered == sorted(f"eof_no_done,{q}" for q in generatable if q != "eof_no_done")


def _choice_options() -> list[tuple[str, str, list[str]]]:
    """(command, option, its choices) for every option that takes one of a known set: an enum,
    or a name the commands know (parsers, converters...), as its help's ``[a|b]`` shows."""
    group = typer.main.get_command(app)
    ctx = typer.Context(group)
    found = []
    for name in COMMANDS:
        command = group.get_command(ctx, name)  # type: ignore[attr-defined]
        for param in command.params:
            if not isinstance(param, typer.core.TyperOption) or param.is_flag:
                continue
            metavar = param.metavar or param.display_type(ctx)
            if metavar.startswith("[") and metavar.endswith("]"):
                choices = metavar.strip("[]").split("|")
                found.append((name, param.opts[0], choices))
    return found


def test_every_choice_valued_option_completes_in_bash() -> None:
    options = _choice_options()
    assert len(options) >= 15  # the parsers, converters, formats, providers, views...
    for command, option, choices in options:
        offered = complete("bash", ["streamtool", command, option, ""])
        assert set(choices) <= set(offered), (command, option, offered)
