"""``streamtool inspect FILE...``: how a stream arrived (reads, timing, stalls), and its lint."""

import sys
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .choices import (
    check_fail_on,
    complete_fail_on,
    validate_fail_on,
)
from .errors import USAGE_ERRORS, fail, pipe_console, warn
from .main import app
from .params import ConverterOption, HandlerOption, no_color_option
from .store_paths import checked_out

if TYPE_CHECKING:
    from rich.console import Console

    from streamtool.core.outputs.inspect import Inspector, ReadPoints


class Format(StrEnum):
    text = "text"
    json = "json"
    junit = "junit"
    github = "github"


SEVERITY_STYLE = {"error": "bold red", "warn": "yellow", "info": "cyan"}
BLOCKS = " ▁▂▃▄▅▆▇█"


def _stall(value: float) -> float:
    if value != value or value <= 0:
        raise typer.BadParameter("--stall must be a number of seconds > 0")
    return value


@app.command()
def inspect(
    paths: Annotated[
        list[str],
        typer.Argument(
            help="Recordings, raw bodies or folders (searched for *.jsonl and *.sse); - reads "
            "standard input.",
            show_default=False,
        ),
    ],
    reads: Annotated[
        bool, typer.Option("--reads", help="Also print the table of every network read.")
    ] = False,
    stall: Annotated[
        float,
        typer.Option(
            "--stall", callback=_stall, help="A gap longer than this (seconds) is a stall."
        ),
    ] = 1.0,
    fail_on: Annotated[
        str | None,
        typer.Option(
            "--fail-on",
            callback=validate_fail_on,
            autocompletion=complete_fail_on,
            help="Exit 1 when a quirk of this severity or worse is met (error, warn, info; "
            "error also counts stream errors), or one of these quirk ids / error kinds "
            "(comma-separated).",
        ),
    ] = None,
    fmt: Annotated[
        Format,
        typer.Option(
            "--format",
            help="text, json (one object per file, one per line), junit (JUnit XML) or github "
            "(GitHub Actions annotations).",
        ),
    ] = Format.text,
    converter: ConverterOption = "auto",
    parser: HandlerOption = None,
    no_color: Annotated[bool, no_color_option()] = False,
) -> None:
    """Show how a stream arrived: facts, timing, a timeline of the reads, and the quirk lint."""
    from streamtool.core.converters import check_converter_name
    from streamtool.core.drive.find import find_recordings
    from streamtool.core.drive.inspect_file import inspect_file
    from streamtool.core.handlers import check_parser_name, default_parser
    from streamtool.core.outputs.inspect import findings_failing, json_pieces

    wanted = check_fail_on(fail_on)
    parser_name = parser or default_parser()
    try:
        check_converter_name(converter)
        check_parser_name(parser_name)
    except USAGE_ERRORS as exc:
        fail(str(exc))
    with checked_out(paths) as (local, shown, _):
        console = _console(no_color) if fmt is Format.text else None
        ci = _ci_report(fmt)
        unusable = failed = 0
        first = True
        try:
            for path, problem in find_recordings(local):
                if problem is not None:
                    sys.stderr.write(f"streamtool: error: {shown(problem)}\n")
                    unusable += 1
                    if ci is not None:
                        ci.unusable(path, problem)
                    continue
                try:
                    # the reads' facts are printed from a spool: memory does not grow with them
                    inspector = inspect_file(
                        path,
                        converter=converter,
                        parser=parser_name,
                        stall=stall,
                        keep_reads=0,
                        spool=reads or console is None,
                    )
                except USAGE_ERRORS as exc:
                    message = str(exc)
                    if not message.startswith(path) and not message.startswith("<stdin>"):
                        message = f"{path}: {message}"
                    sys.stderr.write(f"streamtool: error: {shown(message)}\n")
                    unusable += 1
                    if ci is not None:
                        ci.unusable(path, message)
                    continue
                result = inspector.result(with_reads=False)
                result["source"] = shown(result["source"])
                hits = findings_failing(result, wanted) if wanted else []
                if hits:
                    failed += 1
                if ci is not None:
                    ci.add(result, hits)
                elif console is None:
                    sys.stdout.writelines(json_pieces(result, inspector.read_texts()))
                else:
                    if not first:
                        console.print()
                    first = False
                    render(console, result, inspector, show_reads=reads)
                    if hits:
                        console.print(
                            f"[bold red]--fail-on met:[/] {', '.join(dict.fromkeys(hits))}",
                            highlight=False,
                        )
                if result["facts"]["end_reason"] is None:
                    warn(f"{result['source']}: no end record (the recording was cut off)")
            if ci is not None:
                sys.stdout.write(ci.render(fmt.value))
        except BrokenPipeError:
            sys.stderr.close()
            raise typer.Exit(0) from None
        sys.stdout.flush()
        if unusable:
            raise typer.Exit(2)
        if failed:
            raise typer.Exit(1)


def _ci_report(fmt: Format) -> Any:
    """What collects the files for --format junit or github (None for text and json)."""
    if fmt not in (Format.junit, Format.github):
        return None
    from streamtool.core.outputs.ci_report import InspectReport

    return InspectReport()


def _console(no_color: bool) -> "Console":
    import os

    no_color = no_color or bool(os.environ.get("NO_COLOR"))
    width = None
    if not sys.stdout.isatty():
        try:
            width = int(os.environ.get("COLUMNS", "")) or 80
        except ValueError:
            width = 80
    return pipe_console(
        file=sys.stdout,
        highlight=False,
        no_color=no_color,
        color_system=None if no_color else "auto",
        width=width,
        soft_wrap=False,
    )


# -- rendering ---------------------------------------------------------------------------------
def _s(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f} s"


def _pack(console: "Console", pieces: list[str], indent: int = 2) -> None:
    """Print markup pieces two spaces apart, starting a new line where the next would not fit."""
    from rich.text import Text

    width = max(20, console.width)
    line: list[str] = []
    used = indent
    for piece in pieces:
        n = Text.from_markup(piece).cell_len
        if line and used + 2 + n > width:
            console.print(" " * indent + "  ".join(line), overflow="fold")
            line, used = [], indent
        used += n + (2 if line else 0)
        line.append(piece)
    if line:
        console.print(" " * indent + "  ".join(line), overflow="fold")


def render(
    console: "Console", result: dict[str, Any], inspector: "Inspector", *, show_reads: bool = False
) -> None:
    from rich.markup import escape
    from rich.padding import Padding

    from streamtool.core.model.records import read_noun

    from .tree_model import imported_line

    facts = result["facts"]
    timing = result["timing"]
    unit = read_noun(bool(facts.get("websocket")))
    first = "the upgrade" if facts.get("websocket") else "request sent"  # what read 0 waited for
    console.print(f"[bold]{escape(str(result['source']))}[/]")
    end = facts["end_reason"] or "cut off (no end record)"
    if facts["end_error"]:
        end += f" ({facts['end_error']})"
    pairs = [
        ("provider", facts["provider"]),
        ("api", facts["api"]),
        ("model", facts["model"]),
        ("converter", facts["converter"]),
        ("parser", facts["parser"]),
        ("endpoint", facts["endpoint"]),
        ("status", facts["status"]),
        ("recorded", facts["recorded_at"]),
        ("end", end),
        ("finish", facts["finish_reason"]),
    ]
    _pack(console, [f"[dim]{k}[/] {escape(str(v))}" for k, v in pairs if v is not None])
    if facts["raw_body"] and timing["ttfb_s"] is None:
        console.print("  [dim]a raw body: no timings were recorded[/]")
    told = imported_line(facts["imported"])
    if told:
        console.print(f"  [dim]{escape(told)}[/]")

    console.print("[bold]timing[/]")
    rate = (
        f"{timing['tokens_per_s']:.1f} tokens/s"
        if timing["tokens_per_s"] is not None
        else f"{timing['chars_per_s']:.1f} chars/s"
        if timing["chars_per_s"] is not None
        else "-"
    )
    _pack(
        console,
        [
            f"TTFB {_s(timing['ttfb_s'])}",
            f"TTFT {_s(timing['ttft_s'])}",
            f"duration {_s(timing['duration_s'])}",
            f"{unit}s {timing['reads']}",
            f"bytes {timing['bytes']:,}",
            f"events {timing['sse_events']}",
            f"comments {timing['comments']}",
            f"gaps p50 {_s(timing['gap_p50_s'], 3)}",
            f"p95 {_s(timing['gap_p95_s'], 3)}",
            f"max {_s(timing['gap_max_s'], 3)}",
            f"first tool fragment {_s(timing['first_tool_fragment_s'])}",
            f"{rate} while generating ({_s(timing['generating_s'])})",
        ],
    )
    stalls = timing["stalls"]
    if stalls:
        console.print(f"  [red]stalls[/] (gaps over {timing['stall_threshold_s']:g} s):")
        for s in stalls:
            before = first if s["read"] == 0 else f"{unit} {s['read'] - 1}"
            console.print(
                f"    [red]{s['gap']:.2f} s[/] after {before}, {unit} {s['read']} at "
                f"{s['t']:.2f} s brought: {escape(s['after'])}"
            )
        if timing["stalls_total"] > len(stalls):
            console.print(f"    and {timing['stalls_total'] - len(stalls):,} more stalls")
    else:
        console.print(f"  no stall (no gap over {timing['stall_threshold_s']:g} s)")
    points = inspector.points
    if len(points):
        console.print("[bold]timeline[/] [dim](bytes per moment; red: stalls)[/]")
        for text in timeline(points, max(20, console.width - 2), timing["stall_threshold_s"]):
            console.print("  " + text, highlight=False)
    if show_reads:
        from .reads_table import print_reads

        names = {c["id"]: c["name"] for c in result["tool_calls"]}
        print_reads(
            console,
            inspector.read_rows,
            names,
            timing["stall_threshold_s"],
            messages=bool(facts.get("websocket")),
        )
    quirks = result["quirks"]
    console.print(f"[bold]quirks[/] ({len(quirks)})" if quirks else "[bold]quirks[/]: none")
    for q in quirks:
        where = "end" if q["read"] is None else f"{unit} {q['read']}"
        if q["t"] is not None:
            where += f" @ {q['t']:.2f} s"
        style = SEVERITY_STYLE.get(q["severity"], "")
        console.print(f"  [{style}]{q['severity']:<5}[/] [bold]{q['id']}[/] [dim]{where}[/]")
        console.print(Padding(escape(q["explanation"]), (0, 0, 0, 8)))
        console.print(Padding(f"[dim]{escape(q['reference'])} · {q['doc']}[/]", (0, 0, 0, 8)))
    errors = result["errors"]
    if errors:
        console.print(f"[bold red]errors[/] ({len(errors)})")
        for e in errors:
            where = "end" if e["read"] is None else f"{unit} {e['read']}"
            console.print(f"  [red]{escape(e['kind'])}[/] [dim]{where}[/] {escape(e['message'])}")


def timeline(points: "ReadPoints", width: int, stall: float) -> list[str]:
    """Rich-markup lines: bytes over time as a sparkline ``width`` wide, stalls marked below."""
    timed = points.timed()
    n = len(points)
    label = 7
    cols = max(10, width - label)
    times = points.times
    if timed:
        t_end = max(times) or 1e-9

        def column(i: int) -> int:
            return min(cols - 1, int(times[i] / t_end * (cols - 1)))
    else:
        t_end = None

        def column(i: int) -> int:
            return min(cols - 1, i * cols // n)

    volume = [0] * cols
    marks = [" "] * cols
    prev = 0
    for i, (_, size, gap) in enumerate(points):
        pos = column(i)
        volume[pos] += size
        if gap is not None and gap > stall:
            for c in range(0 if i == 0 else prev + 1, pos):
                marks[c] = "─"
            marks[pos] = "┤"
        prev = pos
    top = max(volume) or 1
    spark = "".join(
        BLOCKS[0] if v == 0 else BLOCKS[max(1, round(v / top * (len(BLOCKS) - 1)))] for v in volume
    )
    lines = [f"{'bytes':<{label}}[green]{spark}[/]"]
    mark_text = "".join(marks)
    if mark_text.strip():
        lines.append(f"{'stalls':<{label}}[red]{mark_text}[/]")
    if t_end is not None:
        left, right = "0 s", f"{t_end:.2f} s"
    else:
        left, right = "read 0", f"read {n - 1}"
    lines.append(f"{'':<{label}}[dim]{left}{right:>{cols - len(left)}}[/]")
    return lines
