"""The command-line reference (``docs/cli.md``), written from the commands themselves.

``python -m streamtool.cli.reference > docs/cli.md`` regenerates it; a test keeps the file equal
to what this module writes, so that the reference cannot drift from the options the commands
take.
"""

from __future__ import annotations

from typing import Any

import typer

from .main import COMMANDS, app


def _rows(command: Any, ctx: Any) -> list[str]:
    rows = []
    for param in command.params:
        if isinstance(param, typer.core.TyperArgument):
            continue
        if param.hidden:
            continue
        names = ", ".join(f"`{n}`" for n in [*param.opts, *param.secondary_opts])
        kind = "" if param.is_flag else (param.metavar or param.display_type(ctx) or "")
        text = " ".join((param.help or "").split()).replace("|", "\\|")
        default = param.default
        if (
            not param.is_flag
            and default not in (None, "", (), [])
            and param.show_default is not False
        ):
            value = getattr(default, "value", default)
            text += f" Default: `{value}`."
        kind = kind.replace("|", "\\|")
        rows.append(f"| {names} | {f'`{kind}`' if kind else ''} | {text} |")
    return rows


def _usage(command: Any, ctx: Any, name: str) -> str:
    pieces = command.collect_usage_pieces(ctx)
    return f"streamtool {name} {' '.join(pieces)}".rstrip()


def reference_markdown() -> str:
    group = typer.main.get_command(app)
    root = typer.Context(group, info_name="streamtool")
    lines = [
        "# Command-line reference",
        "",
        "Every command and option, as `streamtool COMMAND -h` shows them. This page is written",
        "from the commands themselves (`python -m streamtool.cli.reference > docs/cli.md`); a",
        "test keeps it current.",
        "",
    ]
    for name in COMMANDS:
        command = group.get_command(root, name)  # type: ignore[attr-defined]
        ctx = typer.Context(command, info_name=name, parent=root)
        lines += _section(command, ctx, name, "##")
        # a group of commands (tape): each of its commands under it
        for sub_name in getattr(command, "commands", {}):
            sub = command.commands[sub_name]
            sub_ctx = typer.Context(sub, info_name=sub_name, parent=ctx)
            lines += _section(sub, sub_ctx, f"{name} {sub_name}", "###")
    return "\n".join(lines).rstrip("\n") + "\n"


def _section(command: Any, ctx: Any, name: str, level: str) -> list[str]:
    lines = [f"{level} `{name}`", ""]
    doc = (command.help or "").strip()
    if doc:
        lines += [doc, ""]
    lines += ["```text", _usage(command, ctx, name), "```", ""]
    rows = _rows(command, ctx)
    if rows:
        lines += ["| option | takes | meaning |", "|---|---|---|", *rows, ""]
    return lines


if __name__ == "__main__":  # pragma: no cover - the generator of docs/cli.md
    import sys

    sys.stdout.write(reference_markdown())
