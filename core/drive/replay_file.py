"""Replaying a recording file (the edge between files and the sans-IO engine)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol, TypeVar

from ..engine.replay import Item, ReplayEngine
from ..model.records import Chunk
from ..pipeline.segment_log import SegmentLog
from ..recording.reader import Source


class _Timed(Protocol):
    @property
    def t(self) -> float | None: ...


_R = TypeVar("_R", bound=_Timed)
_OnItems = Callable[[ReplayEngine, float | None, list[Item]], None]


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
    segments: bool = False,
    lock: AbstractContextManager[Any] | None = None,
    label: str | None = None,
) -> ReplayEngine:
    """Replay a whole recording (or raw SSE body) and return the finished engine.

    ``on_items(engine, t, items)`` is called after every chunk that produced something (and once
    at the end), for sinks that show the stream as it goes. ``before_chunk(engine, chunk)`` is
    called before each chunk is fed (the CLI paces a replay there). ``transcript=True`` keeps
    the segments a transcript (and a diff) needs; ``keep_events=True`` keeps the handler's event
    log; ``string_pieces=True`` is for a caller that only writes the summary with ``iter_json``
    (see :class:`~streamtool.core.engine.replay.ReplayEngine`). ``segments=True`` keeps the
    segments (``engine.segments``) for a sink that reads them; ``lock``, when given, is held while
    the engine is fed (for a sink that reads the engine from another thread). ``label`` names
    the stream in what the engine shows (its ``source``; default: ``path``).

    ``batched=True`` is for callers that do not show the stream read by read (a summary, a
    transcript, a tree drawn unpaced): the reads are fed to the engine many at a time
    (:meth:`ReplayEngine.feed_block_batches`), which is faster. The summary and the transcript are
    the same; the handler's events are fewer (a run of text or fragments is one CONTENT event,
    its deltas joined), and ``on_items`` is called once per batch that produced something. It
    takes no ``before_chunk`` (there is no read by read to pace).
    """
    if batched and before_chunk is not None:
        raise ValueError("a batched replay takes no before_chunk")
    source = Source(path)
    engine = ReplayEngine(
        source.header,
        converter=converter,
        parser=parser,
        source=str(path) if label is None else label,
        handler_options=handler_options,
        transcript=transcript,
        keep_events=keep_events,
        string_pieces=string_pieces,
        segments=SegmentLog() if segments and not transcript else None,
    )
    held = lock if lock is not None else nullcontext()
    if source.websocket:
        return _replay_session(engine, source, on_items, held, before_message=before_chunk)
    if batched:
        batches = engine.feed_block_batches(source.chunk_blocks())
        if on_items is None:
            for _ in batches:
                pass
            engine.finish(source.end)
            return engine
        while True:
            with held:
                batch = next(batches, None)
            if batch is None:
                break
            on_items(engine, *batch)
        return _finish(engine, source, on_items, held)
    return _feed_each(
        engine, source, source.chunks(), engine.feed_chunk, before_chunk, on_items, held
    )


def _replay_session(
    engine: ReplayEngine,
    source: Source,
    on_items: _OnItems | None,
    held: AbstractContextManager[Any],
    before_message: Callable[[ReplayEngine, Any], None] | None = None,
) -> ReplayEngine:
    """A WebSocket session, message by message (a message is one event: nothing to batch).
    ``before_message(engine, record)`` is called before each record (a pacer reads its ``t``)."""
    records = source.session_records()
    return _feed_each(engine, source, records, engine.feed_message, before_message, on_items, held)


def _feed_each(
    engine: ReplayEngine,
    source: Source,
    records: Iterable[_R],
    feed: Callable[[_R], list[Item]],
    before: Callable[[ReplayEngine, _R], None] | None,
    on_items: _OnItems | None,
    held: AbstractContextManager[Any],
) -> ReplayEngine:
    """Feed ``records`` (reads, or a session's messages) one by one, then finish. ``held`` is
    held while the engine is fed, never through ``before`` (where a pacer sleeps)."""
    for record in records:
        if before is not None:
            before(engine, record)
        with held:
            items = feed(record)
        if on_items is not None and items:
            on_items(engine, record.t, items)
    return _finish(engine, source, on_items, held)


def _finish(
    engine: ReplayEngine,
    source: Source,
    on_items: _OnItems | None,
    held: AbstractContextManager[Any],
) -> ReplayEngine:
    with held:
        items = engine.finish(source.end)
    if on_items is not None:
        on_items(engine, None, items)
    return engine
