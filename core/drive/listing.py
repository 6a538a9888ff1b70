"""One row per recording for ``streamtool ls``: what it is and how it went, read as cheaply as
the figures asked for allow.

The header gives provider, API and model; everything else (end reason, duration, TTFT, reads, tool
calls, errors, quirks) needs the stream replayed. A filter that the header already decides
(``provider``) stops reading a file after its first line.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..engine.replay import DetectionError, ReplayEngine
from ..model.records import RecordingError
from ..recording.reader import Source
from ..recording.tape_index import named_not_written
from .find import find_recordings

COLUMNS = (
    "file",
    "provider",
    "api",
    "model",
    "end",
    "duration_s",
    "ttft_s",
    "reads",
    "tool_calls",
    "errors",
    "quirks",
)


@dataclass(slots=True)
class Row:
    file: str
    provider: str | None = None
    api: str | None = None
    model: str | None = None
    end: str | None = None  # end reason; "cut off" without an end record
    duration_s: float | None = None
    ttft_s: float | None = None
    reads: int = 0
    tool_calls: list[str] = field(default_factory=list)  # tool names, in order
    errors: list[str] = field(default_factory=list)  # error kinds
    quirks: list[str] = field(default_factory=list)  # quirk ids
    problem: str | None = None  # the one-line message when the file cannot be used
    imported: str | None = None  # the importer of an imported recording (vcrpy, har...)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "file": self.file,
            "provider": self.provider,
            "api": self.api,
            "model": self.model,
            "end": self.end,
            "duration_s": self.duration_s,
            "ttft_s": self.ttft_s,
            "reads": self.reads,
            "tool_calls": list(self.tool_calls),
            "errors": list(self.errors),
            "quirks": list(self.quirks),
        }
        if self.problem is not None:
            out["problem"] = self.problem
        if self.imported is not None:
            out["imported"] = self.imported
        return out


@dataclass(slots=True)
class Filters:
    provider: str | None = None
    has_quirk: str | None = None
    has_error: bool = False
    tool: str | None = None

    def header_ok(self, row: Row) -> bool:
        if self.provider is not None:
            return (row.provider or "").lower() == self.provider.lower()
        return True

    def ok(self, row: Row) -> bool:
        if not self.header_ok(row):
            return False
        if self.has_quirk is not None and self.has_quirk not in row.quirks:
            return False
        if self.has_error and not row.errors:
            return False
        return not (self.tool is not None and self.tool not in row.tool_calls)


def list_recordings(
    paths: Iterable[str | os.PathLike[str]],
    filters: Filters | None = None,
    on_problem: Callable[[str], None] | None = None,
) -> Iterator[Row]:
    """Rows of the recordings under ``paths`` that pass ``filters`` (unusable files: a row with
    ``problem`` set, whatever the filters; paths that are not recordings: ``on_problem``)."""
    filters = filters or Filters()
    for path, problem in find_recordings(paths):
        if problem is not None:
            if on_problem is not None:
                on_problem(problem)
            continue
        row = read_row(path, filters)
        if row is not None:
            yield row


def read_row(path: str, filters: Filters) -> Row | None:
    row = Row(path)
    try:
        if named_not_written(path):
            # an exchange a writer has named and not written yet (its answer's head has not
            # come), or one cut off before its header: no end record, nothing else to show
            row.end = "cut off"
            return row if filters.header_ok(row) and filters.ok(row) else None
        source = Source(path)
        header = source.header
        row.provider, row.api, row.model = header.provider, header.api, header.model
        if not filters.header_ok(row):
            source.close()
            return None
        imported = header.extra.get("imported")
        if isinstance(imported, dict):
            row.imported = str(imported.get("from"))
            if header.api is None:  # an imported plain exchange (a page, a JSON answer)
                row.reads = sum(1 for _ in source.chunks())
                row.end = source.end.reason if source.end is not None else "cut off"
                return row if filters.ok(row) else None
        engine = ReplayEngine(header, source=path)
        if source.websocket:  # a WebSocket session: its messages are its reads
            for record in source.session_records():
                engine.feed_message(record)
        else:
            feed = engine.feed_chunk
            for chunk in source.chunks():
                feed(chunk)
        engine.finish(source.end)
    except (RecordingError, DetectionError, OSError) as exc:
        message = str(exc)
        row.problem = message if message.startswith(path) else f"{path}: {message}"
        return row
    row.model = engine.model or row.model
    row.end = source.end.reason if source.end is not None else "cut off"
    row.duration_s = None if engine.last_t is None else round(engine.last_t, 6)
    row.ttft_s = None if engine.ttft is None else round(engine.ttft, 6)
    row.reads = engine.chunks
    row.tool_calls = [inv.name for inv in engine.invocations()]
    row.errors = [e.kind for e in engine.errors]
    row.quirks = [q.id for q in engine.quirks]
    return row if filters.ok(row) else None


def sort_key(column: str) -> Callable[[Row], Any]:
    """A key that sorts rows by ``column`` (missing values last, lists by their length)."""
    if column not in COLUMNS:
        raise ValueError(f"cannot sort by {column!r}; valid: {', '.join(COLUMNS)}")

    def key(row: Row) -> Any:
        value = getattr(row, column)
        if isinstance(value, list):
            value = len(value)
        return (value is None, value if value is not None else 0, row.file)

    return key
