"""Drawing the tree with rich: the root line, one node per segment, errors and quirks where they
happened, the invocations, and a footer of statistics.

Two shapes: the *static* tree (printed once: at the end of a live replay, for ``--format text``
and whenever the output is not a terminal) shows every node with long content cut to a few
hundred lines; the *live* frame fits the terminal: the newest node gets the room, older ones
shrink to a line or two, and what does not fit is counted, so that drawing a frame costs about
the same at the first chunk as at the ten-thousandth. Importing this module imports rich.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, NamedTuple

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.highlighter import JSONHighlighter
from rich.measure import Measurement
from rich.segment import Segment as RichSegment
from rich.text import Text
from rich.tree import Tree

from streamtool.core.model import SegmentType

from . import lexers
from .lexers import lexer_for_path
from .tree_model import Cut, Keep, Note, Part, Segment, Stats, TreeState, clip

__all__ = ["ViewOptions", "lexer_for_path", "render_live", "render_static"]

STYLE = {
    "root": "bold",
    "dim": "dim",
    "text": "bold cyan",
    "reasoning": "dim italic",
    "reasoning_body": "dim italic",
    "tool_call": "bold magenta",
    "write_file": "bold green",
    "patch_file": "bold yellow",
    "run_bash": "bold blue",
    "name": "bold",
    "error": "bold red",
    "error_body": "red",
    "quirk": "bold yellow",
    "quirk_body": "yellow",
    "marker": "dim",
    "problem": "bold red",
}

_json_highlighter = JSONHighlighter()


class ViewOptions(NamedTuple):
    """Limits of the static tree; ``None`` means no limit (``--full``)."""

    text_lines: int | None = 200
    reasoning_lines: int | None = 4
    code_lines: int | None = 80
    line_chars: int | None = 1000  # code, JSON, diffs
    text_line_chars: int | None = 5000  # prose wraps: a paragraph is one long line
    invocation_chars: int | None = 300

    @classmethod
    def full(cls) -> ViewOptions:
        return cls(None, None, None, None, None, None)


# -- small pieces ----------------------------------------------------------------------------------
def _secs(s: float | None) -> str:
    return "-" if s is None else f"{s:.2f} s"


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def _marker(cut: Cut, where: Keep, live: bool) -> Text:
    """The line that stands for lines left out."""
    what = _plural(cut.lines, "earlier line" if where == "tail" else "line")
    text = f"… {what}" if live else f"… {what} cut (--full shows all)"
    return Text(text, style=STYLE["marker"])


class Fields:
    """Rows of short fields (``provider openai``, ``127 chunks``...) joined by a separator. A row
    that does not fit breaks between two fields, never inside one (a field wider than the whole
    line still wraps)."""

    def __init__(self, rows: list[tuple[list[Text], str]], sep_style: str = "") -> None:
        self.rows = [(fields, sep) for fields, sep in rows if fields]
        self.sep_style = sep_style

    @property
    def plain(self) -> str:
        return "\n".join(sep.join(f.plain for f in fields) for fields, sep in self.rows)

    def lines(self, width: int) -> list[Text]:
        out: list[Text] = []
        for fields, sep in self.rows:
            line: Text | None = None
            for field in fields:
                if line is None:
                    line = field.copy()
                elif line.cell_len + len(sep) + field.cell_len <= width:
                    line.append(sep, style=self.sep_style)
                    line.append_text(field)
                else:
                    out.append(line)
                    line = field.copy()
            if line is not None:
                out.append(line)
        return out

    def height(self, width: int) -> int:
        """Terminal lines the fields take at ``width`` columns."""
        width = max(1, width)
        return sum(max(1, -(-line.cell_len // width)) for line in self.lines(width))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.lines(options.max_width)


def root_label(stats: Stats) -> Fields:
    """The source on the first line; provider, converter, parser and model on the second."""
    fields = []
    for key, value in (
        ("provider", stats.provider),
        ("converter", stats.converter),
        ("parser", stats.parser),
        ("model", stats.model),
    ):
        if value:
            field = Text()
            field.append(key + " ", style=STYLE["dim"])
            field.append(str(value))
            fields.append(field)
    source = Text(stats.source or "stream", style=STYLE["root"])
    rows = [([source], ""), (fields, " · ")]
    if stats.imported:
        told = Text(stats.imported, style=STYLE["dim"])
        rows.append(([told], ""))
    return Fields(rows)


def footer(stats: Stats, state: TreeState) -> Fields:
    elapsed = stats.duration if stats.finished else stats.now
    parts = [
        _plural(stats.chunks, "chunk"),
        _plural(stats.bytes, "byte"),
        _plural(stats.sse_events, "event"),
        f"elapsed {_secs(elapsed)}",
        f"TTFT {_secs(stats.ttft)}",
    ]
    rate = _rate(stats, state, elapsed)
    if rate:
        parts.append(rate)
    rows: list[tuple[list[Text], str]] = [
        ([Text(part, style=STYLE["dim"]) for part in parts], " · ")
    ]
    usage = stats.usage or {}
    if usage:
        names = [
            ("input_tokens", "in"),
            ("output_tokens", "out"),
            ("reasoning_tokens", "reasoning"),
            ("cached_input_tokens", "cached"),
            ("cache_creation_input_tokens", "cache write"),
            ("total_tokens", "total"),
        ]
        shown = [f"{label} {usage[key]:,}" for key, label in names if key in usage]
        shown += [f"{k} {v:,}" for k, v in usage.items() if k not in dict(names)]
        shown[0] = "usage: " + shown[0]
        rows.append(([Text(item, style=STYLE["dim"]) for item in shown], " · "))
    last: list[Text] = []
    if stats.finish_reason:
        finish = f"finish_reason: {stats.finish_reason}"
        if stats.finish_class and stats.finish_class != stats.finish_reason:
            finish += f" ({stats.finish_class})"  # what it means, the same for every provider
        last.append(Text(finish, style=STYLE["dim"]))
    if stats.finished and stats.end_reason and stats.end_reason != "complete":
        last.append(Text(f"ended: {stats.end_reason}", style=STYLE["error"]))
    errors = state.errors
    if stats.status is not None and stats.status >= 400 and state.provider_errors:
        errors -= state.http_end_errors  # said once, by the provider's error (see note_line)
    if errors:
        last.append(Text(_plural(errors, "error"), style=STYLE["error"]))
    if state.quirks:
        last.append(Text(_plural(state.quirks, "quirk"), style=STYLE["quirk"]))
    if state.interrupted:
        last.append(Text("interrupted", style=STYLE["error"]))
    rows.append((last, "  "))
    return Fields(rows, sep_style=STYLE["dim"])


# a rate is shown only over a window long enough to mean something: not 2,785 tok/s for 2 tokens
MIN_RATE_SECONDS = 0.5
MIN_RATE_TOKENS = 10
MIN_RATE_CHARS = 40


def _rate(stats: Stats, state: TreeState, elapsed: float | None) -> str | None:
    """Tokens per second once the usage is known, characters per second before; only over at
    least ``MIN_RATE_SECONDS`` after the first token and a few tokens (or characters)."""
    if elapsed is None or stats.ttft is None:
        return None
    span = elapsed - stats.ttft
    if span < MIN_RATE_SECONDS:
        return None
    out = (stats.usage or {}).get("output_tokens")
    if out is not None and stats.finished:
        return f"{out / span:,.1f} tok/s" if out >= MIN_RATE_TOKENS else None
    if state.generated_chars >= MIN_RATE_CHARS:
        return f"{state.generated_chars / span:,.0f} chars/s"
    return None


# -- segments --------------------------------------------------------------------------------------
def segment_header(seg: Segment, live: bool) -> Text:
    kind = seg.kind
    head = Text(kind.value, style=STYLE.get(kind.value, STYLE["name"]))
    if kind is SegmentType.TOOL_CALL:
        if seg.name:
            head.append(" " + seg.name, style=STYLE["name"])
        head.append("  " + seg.id, style=STYLE["dim"])
    elif kind in (SegmentType.WRITE_FILE, SegmentType.PATCH_FILE):
        head.append(" " + (seg.path or "(path not known yet)"), style=STYLE["name"])
        head.append(f"  {_plural(seg.lines, 'line')}  {seg.id}", style=STYLE["dim"])
    elif kind is SegmentType.RUN_BASH:
        head.append("  " + seg.id, style=STYLE["dim"])
    elif kind is SegmentType.MESSAGE:
        # a protocol message: who sent it, what it is, what it says
        meta = seg.meta
        arrow = "→" if meta.get("from") == "client" else "←"
        head.append(f" {arrow} {meta.get('label') or ''}", style=STYLE["name"])
        if meta.get("gist"):
            head.append(f"  {meta['gist']}", style=STYLE["dim"])
        if meta.get("event_id") is not None:
            head.append(f"  id {meta['event_id']}", style=STYLE["dim"])
    elif kind is SegmentType.IMAGE:
        meta = seg.meta
        shown = [str(meta[k]) for k in ("format", "size") if meta.get(k)]
        if isinstance(meta.get("index"), int):
            shown.append(f"partial {meta['index']}")
        if isinstance(meta.get("image_bytes"), int):
            shown.append(f"{meta['image_bytes']:,} bytes")
        head.append("  " + " · ".join(shown), style=STYLE["dim"])
    else:
        head.append(f"  {_plural(seg.lines, 'line')} · {seg.chars:,} chars", style=STYLE["dim"])
    if seg.problem:
        head.append(f"  [{seg.problem}]", style=STYLE["problem"])
    elif live and not seg.closed:
        head.append("  ▍", style=STYLE["dim"])
    elif not seg.closed:
        head.append("  [not closed]", style=STYLE["problem"])
    return head


_HOW = {
    SegmentType.MESSAGE: "json",
    SegmentType.RUN_BASH: "bash",
    SegmentType.WRITE_FILE: "code",
    SegmentType.PATCH_FILE: "diff",
    SegmentType.REASONING: "reasoning",
}


def _how(seg: Segment) -> str:
    """How the node's content is drawn."""
    kind = seg.kind
    if kind is SegmentType.TOOL_CALL:
        if seg.pretty_arguments() is not None or not seg.closed:
            return "json"
        return "raw"
    return _HOW.get(kind, "text")


def _content(seg: Segment) -> str:
    """The whole content as drawn: for finished tool calls, the pretty arguments."""
    pretty = seg.pretty_arguments() if seg.kind is SegmentType.TOOL_CALL else None
    if pretty is not None:
        return pretty
    if seg.kind is SegmentType.RUN_BASH and not seg.chars:
        return str(seg.meta.get("command") or "")
    return seg.text


def body_lines(seg: Segment) -> int:
    """How many lines the node's content has as drawn."""
    if seg.kind is SegmentType.TOOL_CALL:
        pretty = seg.pretty_lines
        if pretty:
            return pretty
    elif seg.kind is SegmentType.RUN_BASH and not seg.chars:
        return 1 if seg.meta.get("command") else 0
    return seg.lines


def _live_tail(seg: Segment, max_lines: int, line_chars: int) -> list[Part | Cut]:
    """The last ``max_lines`` lines, read from a window at the end of the content: the cost of a
    live frame does not grow with the length of the stream."""
    window = (max_lines + 1) * (line_chars + 1)
    pretty = seg.pretty_arguments() if seg.kind is SegmentType.TOOL_CALL else None
    if pretty is not None:
        full = len(pretty)
        text = pretty[-window:]
    elif seg.kind is SegmentType.RUN_BASH and not seg.chars:
        text = _content(seg)
        full = len(text)
    else:
        full = seg.chars
        text = seg.tail(window)
    total = body_lines(seg)
    pieces = clip(text, max_lines, "tail", line_chars)
    part = next((p for p in pieces if isinstance(p, Part)), None)
    if part is None:
        return [Cut(total)] if total else []
    kept = part.text.count("\n") + 1
    window_inside_line = full > len(text) and not any(isinstance(p, Cut) for p in pieces)
    if window_inside_line and not part.text.startswith("… "):
        part.text = "… " + part.text  # the window began inside this line (not marked yet)
    part.first_line = max(1, total - kept + 1)
    return [Cut(total - kept), part] if total > kept else [part]


def segment_body(
    seg: Segment, max_lines: int | None, keep: Keep, line_chars: int | None, live: bool
) -> list[RenderableType]:
    how = _how(seg)
    out: list[RenderableType] = []
    if how == "raw" and seg.arguments() is None:  # finished, and its arguments do not parse
        out.append(Text("arguments do not parse; raw text:", style=STYLE["error_body"]))
    if how in ("text", "reasoning") and 0 < seg.chars <= 200 and not seg.text.strip():
        # whitespace only: show it, or the node would look empty
        out.append(Text(repr(seg.text), style=STYLE["dim"]))
        pieces: list[Part | Cut] = []
    elif live and max_lines is not None and line_chars is not None:
        pieces = _live_tail(seg, max_lines, line_chars)
    else:
        pieces = clip(_content(seg), max_lines, keep, line_chars)
    for piece in pieces:
        if isinstance(piece, Cut):
            out.append(_marker(piece, keep, live))
            continue
        out.append(_draw(piece, how, seg))
    for err in seg.errors:
        out.append(Text(f"error: {err.message}", style=STYLE["error_body"]))
    if seg.kind is SegmentType.TEXT:
        out.extend(_citation_lines(seg.meta.get("citations")))
    return out


MAX_CITATIONS = 8


def _citation_lines(citations: Any) -> list[Text]:
    """The text's citations, one line each: ``cites [1] title <url>``."""
    if not isinstance(citations, list) or not citations:
        return []
    out = []
    for n, cite in enumerate(citations[:MAX_CITATIONS], 1):
        if not isinstance(cite, dict):
            continue
        line = Text(f"cites [{n}] ", style=STYLE["dim"])
        title = cite.get("title") or cite.get("file_id") or ""
        if title:
            line.append(str(title), style=STYLE["name"])
        where = cite.get("url")
        if where:
            line.append(f" <{where}>", style=STYLE["dim"])
        if isinstance(cite.get("start"), int) and isinstance(cite.get("end"), int):
            line.append(f" chars {cite['start']}-{cite['end']}", style=STYLE["dim"])
        out.append(line)
    if len(citations) > MAX_CITATIONS:
        more = len(citations) - MAX_CITATIONS
        out.append(Text(f"… {more} more citation{'s' if more > 1 else ''}", style=STYLE["dim"]))
    return out


def _draw(piece: Part, how: str, seg: Segment) -> RenderableType:
    text = piece.text
    if how == "json":
        return _json_highlighter(Body(text))
    if how == "reasoning":
        return Body(text, style=STYLE["reasoning_body"])
    if how == "diff":
        return _diff(text)
    if how == "bash":
        out = Text("$ ", style=STYLE["dim"])
        out.append(text, style="bold")
        return out
    if how == "code":
        return Code(text, lexer_for_path(seg.path), piece.first_line)
    if how == "raw":
        return Text(text, style=STYLE["error_body"])
    return Body(text)


class Body(Text):
    """A node's content: text that rich draws without trying to wrap it when every line fits
    (the same lines, without measuring each word of each line)."""

    __slots__ = ()

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterable[RichSegment]:
        if self.no_wrap is None and not options.no_wrap and _fits(self.plain, options.max_width):
            options = options.update(no_wrap=True)
        return super().__rich_console__(console, options)


def _fits(text: str, width: int) -> bool:
    """Every line of ``text`` fits in ``width`` columns as it is (no tab to expand)."""
    if "\t" in text:
        return False
    if text.isascii():
        return max(map(len, text.split("\n"))) <= width
    return max(map(cell_len, text.split("\n"))) <= width


class Code:
    """Code with line numbers, highlighted for its language, drawn by rich's ``Syntax``.

    Only this code is lexed (in a live frame, the lines on the screen), with the language's lexer
    made once (:mod:`.lexers`). Where no style shows (a pipe) it is drawn with the plain text
    lexer: the language's lexer is not even made.
    """

    def __init__(self, code: str, language: str, start_line: int = 1) -> None:
        self.code = code
        self.language = language
        self.start_line = start_line

    def lexer(self, console: Console) -> Any:
        """The lexer for this code on ``console`` (plain text where no style shows)."""
        return lexers.lexer(self.language if styled(console) else "text")

    def fits(self, width: int) -> bool:
        """Every line fits at ``width`` columns, beside the line numbers."""
        return _fits(self.code.expandtabs(CODE_TAB_SIZE), self.code_width(width))

    def syntax(self, console: Console, width: int) -> Any:
        """The ``Syntax`` that draws this code at ``width`` columns on ``console``: lines that
        do not fit wrap (when all fit, it is told so and need not try)."""
        from rich.syntax import Syntax

        return Syntax(
            self.code,
            self.lexer(console),
            theme="ansi_dark",
            line_numbers=True,
            start_line=self.start_line,
            background_color="default",
            word_wrap=not self.fits(width),
            tab_size=CODE_TAB_SIZE,
        )

    def code_width(self, width: int) -> int:
        """Columns left for the code at ``width`` (rich's layout: numbers, a space, the code)."""
        last = self.start_line + self.code.count("\n")
        return width - (len(str(last)) + 2) - 1

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.syntax(console, options.max_width)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.syntax(console, options.max_width))


def styled(console: Console) -> bool:
    """``console`` shows styles (a terminal with colours, or a console recording for export)."""
    return console.color_system is not None or console.record


CODE_TAB_SIZE = lexers.TAB_SIZE


def _diff(text: str) -> Text:
    out = Text()
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        elif line.startswith("@@"):
            style = "cyan"
        else:
            style = ""
        out.append(line, style=style)
        if i < len(lines) - 1:
            out.append("\n")
    return out


def note_line(
    note: Note, stats: Stats | None = None, state: TreeState | None = None
) -> Text | None:
    """An error or quirk line; ``None`` for a note that says again what another line says.

    When the recorded answer is an HTTP error (a 429, a 529), it is shown as one HTTP error with
    the provider's message once: the provider's error reads ``HTTP 429: message``, and the note
    that the recording ended with that same error is left out.
    """
    if note.kind == "error":
        status = stats.status if stats is not None else None
        if status is not None and status >= 400:
            if note.name == "provider_error":
                return _http_error_line(status, _provider_message(note))
            detail = note.detail if isinstance(note.detail, str) else ""
            if note.name == "recording_error" and detail.startswith(f"HTTP {status}"):
                if state is not None and state.provider_errors:
                    return None
                return _http_error_line(status, detail[len(f"HTTP {status}") :].lstrip(": "))
        text = Text("error ", style=STYLE["error"])
        text.append(f"{note.name}: {note.message}", style=STYLE["error_body"])
    else:
        text = Text("quirk ", style=STYLE["quirk"])
        text.append(f"{note.name}: {note.message}", style=STYLE["quirk_body"])
    return text


def _http_error_line(status: int, message: str) -> Text:
    text = Text(f"error HTTP {status}", style=STYLE["error"])
    if message:
        text.append(f": {message}", style=STYLE["error_body"])
    return text


def _provider_message(note: Note) -> str:
    """The provider's own message (and error type) from an error's detail."""
    detail = note.detail
    if isinstance(detail, dict) and isinstance(detail.get("message"), str):
        kind = detail.get("type")
        return detail["message"] + (f" ({kind})" if isinstance(kind, str) and kind else "")
    return note.message.split(": ", 1)[-1]


def _blank(seg: Segment) -> bool:
    """A text segment with nothing but whitespace (the tree does not draw it)."""
    return seg.kind is SegmentType.TEXT and seg.chars <= 1000 and not seg.text.strip()


def invocation_line(inv: Any, max_chars: int | None, cache: dict[Any, str] | None = None) -> Text:
    """``name(arguments)  id`` on one line; ``cache`` keeps the argument text between frames."""
    line = Text(inv.name or "(unnamed)", style=STYLE["name"])
    style = STYLE["error_body"] if inv.arguments is None else ""
    key = (inv.id, max_chars is None)
    args = cache.get(key) if cache is not None else None
    if args is None:
        args = _arguments_text(inv, compact=max_chars is not None)
        if cache is not None:
            cache[key] = args
    if max_chars is not None and len(args) > max_chars:
        args = args[:max_chars] + f" … (+{len(args) - max_chars:,} chars)"
    line.append("(")
    line.append_text(_json_highlighter(Text(args, style=style)) if not style else Text(args, style))
    line.append(")")
    line.append("  " + inv.id, style=STYLE["dim"])
    return line


def _arguments_text(inv: Any, *, compact: bool) -> str:
    if inv.arguments is None:
        # the raw text as the provider sent it: a repr() would escape its escapes again
        raw = inv.raw_arguments if inv.raw_arguments is not None else ""
        return f"null (raw: {raw})"
    if compact and isinstance(inv.arguments, dict):
        return _compact_args(inv.arguments)
    return json.dumps(inv.arguments, ensure_ascii=False)


def _compact_args(args: dict[str, Any]) -> str:
    """Arguments on one line; a multi-line string (a file's content, a patch: the node above
    shows it) is summarised as ``<N lines, M chars>``."""
    fields = []
    for key, value in args.items():
        if isinstance(value, str) and "\n" in value.rstrip("\n"):
            lines = value.count("\n") + (0 if value.endswith("\n") else 1)
            shown = f"<{_plural(lines, 'line')}, {len(value):,} chars>"
        else:
            shown = json.dumps(value, ensure_ascii=False)
        fields.append(f"{json.dumps(key, ensure_ascii=False)}: {shown}")
    return "{" + ", ".join(fields) + "}"


# -- whole trees -----------------------------------------------------------------------------------
def _node_label(seg: Segment, body: list[RenderableType], live: bool) -> RenderableType:
    header = segment_header(seg, live)
    return Group(header, *body) if body else header


def render_static(state: TreeState, stats: Stats, opts: ViewOptions | None = None) -> Group:
    """The whole tree, printed once."""
    opts = opts or ViewOptions()
    tree = Tree(root_label(stats), guide_style="dim")
    for node in state.nodes:
        if isinstance(node, Note):
            line = note_line(node, stats, state)
            if line is not None:
                tree.add(line)
            continue
        if _blank(node):
            continue
        max_lines, keep = _static_limits(node, opts)
        prose = node.kind in (SegmentType.TEXT, SegmentType.REASONING)
        line_chars = opts.text_line_chars if prose else opts.line_chars
        body = segment_body(node, max_lines, keep, line_chars, live=False)
        tree.add(_node_label(node, body, live=False))
    if state.interrupted:
        tree.add(Text("interrupted: the replay was stopped here", style=STYLE["error"]))
    if state.invocations:
        inv = tree.add(Text(f"invocations ({len(state.invocations)})", style=STYLE["name"]))
        for item in state.invocations:
            inv.add(invocation_line(item, opts.invocation_chars))
    return Group(tree, footer(stats, state))


def _static_limits(seg: Segment, opts: ViewOptions) -> tuple[int | None, Keep]:
    kind = seg.kind
    if kind is SegmentType.REASONING:
        return opts.reasoning_lines, "tail"
    if kind is SegmentType.TEXT:
        return opts.text_lines, "both"
    return opts.code_lines, "both"


LIVE_OLDER_LINES = 2  # content lines of a node that is not the newest
LIVE_REASONING_LINES = 4
LIVE_INVOCATIONS = 3
ROOT_LINES = 2  # source; provider, converter, parser, model


def plan_live(nodes: list[Any], budget: int) -> tuple[int, list[tuple[Any, int]]]:
    """Which nodes a live frame of ``budget`` lines shows, and how many content lines each.

    Walks from the newest node back: each takes its header line and as many content lines as fit
    (the newest may use all that is left; reasoning and older nodes a few). Returns the number
    of older nodes left out, and the plan in stream order.
    """
    plan: list[tuple[Any, int]] = []
    newest = True
    visited = 0
    for node in reversed(nodes):
        if budget <= 0:
            break
        visited += 1
        if isinstance(node, Segment) and _blank(node):
            continue  # whitespace-only text: no node
        budget -= 1
        show = 0
        if isinstance(node, Segment):
            total = body_lines(node)
            if node.kind is SegmentType.REASONING:
                cap = LIVE_REASONING_LINES
            else:
                cap = budget if newest else LIVE_OLDER_LINES
            show = max(0, min(total, cap, budget - (1 if total > cap else 0)))
            budget -= show + (1 if show < total else 0)
            newest = False
        plan.append((node, show))
    plan.reverse()
    return len(nodes) - visited, plan


SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def waiting_line(waited: float) -> Text:
    """What a live frame shows before the stream's first event: it is waiting, and how long."""
    frame = SPINNER[int(waited * 10) % len(SPINNER)]
    text = Text(frame + " ", style=STYLE["text"])
    text.append(f"waiting for the stream… {waited:.1f} s", style=STYLE["dim"])
    return text


def render_live(
    state: TreeState, stats: Stats, width: int, height: int, waited: float | None = None
) -> RenderableType:
    """One live frame that fits ``height`` lines of ``width`` columns. ``waited``: seconds since
    the display began, shown with a spinner while nothing has arrived yet."""
    foot = footer(stats, state)
    foot_lines = foot.height(width)
    tree_height = max(4, height - foot_lines - 1)
    # the latest invocations, in at most a quarter of the room
    n_inv = len(state.invocations)
    show_inv = max(0, min(n_inv, LIVE_INVOCATIONS, (tree_height - ROOT_LINES) // 4 - 1))
    inv_lines = (1 + show_inv + (1 if show_inv < n_inv and show_inv else 0)) if n_inv else 0
    budget = tree_height - ROOT_LINES - inv_lines - 1
    hidden, plan = plan_live(state.nodes, budget)
    line_chars = max(20, width * 2)
    tree = Tree(root_label(stats), guide_style="dim")
    if hidden:
        tree.add(Text(f"… {_plural(hidden, 'earlier node')}", style=STYLE["marker"]))
    if waited is not None and not state.nodes and not stats.finished:
        tree.add(waiting_line(waited))
    for node, show in plan:
        if isinstance(node, Note):
            line = note_line(node, stats, state)
            if line is not None:
                tree.add(line)
            continue
        body = segment_body(node, show, "tail", line_chars, live=True) if show else []
        if not show and body_lines(node):
            body = [Text(f"… {_plural(body_lines(node), 'line')}", style=STYLE["marker"])]
        tree.add(_node_label(node, body, live=True))
    if n_inv:
        inv = tree.add(Text(f"invocations ({n_inv})", style=STYLE["name"]))
        if show_inv:
            if show_inv < n_inv:
                inv.add(Text(f"… {n_inv - show_inv:,} more", style=STYLE["marker"]))
            for item in state.invocations[n_inv - show_inv :]:
                inv.add(invocation_line(item, max(20, width - 12), state.view_cache))
    return Group(KeepBottom(tree, tree_height, head=ROOT_LINES), foot)


class KeepBottom:
    """Draws a renderable in at most ``height`` lines: its first line, then its last ones."""

    def __init__(self, renderable: RenderableType, height: int, head: int = 1) -> None:
        self.renderable = renderable
        self.height = height
        self.head = head

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines = console.render_lines(self.renderable, options.update(height=None), pad=False)
        if len(lines) > self.height:
            keep = max(1, self.height - self.head - 1)
            hidden = len(lines) - self.head - keep
            marker = console.render_lines(
                Text(f"… {_plural(hidden, 'line')} above", style=STYLE["marker"]),
                options,
                pad=False,
            )
            lines = lines[: self.head] + marker[:1] + lines[-keep:]
        new_line = RichSegment.line()
        for line in lines:
            yield from line
            yield new_line
