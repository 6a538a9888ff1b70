"""``streamtool diff A [B]``: two replays side by side; exit 0 when they mean the same."""

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from streamtool.core.drive.replay_file import replay_file
from streamtool.core.handlers import default_parser

from .errors import fail, user_errors
from .main import app
from .params import converter_option, no_color_option, parser_option
from .replay import check_names
from .text_or_json import TextOrJson

if TYPE_CHECKING:
    from rich.text import Text

    from streamtool.core.engine.replay import ReplayEngine
    from streamtool.core.outputs.diff import Row, StreamDiff

CELL_LIMIT = 400  # characters of a text value shown in a cell


@app.command()
def diff(
    a: Annotated[Path, typer.Argument(help="A recording (.jsonl) or raw SSE body.")],
    b: Annotated[
        Path | None,
        typer.Argument(help="A second recording (default: A again, through other options)."),
    ] = None,
    parser: Annotated[
        str | None,
        parser_option("Parser for both sides (default: $STREAMTOOL_PARSER or api_tool_call)."),
    ] = None,
    parser_a: Annotated[str | None, parser_option("Parser for A.", "--parser-a")] = None,
    parser_b: Annotated[str | None, parser_option("Parser for B.", "--parser-b")] = None,
    converter: Annotated[
        str,
        converter_option("Converter for both sides: auto or a name."),
    ] = "auto",
    converter_a: Annotated[
        str | None, converter_option("Converter for A.", "--converter-a")
    ] = None,
    converter_b: Annotated[
        str | None, converter_option("Converter for B.", "--converter-b")
    ] = None,
    fmt: Annotated[
        TextOrJson, typer.Option("--format", help="text (side by side) or json (for scripts).")
    ] = TextOrJson.text,
    only_differences: Annotated[
        bool,
        typer.Option("--only-differences", help="Show only the rows that differ."),
    ] = False,
    no_color: Annotated[bool, no_color_option()] = False,
) -> None:
    """Compare two recordings, or one recording through two parsers or converters.

    Exit 0 when both mean the same (text, reasoning, tool calls and arguments, finish reason,
    error kinds), 1 when they differ, 2 on unusable input. Ids, usage, quirks and how the stream
    arrived are shown but not compared.
    """
    path_b = b if b is not None else a
    base_parser = parser or default_parser()
    side_a = (converter_a or converter, parser_a or base_parser)
    side_b = (converter_b or converter, parser_b or base_parser)
    if str(a) == "-" and b is not None and str(b) == "-":
        fail("standard input (-) can be only one of the two sides")
    if b is None and side_a == side_b:
        fail(
            "diff needs two recordings (A B), or one recording and different "
            "--parser-a/--parser-b or --converter-a/--converter-b"
        )
    with user_errors(str(a)):
        check_names(*side_a)
        check_names(*side_b)
        if str(a) == "-" and b is None:
            engine_a, engine_b = _replay_stdin_twice(side_a, side_b)
        else:
            engine_a = replay_file(a, converter=side_a[0], parser=side_a[1], transcript=True)
    if not (str(a) == "-" and b is None):
        with user_errors(str(path_b)):
            engine_b = replay_file(path_b, converter=side_b[0], parser=side_b[1], transcript=True)
    from streamtool.core.outputs.diff import diff_streams  # imported when used: fast start

    result = diff_streams(engine_a, engine_b)
    if fmt is TextOrJson.json:
        out = result.to_dict()
        if only_differences:
            out["rows"] = [row for row in out["rows"] if not row["same"]]
        sys.stdout.write(json.dumps(out, ensure_ascii=False, indent=2) + "\n")
    else:
        render(result, only_differences=only_differences, no_color=no_color)
    sys.stdout.flush()
    raise typer.Exit(0 if result.same_meaning else 1)


LEGEND = (
    "= same · ≠ differs in meaning (text, reasoning, tool calls and arguments, finish reason "
    "class, error kinds) · ~ differs, not compared (ids, usage, quirks, segment cuts, arrival)"
)


def render(result: "StreamDiff", *, only_differences: bool = False, no_color: bool = False) -> None:
    from rich.table import Table
    from rich.text import Text

    from .tree import make_console

    # the terminal's width, else COLUMNS, else 80 (as replay); colour only on a terminal
    console = make_console(file=sys.stdout, no_color=no_color)
    table = Table(show_lines=False, expand=True)
    table.add_column("", no_wrap=True, style="bold")
    table.add_column(_side_title("A", result.a), ratio=1, overflow="fold")
    table.add_column(_side_title("B", result.b), ratio=1, overflow="fold")
    table.add_column("", no_wrap=True)
    section = None
    rows = [row for row in result.rows if not row.same] if only_differences else result.rows
    for row in rows:
        if row.section != section:
            section = row.section
            if table.row_count:
                table.add_section()
            table.add_row(Text(section.upper(), style="bold cyan"), "", "", "")
        table.add_row(
            Text(row.field),
            _cell(row.a),
            _cell(row.b),
            _mark(row),
        )
        if row.note:
            table.add_row("", Text(row.note, style="italic"), "", "")
    if rows:
        console.print(table)
        console.print(Text(LEGEND, style="dim"))
    else:
        console.print(Text("no differences", style="green"))
    if result.same_meaning:
        others = sum(1 for r in result.rows if not r.same and r.section != "stream")
        line = "same meaning"
        if others:
            line += f" ({others} difference{'s' if others != 1 else ''} in how it arrived "
            line += "or in what is not compared)"
        console.print(Text(line, style="green"))
    else:
        console.print(Text("meaning differs: " + ", ".join(result.differences), style="red"))


def _side_title(label: str, side: dict[str, Any]) -> str:
    return f"{label}: {Path(side['source']).name} ({side['converter']}, {side['parser']})"


def _mark(row: "Row") -> "Text":
    from rich.text import Text

    if row.same:
        return Text("=", style="green")
    if row.meaning:
        return Text("≠", style="bold red")
    return Text("~", style="yellow")


def _cell(value: Any) -> "Text":
    from rich.text import Text

    if value is None:
        return Text("—", style="dim")
    if isinstance(value, str):
        return Text(_visible(_clip(value)))
    if isinstance(value, dict) and "type" in value and "content" in value:  # a segment
        return Text(f"{value['type']} {value['id']}\n{_visible(_clip(value['content']))}")
    if isinstance(value, dict) and "name" in value and "arguments" in value:  # a tool call
        args = value["arguments"]
        shown = (
            json.dumps(args, ensure_ascii=False)
            if args is not None
            else f"unparsed: {value.get('raw_arguments')!r}"
        )
        return Text(_clip(f"{value['name']}({shown})"))
    if isinstance(value, list):
        return Text(_clip("\n".join(str(v) for v in value)) if value else "(none)")
    if isinstance(value, bool):
        return Text("yes" if value else "no")
    if isinstance(value, dict):
        return Text(_clip(", ".join(f"{k} {v}" for k, v in value.items())))
    return Text(str(value))


def _visible(text: str) -> str:
    """Line ends made visible (a trailing newline is a difference worth seeing)."""
    return text.replace("\r", "␍").replace("\n", "⏎\n").rstrip("\n")


def _clip(text: str) -> str:
    if len(text) <= CELL_LIMIT:
        return text
    return f"{text[:CELL_LIMIT]}… (+{len(text) - CELL_LIMIT} characters)"


def _replay_stdin_twice(
    side_a: tuple[str, str], side_b: tuple[str, str]
) -> "tuple[ReplayEngine, ReplayEngine]":
    """Standard input read once, replayed through both sides' converter and parser."""
    from streamtool.core.engine.replay import ReplayEngine as Engine
    from streamtool.core.recording.reader import Source

    source = Source("-")
    chunks = list(source.chunks())
    engines = []
    for converter, parser in (side_a, side_b):
        engine = Engine(
            source.header, converter=converter, parser=parser, source="-", transcript=True
        )
        for chunk in chunks:
            engine.feed_chunk(chunk)
        engine.finish(source.end)
        engines.append(engine)
    return engines[0], engines[1]
