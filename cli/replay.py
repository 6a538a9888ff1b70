"""``streamtool replay FILE``: run a recording through a converter and a handler."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from streamtool.core.converters import UnknownConverter, converter_names
from streamtool.core.handlers import UnknownParser, default_parser, parser_names
from streamtool.core.handlers.api_tool_call import FileToolsError, parse_file_tools
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
            help="Handler: api_tool_call or passthrough (default: $AUTOBYTEUS_STREAM_PARSER, "
            "else api_tool_call).",
        ),
    ] = None,
    converter: Annotated[
        str, typer.Option("--converter", help="Wire API converter: auto, or a converter name.")
    ] = "auto",
    fmt: Annotated[
        Format, typer.Option("--format", help="json (summary), jsonl (every event) or text.")
    ] = Format.text,
    file_tools: Annotated[
        str | None,
        typer.Option(
            "--file-tools",
            help="api_tool_call: tools whose file argument streams as a file segment, as "
            "TOOL=FIELD,... (default: write_file=content,patch_file=patch; '' for none).",
        ),
    ] = None,
) -> None:
    """Replay a recording through a provider converter and a tool-call handler."""
    parser_name = parser or default_parser()
    sink = make_sink(fmt)
    handler_options = None
    if file_tools is not None:
        if parser_name != "api_tool_call":
            fail(f"--file-tools applies to --parser api_tool_call, not {parser_name}")
        try:
            handler_options = {"file_tools": parse_file_tools(file_tools)}
        except FileToolsError as exc:
            fail(str(exc))
    with user_errors(str(file)):
        check_names(converter, parser_name)
        engine = replay_file(
            file,
            converter=converter,
            parser=parser_name,
            handler_options=handler_options,
            on_items=sink.on_items,
        )
        if engine.end is None:
            warn(f"{file}: no end record (the recording was cut off); replayed what it has")
        sink.close(engine)
    if not engine.converter_name:
        fail(f"{file}: nothing to replay")
