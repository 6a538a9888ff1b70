"""The table of every read (``inspect --reads``), written as the reads are read back.

A first pass over the reads finds each column's width, a second writes the rows, a thousand at
a time: the table of a million reads is never held whole (a rich ``Table`` measures and keeps
every cell). Columns: ``#``, ``t``, ``gap`` (red: a stall), ``bytes``, ``ev``, what the read
produced (a WebSocket session's message: its direction and type first; a message cuts nothing,
so a session's table has no cuts), its cuts (yellow) and, for a binary framing, its frames
(cyan). The last columns fold when the terminal is too narrow for them.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable
from itertools import zip_longest
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

CUT_LABEL = {"event": "cuts an event", "utf8": "cuts a UTF-8 char", "crlf": "cuts a CRLF"}
HEADS = ("#", "t", "gap", "bytes", "ev", "produced", "cuts", "frames")
MESSAGE_HEADS = ("#", "t", "gap", "bytes", "ev", "message")
FIXED = 5  # the first columns, right-justified and never folded
GAP = "  "  # between columns
BATCH = 1000  # rows written at once


def produced(r: dict[str, Any], names: dict[str, str]) -> str:
    parts = []
    if r["reasoning_chars"]:
        parts.append(f"reasoning {r['reasoning_chars']}")
    if r["text_chars"]:
        parts.append(f"text {r['text_chars']}")
    for call_id in r["tool_calls_opened"]:
        if call_id not in r["tool_args"]:
            parts.append(f"{names.get(call_id, call_id)} opened")
    for call_id, n in r["tool_args"].items():
        parts.append(f"{names.get(call_id, call_id)} +{n}")
    if r["comments"]:
        parts.append(f"comment×{r['comments']}")
    for kind in r["errors"]:
        parts.append(f"error {kind}")
    for q in r["quirks"]:
        parts.append(f"quirk {q}")
    return ", ".join(parts)


def _cells(r: dict[str, Any], names: dict[str, str], framed: bool, messages: bool) -> list[str]:
    what = produced(r, names)
    if messages:  # a session's message: its direction and type, then what it produced
        what = " ".join(r["frames"]) + (": " + what if what else "")
    cells = [
        str(r["index"]),
        "" if r["t"] is None else f"{r['t']:.3f}",
        "" if r["gap"] is None else f"{r['gap']:.3f}",
        str(r["bytes"]),
        str(r["events"]),
        what,
    ]
    if not messages:  # (a message is whole: it cuts nothing)
        cells.append(", ".join(CUT_LABEL[c] for c in r["cuts"]))
    if framed:
        cells.append(" ".join(r["frames"]))
    return cells


def _cap(floor: list[int], wanted: list[int], room: int) -> list[int]:
    """Each column as wide as it wants, no narrower than its floor, the widest cut down to one
    width so that they fit in ``room`` (when the floors do)."""
    lo, hi = 0, max(wanted)
    while lo < hi:  # the largest cap whose widths fit
        cap = (lo + hi + 1) // 2
        if sum(max(f, min(w, cap)) for f, w in zip(floor, wanted, strict=True)) <= room:
            lo = cap
        else:
            hi = cap - 1
    return [max(f, min(w, lo)) for f, w in zip(floor, wanted, strict=True)]


def _fit(natural: list[int], words: list[int], room: int) -> list[int]:
    """The folding columns' widths: as they are when they fit in ``room``; else as near their
    longest words as fits (lines fold between words, and within the longest words when those
    do not fit), then the rest of the room to the widest."""
    if sum(natural) <= room:
        return natural
    floor = _cap(
        [min(4, n) for n in natural], [min(w, n) for w, n in zip(words, natural, strict=True)], room
    )
    return _cap(floor, natural, room)


def print_reads(
    console: Console,
    rows: Callable[[], Iterable[dict[str, Any]]],
    names: dict[str, str],
    stall: float,
    *,
    messages: bool = False,
) -> None:
    """Write the table of the reads ``rows()`` gives (called twice: once for the widths);
    ``messages``: a WebSocket session's, each row a message (or control frame) named by its
    direction (``→`` the client's, ``←`` the server's) and type."""
    from rich.text import Text

    framed = False
    all_heads: tuple[str, ...] = MESSAGE_HEADS if messages else HEADS
    widths = [len(h) for h in all_heads if h != "frames"]  # (frames: added when a read has)
    words = list(widths)  # each column's longest word
    for r in rows():
        if r["frames"] and not framed and not messages:  # (a message's frame is its name)
            framed = True
            widths.append(len(HEADS[7]))
            words.append(len(HEADS[7]))
        for i, cell in enumerate(_cells(r, names, framed, messages)):
            if len(cell) > widths[i]:
                widths[i] = len(cell)
            if i >= FIXED and len(cell) > words[i]:
                words[i] = max(words[i], *map(len, cell.split()))
    heads = all_heads[: len(widths)]
    fixed = sum(widths[:FIXED]) + len(GAP) * FIXED
    room = max(4 * (len(widths) - FIXED), console.width - fixed - len(GAP) * (len(widths) - 6))
    widths[FIXED:] = _fit(widths[FIXED:], words[FIXED:], room)
    plain = console.color_system is None
    styles = {2: "red", 6: "yellow", 7: "cyan"}

    def lines_of(cells: list[str]) -> list[list[str]]:
        """A row as lines of cells (more than one where a folding column folds)."""
        columns = []
        for i, cell in enumerate(cells):
            w = widths[i]
            if i < FIXED or len(cell) <= w:
                columns.append([cell])
            else:
                columns.append(textwrap.wrap(cell, w, break_on_hyphens=False) or [""])
        return [list(parts) for parts in zip_longest(*columns, fillvalue="")]

    def line_text(parts: list[str]) -> str:
        out = [p.rjust(widths[i]) if i < FIXED else p.ljust(widths[i]) for i, p in enumerate(parts)]
        return GAP.join(out).rstrip()

    console.print(Text("messages" if messages else "reads", style="italic"))
    head = line_text(list(heads))
    if plain:
        console.file.write(head + "\n")
    else:
        console.print(Text(head, style="bold"), soft_wrap=True)
    batch: list[str] = []
    spans: list[tuple[int, int, str]] = []
    at = 0

    def flush() -> None:
        nonlocal batch, spans, at
        if not batch:
            return
        text = "\n".join(batch)
        if plain:
            console.file.write(text + "\n")
        else:
            rich_text = Text(text)
            for start, end, style in spans:
                rich_text.stylize(style, start, end)
            console.print(rich_text, soft_wrap=True)
        batch, spans, at = [], [], 0

    for r in rows():
        cells = _cells(r, names, framed, messages)
        stalled = r["gap"] is not None and r["gap"] > stall
        for parts in lines_of(cells):
            line = line_text(parts)
            if not plain:
                col = at
                for i, part in enumerate(parts):
                    w = widths[i]
                    style = styles.get(i)
                    if part and style and (i != 2 or stalled):
                        start = col + (w - len(part) if i < FIXED else 0)
                        spans.append((start, start + len(part), style))
                    col += w + len(GAP)
            batch.append(line)
            at += len(line) + 1
        if len(batch) >= BATCH:
            flush()
    flush()
