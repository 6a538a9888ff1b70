"""Argument fragments that arrive in one network read reach the handler joined."""

from __future__ import annotations

import base64
import functools
import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from streamtool.core.engine.replay import ReplayEngine
from streamtool.core.model import ChunkResponse, Quirk, SegmentEventType, ToolCallDelta
from streamtool.core.model.records import Chunk, End, Header
from streamtool.core.pipeline.coalesce import join_argument_runs

RECORDINGS = Path(__file__).resolve().parents[1] / "recordings"


def fragment(index: int, text: str) -> ChunkResponse:
    return ChunkResponse(tool_calls=[ToolCallDelta(index, arguments_delta=text)])


OTHERS = [
    ChunkResponse(content="text"),
    ChunkResponse(tool_calls=[ToolCallDelta(0, "call_0", "write_file", "{")]),
    ChunkResponse(tool_calls=[ToolCallDelta(1, is_complete=True)]),
    ChunkResponse(tool_calls=[ToolCallDelta(0, arguments_delta="x", is_complete=True)]),
    ChunkResponse(usage={"output_tokens": 3}),
    ChunkResponse(tool_calls=[ToolCallDelta(0, arguments_delta="q")], quirks=[Quirk("q")]),
    ChunkResponse(finish_reason="tool_calls", is_complete=True),
    ChunkResponse(
        tool_calls=[ToolCallDelta(0, arguments_delta="a"), ToolCallDelta(1, arguments_delta="b")]
    ),
]
CHUNKS = st.lists(
    st.one_of(
        st.builds(fragment, st.sampled_from([0, 1]), st.text(min_size=1, max_size=4)),
        st.sampled_from(OTHERS),
    ),
    max_size=30,
)


def arguments_by_index(chunks: list[ChunkResponse]) -> dict[int, str]:
    out: dict[int, str] = {}
    for chunk in chunks:
        for delta in chunk.tool_calls or []:
            out[delta.index] = out.get(delta.index, "") + (delta.arguments_delta or "")
    return out


@settings(max_examples=100, deadline=None)
@given(CHUNKS)
def test_only_runs_of_pure_fragments_are_joined(chunks: list[ChunkResponse]) -> None:
    joined = join_argument_runs(list(chunks))
    assert arguments_by_index(joined) == arguments_by_index(chunks)
    # everything that is not a pure fragment is kept, as the same object, in the same order
    assert [c for c in joined if c in OTHERS] == [c for c in chunks if c in OTHERS]
    assert all(any(c is o for o in OTHERS) for c in joined if c in OTHERS)
    pure = [c.tool_calls[0].index if c not in OTHERS and c.tool_calls else None for c in joined]
    assert all(a is None or a != b for a, b in zip(pure, pure[1:], strict=False))


def test_a_run_becomes_one_chunk() -> None:
    head = OTHERS[1]
    chunks = [head, fragment(0, "a"), fragment(0, "b"), fragment(1, "c"), fragment(0, "d")]
    joined = join_argument_runs(chunks)
    assert joined[0] is head
    assert [(c.tool_calls[0].index, c.tool_calls[0].arguments_delta) for c in joined[1:]] == [
        (0, "ab"),
        (1, "c"),
        (0, "d"),
    ]


def raw_body(name: str) -> tuple[dict, bytes]:
    lines = (RECORDINGS / name).read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    body = b""
    for line in lines[1:]:
        record = json.loads(line)
        if record["type"] == "chunk":
            body += base64.b64decode(record["b64"]) if "b64" in record else record["text"].encode()
    return header, body


def replay_reads(header: dict, reads: list[bytes]) -> ReplayEngine:
    engine = ReplayEngine(Header(provider=header["provider"], api=header["api"]), keep_events=True)
    for i, data in enumerate(reads):
        engine.feed_chunk(Chunk(0.1 + i / 1000, data))
    engine.finish(End(1.0))
    return engine


def file_view(engine: ReplayEngine) -> tuple[dict, list]:
    contents: dict[str, str] = {}
    for ev in engine.handler.get_all_events():
        if ev.event_type is SegmentEventType.CONTENT:
            contents[ev.segment_id] = contents.get(ev.segment_id, "") + (ev.delta or "")
    summary = engine.summary()
    del summary["stats"]
    return contents, [summary]


SAMPLE = "openai-write-file-escapes-unicode.jsonl"


@functools.cache
def byte_by_byte() -> tuple[dict, list]:
    """The sample replayed with one byte per read: no two events ever share a read."""
    header, body = raw_body(SAMPLE)
    return file_view(replay_reads(header, [body[i : i + 1] for i in range(len(body))]))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 200_000), max_size=40), st.booleans())
def test_replay_result_does_not_depend_on_read_boundaries(cuts: list[int], whole: bool) -> None:
    header, body = raw_body(SAMPLE)
    points = sorted({c % len(body) for c in cuts} - {0})
    bounds = zip([0, *points], [*points, len(body)], strict=True)
    reads = [body] if whole else [body[a:b] for a, b in bounds]
    assert file_view(replay_reads(header, reads)) == byte_by_byte()
