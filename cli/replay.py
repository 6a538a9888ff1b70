"""``streamtool replay FILE``: run a recording through a converter and a handler."""

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import msgspec
import typer

from streamtool.core.converters import check_converter_name
from streamtool.core.drive.replay_file import replay_file
from streamtool.core.handlers import check_parser_name, default_parser
from streamtool.core.handlers.api_tool_call import FileToolsError, parse_file_tools

from .choices import checked_by, complete_sample
from .emit import check_emit, complete_emit, emit_choices, make_emit_sink
from .errors import fail, user_errors, warn
from .main import app
from .pacing import DEFAULT_MAX_GAP, Pacer, parse_speed
from .params import ConverterOption, choice_option, no_color_option, parser_option
from .sinks import JsonlSink, JsonSink, Sink

if TYPE_CHECKING:
    from streamtool.core.engine.replay import ReplayEngine
    from streamtool.core.model.records import Chunk


class Format(StrEnum):
    tree = "tree"
    text = "text"
    json = "json"
    jsonl = "jsonl"


def check_names(converter: str, parser: str) -> None:
    check_converter_name(converter)
    check_parser_name(parser)


def make_sink(
    fmt: Format, *, no_color: bool = False, full: bool = False, session: bool = False
) -> Sink:
    if fmt is Format.json:
        return JsonSink()
    if fmt is Format.jsonl:
        return JsonlSink()
    if session:  # a WebSocket session: its own tree (the client's events beside the server's)
        from .session_tree import make_session_sink

        return make_session_sink(
            live=False if fmt is Format.text else None, no_color=no_color, full=full
        )
    # the tree: live on a terminal for ``tree``; printed once for ``text`` and off a terminal
    from .tree import make_live_sink
    from .tree_view import ViewOptions

    options = ViewOptions.full() if full else ViewOptions()
    return make_live_sink(
        live=False if fmt is Format.text else None, no_color=no_color, options=options
    )


_speed = checked_by(parse_speed)


def _max_gap(value: float) -> float:
    if value != value or value < 0:
        raise typer.BadParameter("--max-gap must be a number of seconds >= 0 (or inf)")
    return value


@app.command()
def replay(
    file: Annotated[
        Path | None,
        typer.Argument(help="A recording (.jsonl) or a raw SSE body (.sse, .txt)."),
    ] = None,
    parser: Annotated[
        str | None,
        parser_option(
            "Handler: api_tool_call, passthrough, or xml / json / sentinel for tool calls "
            "written in the text (default: $STREAMTOOL_PARSER, else api_tool_call)."
        ),
    ] = None,
    converter: ConverterOption = "auto",
    fmt: Annotated[
        Format | None,
        typer.Option(
            "--format",
            help="tree (live on a terminal, printed once otherwise; the default), text (the "
            "tree printed once), json (summary) or jsonl (every event).",
        ),
    ] = None,
    speed: Annotated[
        str | None,
        typer.Option(
            "--speed",
            callback=_speed,
            help="1 = the recorded timing, N = N times faster, max = no waiting (default: 1 "
            "for the live tree, max otherwise).",
        ),
    ] = None,
    max_gap: Annotated[
        float,
        typer.Option(
            "--max-gap",
            callback=_max_gap,
            help="Longest pause in seconds while pacing (inf keeps every pause).",
        ),
    ] = DEFAULT_MAX_GAP,
    no_color: Annotated[bool, no_color_option()] = False,
    full: Annotated[
        bool, typer.Option("--full", help="Tree: show all content, nothing cut or collapsed.")
    ] = False,
    emit: Annotated[
        str | None,
        choice_option(
            "--emit",
            names=emit_choices,
            complete=complete_emit,
            callback=check_emit,
            help="Write the replayed stream's meaning as a stream of this API instead of "
            "--format (text, reasoning, tool calls, usage, finish); openai-sse is Chat's "
            "older name.",
        ),
    ] = None,
    file_tools: Annotated[
        str | None,
        typer.Option(
            "--file-tools",
            help="api_tool_call: tools whose file argument streams as a file segment, as "
            "TOOL=FIELD,... (default: write_file=content,patch_file=patch; '' for none).",
        ),
    ] = None,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict", help="Exit 1 when the stream has errors or was cut off (for scripts)."
        ),
    ] = False,
    sample: Annotated[
        str | None,
        typer.Option(
            "--sample",
            autocompletion=complete_sample,
            metavar="NAME",
            help="Replay a sample installed with streamtool instead of FILE "
            "(streamtool samples lists them).",
        ),
    ] = None,
) -> None:
    """Replay a recording through a provider converter and a tool-call handler."""
    _replay(_Options(**locals()))  # the parameters, as given


class _Options(msgspec.Struct, frozen=True):
    """replay's options, as given (a Struct: quicker to define at every start than a
    ``NamedTuple``)."""

    file: Path | None
    parser: str | None
    converter: str
    fmt: Format | None
    speed: str | None
    max_gap: float
    no_color: bool
    full: bool
    emit: str | None
    file_tools: str | None
    strict: bool
    sample: str | None


def _replay(o: _Options) -> None:
    """Replay the recording the options name, shown as they say."""
    file = _input(o.file, o.sample)
    if file.is_dir():
        sessions = _tape_sessions(file)
        if sessions is None:
            fail(_folder_message(file))
        if o.fmt is Format.json and o.emit is None:
            _tape_summary(file, sessions, o)
            return
        for path in sessions:
            _replay_one(path, o, several=len(sessions) > 1)
        return
    _replay_one(file, o)


def _replay_one(file: Path, o: _Options, *, several: bool = False) -> None:
    """Replay one recording (``several``: one of a tape's sessions, said before it)."""
    if o.emit is not None and o.fmt is not None:
        fail("--emit and --format cannot be used together: --emit replaces the --format output")
    parser_name = o.parser or default_parser()
    handler_options = None
    if o.file_tools is not None:
        if parser_name != "api_tool_call":
            fail(f"--file-tools applies to --parser api_tool_call, not {parser_name}")
        try:
            handler_options = {"file_tools": parse_file_tools(o.file_tools)}
        except FileToolsError as exc:
            fail(str(exc))
    with user_errors(str(file)):
        check_names(o.converter, parser_name)
        fmt = o.fmt or Format.tree
        if several and fmt in (Format.tree, Format.text):
            sys.stdout.write(f"{file}\n")
        sink: Sink = (
            make_sink(fmt, no_color=o.no_color, full=o.full, session=_is_session(file))
            if o.emit is None
            else make_emit_sink(o.emit)
        )
        live = bool(getattr(sink, "live", False))
        tree = o.emit is None and o.fmt in (None, Format.tree)
        if o.speed is None:
            pacer = Pacer(1.0 if live else None, o.max_gap)
        else:
            pacer = Pacer(parse_speed(o.speed), o.max_gap)
        # while paced, the live tree shows the stream's source and counters before its first
        # item; unpaced, the first items come at once (and the sink follows the engine itself)
        observe = getattr(sink, "observe", None) if live else None
        before_chunk = None
        if pacer.paced:

            def before_chunk(engine: "ReplayEngine", chunk: "Chunk") -> None:
                if observe is not None:
                    observe(engine)
                pacer.wait(chunk.t)

        # unpaced, a sink whose output does not depend on where the reads were cut (the summary,
        # the tree) is fed in batches: nobody sees the reads one by one
        batched = before_chunk is None and bool(getattr(sink, "batchable", False))
        try:
            engine = replay_file(
                file,
                converter=o.converter,
                parser=parser_name,
                handler_options=handler_options,
                # the summary alone needs no items
                on_items=None if isinstance(sink, JsonSink) else sink.on_items,
                string_pieces=isinstance(sink, JsonSink),
                before_chunk=before_chunk,
                batched=batched,
                segments=bool(getattr(sink, "needs_segments", False)),
                lock=getattr(sink, "feed_lock", None),
                # a sample's tree is headed by its name, not the path it is installed at
                label=f"sample {o.sample}" if o.sample and tree else None,
            )
        except KeyboardInterrupt:
            # Ctrl-C while watching: show the tree as far as it got
            interrupt = getattr(sink, "interrupt", None)
            if interrupt is not None:
                interrupt()
            raise typer.Exit(130) from None
        except BaseException:
            # unusable input found mid-stream: take the live display down before the error line
            abort = getattr(sink, "abort", None)
            if abort is not None:
                abort()
            raise
        sink.close(engine)
        if engine.end is None:
            warn(f"{file}: no end record (the recording was cut off); replayed what it has")
    if understood_nothing(engine):
        n = engine.sse_events
        fail(
            f"{file}: the {engine.converter_name} converter understood none of its {n:,} "
            f"event{'s' if n != 1 else ''}: is the stream another API? (--converter auto "
            "tells it from the recording)",
            code=1,
        )
    if o.strict:
        problem = strict_problem(engine)
        if problem:
            warn(f"{file}: {problem} (--strict)")
            raise typer.Exit(1)


# what a converter reports about events it cannot read at all
_UNREAD = frozenset({"bad_json", "truncated"})


def understood_nothing(engine: "ReplayEngine") -> bool:
    """The converter read none of the stream's events: no segment, no finish reason, nothing
    but complaints about unreadable events (typically ``--converter`` naming another API)."""
    status = engine.header.response.get("status")
    return (
        engine.sse_events > 0
        and engine.finish_reason is None
        and not engine.segment_events
        and all(e.kind in _UNREAD for e in engine.errors)
        and not (isinstance(status, int) and status >= 400)
    )


def strict_problem(engine: "ReplayEngine") -> str | None:
    """Why ``--strict`` fails this replay: errors in the stream, or a stream that was cut off."""
    end = engine.end
    if end is None:
        return "the recording was cut off"
    if end.reason != "complete":
        return f"the stream ended: {end.reason}"
    if engine.errors:
        n = len(engine.errors)
        return f"the stream has {n} error{'s' if n != 1 else ''}"
    return None


def _folder_message(folder: Path) -> str:
    """``replay`` takes one recording: for a tape, say how to replay its exchanges in order."""
    from streamtool.core.model.records import RecordingError
    from streamtool.core.recording.tape_index import tape_files

    try:
        files = tape_files(folder).all
    except RecordingError as exc:
        return str(exc)
    if not files:
        return f"{folder}: is a folder without recordings; replay takes one recording"
    n = len(files)
    order = ", ".join(str(f) for f in files[:10])
    if n > 10:
        order += f", ... ({n} in all, in the order of {folder / 'index.jsonl'})"
    return (
        f"{folder}: is a tape of {n} exchange{'s' if n != 1 else ''}, not a recording; replay "
        f"takes one recording: replay its exchanges one at a time, in this order: {order} "
        f"(or serve the tape to a client: streamtool serve {folder})"
    )


def _tape_summary(folder: Path, sessions: list[Path], o: _Options) -> None:
    """``--format json`` of a tape of sessions: one object, its sessions' summaries in order."""
    import json

    parser_name = o.parser or default_parser()
    summaries = []
    for path in sessions:
        with user_errors(str(path)):
            check_names(o.converter, parser_name)
            engine = replay_file(path, converter=o.converter, parser=parser_name)
        summaries.append(engine.summary())
    document = {"tape": str(folder), "sessions": summaries}
    sys.stdout.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")


def _is_session(file: Path) -> bool:
    """The file is a WebSocket session's recording (read from its header). Standard input is
    not looked at (reading its header would take it from the replay): a session piped in is
    replayed, drawn as a stream's tree."""
    from streamtool.core.model.records import RecordingError
    from streamtool.core.recording.reader import STDIN, Source

    if str(file) == STDIN:
        return False
    try:
        with Source(file) as source:
            return source.websocket
    except RecordingError:
        return False  # the replay says what is wrong with it


def _tape_sessions(folder: Path) -> list[Path] | None:
    """A tape whose every recording is a WebSocket session (a session over several
    connections): its recordings in the tape's order; ``None`` for any other folder."""
    from streamtool.core.model.records import RecordingError
    from streamtool.core.recording.tape_index import tape_files

    try:
        files = tape_files(folder).all
    except RecordingError:
        return None
    if files and all(_is_session(f) for f in files):
        return list(files)
    return None


def _input(file: Path | None, sample: str | None) -> Path:
    """FILE, or the installed file of ``--sample NAME``: one of them."""
    if sample is None:
        if file is None:
            fail("replay needs a FILE (a recording or a raw SSE body), or --sample NAME")
        return file
    if file is not None:
        fail("give a FILE or --sample NAME, not both")
    from streamtool.core.samples import UnknownSample, sample_path

    try:
        return sample_path(sample)
    except UnknownSample as exc:
        fail(str(exc))
