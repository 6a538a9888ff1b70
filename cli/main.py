"""The ``streamtool`` command.

Each command lives in its own module and registers itself on :data:`app` with
``@app.command()``. :data:`COMMANDS` names every command's module and its one-line help: only the
module of the command being run is imported, so ``streamtool --help`` and every command start
without loading the others (or the SDKs, the HTTP stack, pydantic). To add a command, write its
module and add one line to :data:`COMMANDS`.

The command modules, and :mod:`.choices` (the options' checks and completions), do without
``from __future__ import annotations``: typer reads the signature of the command being run, and
of its options' callbacks, at every start, and an annotation written as text it compiles and
evaluates (about 10 ms of a small replay). A name imported for type checking only is quoted.
"""

from typing import Annotated, Any

import typer
from typer.core import CompletionItem, TyperGroup

from .params import plain_help_option, plain_params

# command name -> (module under streamtool.cli, one-line help shown by ``streamtool --help``)
COMMANDS: dict[str, tuple[str, str]] = {
    "record": ("record", "Send one streaming request and record the response."),
    "replay": ("replay", "Replay a recording through a converter and a tool-call handler."),
    "check": ("check", "Replay recordings and compare them with their golden files."),
    "diff": ("diff", "Compare two recordings, or one through two parsers or converters."),
    "serve": ("serve", "Answer the provider endpoints with recorded streams, byte for byte."),
    "proxy": ("proxy", "Forward an agent's traffic to its provider, recording every exchange."),
    "inspect": ("inspect", "Show how a stream arrived: reads, timing, stalls and quirk lint."),
    "ls": ("ls", "List recordings: provider, model, timing, tool calls, errors, quirks."),
    "report": ("report", "Write a self-contained HTML report of a recording (with a player)."),
    "conform": ("conform", "Check a stream client against recordings cut every way."),
    "mutate": ("mutate", "Apply catalogue quirks to a real recording: a new recording."),
    "drift": ("drift", "Record a tape's requests again and say what changed in meaning."),
    "import": ("import_tape", "Import vcrpy cassettes, HAR files and mitmproxy flows as a tape."),
    "export": ("export", "Write a tape as a vcrpy cassette."),
    "completion": ("completion", "Print the shell completion script (bash, zsh, fish)."),
    "samples": ("samples", "List the sample recordings installed with streamtool."),
    "converters": ("plugins", "List the converters and parsers installed, and where from."),
    "tape": (
        "tape",
        "Build tapes from scripts; push, pull, list, verify, collect shared tapes.",
    ),
    "demo": ("demo", "Serve a sample, record it over HTTP and show it as the live tree, offline."),
}


class LazyGroup(TyperGroup):
    """A group whose commands are imported when they are run, listed from :data:`COMMANDS`."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        plain_params(self)

    def get_help_option(self, ctx: Any) -> Any:
        return plain_help_option(super().get_help_option(ctx))

    def list_commands(self, ctx: Any) -> list[str]:
        return [*COMMANDS, *(name for name in self.commands if name not in COMMANDS)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = self.commands.get(cmd_name)
        if command is None and cmd_name in COMMANDS:
            command = load_command(cmd_name)
            self.commands[cmd_name] = command
        return command

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        name = args[0] if args else ""
        unknown = name not in COMMANDS and name not in self.commands
        if unknown and name[:1].isalnum() and not ctx.resilient_parsing:
            # suggest from every command, not only the ones imported so far
            from difflib import get_close_matches

            matches = get_close_matches(name, self.list_commands(ctx))
            if matches:
                suggestions = ", ".join(repr(m) for m in matches)
                ctx.fail(f"No such command {name!r}. Did you mean {suggestions}?")
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        rows = []
        for name in self.list_commands(ctx):
            if name in COMMANDS:
                rows.append((name, COMMANDS[name][1]))
            else:
                command = self.commands[name]
                if not command.hidden:
                    rows.append((name, command.get_short_help_str(formatter.width)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def shell_complete(self, ctx: Any, incomplete: str) -> list[Any]:
        # command names come from the registry: completing one imports no command module
        items = [
            CompletionItem(name, help=help)
            for name, (_, help) in COMMANDS.items()
            if name.startswith(incomplete)
        ]
        if incomplete.startswith("-"):
            items.extend(super(TyperGroup, self).shell_complete(ctx, incomplete))
        return items


def command_info(name: str) -> Any:
    """Import the command's module (it registers itself on :data:`app`); its ``CommandInfo``
    (a group of commands, as ``tape``: its ``TyperInfo``)."""
    import importlib

    from typer.main import get_command_name

    importlib.import_module(f"{__package__}.{COMMANDS[name][0]}")
    for info in app.registered_commands:
        callback_name = info.callback.__name__ if info.callback else ""
        if (info.name or get_command_name(callback_name)) == name:
            return info
    for group in app.registered_groups:
        if group.name == name:
            return group
    raise LookupError(f"module {COMMANDS[name][0]!r} registers no command {name!r}")


def load_command(name: str) -> Any:
    """The command ``name``, built from what its module registered."""
    from typer.main import TyperInfo, get_command_from_info, get_group_from_info

    info = command_info(name)
    command: Any
    if isinstance(info, TyperInfo):
        command = get_group_from_info(
            info,
            pretty_exceptions_short=app.pretty_exceptions_short,
            rich_markup_mode=app.rich_markup_mode,
            suggest_commands=True,
        )
    else:
        command = get_command_from_info(
            info,
            pretty_exceptions_short=app.pretty_exceptions_short,
            rich_markup_mode=app.rich_markup_mode,
        )
    command.short_help = command.short_help or COMMANDS[name][1]
    return plain_params(command)


app = typer.Typer(
    name="streamtool",
    cls=LazyGroup,
    help="Record, replay, inspect and diff the server-sent-event streams of LLM providers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _show_version(value: bool) -> None:
    if value:
        from streamtool.core import __version__

        typer.echo(f"streamtool {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            "-V",
            callback=_show_version,
            is_eager=True,
            help="Show the version and exit.",
        ),
    ] = False,
) -> None:
    """Record, replay, inspect and diff the server-sent-event streams of LLM providers."""


COMPLETE_VAR = "_STREAMTOOL_COMPLETE"
GC_YOUNG = 10_000  # allocations between two collections of the youngest generation
OUTPUT_ERRORS = "streamtool-output"  # how standard output writes what its encoding cannot


def _unencodable(exc: UnicodeError) -> tuple[str | bytes, int]:
    """A file name's bytes that are not UTF-8 (which Python keeps as surrogates, U+DC80 to
    U+DCFF) are written as the bytes they are, as ``ls`` writes them; any other character the
    output's encoding cannot write (a lone surrogate a recording's JSON escapes) as U+FFFD, or
    ``?`` where that cannot be written either."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    text = exc.object[exc.start : exc.end]
    if all("\udc80" <= c <= "\udcff" for c in text):
        return bytes(ord(c) - 0xDC00 for c in text), exc.end
    replacement = "\ufffd" if exc.encoding.lower().startswith("utf") else "?"
    return replacement * len(text), exc.end


PYPROJECT = "pyproject.toml"


def find_pyproject(start: str | None = None) -> str | None:
    """The ``pyproject.toml`` of ``start`` (the current folder), else of the nearest folder
    above it that has one, or ``None``: a few ``stat`` calls, made at every command's start
    before the settings (:mod:`.settings`) are imported, only where there is a file."""
    import os

    folder = os.path.abspath(start or os.getcwd())
    while True:
        candidate = os.path.join(folder, PYPROJECT)
        if os.path.isfile(candidate):
            return candidate
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def main() -> None:
    import atexit
    import gc
    import os

    # the process is about to end: its objects need not be freed one by one. Without this, the
    # interpreter's exit walks every object in cyclic garbage collections while it takes the
    # modules apart: 10-20 ms of every command (a file left open is still flushed and closed,
    # by its reference count).
    atexit.register(gc.freeze)
    # a replay makes many short-lived objects; the young generation is collected every 10,000
    # allocations instead of every 700 (each collection walks the events of the batch in hand:
    # about 2% of a large replay)
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(GC_YOUNG, older, oldest)
    # any file name, any recording: the output never fails on a character it cannot write
    import codecs
    import sys

    codecs.register_error(OUTPUT_ERRORS, _unencodable)
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors=OUTPUT_ERRORS)
    if os.environ.get(COMPLETE_VAR):
        # a shell asks for completions (``streamtool completion SHELL`` installs the script)
        from typer.completion import completion_init

        completion_init()
        app(complete_var=COMPLETE_VAR)
        return
    pyproject = find_pyproject()
    if pyproject is None:  # no project file: no defaults, and the settings are not imported
        app(complete_var=COMPLETE_VAR)
        return
    from .settings import ProjectDefaults

    # the options' defaults of the project's pyproject.toml ([tool.streamtool])
    app(complete_var=COMPLETE_VAR, default_map=ProjectDefaults(COMMANDS, pyproject))
