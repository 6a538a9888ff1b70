"""Every option that takes one of a list of values (issue 46, item 5): the list ``--help`` shows
is what the command accepts (a value outside it is refused with a message naming that same
list), the option's help text names all of them or at most one, and the docs that spell the
option with its values (``--format tree|text|json|jsonl``) give that same list."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from streamtool.cli.main import COMMANDS, app

from .conftest import RECORDINGS, ROOT

REC = str(RECORDINGS / "openai-parallel-tool-calls.jsonl")
BOGUS = "no-such-choice"
CLOSED = "http://127.0.0.1:9"  # nothing listens there: a command that got that far stops


def _options() -> list[tuple[str, str, list[str], str]]:
    """(command, option, its choices, its help) for every option whose metavar lists choices."""
    group = typer.main.get_command(app)
    root = typer.Context(group, info_name="streamtool")
    found = []
    for name in COMMANDS:
        command: Any = group.get_command(root, name)  # type: ignore[attr-defined]
        ctx = typer.Context(command, info_name=name, parent=root)
        for param in command.params:
            kind = param.metavar or param.display_type(ctx) or ""
            if re.fullmatch(r"\[[^\[\]|\s]+(\|[^\[\]|\s]+)+\]", kind):
                help_text = " ".join((param.help or "").split())
                found.append((name, param.opts[0], kind[1:-1].split("|"), help_text))
    return found


OPTIONS = _options()
EVERY_VALUE = {value for _, _, values, _ in OPTIONS for value in values}

# how far each command must be taken for an option's value to be judged (nothing is sent or
# served: the base URL and the upstream are a closed port)
BASE = {
    "record": [
        "-o",
        "x.jsonl",
        "-p",
        "openai-chat",
        "-m",
        "m",
        "--prompt",
        "hi",
        "--base-url",
        CLOSED,
    ],
    "replay": [REC],
    "check": [REC, "--update"],
    "diff": [REC, REC],
    "proxy": ["--port", "0", "--upstream", CLOSED],
    "inspect": [REC],
    "ls": [REC],
    "report": [REC, "-o", "-"],
    "tape": ["build", "loop.yaml", "-o", "tape"],
}
TAIL = {"conform": ["--", "true"], "record": []}


def _named(value: str, text: str) -> bool:
    return re.search(rf"(?<![\w.-]){re.escape(value)}(?![\w-])", text) is not None


def test_the_options_with_choices_are_found() -> None:
    found = {(c, o) for c, o, _, _ in OPTIONS}
    assert {("replay", "--format"), ("record", "--provider"), ("proxy", "--view")} <= found
    assert {("replay", "--emit"), ("ls", "--sort"), ("record", "--view")} <= found
    assert len(found) >= 25


@pytest.mark.parametrize(("command", "option", "values"), [o[:3] for o in OPTIONS])
def test_a_value_outside_the_list_is_refused_naming_the_list(
    command: str, option: str, values: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    args = [command, *BASE.get(command, []), option, BOGUS, *TAIL.get(command, [])]
    result = CliRunner().invoke(app, args)
    said = result.stderr
    assert result.exit_code == 2, (args, said, result.stdout)
    assert BOGUS in said, said
    missing = [v for v in values if not _named(v, said)]
    assert not missing, f"{command} {option}: the refusal does not name {missing}: {said}"
    extra = {v for v in EVERY_VALUE if _named(v, said.split(BOGUS, 1)[1])} - set(values)
    assert not extra, f"{command} {option}: accepts {extra}, which --help does not list"


@pytest.mark.parametrize(("command", "option", "values", "text"), OPTIONS)
def test_the_help_names_every_choice_or_at_most_one(
    command: str, option: str, values: list[str], text: str
) -> None:
    named = [v for v in values if _named(v, text)]
    assert len(named) <= 1 or len(named) == len(values), (
        f"{command} {option}: its help names {named} of {values}: {text}"
    )


def _doc_mentions() -> list[tuple[str, str | None, str, list[str]]]:
    """(page, command or None, option, values) for each ``--option a|b|c`` the docs spell."""
    found = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        if doc.name == "cli.md":  # written from --help itself (test_docs_site)
            continue
        for span in re.findall(r"`([^`\n]+)`", doc.read_text(encoding="utf-8")):
            span = span.replace("\\|", "|")
            command = re.match(r"(?:streamtool )?(\w+) ", span)
            for option, listed in re.findall(r"(--[\w-]+)[ =]([\w.:-]+(?:\|[\w.:-]+)+)", span):
                where = command.group(1) if command and command.group(1) in COMMANDS else None
                found.append((doc.name, where, option, listed.split("|")))
    return found


def test_the_docs_give_an_option_the_values_it_takes() -> None:
    mentions = _doc_mentions()
    assert len(mentions) >= 5
    takes: dict[str, list[tuple[str, list[str]]]] = {}
    for command, option, values, _ in OPTIONS:
        takes.setdefault(option, []).append((command, values))
    wrong = []
    for page, command, option, listed in mentions:
        if option not in takes or any(v.isupper() for v in listed):  # N, NAME: not a choice list
            continue
        sets = {frozenset(values) for c, values in takes[option] if command in (None, c)}
        if sets and set(listed) not in sets:
            taken = " or ".join("|".join(sorted(s)) for s in sets)
            wrong.append(f"{page}: {option} {'|'.join(listed)} (it takes {taken})")
    assert not wrong, "\n".join(wrong)
