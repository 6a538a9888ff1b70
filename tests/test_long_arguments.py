"""Long tool-call arguments parsed from their blocks, long strings kept in pieces
(``replay --format json``): the same arguments, errors and summary as parsing the joined text,
for every way the text is cut, and the text held once instead of twice."""

from __future__ import annotations

import json
import subprocess
import sys
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamtool.core.drive.replay_file import replay_file
from streamtool.core.engine.replay import ReplayEngine
from streamtool.core.handlers import api_tool_call, long_arguments
from streamtool.core.handlers.api_tool_call import parse_arguments
from streamtool.core.handlers.long_arguments import NOT_HERE, parse_blocks
from streamtool.core.model import textbuf
from streamtool.core.model.records import Chunk
from streamtool.core.model.textbuf import TextPieces
from streamtool.core.outputs.json_text import iter_json
from streamtool.core.pipeline import tracker

from .helpers import recording_body
from .test_memory import _call, _code, _ending, _sse, huge_call, write_events
from .test_transcript import cut


def joined(value: Any) -> Any:
    """``value`` with every ``TextPieces`` joined (and checked to be one)."""
    if type(value) is TextPieces:
        return value.joined()
    if isinstance(value, dict):
        return {k: joined(v) for k, v in value.items()}
    if isinstance(value, list):
        return [joined(v) for v in value]
    return value


def has_pieces(value: Any) -> bool:
    if type(value) is TextPieces:
        return True
    if isinstance(value, dict):
        return any(has_pieces(v) for v in value.values())
    if isinstance(value, list):
        return any(has_pieces(v) for v in value)
    return False


@contextmanager
def small() -> Iterator[None]:
    """Long strings from 8 characters of JSON text, decoded 5 characters at a time, a literal
    tried whole within 6: every block boundary, every cut and every escape meets the slicing."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(long_arguments, "LONG", 8)
        patch.setattr(long_arguments, "CUT", 5)
        patch.setattr(long_arguments, "SHORT", 6)
        yield


def cut_text(text: str, points: list[int]) -> list[str]:
    bounds = [0, *sorted(set(points)), len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b > a]


# strings with everything JSON escapes: quotes, backslashes, control characters, non-ASCII,
# characters beyond the BMP (a surrogate pair when escaped) and lone surrogates
STRINGS = st.text(
    st.characters(codec=None, exclude_categories=())
    | st.sampled_from(['"', "\\", "\n", "\x01", "é", "😀", "\ud800", "/"]),
    max_size=40,
)
KEYS = st.sampled_from(["a", "b", "p", "c"])  # short literals: only values are long
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | STRINGS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=12,
)
# what may break the text: a character dropped, or one of these put in
BREAKERS = st.sampled_from(['"', "\\", "{", "}", ",", ":", "x", "\x01", "\\u12", " "])


@st.composite
def argument_texts(draw: st.DrawFn) -> str:
    value = draw(st.dictionaries(KEYS, VALUES, max_size=4) | st.lists(VALUES, max_size=3))
    text = json.dumps(
        value, ensure_ascii=draw(st.booleans()), indent=draw(st.sampled_from([None, 2]))
    )
    text = (
        draw(st.sampled_from(["", " ", "\n", "\u00a0"]))
        + text
        + draw(st.sampled_from(["", " ", "\n", "x"]))
    )
    if draw(st.booleans()) and text:
        at = draw(st.integers(0, len(text) - 1))
        if draw(st.booleans()):
            text = text[:at] + text[at + 1 :]
        else:
            text = text[:at] + draw(BREAKERS) + text[at:]
    return text


@settings(max_examples=400, deadline=None)
@given(text=argument_texts(), data=st.data())
def test_parse_blocks_is_parse_arguments_of_the_joined_text(text: str, data: st.DataObject) -> None:
    """For any argument text, valid or not, cut into blocks anywhere: the value of the joined
    text with long strings in pieces (the blocks let go), or NOT_HERE with the blocks
    untouched (the caller then parses the joined text, errors and all)."""
    points = data.draw(st.lists(st.integers(1, max(1, len(text) - 1)), max_size=8), "cuts")
    blocks = cut_text(text, points)
    given_blocks = list(blocks)
    expected, error = parse_arguments(text)
    with small():
        value = parse_blocks(blocks, parse_arguments)
    if value is NOT_HERE:
        assert blocks == given_blocks
        return
    assert error is None
    assert joined(value) == expected
    assert json.dumps(joined(value)) == json.dumps(expected)  # key order too
    assert has_pieces(value)
    assert all(b == "" for b in blocks)


@settings(max_examples=200, deadline=None)
@given(
    data=st.data(),
    value=st.dictionaries(KEYS, STRINGS.filter(lambda s: len(s) > 8), min_size=1, max_size=3),
)
def test_a_valid_object_s_long_strings_are_kept_in_pieces(
    value: dict[str, str], data: st.DataObject
) -> None:
    """The shape of a tool call that writes a file (an object of string arguments): parsed from
    its blocks, however they are cut, never left to the joined text."""
    text = json.dumps(value, ensure_ascii=data.draw(st.booleans(), "ascii"))
    points = data.draw(st.lists(st.integers(1, max(1, len(text) - 1)), max_size=8), "cuts")
    blocks = cut_text(text, points)
    with small():
        parsed = parse_blocks(blocks, parse_arguments)
    assert parsed is not NOT_HERE
    assert joined(parsed) == value
    for key, item in value.items():
        if len(json.dumps(item)) >= 8:
            assert type(parsed[key]) is TextPieces


def test_a_placeholder_text_in_the_arguments_is_left_to_the_usual_parse() -> None:
    """Arguments that hold the very text a placeholder would be are not misread."""
    with small():
        for salt in range(3):
            mark = f"\\u0000streamtool-pieces-{salt}-0\\u0000"
            text = '{"a": "' + "x" * 20 + '", "b": "' + mark + '"}'
            value = parse_blocks([text], parse_arguments)
            assert value is not NOT_HERE  # another placeholder is taken
            assert joined(value) == json.loads(text)
    # the placeholder's string written another way (the same once decoded), not long itself
    long = "x" * long_arguments.LONG
    sneaky = '{"a": "' + long + '", "b": "\\u0000\\u0073treamtool-pieces-0-0\\u0000"}'
    assert parse_blocks([sneaky], parse_arguments) is NOT_HERE
    plain = '{"a": "' + long + '", "b": "\\u0000\\u0073treamtool-pieces-0-1\\u0000"}'
    assert joined(parse_blocks([plain], parse_arguments)) == json.loads(plain)


# -- the replay ------------------------------------------------------------------------------
def big_calls(size: int) -> Iterator[str]:
    """A file call with content markers, a plain call with one long argument, and a file call
    whose arguments break (raw text kept, an error), each streaming in small fragments."""
    yield _sse({"role": "assistant", "content": None})
    calls = [
        ("write_file", '{"path": "a.py", "content": "__START_CONTENT__\\n', '__END_CONTENT__"}'),
        ("run_query", '{"limit": 3, "query": "', '", "tags": ["x", "y"]}'),
        ("write_file", '{"path": "b.py", "content": "', '", "path": 7'),  # never closed
    ]
    for i, (name, head, tail) in enumerate(calls):
        yield _call(i, "", name=name)
        yield _call(i, head)
        written = 0
        for frag in _code(24):
            event = _call(i, json.dumps(frag)[1:-1])
            written += len(event)
            yield event
            if written >= size:
                break
        yield _call(i, tail)
    yield from _ending("tool_calls")


def summary_text(engine: ReplayEngine) -> str:
    return "".join(iter_json(engine.summary(pieces=True), indent=2))


@pytest.mark.parametrize("batched", [False, True], ids=["read-by-read", "batched"])
def test_the_summary_of_long_calls_in_pieces_is_the_summary(
    tmp_path: Path, batched: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(api_tool_call, "PIECES_FROM", 100_000)
    path = write_events(tmp_path / "big.jsonl", big_calls(1_500_000))
    plain = replay_file(path, batched=batched)
    pieces = replay_file(path, batched=batched, string_pieces=True)
    expected = json.dumps(plain.summary(), ensure_ascii=False, indent=2)
    assert summary_text(pieces) == expected
    # the summary without pieces, for any writer, holds plain strings again
    assert json.dumps(pieces.summary(), ensure_ascii=False, indent=2) == expected
    invocations = pieces.invocations()
    assert type(invocations[0].arguments["content"]) is TextPieces  # the markers stripped
    assert type(invocations[1].arguments["query"]) is TextPieces
    assert invocations[2].arguments is None and invocations[2].raw_arguments  # broken: raw kept
    assert [q.id for q in pieces.quirks] == [q.id for q in plain.quirks]
    assert pieces.errors == plain.errors and plain.errors


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_for_every_chunking_the_summary_in_pieces_is_the_summary(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(api_tool_call, "PIECES_FROM", 64)
        patch.setattr(long_arguments, "LONG", 16)
        patch.setattr(long_arguments, "CUT", 7)
        patch.setattr(textbuf, "SEAL", 2)  # argument text in many blocks
        patch.setattr(tracker, "SEAL", 2)
        path = write_events(tmp_path_factory.mktemp("c") / "c.jsonl", big_calls(3_000))
        header, body, end = recording_body(path)
        points = data.draw(st.lists(st.integers(1, len(body) - 1), max_size=80), "cuts")
        reads = cut(body, points)

        def replay(**options: Any) -> ReplayEngine:
            engine = ReplayEngine(header, source="x", **options)
            for i, read in enumerate(reads):
                engine.feed_chunk(Chunk(0.01 * i, read))
            engine.finish(end)
            return engine

        pieces = replay(string_pieces=True)
        assert has_pieces([inv.arguments for inv in pieces.invocations()])
        assert summary_text(pieces) == json.dumps(replay().summary(), ensure_ascii=False, indent=2)


def test_replay_format_json_prints_the_summary_of_long_calls(tmp_path: Path) -> None:
    """The command keeps long strings in pieces and prints exactly the summary."""
    path = write_events(tmp_path / "big.jsonl", big_calls(1_500_000))
    proc = subprocess.run(
        [sys.executable, "-m", "streamtool.cli", "replay", str(path), "--format", "json"],
        capture_output=True,
        text=True,
        encoding="utf-8",
    )
    assert proc.returncode == 0, proc.stderr
    summary = replay_file(path).summary()
    assert proc.stdout == json.dumps(summary, ensure_ascii=False, indent=2) + "\n"


def test_a_huge_call_is_held_once_while_it_is_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With long strings in pieces, the replay of one call writing a 1 MB file never holds its
    text twice (its raw text and its value, or the blocks and their join): the peak stays near
    one copy, where parsing the joined text needs two."""
    # the file's reads kept small beside the call (a read block is held while it is decoded,
    # with or without pieces): what is compared is the copies of the call's text
    monkeypatch.setattr("streamtool.core.recording.reader.READ_BLOCK", 64 * 1024)
    path = write_events(tmp_path / "huge.jsonl", huge_call(12_000_000))
    replay_file(path, batched=True, string_pieces=True)  # warm: only the replay is measured
    content = replay_file(path).invocations()[0].arguments["content"]
    size = len(content)
    del content
    peaks = {}
    for pieces in (False, True):
        tracemalloc.start()
        try:
            engine = replay_file(path, batched=True, string_pieces=pieces)
            _, peaks[pieces] = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        del engine
    assert size > 1_000_000
    assert peaks[False] > 2 * size  # the usual parse: two copies at once, and more
    assert peaks[False] - peaks[True] > 0.8 * size, (peaks, size)  # about one copy less


# -- what an open or finished call keeps ------------------------------------------------------
@pytest.mark.parametrize("name", ["run", "write_file"], ids=["tool-call", "file-call"])
def test_a_finished_call_ignores_later_deltas_and_keeps_its_metadata(name: str) -> None:
    """A finished call keeps no state of its own, yet a later delta for its index opens nothing
    and changes nothing; the START metadata (not copied while the call is open) reaches the
    invocation, and the END's wins where both say something."""
    from streamtool.core.handlers import make_handler
    from streamtool.core.model import ChunkResponse, SegmentEventType, ToolCallDelta

    h = make_handler("api_tool_call")
    start = ToolCallDelta(0, "c1", name, '{"path": "a.py", "content": "x"', metadata={"k": 1})
    out = h.feed(ChunkResponse(tool_calls=[start]))
    out += h.feed(ChunkResponse(tool_calls=[ToolCallDelta(0, arguments_delta="}")]))
    out += h.feed(ChunkResponse(tool_calls=[ToolCallDelta(0, is_complete=True)]))
    late = h.feed(ChunkResponse(tool_calls=[ToolCallDelta(0, "c1", name, '{"b": 2}', True)]))
    out += late + h.finalize()
    assert late == []
    kinds = [e.event_type for e in out if e.segment_id == "c1"]
    assert kinds[0] is SegmentEventType.START and kinds[-1] is SegmentEventType.END
    assert kinds.count(SegmentEventType.START) == kinds.count(SegmentEventType.END) == 1
    (inv,) = h.get_all_invocations()
    assert inv.arguments == {"path": "a.py", "content": "x"}
    start_event = next(e for e in out if e.segment_id == "c1")
    assert start_event.metadata is not None and start_event.metadata["k"] == 1
    assert start_event.metadata["tool_name"] == name


def short_calls(calls: int) -> Iterator[str]:
    """Thousands of short calls, all closed together by the finish (as Chat Completions does)."""
    yield _sse({"role": "assistant", "content": None})
    for i in range(calls):
        yield _call(i, "", name="run_query")
        yield _call(i, '{"query": "select ' + str(i) + '", ')
        yield _call(i, '"limit": 10}')
    yield from _ending("tool_calls")


def test_many_open_calls_cost_little_beside_their_summary(tmp_path: Path) -> None:
    """Thousands of short calls stay open until the stream's finish: what each keeps while open
    and once finished (tracker, handler, adapter) is a small part of the replay's peak."""
    path = write_events(tmp_path / "short.jsonl", short_calls(4000))
    replay_file(path, batched=True, string_pieces=True)  # warm
    tracemalloc.start()
    try:
        engine = replay_file(path, batched=True, string_pieces=True)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    summary = len(summary_text(engine))
    assert len(engine.invocations()) == 4000
    # per call: about 150 bytes of summary; 0.93 KB held once finished and a peak of 1.4 KB
    # (1.3 KB and 1.8 KB when every open and finished call kept its state and copies of its
    # metadata); the 64 KB reads batched at a time and the modules' caches make the rest
    assert summary < 200 * 4000
    assert held < 1100 * 4000, (peak, held, summary)
    assert peak < 1600 * 4000, (peak, held, summary)
