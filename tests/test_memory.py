"""Replay keeps what its output holds, not the stream: no event log, one copy of the arguments.

The figures (peak RSS of ``replay --format json`` on 200 MB recordings) are measured by
``benchmarks/bench_memory.py``; these tests pin the structure behind them with ``tracemalloc``
(the bytes Python objects hold, counted exactly, no timing) and check that keeping less changes
no result.
"""

from __future__ import annotations

import io
import json
import os
import sys
import threading
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamtool.core.drive.replay_file import replay_file
from streamtool.core.engine.replay import ReplayEngine
from streamtool.core.model.records import Chunk, End
from streamtool.core.model.textbuf import TextBuffer
from streamtool.core.outputs import json_text
from streamtool.core.outputs.json_text import iter_json
from streamtool.core.outputs.transcript import build_transcript, coalesce_segments
from streamtool.core.pipeline.tracker import ToolCallTracker
from streamtool.core.recording.reader import Source

from .conftest import RECORDINGS
from .helpers import recording_body
from .serve_helpers import write_recording
from .test_transcript import cut

BUNDLED = sorted(RECORDINGS.glob("*.jsonl"))
MODEL = "gpt-4o-2024-08-06"


# -- recordings of the three shapes of benchmarks/bench_memory.py, small ----------------------
def _sse(delta: dict, finish: str | None = None, **extra: Any) -> str:
    obj = {
        "id": "chatcmpl-mem",
        "object": "chat.completion.chunk",
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }
    return "data: " + json.dumps(obj, separators=(",", ":")) + "\n\n"


def _call(index: int, args: str, name: str | None = None) -> str:
    fn: dict[str, str] = {"arguments": args}
    tc: dict[str, Any] = {"index": index, "function": fn}
    if name is not None:
        fn["name"] = name
        tc["id"] = f"call_{index:05d}"
        tc["type"] = "function"
    return _sse({"tool_calls": [tc]})


def _code(size: int) -> Iterator[str]:
    text = 'def f(x):\n    return {"x": x * 2}  # "quoted"\n' * 4
    while True:
        for i in range(0, len(text), size):
            yield text[i : i + size]


def _ending(finish: str) -> list[str]:
    usage = {"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14}
    return [_sse({}, finish), _sse({}, None, usage=usage), "data: [DONE]\n\n"]


def huge_call(size: int) -> Iterator[str]:
    yield _sse({"role": "assistant", "content": None})
    yield _call(0, "", name="write_file")
    yield _call(0, '{"path": "app.py", "content": "')
    written = 0
    for frag in _code(24):
        event = _call(0, json.dumps(frag)[1:-1])
        written += len(event)
        yield event
        if written >= size:
            break
    yield _call(0, '"}')
    yield from _ending("tool_calls")


def many_calls(size: int, calls: int = 600) -> Iterator[str]:
    yield _sse({"role": "assistant", "content": None})
    fragments = _code(60)
    for i in range(calls):
        yield _call(i, "", name="run_query")
        yield _call(i, '{"query": "')
        body = 0
        while body < size // calls:
            event = _call(i, json.dumps(next(fragments))[1:-1])
            body += len(event)
            yield event
        yield _call(i, '", "limit": 10}')
    yield from _ending("tool_calls")


def text(size: int) -> Iterator[str]:
    yield _sse({"role": "assistant", "content": ""})
    yield _sse({"reasoning_content": "Think first. " * 20})
    written = 0
    for frag in _code(20):
        event = _sse({"content": frag})
        written += len(event)
        yield event
        if written >= size:
            break
    yield from _ending("stop")


def write_events(path: Path, events: Iterator[str]) -> Path:
    """A recording of ``events``, one read each, 0.4 ms apart."""
    return write_recording(path, [(round(i * 0.0004, 6), raw) for i, raw in enumerate(events)])


SHAPES: dict[str, Callable[[int], Iterator[str]]] = {
    "huge-call": huge_call,
    "many-calls": many_calls,
    "text": text,
}


@pytest.mark.parametrize("batched", [False, True], ids=["read-by-read", "batched"])
@pytest.mark.parametrize("shape", SHAPES)
def test_a_finished_replay_holds_about_its_summary(
    tmp_path: Path, shape: str, batched: bool
) -> None:
    """The bytes a finished replay holds, and its peak while replaying, are a small multiple of
    its summary (what ``--format json`` prints), not of the recording: one copy of the text and
    the arguments (raw and parsed), no event per fragment."""
    path = write_events(tmp_path / f"{shape}.jsonl", SHAPES[shape](3_000_000))
    replay_file(path)  # every module imported, every cache warm: only the replay is measured
    tracemalloc.start()
    try:
        engine = replay_file(path, batched=batched)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    summary = len(json.dumps(engine.summary(), ensure_ascii=False, indent=2))
    recording = path.stat().st_size
    assert summary < recording / 4  # the recordings are mostly SSE framing, as on the wire
    mb = 1 << 20
    assert held <= 3 * summary + mb, (held, summary, recording)
    assert peak <= 4 * summary + mb, (peak, summary, recording)


# -- keeping less changes nothing --------------------------------------------------------------
def _replay_reads(path: Path, reads: list[bytes], **options: Any) -> ReplayEngine:
    header, _, end = recording_body(path)
    engine = ReplayEngine(header, source="x", **options)
    for i, data in enumerate(reads):
        engine.feed_chunk(Chunk(0.01 * i, data))
    engine.finish(end)
    return engine


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.name)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_what_is_kept_changes_no_result(path: Path, data: st.DataObject) -> None:
    """The summary is the same whether the replay keeps the transcript's segments and the event
    log or not, and the segments kept as the events pass are the event log coalesced."""
    _, body, _ = recording_body(path)
    points = data.draw(st.lists(st.integers(1, max(1, len(body) - 1)), max_size=40), "cuts")
    reads = cut(body, points)
    lean = _replay_reads(path, reads)
    full = _replay_reads(path, reads, transcript=True, keep_events=True)
    assert lean.summary() == full.summary()
    assert lean.segment_events == len(full.handler.get_all_events())
    assert build_transcript(full)["segments"] == coalesce_segments(full.handler.get_all_events())


@pytest.mark.parametrize("batched", [False, True], ids=["read-by-read", "batched"])
@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.name)
def test_arguments_read_from_the_tracker_are_the_handler_s_own(
    path: Path, batched: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The handler reads a call's whole argument text from the tracker instead of keeping its
    fragments: the results are those of a handler that keeps its own copy."""
    shared = replay_file(path, transcript=True, batched=batched)
    update = ToolCallTracker.update

    def without_source(self: ToolCallTracker, *args: Any, **kwargs: Any) -> Any:
        delta = update(self, *args, **kwargs)
        if delta is not None:
            delta.arguments_source = None  # the handler falls back to its own copy
        return delta

    monkeypatch.setattr(ToolCallTracker, "update", without_source)
    own = replay_file(path, transcript=True, batched=batched)
    assert shared.summary() == own.summary()
    assert build_transcript(shared) == build_transcript(own)


def test_the_tracker_drops_a_complete_call_s_text_once_the_handler_took_it() -> None:
    tracker = ToolCallTracker()
    call = tracker.open("k")
    first = tracker.update(call, call_id="c1", name="f", arguments='{"a": ')
    assert first is not None and first.arguments_source is call
    for _ in range(1000):  # fragments are joined in blocks as they come
        tracker.append(call, "1")
    assert len(call._parts) < 256
    call.release_arguments()  # not complete yet: kept
    assert call.arguments == '{"a": ' + "1" * 1000
    tracker.complete(call)
    call.release_arguments()
    with pytest.raises(RuntimeError, match="released"):
        _ = call.arguments
    assert call.fragments == 1001  # what the diff shows of the call is still there

    keeping = ToolCallTracker(keep_completed=True)  # a converter that checks restatements
    kept = keeping.open("k")
    keeping.update(kept, call_id="c2", name="g", arguments="{}", complete=True)
    kept.release_arguments()
    assert kept.arguments == "{}"


def test_a_handler_keeps_its_event_log_only_when_asked() -> None:
    from streamtool.core.handlers import make_handler
    from streamtool.core.model import ChunkResponse

    lean = make_handler("api_tool_call")
    out = lean.feed(ChunkResponse(content="hi"))
    assert out  # the events are returned as they come...
    with pytest.raises(RuntimeError, match="keep_events=True"):
        lean.get_all_events()  # ...and not kept
    full = make_handler("api_tool_call", keep_events=True)
    assert full.feed(ChunkResponse(content="hi")) == full.get_all_events()


def test_a_transcript_needs_a_replay_that_kept_its_segments() -> None:
    path = RECORDINGS / "openai-parallel-tool-calls.jsonl"
    with pytest.raises(ValueError, match="transcript=True"):
        build_transcript(replay_file(path))
    assert build_transcript(replay_file(path, transcript=True))["segments"]


# -- the pieces --------------------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(ops=st.lists(st.one_of(st.text(max_size=5), st.sampled_from(["<seal>", "<text>"]))))
def test_a_text_buffer_is_every_fragment_joined(ops: list[str]) -> None:
    buffer = TextBuffer()
    appended: list[str] = []
    for op in ops * 60:  # past the block size
        if op == "<seal>":
            buffer.seal()
        elif op == "<text>":
            assert "".join(buffer.blocks()) == buffer.text() == "".join(appended)
        else:
            buffer.append(op)
            appended.append(op)
    assert "".join(buffer.blocks()) == "".join(appended)
    assert buffer.text() == "".join(appended)


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()  # NaN and the infinities too, as json.dumps writes them
    | st.text(st.characters(codec=None, exclude_categories=()), max_size=40),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(
            st.text(max_size=5) | st.integers() | st.floats() | st.booleans() | st.none(),
            inner,
            max_size=4,
        )
    ),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(value=JSON_VALUES, indent=st.sampled_from([None, 0, 2]))
def test_iter_json_writes_what_json_dumps_writes(value: Any, indent: int | None) -> None:
    expected = json.dumps(value, ensure_ascii=False, indent=indent)
    assert "".join(iter_json(value, indent=indent)) == expected
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(json_text, "SLICE", 3)  # long strings are escaped a slice at a time
        assert "".join(iter_json(value, indent=indent)) == expected


def test_iter_json_refuses_what_json_refuses() -> None:
    with pytest.raises(TypeError, match="not JSON serializable"):
        list(iter_json({"a": object()}))
    with pytest.raises(TypeError, match="keys must be"):
        list(iter_json({(1, 2): 1}))


def test_replay_json_prints_the_summary_json_dumps_would(tmp_path: Path) -> None:
    """``--format json`` prints piece by piece exactly what ``json.dumps`` of the summary is."""
    from streamtool.cli.sinks import JsonlSink, JsonSink

    path = write_events(tmp_path / "huge.jsonl", huge_call(400_000))
    engine = replay_file(path)
    out = io.StringIO()
    JsonSink(out).close(engine)
    summary = engine.summary()
    assert out.getvalue() == json.dumps(summary, ensure_ascii=False, indent=2) + "\n"
    lines = io.StringIO()
    JsonlSink(lines).close(engine)
    record = {"type": "summary", **summary}
    assert lines.getvalue() == json.dumps(record, ensure_ascii=False) + "\n"


# -- standard input ----------------------------------------------------------------------------
def test_a_recording_on_stdin_is_read_as_it_comes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A recording piped in is read line by line (as a file is), not whole before the first
    chunk: the first chunk is there while the writer has not closed the pipe."""
    path = RECORDINGS / "openai-parallel-tool-calls.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    read_fd, write_fd = os.pipe()
    reader = os.fdopen(read_fd, "r")
    monkeypatch.setattr(sys, "stdin", reader)
    os.write(write_fd, b"".join(lines[:2]))  # the header and the first chunk, and no EOF
    first: list[Any] = []
    chunks: list[Iterator[Any]] = []

    def read_first() -> None:
        source = Source("-")
        chunks.append(source.chunks())
        first.append((source, next(chunks[0])))

    thread = threading.Thread(target=read_first, daemon=True)
    thread.start()
    thread.join(10)
    try:
        assert first, "the first chunk waited for the end of standard input"
        source, chunk = first[0]
        assert chunk.data == json.loads(lines[1])["text"]
    finally:
        os.write(write_fd, b"".join(lines[2:]))
        os.close(write_fd)
        thread.join(10)
    rest = list(chunks[0])
    assert [chunk.data, *(c.data for c in rest)] == [c.data for c in Source(path).chunks()]
    assert isinstance(source.end, End)
    reader.close()


@settings(max_examples=60, deadline=None)
@given(
    pieces=st.lists(st.text(st.characters(codec=None, exclude_categories=()), max_size=9)),
    indent=st.sampled_from([None, 2]),
)
def test_text_pieces_are_written_as_their_joined_string(
    pieces: list[str], indent: int | None
) -> None:
    """A summary's text kept in blocks is written as the one string they make (escapes cut
    nowhere, lone surrogates included)."""
    from streamtool.core.model.textbuf import TextPieces

    whole = "".join(pieces)
    value = {"text": TextPieces(pieces), "n": [whole]}
    expected = json.dumps({"text": whole, "n": [whole]}, ensure_ascii=False, indent=indent)
    assert "".join(iter_json(value, indent=indent)) == expected


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.name)
def test_the_summary_in_pieces_is_the_summary(path: Path) -> None:
    engine = replay_file(path, batched=True)
    assert "".join(iter_json(engine.summary(pieces=True), indent=2)) == json.dumps(
        engine.summary(), ensure_ascii=False, indent=2
    )
