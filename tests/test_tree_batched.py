"""An unpaced replay feeds the tree in batches (``ReplayEngine.feed_batches``): the tree it prints
at the end is byte for byte the one a replay read by read prints.

A batch gives fewer items than its reads would one by one (a run of text or argument fragments is
one CONTENT event, its deltas joined), never other ones, never in another order: segments, errors
and quirks land in the same places, so the final tree (colours included) is the same.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from streamtool.cli.main import app
from streamtool.cli.tree import TreeSink, make_console
from streamtool.cli.tree_view import ViewOptions
from streamtool.core.drive.replay_file import replay_file
from streamtool.core.engine.replay import ReplayEngine
from streamtool.core.model import SegmentEvent, SegmentEventType
from streamtool.core.model.records import Chunk, End, Header
from streamtool.core.recording.reader import Source

from .conftest import RECORDINGS

PARSERS = ["api_tool_call", "passthrough", "xml", "json", "sentinel"]
ALL = sorted(RECORDINGS.glob("*.jsonl"))


def new_sink(options: ViewOptions | None = None) -> tuple[TreeSink, io.StringIO]:
    out = io.StringIO()
    console = make_console(file=out, force_terminal=True, width=100, height=40)
    return TreeSink(console, live=False, options=options), out


def tree_of_file(path: Path, parser: str, batched: bool, options: ViewOptions | None) -> str:
    sink, out = new_sink(options)
    engine = replay_file(path, parser=parser, on_items=sink.on_items, batched=batched)
    sink.close(engine)
    return out.getvalue()


def tree_of_reads(
    header: Header, reads: Iterable[Chunk], end: End | None, parser: str, batch_chars: int | None
) -> str:
    """The final tree of ``reads``: one by one (``batch_chars=None``) or in batches."""
    sink, out = new_sink()
    engine = ReplayEngine(header, parser=parser, source="stream.jsonl")
    if batch_chars is None:
        for chunk in reads:
            items = engine.feed_chunk(chunk)
            if items:
                sink.on_items(engine, chunk.t, items)
    else:
        for t, items in engine.feed_batches(reads, batch_chars):
            sink.on_items(engine, t, items)
    sink.on_items(engine, None, engine.finish(end))
    sink.close(engine)
    return out.getvalue()


@pytest.mark.parametrize("parser", PARSERS)
@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_bundled_recordings_print_the_same_tree_batched(path: Path, parser: str) -> None:
    for options in (ViewOptions(), ViewOptions.full()):
        one_by_one = tree_of_file(path, parser, False, options)
        assert "\x1b[" in one_by_one  # colours are compared too
        assert tree_of_file(path, parser, True, options) == one_by_one
    # batches much smaller than a recording: many batch boundaries inside it
    source = Source(path)
    chunks = list(source.chunks())
    expected = tree_of_reads(source.header, chunks, source.end, parser, None)
    for size in (1, 200):
        assert tree_of_reads(source.header, chunks, source.end, parser, size) == expected


def recut(chunks: list[Chunk], cuts: list[int]) -> list[Chunk]:
    """The same stream cut into other reads (at fractions ``cuts`` of its text), timed in order."""
    body = "".join(str(c.data) for c in chunks)
    points = sorted({0, len(body), *(c * len(body) // 1000 for c in cuts)})
    return [
        Chunk(round(0.1 + i / 100, 4), body[a:b])
        for i, (a, b) in enumerate(zip(points, points[1:], strict=False))
    ]


TEXT_RECORDINGS = [
    p for p in ALL if all(isinstance(c.data, str) for c in Source(p).chunks()) and p.stat().st_size
]


@settings(max_examples=150, deadline=None)
@given(
    path=st.sampled_from(TEXT_RECORDINGS),
    parser=st.sampled_from(PARSERS),
    cuts=st.lists(st.integers(0, 1000), max_size=60),
    batch_chars=st.integers(1, 3000),
)
def test_any_cut_of_a_stream_prints_the_same_tree_batched(
    path: Path, parser: str, cuts: list[int], batch_chars: int
) -> None:
    source = Source(path)
    reads = recut(list(source.chunks()), cuts)
    expected = tree_of_reads(source.header, reads, source.end, parser, None)
    assert tree_of_reads(source.header, reads, source.end, parser, batch_chars) == expected


def test_feed_batches_gives_every_item_of_feed_chunks_in_order() -> None:
    """The items of a batched replay, content deltas joined per segment, are those of a replay
    read by read: nothing dropped, nothing reordered."""
    path = RECORDINGS / "anthropic-thinking-web-search-then-tool-call.jsonl"
    source = Source(path)
    chunks = list(source.chunks())

    def shape(items: list) -> list:
        """Items with each run of CONTENT events of one segment joined into one."""
        out: list = []
        for item in items:
            if type(item) is SegmentEvent and item.event_type is SegmentEventType.CONTENT:
                last = out[-1] if out else None
                if isinstance(last, list) and last[1] == item.segment_id:
                    last[2].append(item.delta or "")
                    last[3].update(item.metadata or {})
                    continue
                out.append(
                    ["content", item.segment_id, [item.delta or ""], dict(item.metadata or {})]
                )
            else:
                out.append(item.to_dict())
        for entry in out:
            if isinstance(entry, list):
                entry[2] = "".join(entry[2])
        return out

    one = ReplayEngine(source.header)
    items = [i for c in chunks for i in one.feed_chunk(c)] + one.finish(source.end)
    for size in (1, 100, 1 << 20):
        other = ReplayEngine(source.header)
        got = [i for _, batch in other.feed_batches(chunks, size) for i in batch]
        got += other.finish(source.end)
        assert shape(got) == shape(items)
        assert other.summary() == one.summary()


def test_unpaced_replay_feeds_the_tree_in_batches_and_paced_read_by_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []
    real = ReplayEngine.feed_block_batches

    def spy(self: ReplayEngine, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(self.source)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ReplayEngine, "feed_block_batches", spy)
    path = RECORDINGS / "openai-write-file.jsonl"
    runner = CliRunner()
    outputs = {}
    for speed in ("max", "1000"):
        calls.clear()
        result = runner.invoke(
            app, ["replay", str(path), "--format", "text", "--speed", speed, "--max-gap", "0"]
        )
        assert result.exit_code == 0, result.output
        assert calls == ([str(path)] if speed == "max" else [])
        outputs[speed] = result.output
    assert outputs["max"] == outputs["1000"]


@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("parser", ["api_tool_call", "xml"])
def test_tree_reads_the_engines_segments_and_draws_what_its_own_fold_draws(
    parser: str, batched: bool
) -> None:
    """The tree folds nothing itself when the engine keeps the segments (``replay`` asks for
    them): it reads the engine's log, fed under the sink's lock, and draws the same tree as a
    model that folds the items itself."""
    for path in ALL:
        own = tree_of_file(path, parser, batched, None)
        sink, out = new_sink()
        engine = replay_file(
            path,
            parser=parser,
            on_items=sink.on_items,
            batched=batched,
            segments=sink.needs_segments,
            lock=sink.feed_lock,
        )
        sink.close(engine)
        assert engine.segments is not None
        if sink.state.nodes:
            assert sink.state.log is engine.segments, path.name
        assert out.getvalue() == own, path.name
