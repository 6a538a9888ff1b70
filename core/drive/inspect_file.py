"""Inspecting a recording file (the edge between files and the sans-IO inspector)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator
from typing import Any, TypedDict, Unpack

from ..outputs.inspect import DEFAULT_STALL, Inspector, ReadFact, row_json
from ..outputs.report import MAX_PLAYER_READS, REPORT_READS
from ..recording.reader import Source


class ReadSpool:
    """Every read's facts in a temporary file (one JSON line each, as the JSON result writes
    them), read back in order as many times as asked: what ``inspect --reads`` and ``--format
    json`` print, without holding a million reads in memory. The file is gone once the spool
    is closed (or collected). A lone surrogate (which a recording's JSON text may hold) goes
    through as it is."""

    def __init__(self) -> None:
        self._fh = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close())

    def add(self, fact: ReadFact) -> None:
        self._fh.write((row_json(fact) + "\n").encode("utf-8", "surrogatepass"))

    def texts(self) -> Iterator[str]:
        fh = self._fh
        fh.flush()
        fh.seek(0)
        for line in fh:
            yield line[:-1].decode("utf-8", "surrogatepass")
        fh.seek(0, os.SEEK_END)

    def rows(self) -> Iterator[dict[str, Any]]:
        for text in self.texts():
            yield json.loads(text)

    def close(self) -> None:
        self._fh.close()


class InspectOptions(TypedDict, total=False):
    """What :func:`inspect_file` passes on to its :class:`Inspector`, the inspector's keyword
    arguments of the same names (their defaults the inspector's)."""

    converter: str
    parser: str
    stall: float
    handler_options: dict[str, Any] | None
    keep_items: bool
    keep_reads: int | None
    items_limit: int | None


def inspect_file(
    path: str | os.PathLike[str],
    *,
    spool: bool = False,
    on_chunk: Callable[[], None] | None = None,
    **options: Unpack[InspectOptions],
) -> Inspector:
    """Read a whole recording (or raw body; ``-`` is standard input) into a finished Inspector.

    ``options`` as for :class:`Inspector` (:class:`InspectOptions`); ``spool``: every
    read's facts go to a :class:`ReadSpool` (the inspector's ``store``) instead of memory. With
    ``keep_reads=0`` and a spool, memory does not grow with the reads (but for 24 bytes a read,
    their times and sizes). ``on_chunk`` is called after each read is fed (a progress display).
    A WebSocket session's messages and control frames are its reads."""
    source = Source(path)
    store = ReadSpool() if spool else None
    inspector = Inspector(source.header, source=source.path, store=store, **options)
    if source.websocket:  # a session: its messages and control frames, each as a read
        for record in source.session_records():
            inspector.feed_message(record)
            if on_chunk is not None:
                on_chunk()
        inspector.finish(source.end)
        return inspector
    feed = inspector.feed
    if on_chunk is None:
        for chunk in source.chunks():
            feed(chunk)
    else:
        for chunk in source.chunks():
            feed(chunk)
            on_chunk()
    inspector.finish(source.end)
    return inspector


def inspect_for_report(
    path: str | os.PathLike[str],
    *,
    converter: str = "auto",
    parser: str = "api_tool_call",
    stall: float = DEFAULT_STALL,
    on_chunk: Callable[[], None] | None = None,
) -> Inspector:
    """A finished Inspector holding what :func:`~streamtool.core.outputs.report.build_report`
    shows of a recording of any size: the first reads' facts and the first player reads'
    items, every read's time and size."""
    return inspect_file(
        path,
        converter=converter,
        parser=parser,
        stall=stall,
        keep_items=True,
        keep_reads=REPORT_READS,
        items_limit=MAX_PLAYER_READS,
        on_chunk=on_chunk,
    )
