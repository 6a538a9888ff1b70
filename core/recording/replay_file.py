"""Replaying a recording file (the edge between files and the sans-IO engine)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ..replay import Item, ReplayEngine
from .format import Chunk
from .reader import Source


def replay_file(
    path: str | os.PathLike[str],
    *,
    converter: str = "auto",
    parser: str = "api_tool_call",
    handler_options: dict[str, Any] | None = None,
    on_items: Callable[[ReplayEngine, float | None, list[Item]], None] | None = None,
    before_chunk: Callable[[ReplayEngine, Chunk], None] | None = None,
) -> ReplayEngine:
    """Replay a whole recording (or raw SSE body) and return the finished engine.

    ``on_items(engine, t, items)`` is called after every chunk that produced something (and once
    at the end), for sinks that show the stream as it goes. ``before_chunk(engine, chunk)`` is
    called before each chunk is fed (the CLI paces a replay there).
    """
    source = Source(path)
    engine = ReplayEngine(
        source.header,
        converter=converter,
        parser=parser,
        source=str(path),
        handler_options=handler_options,
    )
    feed = engine.feed_chunk
    for chunk in source.chunks():
        if before_chunk is not None:
            before_chunk(engine, chunk)
        items = feed(chunk)
        if on_items is not None and items:
            on_items(engine, chunk.t, items)
    items = engine.finish(source.end)
    if on_items is not None:
        on_items(engine, None, items)
    return engine
