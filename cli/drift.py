"""``streamtool drift TAPE``: send a tape's requests again (``--upstream URL --out NEW``) or read
another tape (``--against TAPE2``), and say what changed in meaning, exchange by exchange."""

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .errors import fail
from .main import app

if TYPE_CHECKING:
    from collections.abc import Callable

    from streamtool.core.outputs.drift import ExchangeDrift


class Format(StrEnum):
    text = "text"
    markdown = "markdown"
    json = "json"


class FailOn(StrEnum):
    break_ = "break"
    warn = "warn"


@app.command()
def drift(
    tape: Annotated[Path, typer.Argument(help="The tape (a folder with index.jsonl).")],
    upstream: Annotated[
        str | None,
        typer.Option(
            "--upstream",
            metavar="URL",
            help="Send every recorded request here again (keys from the environment, as record "
            "takes them; never written).",
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="With --upstream: the new tape to record into."),
    ] = None,
    against: Annotated[
        Path | None,
        typer.Option("--against", help="Compare with this tape instead (no network)."),
    ] = None,
    format_: Annotated[
        Format, typer.Option("--format", "-f", help="text, markdown (a PR body) or json.")
    ] = Format.text,
    fail_on: Annotated[
        FailOn, typer.Option("--fail-on", help="Exit 1 on this tier or a worse one.")
    ] = FailOn.break_,
    adopt: Annotated[
        str | None,
        typer.Option(
            "--adopt",
            metavar="all|N,N...",
            help="Replace these exchanges of TAPE (by number, or all) with the new recordings.",
        ),
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds to wait for each answer's next bytes.")
    ] = 120.0,
) -> None:
    """Record a tape's requests again and say what changed in meaning: break (an event type or
    field gone, a type changed, other tool calls, another finish, a new error), warn (new fields
    or event types, other text, usage or timing) or info (ids, timestamps, wording). Exit 1 on
    break (--fail-on warn: on warn too)."""
    from streamtool.core.drive.drift import adopt as adopt_into
    from streamtool.core.drive.drift import drift_tapes
    from streamtool.core.model.records import RecordingError
    from streamtool.core.outputs.drift import fails, to_json, to_markdown

    new = _new_tape(tape, upstream, out, against, timeout)
    seqs = _adopted(adopt)
    try:
        report, pairs = drift_tapes(tape, new)
    except RecordingError as exc:
        fail(str(exc))
    if format_ is Format.json:
        sys.stdout.write(json.dumps(to_json(report), ensure_ascii=False, indent=2) + "\n")
    elif format_ is Format.markdown:
        sys.stdout.write(to_markdown(report))
    else:
        _print(report)
    if adopt is not None:
        try:
            done = adopt_into(tape, new, pairs, seqs)
        except RecordingError as exc:
            fail(str(exc))
        typer.echo(f"{tape}: adopted {len(done)} exchange(s) {done}", err=True)
    if fails(report, fail_on.value):
        raise typer.Exit(1)


def _new_tape(
    tape: Path, upstream: str | None, out: Path | None, against: Path | None, timeout: float
) -> Path:
    """The tape to compare with: ``--against``'s, or the one ``--upstream`` records into."""
    from streamtool.core.recording.tape_index import read_index

    if not (tape / "index.jsonl").is_file():
        fail(f"{tape}: not a tape (no index.jsonl)")
    if (against is None) == (upstream is None):
        fail("give --upstream URL --out NEW_TAPE, or --against TAPE2")
    if against is not None:
        if not (against / "index.jsonl").is_file():
            fail(f"{against}: not a tape (no index.jsonl)")
        return against
    if out is None:
        fail("--upstream needs --out NEW_TAPE (where the new recordings go)")
    assert upstream is not None
    from streamtool.core.model.records import RecordingError
    from streamtool.core.net.drift_record import rerecord

    try:
        total = len(read_index(tape))
        done = rerecord(tape, upstream, out, timeout=timeout, on_done=_progress(total))
    except (ValueError, RecordingError) as exc:
        fail(str(exc))
    for item in done:
        if item.problem is not None:
            typer.echo(f"{tape}: exchange {item.entry.seq} not sent: {item.problem}", err=True)
    return out


def _progress(total: int) -> "Callable[[object], None]":
    count = [0]

    def seen(item: object) -> None:
        count[0] += 1
        if sys.stderr.isatty():
            sys.stderr.write(f"\rrecorded {count[0]}/{total}")
            if count[0] == total:
                sys.stderr.write("\n")
            sys.stderr.flush()

    return seen


def _adopted(value: str | None) -> set[int] | None:
    if value is None or value == "all":
        return None
    try:
        return {int(part) for part in value.split(",") if part.strip()}
    except ValueError:
        fail(f"--adopt {value!r}: expected all, or exchange numbers such as 1,3")


def _print(report: "list[ExchangeDrift]") -> None:
    from rich.console import Console
    from rich.table import Table

    from streamtool.core.outputs.drift import NONE, headline

    console = Console(highlight=False)
    styles = {"break": "bold red", "warn": "yellow", "info": "dim"}
    for e in report:
        if e.tier == NONE:
            continue
        seq = f"#{e.seq} " if e.seq is not None else ""
        console.print(f"{seq}{e.file}: [{styles[e.tier]}]{e.tier}[/]")
        if e.problem is not None:
            console.print(f"  could not compare: {e.problem}", markup=False)
            continue
        table = Table(box=None, pad_edge=False, show_header=True, header_style="bold")
        for name in ("tier", "what", "where", "before", "after"):
            table.add_column(name, overflow="fold")
        for c in e.changes:
            before = "" if c.before is None else json.dumps(c.before, ensure_ascii=False)
            after = "" if c.after is None else json.dumps(c.after, ensure_ascii=False)
            table.add_row(c.tier, c.kind, c.path, before, after, style=styles[c.tier])
        console.print(table)
    console.print(headline(report), markup=False)
