"""The tree of a WebSocket session (``replay`` of a Realtime or Responses-over-WebSocket
recording): the client's events beside the server's, each response with its text, audio
transcript, audio (bytes and seconds), calls, errors, usage and rate limits, then the session's
finish, usage, errors and quirks.

The outline itself is the engine's (:mod:`streamtool.core.engine.session`, drawn by the API's
``session`` part); this module only draws it with rich: live on a terminal (redrawn at most
:data:`REFRESH` times a second as the session plays), printed once otherwise.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

    from streamtool.core.engine.replay import Item, ReplayEngine
    from streamtool.core.engine.session import Node

REFRESH = 1 / 12  # seconds between two frames of the live tree
SHORT_TEXT = 240  # the longest text a line shows without --full

# how each kind of line is drawn: (its mark, its style)
_LOOK = {
    "client": ("→", "cyan"),
    "server": ("←", "dim"),
    "response": ("●", "bold"),
    "text": ("", "green"),
    "transcript": ("", "green italic"),
    "audio": ("", "magenta"),
    "call": ("", "yellow"),
    "error": ("✕", "bold red"),
    "usage": ("", "dim"),
    "rate_limits": ("", "dim"),
    "close": ("■", "red"),
    "ping": ("", "dim"),
    "note": ("", "blue"),
}


def _line(node: Node, full: bool) -> Any:
    from rich.text import Text

    mark, style = _LOOK.get(node.kind, ("", ""))
    line = Text()
    if mark:
        line.append(mark + " ", style=style)
    line.append(node.label, style=style if node.kind != "server" else "")
    if node.count > 1 and node.kind not in ("audio",):
        line.append(f" ×{node.count}", style="dim")
    detail = node.detail
    if detail:
        if not full and len(detail) > SHORT_TEXT:
            detail = detail[: SHORT_TEXT - 1] + "…"
        quoted = node.kind in ("text", "transcript")
        line.append("  ")
        line.append(repr(detail) if quoted else detail, style=style if quoted else "dim")
    if node.kind == "close" and node.detail.startswith("1000"):
        line.stylize("dim")
    return line


def render(engine: ReplayEngine, *, full: bool = False, final: bool = True) -> RenderableType:
    """The session's tree, and (``final``) its summary lines under it."""
    from rich.console import Group
    from rich.text import Text
    from rich.tree import Tree

    from .tree_model import imported_line

    header = engine.header
    session = engine.session
    title = Text()
    title.append(f"{header.api or 'websocket'} session", style="bold")
    if header.url:
        title.append(f"  {header.url}", style="dim")
    if session is not None:
        counts = session.counts
        title.append(
            f"  {counts.get('client', 0)} client · {counts.get('server', 0)} server messages",
            style="dim",
        )
    if engine.last_t is not None:
        title.append(f" · {engine.last_t:.2f} s", style="dim")
    told = imported_line(header.extra.get("imported"))
    if told:
        title.append(f"\n{told}", style="dim")
    tree = Tree(title, guide_style="dim")

    def add(parent: Any, nodes: list[Node]) -> None:
        for node in nodes:
            branch = parent.add(_line(node, full))
            if node.children:
                add(branch, node.children)

    if session is not None:
        add(tree, session.outline.nodes())
    if not final:
        return tree
    lines: list[Any] = [tree]
    summary = Text()
    summary.append("finish ", style="dim")
    summary.append(engine.finish_class(), style="bold")
    if engine.finish_reason:
        summary.append(f" ({engine.finish_reason})", style="dim")
    if engine.usage:
        shown = ", ".join(f"{k.removesuffix('_tokens')} {v}" for k, v in engine.usage.items())
        summary.append(f" · usage {shown}", style="dim")
    calls = len(engine.invocations())
    if calls:
        summary.append(f" · {calls} call{'s' if calls != 1 else ''}", style="dim")
    lines.append(summary)
    for error in engine.errors:
        lines.append(Text(f"error: {error.message}", style="red"))
    for quirk in engine.quirks:
        text = Text("quirk ", style="yellow")
        text.append(str(quirk.id), style="bold yellow")
        if quirk.detail:
            text.append(f"  {quirk.detail}", style="dim")
        lines.append(text)
    return Group(*lines)


class SessionTreeSink:
    """``replay`` of a session as a tree: live on a terminal, printed once otherwise."""

    batchable = False

    def __init__(self, console: Console, *, live: bool, full: bool = False) -> None:
        self.console = console
        self.full = full
        self.live = live
        self._display: Any = None
        self._engine: ReplayEngine | None = None
        self._drawn = 0.0

    def _frame(self) -> Any:
        assert self._engine is not None
        return render(self._engine, full=self.full, final=False)

    def observe(self, engine: ReplayEngine) -> None:
        self._engine = engine
        if not self.live:
            return
        if self._display is None:
            from .tree import start_live_display

            self._display = start_live_display(self.console, self._frame)
        now = time.monotonic()
        if now - self._drawn >= REFRESH and engine.session is not None:
            self._drawn = now
            self._display.refresh()

    def on_items(self, engine: ReplayEngine, t: float | None, items: list[Item]) -> None:
        self.observe(engine)

    def _stop(self) -> None:
        if self._display is not None:
            self._display.stop()
            self._display = None

    def close(self, engine: ReplayEngine) -> None:
        self._stop()
        self.console.print(render(engine, full=self.full))

    def interrupt(self) -> None:
        self._stop()
        if self._engine is not None and self._engine.session is not None:
            self.console.print(render(self._engine, full=self.full, final=False))

    def abort(self) -> None:
        self._stop()


def make_session_sink(*, live: bool | None, no_color: bool, full: bool) -> SessionTreeSink:
    """The session tree on stdout: live when ``live`` (``None``: when stdout is a terminal)."""
    from .tree import make_console

    console = make_console(no_color=no_color)
    return SessionTreeSink(console, live=console.is_terminal if live is None else live, full=full)
