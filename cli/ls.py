"""``streamtool ls [PATHS]``: a table of recordings, sortable and filterable."""

import json
import os
import sys
from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .choices import check_quirk_id, check_sort, complete_quirk_id, complete_sort
from .main import app
from .store_paths import checked_out

if TYPE_CHECKING:
    from streamtool.core.drive.listing import Filters, Row

SORTS = "file, provider, api, model, end, duration_s, ttft_s, reads, tool_calls, errors, quirks"
# below this many recordings a listing is over before a bar would be worth drawing
PROGRESS_AT_LEAST = 50
SORT_CHOICES = "[" + SORTS.replace(", ", "|") + "]"


class Format(StrEnum):
    text = "text"
    json = "json"


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
        Format, typer.Option("--format", help="text (a table) or json (an array of rows).")
    ] = Format.text,
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
    fmt: Format,
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
    try:
        if fmt is Format.json:
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
    """One line per recording, columns aligned; long cells shortened to fit the width."""
    import shutil

    width = shutil.get_terminal_size((100, 24)).columns
    if base is not None and base != ".":
        sys.stdout.write(f"in {base}\n")
    header = ["file", "provider", "api", "model", "end", "dur s", "ttft s", "reads", "tools"]
    header += ["err", "quirks"]
    lines = [header]
    for r in rows:
        tools = ", ".join(dict.fromkeys(r.tool_calls))
        if len(r.tool_calls) > 1:
            tools = f"{len(r.tool_calls)}: {tools}"
        lines.append(
            [
                os.path.relpath(r.file, base) if base is not None else r.file,
                r.provider or "",
                r.api or "",
                r.model or "",
                r.end or "",
                "" if r.duration_s is None else f"{r.duration_s:.2f}",
                "" if r.ttft_s is None else f"{r.ttft_s:.2f}",
                str(r.reads),
                tools,
                str(len(r.errors)) if r.errors else "",
                ", ".join(r.quirks),
            ]
        )
    drop = set()
    if width < 120:
        drop.add(2)  # api
    if width < 90:
        drop.add(4)  # end
    keep = [i for i in range(len(header)) if i not in drop]
    lines = [[line[i] for i in keep] for line in lines]
    widths = [max(len(line[i]) for line in lines) for i in range(len(keep))]
    floors = {0: 16, 1: 8, 2: 8, 3: 10, 4: 8, 8: 8}
    flexible = {j: floors[i] for j, i in enumerate(keep) if i in floors}
    while True:
        used = sum(widths[:-1]) + 2 * (len(widths) - 1) + min(widths[-1], 16)
        over = used - width
        # the file name is what tells rows apart: the other columns give way first
        candidates = [j for j, floor in flexible.items() if widths[j] > floor and j != 0]
        if not candidates and 0 in flexible and widths[0] > flexible[0]:
            candidates = [0]
        if over <= 0 or not candidates:
            break
        j = max(candidates, key=lambda c: widths[c])
        widths[j] -= 1
    right = {j for j, i in enumerate(keep) if i in (5, 6, 7, 9)}
    for line in lines:
        cells = []
        for j, cell in enumerate(line[:-1]):
            cell = _fit(cell, widths[j], middle=j == 0)
            cells.append(cell.rjust(widths[j]) if j in right else cell.ljust(widths[j]))
        text = "  ".join([*cells, line[-1]]).rstrip()
        if len(text) > width:
            text = text[: width - 1] + "…"
        sys.stdout.write(text + "\n")
    sys.stdout.write(f"{len(rows)} recording{'s' if len(rows) != 1 else ''}\n")


def _fit(cell: str, width: int, middle: bool = False) -> str:
    """``cell`` cut to ``width``: at the end, or (file names) in the middle.

    A file name keeps its start and its end: recordings of one proxy session differ in their
    leading sequence number and share their model and extension, so neither end may go.
    """
    if len(cell) <= width:
        return cell
    if not middle:
        return cell[: width - 1] + "…"
    tail = (width - 1) // 2
    head = width - 1 - tail
    return cell[:head] + "…" + cell[len(cell) - tail :]
