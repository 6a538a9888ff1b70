"""A WebSocket session as a mutation edits it: its records (messages and control frames), the
server's events read as JSON and written back. Sans-IO.

A session's mutation (declared with ``session=True`` in an API's ``mutations`` part) takes a
:class:`Session`, edits it in place and returns whether it found something to change; the
messages it does not touch stay byte for byte as recorded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..model.records import Control, End, Header, Message
from ..wire import fastjson


@dataclass(slots=True)
class Session:
    header: Header
    records: list[Message | Control]
    end: End | None

    def event(self, i: int) -> dict[str, Any] | None:
        """The server's event of record ``i`` (``None``: not a server's JSON event)."""
        record = self.records[i]
        if type(record) is not Message or record.direction != "server":
            return None
        if not isinstance(record.data, str):
            return None
        try:
            obj = fastjson.loads(record.data)
        except ValueError:
            return None
        return obj if isinstance(obj, dict) else None

    def events(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """Every server event with its record's index, in order."""
        for i in range(len(self.records)):
            obj = self.event(i)
            if obj is not None:
                yield i, obj

    def kind(self, i: int) -> str | None:
        obj = self.event(i)
        kind = obj.get("type") if obj is not None else None
        return kind if isinstance(kind, str) else None

    def time(self, i: int) -> float:
        """The time of record ``i`` (the one before it when it has none)."""
        for record in reversed(self.records[: i + 1]):
            if record.t is not None:
                return record.t
        return 0.0

    def replace(self, i: int, obj: dict[str, Any]) -> None:
        """Record ``i`` as the event ``obj`` (same direction and time)."""
        record = self.records[i]
        self.records[i] = Message(record.t, record.direction, _dumps(obj))

    def insert(self, i: int, obj: dict[str, Any], t: float | None = None) -> None:
        """A server event before record ``i`` (at the time of the record before it)."""
        at = t if t is not None else (self.time(i - 1) if i > 0 else 0.0)
        self.records.insert(i, Message(at, "server", _dumps(obj)))

    def responses(self, created: str, terminal: frozenset[str]) -> list[tuple[int, int]]:
        """``(start, end)`` record indexes of each response: its ``created`` event and the
        terminal one (``end``: the last record when the session ended first)."""
        out: list[tuple[int, int]] = []
        start: int | None = None
        for i, obj in self.events():
            kind = obj.get("type")
            if kind == created:
                start = i
            elif kind in terminal and start is not None:
                out.append((start, i))
                start = None
        if start is not None:
            out.append((start, len(self.records) - 1))
        return out

    def cut(self, i: int) -> None:
        """Keep the records before ``i`` only (the session ends there)."""
        del self.records[i:]


def _dumps(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False)
