"""Finding markers in text that arrives in pieces: what to hold back when a buffer's tail could
be the start of a marker cut by a chunk boundary."""

from __future__ import annotations

import re


def literal_hold(buf: str, pos: int, marker: str) -> int:
    """Index from which ``buf`` must be held back: its tail could begin ``marker``.

    Returns ``len(buf)`` when no proper prefix of ``marker`` ends the buffer.
    """
    n = len(buf)
    first = marker[0]
    i = buf.find(first, max(pos, n - len(marker) + 1))
    while i >= 0:
        if marker.startswith(buf[i:]):
            return i
        i = buf.find(first, i + 1)
    return n


def last_char_hold(buf: str, pos: int, char: str, partial: re.Pattern[str]) -> int:
    """Like ``literal_hold`` for markers that start with ``char`` and contain it only there:
    the tail from the last ``char`` is held when ``partial`` fully matches it."""
    k = buf.rfind(char, pos)
    if k >= 0 and partial.fullmatch(buf, k) is not None:
        return k
    return len(buf)


def prefix_pattern(atoms: list[str]) -> str:
    """A regex matching every proper prefix of the sequence ``atoms`` (each atom a regex).

    ``prefix_pattern(["<", "/", "a", "r", "g", r"\\s*"])`` matches "", "<", "</", "</a", ... and
    "</arg  ". Used to recognise a marker cut at the end of the buffered text.
    """
    out = ""
    for atom in reversed(atoms):
        out = f"(?:{atom}{out})?"
    return out


def close_tag_atoms(name: str) -> list[str]:
    """Atoms of ``</name`` + optional whitespace, for ``prefix_pattern`` (without the ``>``)."""
    return ["<", "/", *(re.escape(c) for c in name), r"\s*"]
