"""Tables that fit the width they are drawn in (``ls``, ``conform``, the proxy's journal).

Which columns stay and how wide each is are decided here; rich draws the table (alignment, cells
folded onto more lines, ``…`` where a cell is cut). A column of file names is never cut at its
end: a name that does not fit loses its middle, and the characters that tell it apart from the
other names of the table are the ones kept. Off a terminal nothing is cut unless ``COLUMNS``
gives a width: a piped table has one whole line per row, for grep and scripts.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

ELLIPSIS = "…"
GAP = 2  # between two columns
WORD_BREAKS = "-_./ :"


def available_width(stream: IO[str] | None = None) -> int | None:
    """``COLUMNS`` if it is set, else the terminal's width; None (no limit) off a terminal."""
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    stream = stream if stream is not None else sys.stdout
    try:
        if stream.isatty():
            return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):
        pass
    return None


# -- names: the part that tells them apart -------------------------------------------------------
def shorten_names(names: Sequence[str], width: int) -> list[str]:
    """Each of ``names`` in at most ``width`` characters. A longer one loses its middle; where the
    width allows, what is kept holds the first character in which it differs from every other
    name's start (or the last in which it differs from every other name's end), so two names
    that differ stay different; when neither end can show that, the part around the first
    difference is shown between two ``…``."""
    if all(len(name) <= width for name in names):
        return list(names)
    distinct = list(dict.fromkeys(names))  # a name met twice is shown the same both times
    starts = _shared(distinct)
    ends = _shared([name[::-1] for name in distinct])
    short = {n: _shorten(n, width, s, e) for n, s, e in zip(distinct, starts, ends, strict=True)}
    return [short[name] for name in names]


def _shared(names: Sequence[str]) -> list[int]:
    """Per name: how many of its first characters it shares with some other name."""
    order = sorted(range(len(names)), key=names.__getitem__)
    shared = [0] * len(names)
    for a, b in zip(order, order[1:], strict=False):
        k = len(os.path.commonprefix([names[a], names[b]]))
        shared[a] = max(shared[a], k)
        shared[b] = max(shared[b], k)
    return shared


def _shorten(name: str, width: int, start: int, end: int) -> str:
    if len(name) <= width:
        return name
    if width < 3:
        return name[:width]
    room = width - 1
    head, tail = room - room // 2, room // 2
    need_head, need_tail = start + 1, end + 1
    if head < need_head and tail < need_tail:
        # the even cut hides the difference: lean towards the end that can show it, and show the
        # whole word it is in where that fits (``…-gpt-4-1-mini…``, not ``…-gpt-4-1-m…``)
        word_end = _boundary(name, start, 1)
        need_head = word_end if word_end <= room else need_head
        word_start = _boundary(name, len(name) - 1 - end, -1)
        need_tail = len(name) - word_start if len(name) - word_start <= room else need_tail
        options = []
        if need_head <= room:
            options.append((need_head - head, need_head, room - need_head))
        if need_tail <= room:
            options.append((need_tail - tail, room - need_tail, need_tail))
        if not options:  # the difference lies deeper than either end can reach: around it
            inner = width - 2
            at = min(max(start - inner // 2, 1), len(name) - 1 - inner)
            return ELLIPSIS + name[at : at + inner] + ELLIPSIS
        _, head, tail = min(options)
    return name[:head] + ELLIPSIS + (name[len(name) - tail :] if tail else "")


def _boundary(name: str, at: int, step: int) -> int:
    """Where the word holding ``name[at]`` ends (``step`` 1: the index after it) or starts
    (``step`` -1)."""
    i = at
    while 0 <= i < len(name) and name[i] not in WORD_BREAKS:
        i += step
    return i if step == 1 else i + 1


# -- columns ---------------------------------------------------------------------------------------
@dataclass
class Col:
    """One column: its heading, its cells (text, or rich ``Text`` for a styled one) and how it
    gives way when the table is too wide."""

    heading: str
    cells: list[Any]
    minimum: int | None = None  # narrowest width (None: its natural width, never narrower)
    drop: int = 0  # 0: always shown; else left out when the minimums do not fit, 1 first
    grow: int = 9  # the order in which columns take the spare width back (lowest first)
    ample: int | None = None  # a width that is enough at first: more only once all have theirs
    justify: Literal["left", "right"] = "left"
    wrap: bool = False  # a cell too long goes on more lines (else it is cut with …)
    names: bool = False  # file names: shortened by shorten_names, never wrapped
    natural: int = field(init=False)

    def __post_init__(self) -> None:
        from rich.cells import cell_len

        widths = [cell_len(c if isinstance(c, str) else c.plain) for c in self.cells]
        self.natural = max([cell_len(self.heading), *widths])
        floor = self.natural if self.minimum is None else self.minimum
        self.minimum = min(max(floor, cell_len(self.heading)), self.natural)


def fit(columns: list[Col], width: int | None) -> list[tuple[Col, int]]:
    """The columns kept and their widths: the minimums first (dropping columns, ``drop`` 1 first,
    while even those do not fit), then the spare width given back in ``grow`` order."""
    if width is None:
        return [(c, c.natural) for c in columns]
    kept = list(columns)

    def floor() -> int:
        return sum(c.minimum or 0 for c in kept) + GAP * (len(kept) - 1)

    for col in sorted((c for c in columns if c.drop), key=lambda c: c.drop):
        if floor() <= width:
            break
        kept.remove(col)
    widths = {id(c): c.minimum or 0 for c in kept}
    spare = width - floor()
    # still too wide: the columns that may be cut give up their minimums, the last to grow first
    for col in sorted(kept, key=lambda c: -c.grow):
        if spare >= 0:
            break
        if col.minimum is not None and col.minimum < col.natural:
            less = min(-spare, widths[id(col)] - max(len(col.heading), 6))
            if less > 0:
                widths[id(col)] -= less
                spare += less
    for ample in (True, False):
        for col in sorted(kept, key=lambda c: c.grow):
            limit = col.natural if not ample or col.ample is None else col.ample
            more = max(0, min(spare, limit - widths[id(col)]))
            widths[id(col)] += more
            spare -= more
    return [(c, widths[id(c)]) for c in kept]


def build_table(
    columns: list[Col], width: int | None, styles: Sequence[str | None] | None = None
) -> tuple[Table, int]:
    """A rich table of ``columns`` fitted to ``width`` (each row in its style of ``styles``, if
    given), and the width it takes."""
    from rich.table import Table

    placed = fit(columns, width)
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for col, w in placed:
        table.add_column(
            col.heading if len(col.heading) <= w else col.heading[: max(w - 1, 0)] + ELLIPSIS,
            width=w,
            justify=col.justify,
            no_wrap=not col.wrap,
            overflow="fold" if col.wrap else "ellipsis",
        )
    cells = [shorten_names(c.cells, w) if c.names else c.cells for c, w in placed]
    for i, row in enumerate(zip(*cells, strict=True)):
        table.add_row(*row, style=styles[i] if styles else None)
    return table, sum(w for _, w in placed) + GAP * (len(placed) - 1)


UNLIMITED = 1_000_000  # a console's width off a terminal: a line is as long as it is


def make_console(width: int | None, used: int, stream: IO[str] | None = None) -> Console:
    """A console for a table ``used`` wide: the given width (or the table's, if wider: rich
    never cuts what fit() placed), or no limit."""
    from rich.console import Console

    return Console(
        file=stream if stream is not None else sys.stdout,
        width=UNLIMITED if width is None else max(width, used, 1),
        highlight=False,
        emoji=False,
        soft_wrap=False,
    )


def print_plain(console: Console, renderable: Any, stream: IO[str] | None = None) -> None:
    """Print ``renderable`` on ``console``; off a terminal without the cells' trailing blanks."""
    if console.is_terminal:
        console.print(renderable)
        return
    with console.capture() as captured:
        console.print(renderable)
    out = stream if stream is not None else sys.stdout
    out.write("".join(f"{line.rstrip()}\n" for line in captured.get().splitlines()))
