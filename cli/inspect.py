"""``streamtool inspect FILE...``: how a stream arrived (reads, timing, stalls), and its lint."""

import json
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
from .params import converter_option, no_color_option, parser_option
from .store_paths import checked_out

if TYPE_CHECKING:
    from rich.console import Console


class Format(StrEnum):
    text = "text"
    json = "json"


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
        typer.Option("--format", help="text, or json (one object per file, one per line)."),
    ] = Format.text,
    converter: Annotated[
        str,
        converter_option("Wire API converter: auto, or a converter name."),
    ] = "auto",
    parser: Annotated[
        str | None,
        parser_option("Handler (default: $AUTOBYTEUS_STREAM_PARSER, else api_tool_call)."),
    ] = None,
    no_color: Annotated[bool, no_color_option()] = False,
) -> None:
    """Show how a stream arrived: facts, timing, a timeline of the reads, and the quirk lint."""
    from streamtool.core.converters import check_converter_name
    from streamtool.core.drive.find import find_recordings
    from streamtool.core.drive.inspect_file import inspect_file
    from streamtool.core.handlers import check_parser_name, default_parser
    from streamtool.core.outputs.inspect import findings_failing

    wanted = check_fail_on(fail_on)
    parser_name = parser or default_parser()
    try:
        check_converter_name(converter)
        check_parser_name(parser_name)
    except USAGE_ERRORS as exc:
        fail(str(exc))
    with checked_out(paths) as (local, shown, _):
        console = _console(no_color) if fmt is Format.text else None
        unusable = failed = 0
        first = True
        try:
            for path, problem in find_recordings(local):
                if problem is not None:
                    sys.stderr.write(f"streamtool: error: {shown(problem)}\n")
                    unusable += 1
                    continue
                try:
                    inspector = inspect_file(
                        path, converter=converter, parser=parser_name, stall=stall
                    )
                except USAGE_ERRORS as exc:
                    message = str(exc)
                    if not message.startswith(path) and not message.startswith("<stdin>"):
                        message = f"{path}: {message}"
                    sys.stderr.write(f"streamtool: error: {shown(message)}\n")
                    unusable += 1
                    continue
                result = inspector.result()
                result["source"] = shown(result["source"])
                hits = findings_failing(result, wanted) if wanted else []
                if hits:
                    failed += 1
                if console is None:
                    sys.stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
                else:
                    if not first:
                        console.print()
                    first = False
                    render(console, result, show_reads=reads)
                    if hits:
                        console.print(
                            f"[bold red]--fail-on met:[/] {', '.join(dict.fromkeys(hits))}",
                            highlight=False,
                        )
                if result["facts"]["end_reason"] is None:
                    warn(f"{result['source']}: no end record (the recording was cut off)")
        except BrokenPipeError:
            sys.stderr.close()
            raise typer.Exit(0) from None
        sys.stdout.flush()
        if unusable:
            raise typer.Exit(2)
        if failed:
            raise typer.Exit(1)


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


def render(console: "Console", result: dict[str, Any], *, show_reads: bool = False) -> None:
    from rich.markup import escape
    from rich.padding import Padding

    facts = result["facts"]
    timing = result["timing"]
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
            f"reads {timing['reads']}",
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
            before = "request sent" if s["read"] == 0 else f"read {s['read'] - 1}"
            console.print(
                f"    [red]{s['gap']:.2f} s[/] after {before}, read {s['read']} at "
                f"{s['t']:.2f} s brought: {escape(s['after'])}"
            )
    else:
        console.print(f"  no stall (no gap over {timing['stall_threshold_s']:g} s)")
    reads = result["reads"]
    if reads:
        console.print("[bold]timeline[/] [dim](bytes per moment; red: stalls)[/]")
        for text in timeline(reads, max(20, console.width - 2), timing["stall_threshold_s"]):
            console.print("  " + text, highlight=False)
    if show_reads:
        console.print(reads_table(reads, result))
    quirks = result["quirks"]
    console.print(f"[bold]quirks[/] ({len(quirks)})" if quirks else "[bold]quirks[/]: none")
    for q in quirks:
        where = "end" if q["read"] is None else f"read {q['read']}"
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
            where = "end" if e["read"] is None else f"read {e['read']}"
            console.print(f"  [red]{escape(e['kind'])}[/] [dim]{where}[/] {escape(e['message'])}")


def timeline(reads: list[dict[str, Any]], width: int, stall: float) -> list[str]:
    """Rich-markup lines: bytes over time as a sparkline ``width`` wide, stalls marked below."""
    timed = all(r["t"] is not None for r in reads)
    label = 7
    cols = max(10, width - label)
    if timed:
        t_end = max(r["t"] for r in reads) or 1e-9
        pos = [min(cols - 1, int(r["t"] / t_end * (cols - 1))) for r in reads]
    else:
        t_end = None
        pos = [min(cols - 1, i * cols // len(reads)) for i in range(len(reads))]
    volume = [0] * cols
    for p, r in zip(pos, reads, strict=True):
        volume[p] += r["bytes"]
    top = max(volume) or 1
    spark = "".join(
        BLOCKS[0] if v == 0 else BLOCKS[max(1, round(v / top * (len(BLOCKS) - 1)))] for v in volume
    )
    marks = [" "] * cols
    for i, r in enumerate(reads):
        if r["gap"] is not None and r["gap"] > stall:
            start = 0 if i == 0 else pos[i - 1] + 1
            for c in range(start, pos[i]):
                marks[c] = "─"
            marks[pos[i]] = "┤"
    lines = [f"{'bytes':<{label}}[green]{spark}[/]"]
    mark_text = "".join(marks)
    if mark_text.strip():
        lines.append(f"{'stalls':<{label}}[red]{mark_text}[/]")
    if t_end is not None:
        left, right = "0 s", f"{t_end:.2f} s"
    else:
        left, right = "read 0", f"read {len(reads) - 1}"
    lines.append(f"{'':<{label}}[dim]{left}{right:>{cols - len(left)}}[/]")
    return lines


def reads_table(reads: list[dict[str, Any]], result: dict[str, Any]) -> Any:
    from rich.table import Table
    from rich.text import Text

    names = {c["id"]: c["name"] for c in result["tool_calls"]}
    table = Table(title="reads", title_justify="left", pad_edge=False, box=None, expand=False)
    for col, justify in (
        ("#", "right"),
        ("t", "right"),
        ("gap", "right"),
        ("bytes", "right"),
        ("ev", "right"),
        ("produced", "left"),
        ("cuts", "left"),
    ):
        table.add_column(col, justify=justify, overflow="fold")  # type: ignore[arg-type]
    framed = any(r.get("frames") for r in reads)
    if framed:  # a binary framing (AWS event-stream): each read's frames
        table.add_column("frames", justify="left", overflow="fold")
    stall = result["timing"]["stall_threshold_s"]
    for r in reads:
        produced = _produced(r, names)
        extra = [Text(" ".join(r["frames"]), style="cyan")] if framed else []
        gap = "" if r["gap"] is None else f"{r['gap']:.3f}"
        cuts = ", ".join(CUT_LABEL[c] for c in r["cuts"])
        table.add_row(
            str(r["index"]),
            "" if r["t"] is None else f"{r['t']:.3f}",
            Text(gap, style="red" if r["gap"] is not None and r["gap"] > stall else ""),
            str(r["bytes"]),
            str(r["events"]),
            Text(produced),
            Text(cuts, style="yellow"),
            *extra,
        )
    return table


CUT_LABEL = {"event": "cuts an event", "utf8": "cuts a UTF-8 char", "crlf": "cuts a CRLF"}


def _produced(r: dict[str, Any], names: dict[str, str]) -> str:
    parts = []
    if r["reasoning_chars"]:
        parts.append(f"reasoning {r['reasoning_chars']}")
    if r["text_chars"]:
        parts.append(f"text {r['text_chars']}")
    for call_id in r["tool_calls_opened"]:
        if call_id not in r["tool_args"]:
            parts.append(f"{names.get(call_id, call_id)} opened")
    for call_id, n in r["tool_args"].items():
        parts.append(f"{names.get(call_id, call_id)} +{n}")
    if r["comments"]:
        parts.append(f"comment×{r['comments']}")
    for kind in r["errors"]:
        parts.append(f"error {kind}")
    for q in r["quirks"]:
        parts.append(f"quirk {q}")
    return ", ".join(parts)
