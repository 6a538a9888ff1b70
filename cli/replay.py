"""``streamtool replay FILE``: run a recording through a converter and a handler."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from streamtool.core.converters import UnknownConverter, converter_names
from streamtool.core.handlers import UnknownParser, default_parser, parser_names
from streamtool.core.run import replay_file

from .errors import fail, user_errors, warn
from .main import app
from .sinks import JsonlSink, JsonSink, Sink, TextSink


class Format(StrEnum):
    json = "json"
    jsonl = "jsonl"
    text = "text"


def check_names(converter: str, parser: str) -> None:
    if converter != "auto" and converter not in converter_names():
        raise UnknownConverter(
            f"unknown converter {converter!r}; valid: auto, {', '.join(converter_names())}"
        )
    if parser not in parser_names():
        raise UnknownParser(f"unknown parser {parser!r}; valid: {', '.join(parser_names())}")


def make_sink(fmt: Format) -> Sink:
    if fmt is Format.json:
        return JsonSink()
    if fmt is Format.jsonl:
        return JsonlSink()
    return TextSink()


@app.command()
def replay(
    file: Annotated[
        Path, typer.Argument(help="A recording (.jsonl) or a raw SSE body (.sse, .txt).")
    ],
    parser: Annotated[
        str | None,
        typer.Option(
            "--parser",
            help="Handler: api_tool_call, passthrough, or xml / json / sentinel for tool calls "
            "written in the text (default: $AUTOBYTEUS_STREAM_PARSER, else api_tool_call).",
        ),
    ] = None,
    converter: Annotated[
        str, typer.Option("--converter", help="Wire API converter: auto, or a converter name.")
    ] = "auto",
    fmt: Annotated[
        Format, typer.Option("--format", help="json (summary), jsonl (every event) or text.")
    ] = Format.text,
) -> None:
    """Replay a recording through a provider converter and a tool-call handler."""
    parser_name = parser or default_parser()
    sink = make_sink(fmt)
    with user_errors(str(file)):
        check_names(converter, parser_name)
        engine = replay_file(file, converter=converter, parser=parser_name, on_items=sink.on_items)
        if engine.end is None:
            warn(f"{file}: no end record (the recording was cut off); replayed what it has")
        sink.close(engine)
    if not engine.converter_name:
        fail(f"{file}: nothing to replay")
