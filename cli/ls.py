"""``streamtool ls [PATHS]``: a table of recordings, sortable and filterable."""

import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from .choices import check_quirk_id, check_sort, complete_quirk_id, complete_sort
from .main import app
from .store_paths import checked_out
from .text_or_json import TextOrJson

if TYPE_CHECKING:
    from streamtool.core.drive.listing import Filters, Row

SORTS = "file, provider, api, model, end, duration_s, ttft_s, reads, tool_calls, errors, quirks"
# below this many recordings a listing is over before a bar would be worth drawing
PROGRESS_AT_LEAST = 50
SORT_CHOICES = "[" + SORTS.replace(", ", "|") + "]"


@app.command(name="ls")
def ls(
    paths: Annotated[
        list[str] | None,
        typer.Argument(
            help="Recordings or folders (searched for *.jsonl and *.sse); default: the current "
            "folder.",
            show_default=False,
        ),
    ] = None,
    sort: Annotated[
        str,
        typer.Option(
            "--sort",
            metavar=SORT_CHOICES,
            callback=check_sort,
            autocompletion=complete_sort,
            help=f"Column to sort by: {SORTS}.",
        ),
    ] = "file",
    reverse: Annotated[bool, typer.Option("--reverse", "-r", help="Sort descending.")] = False,
    has_quirk: Annotated[
        str | None,
        typer.Option(
            "--has-quirk",
            callback=check_quirk_id,
            autocompletion=complete_quirk_id,
            help="Only recordings with this quirk id.",
        ),
    ] = None,
    has_error: Annotated[
        bool, typer.Option("--has-error", help="Only recordings with an error.")
    ] = False,
    tool: Annotated[
        str | None, typer.Option("--tool", help="Only recordings that call this tool.")
    ] = None,
    provider: Annotated[
        str | None, typer.Option("--provider", help="Only recordings of this provider.")
    ] = None,
    fmt: Annotated[
        TextOrJson, typer.Option("--format", help="text (a table) or json (an array of rows).")
    ] = TextOrJson.text,
) -> None:
    """List recordings: provider, API, model, end, duration, TTFT, reads, tool calls, quirks."""
    from streamtool.core.drive.listing import Filters, sort_key

    try:
        key = sort_key(sort)
    except ValueError as exc:
        sys.stderr.write(f"streamtool: error: {exc}\n")
        raise typer.Exit(2) from None
    filters = Filters(provider=provider, has_quirk=has_quirk, has_error=has_error, tool=tool)
    with checked_out(paths or ["."]) as (targets, shown, _):
        _list(targets, shown, filters, key, reverse, fmt)


def _list(
    targets: list[str],
    shown: "Callable[[str], str]",
    filters: "Filters",
    key: "Callable[[Row], Any]",
    reverse: bool,
    fmt: TextOrJson,
) -> None:
    """The listing of ``targets`` (local paths), each file shown as ``shown`` names it."""
    from streamtool.core.drive.find import find_recordings
    from streamtool.core.drive.listing import read_row

    from .progress import progress

    problems: list[str] = []

    def on_problem(message: str) -> None:
        problems.append(message)
        sys.stderr.write(f"streamtool: error: {shown(message)}\n")

    found = list(find_recordings(targets))
    rows = []
    with progress(len(found), "listing", at_least=PROGRESS_AT_LEAST) as advance:
        for path, problem in found:
            if problem is not None:
                on_problem(problem)
            else:
                row = read_row(path, filters)
                if row is not None:
                    row.file = shown(row.file)
                    rows.append(row)
            advance(1)
    for row in rows:
        if row.problem is not None:
            problems.append(row.problem)
            sys.stderr.write(f"streamtool: error: {shown(row.problem)}\n")
    good = sorted((r for r in rows if r.problem is None), key=key, reverse=reverse)
    if problems and not good:  # nothing to list: the errors said why, no empty table
        raise typer.Exit(2)
    try:
        if fmt is TextOrJson.json:
            sys.stdout.write(
                json.dumps([r.to_dict() for r in good], ensure_ascii=False, indent=1) + "\n"
            )
        else:
            base = targets[0] if len(targets) == 1 and os.path.isdir(targets[0]) else None
            base = shown(base) if base is not None else None
            _table(good, base)
        sys.stdout.flush()
    except BrokenPipeError:
        sys.stderr.close()
        raise typer.Exit(0) from None
    if problems:
        raise typer.Exit(2)


def _table(rows: "list[Row]", base: str | None) -> None:
    """One row per recording. At the terminal's width (or COLUMNS): the columns that matter
    least go first, file names lose their middle but keep what tells them apart, tool and quirk
    lists go on more lines; off a terminal every row is whole, on one line."""
    from .fit import Col, available_width, build_table, make_console, print_plain

    width = available_width()
    if base is not None and base != ".":
        sys.stdout.write(f"in {base}\n")

    def num(value: float | None) -> str:
        return "" if value is None else f"{value:.2f}"

    def listed(items: list[str]) -> str:  # several: their count first, seen even when cut
        names = ", ".join(dict.fromkeys(items))
        return f"{len(items)}: {names}" if len(items) > 1 else names

    right: Literal["right"] = "right"
    columns = [
        Col("file", [os.path.relpath(r.file, base) if base else r.file for r in rows],
            minimum=24, grow=0, ample=32, names=True),
        Col("provider", [r.provider or "" for r in rows], minimum=8, grow=4, drop=4),
        Col("api", [r.api or "" for r in rows], minimum=8, grow=6, drop=1),
        Col("model", [r.model or "" for r in rows], minimum=12, grow=2, ample=20, names=True),
        Col("end", [r.end or "" for r in rows], minimum=8, grow=5, drop=5),
        Col("dur s", [num(r.duration_s) for r in rows], justify=right, drop=2),
        Col("ttft s", [num(r.ttft_s) for r in rows], justify=right, drop=6),
        Col("reads", [str(r.reads) for r in rows], justify=right, drop=3),
        Col("tools", [listed(r.tool_calls) for r in rows], minimum=10, grow=3, ample=24),
        Col("err", [str(len(r.errors)) if r.errors else "" for r in rows], justify=right),
        Col("quirks", [listed(r.quirks) for r in rows], minimum=12, grow=1, ample=30),
    ]  # fmt: skip
    if any(r.imported for r in rows):  # imported: its reads and timing unknown
        columns.append(Col("imported", [r.imported or "" for r in rows], minimum=8, drop=7))
    if rows:
        table, used = build_table(columns, width)
        print_plain(make_console(width, used), table)
    sys.stdout.write(f"{len(rows)} recording{'s' if len(rows) != 1 else ''}\n")
