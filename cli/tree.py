"""The tree sink: a replay (or a capture) drawn as a tree that grows as the stream plays.

On a terminal the tree is a rich ``Live`` display redrawn by a small thread at most
``refresh_per_second`` times a second, and only when something changed; the stream's side only
updates the model (:mod:`.tree_model`), so a fast replay is never slowed by drawing. The first
frame is drawn one redraw interval after the stream began: a stream over sooner (a replay at
``--speed max``, a short answer) gets no frame that would be replaced at once, only its tree. At
the end the live frame is replaced by the whole tree, printed once. Off a terminal (a pipe, CI)
or with ``live=False`` nothing is redrawn: the tree is printed once at the end.

The same sink serves ``replay`` and ``record``::

    sink = make_live_sink()            # a console on stdout; live when it is a terminal
    sink.start(engine)                 # optional: show the root line before the first byte
    ...
    items = engine.feed_chunk(chunk)   # after every network read (even one that gave no items)
    sink.on_items(engine, chunk.t, items)
    ...
    sink.on_items(engine, None, engine.finish(end))
    sink.close(engine)                 # stop redrawing; print the final tree

rich is imported only when a sink is made, so ``streamtool --help`` stays fast.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from .tree_model import Stats, TreeState

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.console import Console, RenderableType
    from rich.live import Live

    from .tree_view import ViewOptions

MAX_REFRESH_PER_SECOND = 15.0


def make_console(
    *,
    no_color: bool = False,
    file: Any = None,
    force_terminal: bool | None = None,
    width: int | None = None,
    height: int | None = None,
    record: bool = False,
) -> Console:
    """The console the tree draws on. ``NO_COLOR`` (rich reads it) and ``no_color`` drop colour;
    the width follows the terminal (or ``COLUMNS``, else 80 off a terminal)."""
    from rich.console import Console

    return Console(
        file=file,
        no_color=True if no_color else None,
        force_terminal=force_terminal,
        width=width,
        height=height,
        record=record,
        highlight=False,
        markup=False,
        emoji=False,
    )


def start_live_display(console: Console, frame: Callable[[], Any]) -> Any:
    """A started rich ``Live`` that redraws ``frame()`` when refreshed (never on its own),
    cropped to the terminal and gone from the screen when stopped."""
    from rich.live import Live

    display = Live(
        console=console,
        auto_refresh=False,
        transient=True,
        redirect_stdout=False,
        redirect_stderr=False,
        vertical_overflow="crop",
        get_renderable=frame,
    )
    display.start(refresh=True)
    return display


class TreeSink:
    """A replay sink (``on_items(engine, t, items)``, ``close(engine)``) that draws the tree."""

    # the model joins a segment's deltas, so the tree does not depend on where the reads were
    # cut: an unpaced replay feeds it in batches (the frames are drawn by the redraw thread)
    batchable = True
    # it reads the engine's segments (the engine keeps them), which the redraw thread draws: the
    # engine is fed under ``feed_lock``
    needs_segments = True

    def __init__(
        self,
        console: Console | None = None,
        *,
        live: bool | None = None,
        options: ViewOptions | None = None,
        refresh_per_second: float = MAX_REFRESH_PER_SECOND,
    ) -> None:
        from .tree_view import ViewOptions, styled

        self.console = console if console is not None else make_console()
        if live is None:
            live = self.console.is_terminal and not self.console.is_dumb_terminal
        self.live = live
        self.options = options or ViewOptions()
        self.refresh_interval = 1.0 / min(refresh_per_second, MAX_REFRESH_PER_SECOND)
        self.state = TreeState()
        if styled(self.console):
            # the lexer of a file's language is made while the stream plays, not by a frame
            from .lexers import prepare

            self.state.on_path = prepare
        self.frames = 0  # live frames drawn
        self._engine: Any = None
        self._lock = threading.Lock()
        self._dirty = False  # the model changed since the last frame (set by the stream's side)
        self._stop = threading.Event()
        self._display: Live | None = None
        self._blank = False  # the live display is being taken down: its last frame is empty
        self._thread: threading.Thread | None = None
        self._began = time.monotonic()
        self.closed = False

    # -- the stream's side -----------------------------------------------------------------------
    def start(self, engine: Any = None) -> None:
        """Begin the live display (done by the first ``on_items`` otherwise)."""
        if engine is not None:
            self._engine = engine
        self._changed()

    def observe(self, engine: Any) -> None:
        """The engine moved on (a read that gave no items yet): the footer's counters changed.
        Once the sink has the engine (from ``start`` or ``on_items``) the redraw thread sees
        its reads itself; before that, this is how the root line learns the stream's source."""
        self._engine = engine
        if self._thread is None:
            self._changed()
        else:  # the common case, once per read: just ask for a frame
            self._dirty = True

    @property
    def feed_lock(self) -> threading.Lock:
        """Held while the engine is fed: the redraw thread reads the engine's segments."""
        return self._lock

    def on_items(self, engine: Any, t: float | None, items: list[Any]) -> None:
        self._engine = engine
        if items:
            with self._lock:
                state = self.state
                state.use(getattr(engine, "segments", None))
                state.feed(items)
        if self._thread is None:
            self._changed()
        else:
            self._dirty = True

    def _changed(self) -> None:
        """Something to draw: start the redraw thread if it is not running, ask for a frame."""
        if self._thread is None and self.live and not self.closed:
            self._start_live()
        self._dirty = True

    def close(self, engine: Any = None, *, interrupted: bool = False) -> None:
        """Stop redrawing and print the whole tree once."""
        if self.closed:
            return
        self.closed = True
        if engine is not None:
            self._engine = engine
        self._stop_live()
        with self._lock:
            self.state.interrupted = interrupted
            final = self.final_renderable()
        self.console.print(final)

    def abort(self) -> None:
        """Stop drawing and print nothing (the command is about to report an error)."""
        self.closed = True
        self._stop_live()

    def interrupt(self) -> None:
        """The user stopped the replay (Ctrl-C): print the tree as far as it got."""
        self.close(None, interrupted=True)

    # -- drawing ---------------------------------------------------------------------------------
    def stats(self) -> Stats:
        return Stats.of(self._engine) if self._engine is not None else Stats()

    def final_renderable(self) -> RenderableType:
        from .tree_view import render_static

        return render_static(self.state, self.stats(), self.options)

    def frame(self) -> RenderableType:
        """The live frame as the model stands now (taken under the model's lock)."""
        from .tree_view import render_live

        if self._blank:
            return ""
        size = self.console.size
        with self._lock:
            waited = time.monotonic() - self._began if self.waiting else None
            return render_live(self.state, self.stats(), size.width, size.height, waited)

    @property
    def waiting(self) -> bool:
        """Nothing to show yet: the live frame shows a spinner and the time waited."""
        return not self.state.nodes and not self.closed

    def _start_live(self) -> None:
        self._began = time.monotonic()
        self._thread = threading.Thread(target=self._redraw_loop, name="tree-redraw", daemon=True)
        self._thread.start()

    def _redraw_loop(self) -> None:
        """Every ``refresh_interval``, redraw if the model changed (the stream's side only sets a
        flag: a fast replay pays nothing for drawing but the frames themselves). The live display
        itself begins at the first tick: a stream that ended before it has drawn nothing."""
        drawn_reads = -1
        while not self._stop.wait(self.refresh_interval):
            # reads that gave no item change the footer's counters (and need no ``observe``)
            reads = getattr(self._engine, "chunks", -1)
            if self._dirty or reads != drawn_reads or self.waiting:  # the spinner turns too
                self._dirty = False
                drawn_reads = reads
                if self._display is None:
                    self._display = start_live_display(self.console, self.frame)
                else:
                    self._display.refresh()
                self.frames += 1

    def _stop_live(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()  # after it, no frame is being drawn or begun
        display, self._display = self._display, None
        if display is None:
            return
        # rich draws the frame once more when it stops, then erases it (transient): that last
        # frame is empty, so nothing is drawn only to be erased
        self._blank = True
        display.stop()


def make_live_sink(
    console: Console | None = None,
    *,
    live: bool | None = None,
    no_color: bool = False,
    options: ViewOptions | None = None,
) -> TreeSink:
    """A tree sink for a command that shows a stream as it arrives (``replay``, ``record``).

    ``console`` defaults to one on stdout (``no_color`` drops colour); ``live`` defaults to
    "stdout is a terminal". Feed it with ``on_items(engine, t, items)`` after every read and
    finish with ``close(engine)``.
    """
    if console is None:
        console = make_console(no_color=no_color)
    return TreeSink(console, live=live, options=options)
