"""Helpers shared by the converters for metadata that belongs to a segment.

A handler merges the metadata of consecutive chunks into the segment that is open (the latest
value of a key wins). Some providers send several values per segment that must all be kept: two
thinking blocks in a row, each with its signature; a text with several citations. ``ProseRuns``
follows which kind of segment the handler has open (it mirrors the handler's rule: reasoning
closes text, text closes reasoning, a tool call closes both), so a converter can send the whole
list collected in the current segment instead of only the newest value.
"""

from __future__ import annotations

from typing import Any

TEXT = "text"
REASONING = "reasoning"
TOOL = "tool"


class ProseRuns:
    __slots__ = ("kind", "_lists")

    def __init__(self) -> None:
        self.kind: str | None = None
        self._lists: dict[str, list[Any]] = {}

    def enter(self, kind: str) -> None:
        """Output of ``kind`` is about to be emitted (a new segment starts if the kind changes)."""
        if kind != self.kind:
            self.kind = kind
            self._lists = {}

    def collect(self, kind: str, key: str, value: Any) -> list[Any]:
        """Add ``value`` under ``key`` for the current ``kind`` segment; all values so far."""
        self.enter(kind)
        values = self._lists.setdefault(key, [])
        values.append(value)
        return list(values)

    def one_or_many(self, kind: str, key: str, value: Any) -> dict[str, Any]:
        """Metadata for a value that is normally single per segment (a signature).

        ``{key: value}``; when the segment already had one, also ``{key + "s": [all of them]}``
        so that none is lost when the handler merges.
        """
        values = self.collect(kind, key, value)
        if len(values) == 1:
            return {key: value}
        return {key: value, key + "s": values}
