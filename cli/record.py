"""``streamtool record``: send one streaming request and record the response byte for byte.

The request is built by :mod:`streamtool.core.exchange.requests`, sent and written by
:mod:`streamtool.core.net.http_capture`. While it streams, every chunk also goes through a
:class:`~streamtool.core.engine.replay.ReplayEngine` whose items feed a view: a sink with
``on_items(engine, t, items)`` / ``close(engine)``, as ``replay`` uses. ``VIEWS`` maps
``--view`` names to sink factories; a view may also have ``on_read(t, chunks, nbytes)``.
"""

import os
import sys
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, Any, NamedTuple, Protocol

import typer

from streamtool.core.engine.replay import Item, ReplayEngine
from streamtool.core.exchange.requests import APIS
from streamtool.core.handlers import default_parser
from streamtool.core.model import SegmentType, ToolInvocation
from streamtool.core.model.records import Chunk, End, Header, os_error_text
from streamtool.core.pipeline.segment_log import SegmentLog

from .choices import (
    complete_provider,
    complete_record_view,
    complete_tool_choice,
)
from .errors import fail, user_errors, warn
from .main import app
from .params import choice_option, converter_option, parser_option
from .replay import check_names

if TYPE_CHECKING:
    from streamtool.core.exchange.requests import PreparedRequest
    from streamtool.core.recording.recorder import RecordResult


class View(Protocol):
    """What ``record`` shows: a replay sink whose ``close`` also takes ``None`` (no stream)."""

    def on_items(self, engine: ReplayEngine, t: float | None, items: list[Item]) -> None: ...

    def close(self, engine: ReplayEngine | None) -> None: ...


class ProgressLine:
    """``--view progress``: one status line on stderr, redrawn in place on a terminal."""

    INTERVAL = 0.1

    def __init__(self, out: IO[str] | None = None) -> None:
        self.out = out or sys.stderr
        self.live = self.out.isatty()
        self.chunks = 0
        self.bytes = 0
        self.t = 0.0
        self.tools = 0
        self._log: SegmentLog | None = None  # the engine's segments (LiveFeed has it keep them)
        self._drawn = 0.0
        self._width = 0

    def on_read(self, t: float | None, chunks: int, nbytes: int) -> None:
        self.chunks, self.bytes, self.t = chunks, nbytes, t or 0.0
        self._draw()

    def on_items(self, engine: ReplayEngine, t: float | None, items: list[Item]) -> None:
        self._log = engine.segments
        for item in items:
            if isinstance(item, ToolInvocation):
                self.tools += 1

    def _chars(self, kind: SegmentType) -> int:
        """The characters the segments of ``kind`` got so far (counted when a line is drawn)."""
        log = self._log
        return sum(seg.chars for seg in log.segments if seg.type is kind) if log else 0

    def line(self) -> str:
        parts = [_count(self.chunks, "chunk"), _size(self.bytes), f"{self.t:.1f} s"]
        reasoning = self._chars(SegmentType.REASONING)
        if reasoning:
            parts.append(f"reasoning {reasoning} chars")
        text = self._chars(SegmentType.TEXT)
        if text:
            parts.append(f"text {text} chars")
        if self.tools:
            parts.append(f"{self.tools} tool call{'s' if self.tools != 1 else ''}")
        return "recording: " + " · ".join(parts)

    def _draw(self, force: bool = False) -> None:
        if not self.live:
            return
        now = time.monotonic()
        if not force and now - self._drawn < self.INTERVAL:
            return
        self._drawn = now
        text = self.line()
        pad = " " * max(0, self._width - len(text))
        self._width = len(text)
        self.out.write(f"\r{text}{pad}")
        self.out.flush()

    def close(self, engine: ReplayEngine | None) -> None:
        if self.live and self._width:
            self._draw(force=True)
            self.out.write("\n")
            self.out.flush()


class NoView:
    def on_items(self, engine: ReplayEngine, t: float | None, items: list[Item]) -> None:
        pass

    def close(self, engine: ReplayEngine | None) -> None:
        pass


class TreeView:
    """``--view tree``: the live tree of ``replay``, drawn on stderr while the bytes arrive."""

    def __init__(self, sink: Any = None) -> None:
        from .tree import make_console, make_live_sink

        if sink is None:
            sink = make_live_sink(make_console(file=sys.stderr), live=sys.stderr.isatty())
        self.sink = sink
        self.engine: ReplayEngine | None = None

    @property
    def feed_lock(self) -> Any:
        return self.sink.feed_lock

    def on_items(self, engine: ReplayEngine, t: float | None, items: list[Item]) -> None:
        self.engine = engine
        self.sink.on_items(engine, t, items)

    def close(self, engine: ReplayEngine | None) -> None:
        engine = engine or self.engine
        if engine is not None:
            self.sink.close(engine)
        else:
            self.sink.abort()


def _auto_view() -> Any:
    """The tree on a terminal; a quiet progress line otherwise (pipes, CI)."""
    return TreeView() if sys.stderr.isatty() else ProgressLine()


# --view name -> a sink factory. Another view registers itself here with one line.
VIEWS: dict[str, Callable[[], Any]] = {
    "auto": _auto_view,
    "tree": TreeView,
    "progress": ProgressLine,
    "none": NoView,
}


class LiveFeed:
    """Feeds the chunks being recorded through a replay engine into a view, as they arrive.

    Recording never depends on it: if the stream cannot be parsed (an unknown API, an HTTP
    error body) or the view fails, the view stops and a warning says why; bytes keep being
    written.
    """

    def __init__(
        self,
        prepared: "PreparedRequest",
        view: View,
        *,
        converter: str,
        parser: str,
        source: str,
    ) -> None:
        self.view = view
        # the engine is fed under the view's lock when it has one (the tree: its redraw thread
        # reads the engine's segments)
        self.lock = getattr(view, "feed_lock", None) or nullcontext()
        self.engine: ReplayEngine | None = None
        self.problem: str | None = None
        self.chunks = 0
        self.bytes = 0
        header = Header(
            provider=prepared.provider,
            api=prepared.api,
            request={"url": prepared.url, "body": prepared.body},
        )
        try:
            self.engine = ReplayEngine(
                header,
                converter=converter,
                parser=parser,
                source=source,
                # the segments, kept for a view that reads them: the tree, the progress line's
                # counts (sizes only)
                segments=SegmentLog(keep_content=not isinstance(view, ProgressLine))
                if isinstance(view, (ProgressLine, TreeView))
                else None,
            )
        except Exception as exc:  # no converter for this API yet: bytes only
            self.problem = f"live view off: {exc}"

    def on_start(self, status: int | None) -> None:
        if status is not None and status >= 400:
            self.engine = None  # an error body, not a stream

    def on_chunk(self, chunk: Chunk) -> None:
        self.chunks += 1
        self.bytes += chunk.nbytes
        on_read = getattr(self.view, "on_read", None)
        if on_read is not None:
            on_read(chunk.t, self.chunks, self.bytes)
        engine = self.engine
        if engine is None:
            return
        try:
            with self.lock:
                items = engine.feed_chunk(chunk)
            self.view.on_items(engine, chunk.t, items)
        except Exception as exc:
            self._off(exc)

    def finish(self, result: "RecordResult") -> None:
        engine = self.engine
        if engine is not None:
            try:
                with self.lock:
                    items = engine.finish(End(result.duration, result.reason, result.error))
                self.view.on_items(engine, engine.now, items)
            except Exception as exc:
                self._off(exc)
        try:
            self.view.close(self.engine)  # a view's close takes None: the view was switched off
        except Exception as exc:
            self._off(exc)

    def _off(self, exc: Exception) -> None:
        self.engine = None
        if self.problem is None:
            self.problem = f"live view off: {exc}"


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / 1024 / 1024:.1f} MB"


def _read(path: Path, what: str, binary: bool = False) -> Any:
    try:
        return path.read_bytes() if binary else path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        fail(f"{path}: {what} is not UTF-8 text")
    except OSError as exc:
        fail(f"{path}: {os_error_text(exc)}")


@app.command()
def record(
    output: Annotated[Path, typer.Option("--output", "-o", help="The recording to write.")],
    provider: Annotated[
        str | None,
        choice_option(
            "--provider",
            "-p",
            names=APIS,
            complete=complete_provider,
            help="The wire API to speak, one of the choices (openai-compatible: any server "
            "that speaks OpenAI's, at --base-url); optional when --base-url names a preset.",
        ),
    ] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Model name.")] = None,
    prompt: Annotated[str | None, typer.Option("--prompt", help="The user message.")] = None,
    messages: Annotated[
        Path | None, typer.Option("--messages", help="A JSON list of {role, content} messages.")
    ] = None,
    system: Annotated[str | None, typer.Option("--system", help="A system prompt.")] = None,
    tools: Annotated[
        Path | None,
        typer.Option("--tools", help="A JSON list of {name, description, parameters} tools."),
    ] = None,
    tool_choice: Annotated[
        str | None,
        typer.Option(
            "--tool-choice",
            autocompletion=complete_tool_choice,
            help="auto, required, none, or a tool name.",
        ),
    ] = None,
    body: Annotated[
        Path | None, typer.Option("--body", help="Send exactly this file as the request body.")
    ] = None,
    header: Annotated[
        list[str] | None, typer.Option("--header", "-H", help="An extra header 'Name: value'.")
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url",
            help="The API base URL, or a preset: openrouter, groq, deepseek, mistral, together, "
            "moonshot, ollama, vllm.",
        ),
    ] = None,
    api_key_env: Annotated[
        str | None, typer.Option("--api-key-env", help="Read the API key from this variable.")
    ] = None,
    max_tokens: Annotated[
        int | None, typer.Option("--max-tokens", help="Output token limit (anthropic: 1024).")
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="Set a body field: KEY=VALUE (VALUE as JSON if it parses)."),
    ] = None,
    no_stream_usage: Annotated[
        bool,
        typer.Option("--no-stream-usage", help="Do not ask for stream_options.include_usage."),
    ] = False,
    key_in_query: Annotated[
        bool, typer.Option("--key-in-query", help="gemini: send the key as ?key= (older style).")
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite --output.")] = False,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds without data before giving up.")
    ] = 120.0,
    view: Annotated[
        str,
        choice_option(
            "--view",
            names=VIEWS,
            complete=complete_record_view,
            help="What to show while recording: tree (the live tree), progress (one line), "
            "none, or auto (tree on a terminal, else progress).",
        ),
    ] = "auto",
    parser: Annotated[
        str | None,
        parser_option("Handler for the live view."),
    ] = None,
    converter: Annotated[
        str,
        converter_option("Converter for the live view (auto)."),
    ] = "auto",
) -> None:
    """Send one streaming request and record the response, one line per network read.

    Exit 0 when the stream completed, 1 on an HTTP error, a dropped connection or a timeout
    (the recording keeps what arrived and says why it ended), 130 on Ctrl-C, 2 on bad input.
    """
    _record(_Options(**locals()))  # the parameters, as given


class _Options(NamedTuple):
    """record's options, as given."""

    output: Path
    provider: str | None
    model: str | None
    prompt: str | None
    messages: Path | None
    system: str | None
    tools: Path | None
    tool_choice: str | None
    body: Path | None
    header: list[str] | None
    base_url: str | None
    api_key_env: str | None
    max_tokens: int | None
    set_: list[str] | None
    no_stream_usage: bool
    key_in_query: bool
    force: bool
    timeout: float
    view: str
    parser: str | None
    converter: str


def _record(o: _Options) -> None:
    """Send the request the options describe and record its response."""
    # request building and HTTP are imported by this command only: every other one starts fast
    from streamtool.core.exchange.requests import (
        RequestError,
        RequestOptions,
        build_request,
        parse_header_option,
        parse_messages,
        parse_set_option,
        parse_tools,
    )
    from streamtool.core.recording.recorder import check_output

    parser_name = o.parser or default_parser()
    if o.view not in VIEWS:
        fail(f"unknown view {o.view!r}; valid: {', '.join(VIEWS)}")
    with user_errors(str(o.output)):
        check_names(o.converter, parser_name)
        check_output(o.output, o.force)
    try:
        opts = RequestOptions(
            provider=o.provider,
            model=o.model,
            prompt=o.prompt,
            messages=parse_messages(_read(o.messages, "messages"), str(o.messages))
            if o.messages
            else None,
            system=o.system,
            tools=parse_tools(_read(o.tools, "tools"), str(o.tools)) if o.tools else None,
            tool_choice=o.tool_choice,
            body=_read(o.body, "body", binary=True) if o.body else None,
            headers=[parse_header_option(h) for h in o.header or ()],
            base_url=o.base_url,
            api_key_env=o.api_key_env,
            max_tokens=o.max_tokens,
            extra=dict(parse_set_option(s) for s in o.set_ or ()),
            stream_usage=not o.no_stream_usage,
            key_in_query=o.key_in_query,
        )
        prepared = build_request(opts, os.environ)
        if prepared.sigv4 is not None:  # Bedrock without an API key: botocore signs it
            from streamtool.core.net.aws import sign_sigv4

            prepared = sign_sigv4(prepared, os.environ, required=prepared.sigv4 == "required")
    except RequestError as exc:
        fail(str(exc))

    from streamtool.core.net.http_capture import record_request

    live = LiveFeed(
        prepared, VIEWS[o.view](), converter=o.converter, parser=parser_name, source=str(o.output)
    )
    with user_errors(str(o.output)):
        result = record_request(
            prepared,
            o.output,
            force=o.force,
            read_timeout=o.timeout,
            on_start=live.on_start,
            on_chunk=live.on_chunk,
        )
    live.finish(result)
    if live.problem and result.reason == "complete":
        warn(live.problem)
    _report(result)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _report(result: "RecordResult") -> None:
    what = f"{_count(result.chunks, 'chunk')}, {_size(result.bytes)} in {result.duration:.2f} s"
    status = f"HTTP {result.status}" if result.status is not None else "no response"
    if result.write_failed:
        sys.stderr.write(f"streamtool: error: {result.error}\n")
        raise typer.Exit(1)
    if result.reason == "complete":
        sys.stderr.write(f"streamtool: recorded {result.path}: {status}, {what}\n")
        return
    sys.stderr.write(f"streamtool: error: {result.error or result.reason}\n")
    sys.stderr.write(f"streamtool: recorded {result.path} ({result.reason}): {status}, {what}\n")
    raise typer.Exit(130 if result.reason == "interrupted" else 1)
