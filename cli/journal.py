"""The proxy's live view: one row per exchange, growing while it streams (``--view journal``),
and the live tree of the newest stream above it (``--view tree``).

The proxy's side only appends each recorded read to its row (the forwarding edge calls the
observer on the server's event loop, so it must stay cheap); a drawing thread feeds the reads
to a replay engine per exchange and redraws a few times a second. The figures of a row (tool
calls, errors, quirks) are therefore the ones ``streamtool replay`` gives for that recording.
Off a terminal the journal prints one line per exchange when it ends.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

from streamtool.core.model.records import Chunk, End, Header
from streamtool.core.net.forward import Exchange
from streamtool.core.recording.secrets import redact_keys

REFRESH_SECONDS = 0.25


class Row:
    """One exchange and the replay of what it received so far (owned by the drawing thread)."""

    def __init__(self, ex: Exchange) -> None:
        self.ex = ex
        self.pending: deque[Chunk] = deque()
        self.engine: Any = None
        self.finished = False
        self.failed: str | None = None  # the stream could not be replayed (unknown API...)
        self.items: list[Any] = []

    def pump(self, keep_items: bool) -> None:
        """Feed the reads that arrived since the last call (drawing thread only)."""
        from streamtool.core.engine.replay import ReplayEngine
        from streamtool.core.pipeline.segment_log import SegmentLog

        ex = self.ex
        if self.engine is None and self.failed is None:
            header = Header(
                provider=ex.provider,
                api=ex.api,
                request={"method": ex.method, "url": ex.path, "body": {"model": ex.model}},
                response={"status": ex.status},
            )
            try:
                # the tree's row keeps its segments: the tree reads them
                log = SegmentLog() if keep_items else None
                self.engine = ReplayEngine(header, source=ex.file or ex.path, segments=log)
            except Exception as exc:
                self.failed = str(exc)
        while self.pending:
            chunk = self.pending.popleft()
            if self.engine is None:
                continue
            try:
                items = self.engine.feed_chunk(chunk)
            except Exception as exc:  # an undetectable stream: the row says so
                self.failed = str(exc)
                self.engine = None
                continue
            if keep_items:
                self.items.extend(items)
        if ex.end is not None and not self.finished:
            self.finished = True
            if self.engine is not None:
                try:
                    items = self.engine.finish(End(ex.duration, ex.end, ex.error))
                except Exception as exc:
                    self.failed = str(exc)
                    items = []
                if keep_items:
                    self.items.extend(items)

    def figures(self) -> tuple[int, int, int]:
        """(tool calls, errors, quirks) so far."""
        engine = self.engine
        if engine is None:
            return 0, 0, 0
        return len(engine.invocations()), len(engine.errors), len(engine.quirks)


def _secs(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value * 1000:.0f}ms" if value < 1 else f"{value:.2f}s"


def row_cells(row: Row) -> list[str]:
    ex = row.ex
    tools, errors, quirks = row.figures()
    status = "-" if ex.status is None else str(ex.status)
    if ex.end is None:
        state = "streaming"
    elif ex.end == "complete":
        state = "ok"
    else:
        state = ex.end
    problems = []
    if ex.error and ex.end != "complete":
        problems.append(ex.error)
    if ex.record_error:
        problems.append(f"not recorded: {ex.record_error}")
    if row.failed:
        problems.append(row.failed)
    return [
        time.strftime("%H:%M:%S", time.localtime(ex.started_at)),
        _short(ex.api),
        redact_keys(ex.model or "-"),
        status,
        state,
        _secs(ex.ttft),
        _secs(ex.elapsed),
        str(ex.chunks),
        str(tools),
        str(errors),
        str(quirks),
        Path(ex.file).name if ex.file else "-",
        redact_keys("; ".join(problems)),
    ]


HEADINGS = [
    "time",
    "API",
    "model",
    "status",
    "end",
    "TTFT",
    "duration",
    "chunks",
    "tools",
    "errors",
    "quirks",
    "file",
    "",
]


def _short(api: str | None) -> str:
    """An API's name as the journal's column shows it (its row's short name, if it has one)."""
    from streamtool.core.plugins import find_api

    row = find_api(api) if api else None
    return (row.short if row is not None else "") or api or "-"


class Journal:
    """The proxy's observer and its display (``with journal: run the proxy``)."""

    def __init__(
        self, *, tree: bool = False, console: Any = None, live: bool | None = None
    ) -> None:
        from .tree import make_console

        self.console = console or make_console(file=None)
        if console is None:
            import sys

            self.console = make_console(file=sys.stderr)
        if live is None:
            live = self.console.is_terminal and not self.console.is_dumb_terminal
        self.live = live
        self.tree = tree
        self.rows: list[Row] = []
        self._by_ex: dict[int, Row] = {}
        self._printed: set[int] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._display: Any = None
        self.failed: str | None = None  # why the refresh thread stopped, if it did
        self._tree_state: Any = None
        self._tree_row: Row | None = None
        self.observer = _Observer(self)

    # -- the proxy's side (event loop thread): cheap appends only --------------------------------
    def _started(self, ex: Exchange) -> None:
        row = Row(ex)
        self._by_ex[id(ex)] = row
        self.rows.append(row)

    def _read(self, ex: Exchange, chunk: Chunk) -> None:
        row = self._by_ex.get(id(ex))
        if row is not None:
            row.pending.append(chunk)

    # -- drawing -----------------------------------------------------------------------------
    def pump(self) -> None:
        newest = self.rows[-1] if self.rows else None
        if self.tree and newest is not None and newest is not self._tree_row:
            from .tree_model import TreeState

            self._tree_row = newest
            self._tree_state = TreeState()
        for row in list(self.rows):
            if row.finished and not row.pending:
                continue
            keep = self.tree and row is self._tree_row
            row.pump(keep)
            if keep and row.items:
                self._tree_state.use(row.engine.segments if row.engine is not None else None)
                self._tree_state.feed(row.items)
                row.items = []

    def table(self, limit: int | None = None) -> Any:
        """The rows as a table as wide as the console: the API, the end, the TTFT and the file
        stay; the chunk count, the time, the duration and the counts go first when it is too
        narrow; file names keep what tells them apart; what went wrong folds onto more lines."""
        from .fit import Col, build_table

        rows = self.rows if limit is None else self.rows[-limit:]
        cells = [row_cells(row) for row in rows]

        def column(i: int, **how: Any) -> Col:
            return Col(HEADINGS[i], [c[i] for c in cells], **how)

        right: Any = "right"
        columns = [
            column(0, drop=2),  # time
            column(1, minimum=6, grow=3),  # API
            column(2, minimum=10, grow=1, ample=24, names=True),  # model
            column(3, justify=right),  # status
            column(4),  # end
            column(5, justify=right),  # TTFT
            column(6, justify=right, drop=3),  # duration
            column(7, justify=right, drop=1),  # chunks
            column(8, justify=right, drop=5),  # tools
            column(9, justify=right, drop=6),  # errors
            column(10, justify=right, drop=4),  # quirks
            column(11, minimum=16, grow=0, ample=40, names=True),  # file
        ]
        if any(c[12] for c in cells):  # what went wrong, when something did
            columns.append(column(12, minimum=16, grow=2, wrap=True))
        styles = [
            "red" if row.ex.end not in (None, "complete") or (row.ex.status or 0) >= 400 else None
            for row in rows
        ]
        table, _ = build_table(columns, self.console.width, styles)
        return table

    def frame(self) -> Any:
        from rich.console import Group

        self.pump()
        height = self.console.size.height
        if self.tree and self._tree_row is not None and self._tree_row.engine is not None:
            from .tree_model import Stats
            from .tree_view import render_live

            journal_lines = min(len(self.rows), max(3, height // 3))
            tree = render_live(
                self._tree_state,
                Stats.of(self._tree_row.engine),
                self.console.size.width,
                max(5, height - journal_lines - 2),
            )
            return Group(tree, self.table(journal_lines))
        return self.table(max(1, height - 2))

    def _print_ended(self) -> None:
        """Off a terminal: one line per exchange as it ends."""
        self.pump()
        for row in self.rows:
            if row.finished and id(row.ex) not in self._printed:
                self._printed.add(id(row.ex))
                cells = row_cells(row)
                line = "  ".join(f"{h}={c}" for h, c in zip(HEADINGS[:-1], cells, strict=False))
                if cells[-1]:
                    line += f"  ({cells[-1]})"
                self.console.print(line, soft_wrap=True)

    def _loop(self) -> None:
        while not self._stop.wait(REFRESH_SECONDS):
            try:
                if self._display is not None:
                    self._display.refresh()
                else:
                    self._print_ended()
            except Exception as exc:  # the view's trouble must not stop the proxy: say it once
                self.failed = f"{type(exc).__name__}: {exc}"
                import sys

                print(
                    f"streamtool proxy: the live view stopped ({self.failed}); recording goes on",
                    file=sys.stderr,
                    flush=True,
                )
                return

    def __enter__(self) -> Journal:
        if self.live:
            from .tree import start_live_display

            self._display = start_live_display(self.console, self.frame)
        self._thread = threading.Thread(target=self._loop, name="journal", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._display is not None:
            self._display.stop()
            self._display = None
            if self.failed:
                return
            self.pump()
            if self.rows:
                self.console.print(self.table())
        elif not self.failed:
            self._print_ended()


class _Observer:
    """What the forwarding edge calls (see ``streamtool.core.net.forward.Observer``)."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal

    def started(self, exchange: Exchange) -> None:
        self.journal._started(exchange)

    def head(self, exchange: Exchange) -> None:
        pass

    def read(self, exchange: Exchange, chunk: Chunk) -> None:
        self.journal._read(exchange, chunk)

    def ended(self, exchange: Exchange) -> None:
        pass


def make_view(view: str) -> Journal | None:
    if view == "none":
        return None
    return Journal(tree=view == "tree")
