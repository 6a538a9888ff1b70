"""Replaying a recording file (the edge between files and the sans-IO engine)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ..engine.replay import Item, ReplayEngine
from ..model.records import Chunk
from ..recording.reader import Source


def replay_file(
    path: str | os.PathLike[str],
    *,
    converter: str = "auto",
    parser: str = "api_tool_call",
    handler_options: dict[str, Any] | None = None,
    on_items: Callable[[ReplayEngine, float | None, list[Item]], None] | None = None,
    before_chunk: Callable[[ReplayEngine, Chunk], None] | None = None,
    batched: bool = False,
    transcript: bool = False,
    keep_events: bool = False,
    string_pieces: bool = False,
    source: str | None = None,
) -> ReplayEngine:
    """Replay a whole recording (or raw SSE body) and return the finished engine.

    ``on_items(engine, t, items)`` is called after every chunk that produced something (and once
    at the end), for sinks that show the stream as it goes. ``before_chunk(engine, chunk)`` is
    called before each chunk is fed (the CLI paces a replay there). ``transcript=True`` keeps
    the segments a transcript (and a diff) needs; ``keep_events=True`` keeps the handler's event
    log; ``string_pieces=True`` is for a caller that only writes the summary with ``iter_json``
    (see :class:`~streamtool.core.engine.replay.ReplayEngine`). ``source`` names the stream
    in what the engine shows (default: ``path``).

    ``batched=True`` is for callers that do not show the stream read by read (a summary, a
    transcript, a tree drawn unpaced): the reads are fed to the engine many at a time
    (:meth:`ReplayEngine.feed_block_batches`), which is faster. The summary and the transcript are
    the same; the handler's events are fewer (a run of text or fragments is one CONTENT event,
    its deltas joined), and ``on_items`` is called once per batch that produced something. It
    takes no ``before_chunk`` (there is no read by read to pace).
    """
    if batched and before_chunk is not None:
        raise ValueError("a batched replay takes no before_chunk")
    reader = Source(path)
    engine = ReplayEngine(
        reader.header,
        converter=converter,
        parser=parser,
        source=str(path) if source is None else source,
        handler_options=handler_options,
        transcript=transcript,
        keep_events=keep_events,
        string_pieces=string_pieces,
    )
    if batched:
        batches = engine.feed_block_batches(reader.chunk_blocks())
        if on_items is None:
            for _ in batches:
                pass
            engine.finish(reader.end)
            return engine
        for t, items in batches:
            on_items(engine, t, items)
        on_items(engine, None, engine.finish(reader.end))
        return engine
    feed = engine.feed_chunk
    for chunk in reader.chunks():
        if before_chunk is not None:
            before_chunk(engine, chunk)
        items = feed(chunk)
        if on_items is not None and items:
            on_items(engine, chunk.t, items)
    items = engine.finish(reader.end)
    if on_items is not None:
        on_items(engine, None, items)
    return engine
