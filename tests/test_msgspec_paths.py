"""The typed (msgspec) fast paths give exactly what the paths they shortcut give.

- The reader decodes a block of plain chunk lines in one call; any other block goes line by
  line. The reference is the line-by-line reading of the whole file (the reader's own slow
  path): the same chunks (values and types), the same error (file, line, message), the same cut
  last line, the same end record, for any recording text with bad, blank, split or joined
  lines, records of every kind and a cut end, read in blocks of any size.
- A converter's ``feed_many`` reads the commonest events as a Struct (``hot_struct``); the
  reference is the same converter with the Struct path off (``hot_event`` on the parsed dict,
  then ``on_object``): the same chunks, quirks and errors for events of the hot shapes with any
  field missing, null, empty, of another type, repeated or added.
- ``WireWatch.read_texts`` notes what ``read`` of each read notes, and
  ``ToolCallTracker.take_run`` keeps what ``take`` of each fragment keeps (the same blocks).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from streamtool.core.converters import make_converter
from streamtool.core.engine.wire_watch import WireWatch
from streamtool.core.model import textbuf
from streamtool.core.model.records import RecordingError
from streamtool.core.pipeline import tracker as tracker_module
from streamtool.core.pipeline.tracker import ToolCallTracker
from streamtool.core.recording import reader
from streamtool.core.recording.reader import Source
from streamtool.core.wire.sse import SSEComment, SSEEvent

from .helpers import feed_many_replay

SETTINGS = settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

HEADER = json.dumps(
    {"type": "header", "format": "streamtool-recording", "version": 1, "provider": "openai"}
)


# -- the reader ---------------------------------------------------------------------------------
class LineByLine(Source):
    """The reference: every line of the file through the reader's line-by-line path."""

    def _block_chunks(self, fh: Any) -> Any:
        if (yield from self._line_chunks(fh, fh)):
            return


def outcome(source_type: type[Source], path: Path) -> tuple[Any, ...]:
    got: list[tuple[Any, ...]] = []
    try:
        source = source_type(path)
        for chunk in source.chunks():
            got.append((type(chunk.t), chunk.t, type(chunk.data), chunk.data))
    except RecordingError as exc:
        return ("error", str(exc), got)
    return ("ok", got, source.cut_line, source.end)


TEXTS = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
TIMES = st.sampled_from(
    ["0.25", "1", "0", "-0.0", "1e-400", "1e400", "NaN", "null", "true", '"1"', "1E2", "[1]"]
    + ["123456789012345678901234567890", "1" * 4400]
)


@st.composite
def record_lines(draw: st.DrawFn) -> bytes:
    """One line of a recording (its line end included, or two lines, or none)."""
    text = json.dumps(draw(TEXTS), ensure_ascii=draw(st.booleans()))
    t = draw(TIMES)
    kind = draw(
        st.sampled_from(
            ["chunk"] * 8
            + ["no t", "b64", "bad b64", "text null", "extra", "duplicate", "end", "end error"]
            + ["blank", "spaces", "garbage", "two on a line", "split", "crlf", "leading space"]
            + ["header", "unknown type", "not an object", "not UTF-8", "deep", "surrogate"]
        )
    )
    chunk = f'{{"type": "chunk", "t": {t}, "text": {text}}}'
    line = {
        "chunk": chunk,
        "no t": f'{{"type":"chunk","text":{text}}}',
        "b64": '{"type": "chunk", "t": 1, "b64": "AAEC"}',
        "bad b64": '{"type": "chunk", "t": 1, "b64": "@@"}',
        "text null": '{"type": "chunk", "t": 1, "text": null}',
        "extra": f'{{"type": "chunk", "t": {t}, "text": {text}, "x": [1, {{"y": null}}]}}',
        "duplicate": f'{{"type": "end", "text": {text}, "type": "chunk", "t": {t}, "t": 2}}',
        "end": f'{{"type": "end", "t": {t}, "reason": "complete"}}',
        "end error": '{"type": "end", "reason": "error", "error": "boom"}',
        "blank": "",
        "spaces": " \t ",
        "garbage": "{not json",
        "two on a line": f"{chunk} {chunk}",
        "split": f'{{"type": "chunk",\n "t": {t}, "text": {text}}}',
        "crlf": chunk + "\r",
        "leading space": " " + chunk,
        "header": HEADER,
        "unknown type": '{"type": "chunky", "t": 1, "text": "a"}',
        "not an object": "[1, 2]",
        "not UTF-8": None,
        "deep": '{"type": "chunk", "t": 1, "text": "a", "x": ' + "[" * 300 + "]" * 300 + "}",
        "surrogate": '{"type": "chunk", "t": 1, "text": "\\ud800"}',
    }[kind]
    if line is None:
        return b'{"type": "chunk", "t": 1, "text": "\xff"}\n'
    return line.encode("utf-8") + b"\n"


@SETTINGS
@given(
    st.lists(record_lines(), max_size=30),
    st.sampled_from([None, 1, 7, 40]),  # the last line cut: how many bytes of it kept
    st.sampled_from([1, 16, 64, 300, 64 * 1024]),
    st.booleans(),
)
def test_blocks_read_what_lines_read(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    lines: list[bytes],
    cut: int | None,
    block: int,
    plain_run: bool,
) -> None:
    if plain_run:  # a long run of plain chunk lines first, as in a real recording
        lines = [b'{"type":"chunk","t":%d,"text":"x%d"}\n' % (i, i) for i in range(50)] + lines
    body = b"".join(lines)
    if cut is not None and lines:
        body = body[: len(body) - len(lines[-1]) + min(cut, len(lines[-1]) - 1)]
    path = tmp_path / "rec.jsonl"
    path.write_bytes(HEADER.encode() + b"\n" + body)
    monkeypatch.setattr(reader, "READ_BLOCK", block)
    assert outcome(Source, path) == outcome(LineByLine, path)


A, B, C = (f'{{"type":"chunk","t":{i},"text":"{c}"}}' for i, c in enumerate("abc"))


@pytest.mark.parametrize(
    "lines",
    [
        # as many values as lines, but not one a line: a value split over two lines and two
        # values on one line (decode_lines reads values separated by any whitespace)
        [f"{A} {B}", '{"type":"chunk",', '"t":3,"text":"c"}'],
        ['{"type":"chunk","t":1,', '"text":"a"}', B + C],
        ['{"type":"chunk","x":[{},', '{}],"text":"a"} ' + B],
        [A, "", B],
        [A, " ", B],
        [A, B + " ", C],
    ],
)
def test_lines_that_are_not_one_value_each_are_refused_where_they_are(
    tmp_path: Path, lines: list[str]
) -> None:
    path = tmp_path / "rec.jsonl"
    path.write_text(HEADER + "\n" + "\n".join(lines) + "\n", encoding="utf-8")
    assert outcome(Source, path) == outcome(LineByLine, path)


def test_a_block_of_plain_lines_is_decoded_at_once(tmp_path: Path) -> None:
    """The fast path is taken (a long line too), and its chunks are the reader's Chunk."""
    body = b"".join(b'{"type":"chunk","t":%d,"text":"%s"}\n' % (i, b"y" * i) for i in range(300))
    # a line longer than a read: the lines before it and the long line are decoded apart
    long_line = (
        b'{"type":"chunk","t":null,"text":"' + b"z" * (reader.READ_BLOCK + 100_000) + b'"}\n'
    )
    path = tmp_path / "rec.jsonl"
    path.write_bytes(HEADER.encode() + b"\n" + body + long_line + b'{"type":"end"}\n')
    decoded: list[int] = []
    original = reader._plain_chunks

    def counting(block: bytes) -> Any:
        found = original(block)
        if found is not None:
            decoded.append(len(found))
        return found

    reader._plain_chunks = counting
    try:
        source = Source(path)
        chunks = list(source.chunks())
    finally:
        reader._plain_chunks = original
    assert sum(decoded) == 301 and len(decoded) >= 2
    blocks = list(Source(path).chunk_blocks())  # the same chunks in lists, text ones said so
    assert [c for block, _ in blocks for c in block] == chunks
    assert all(type(c.data) is str for block, texts in blocks if texts for c in block)
    assert sum(len(block) for block, texts in blocks if texts) == 301
    assert [c.t for c in chunks] == [*range(300), None]
    assert chunks[299].data == "y" * 299 and chunks[-1].data == "z" * (reader.READ_BLOCK + 100_000)
    assert source.end is not None and source.end.reason == "complete"


# -- the converters' Struct path ---------------------------------------------------------------
def chat(delta: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"id": "c", "model": "m", "choices": [{"index": 0, "delta": delta}], **top}


def chat_call(index: int, arguments: str, **named: str) -> dict[str, Any]:
    call = {"index": index, "function": {"arguments": arguments}}
    if named:
        call["id"] = named["id"]
        call["function"]["name"] = named["name"]  # type: ignore[index]
    return chat({"tool_calls": [call]})


def block_delta(index: int, kind: str, **fields: str) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": {"type": kind, **fields}}


def block_start(index: int, kind: str, **fields: Any) -> dict[str, Any]:
    block = {"type": kind, **fields}
    return {"type": "content_block_start", "index": index, "content_block": block}


def responses(kind: str, item_id: str, delta: str, **fields: Any) -> dict[str, Any]:
    return {"type": f"response.{kind}.delta", "item_id": item_id, "delta": delta, **fields}


def item_added(index: int, kind: str, item_id: str, **fields: Any) -> dict[str, Any]:
    item = {"type": kind, "id": item_id, **fields}
    return {"type": "response.output_item.added", "output_index": index, "item": item}


HOT_SHAPES: dict[str, list[dict[str, Any]]] = {
    "openai-chat": [chat({"content": "Hello"}), chat_call(0, "ab"), chat_call(1, "")],
    "anthropic": [
        block_delta(0, "text_delta", text="a"),
        block_delta(1, "thinking_delta", thinking="t"),
        block_delta(2, "input_json_delta", partial_json="{"),
    ],
    "openai-responses": [
        responses("output_text", "msg_1", "a", content_index=0),
        responses("reasoning_summary_text", "rs_1", "r", summary_index=0),
        responses("function_call_arguments", "fc_1", "{"),
    ],
}
HOT_SHAPES["kimi-k2"] = HOT_SHAPES["openai-chat"]

# the stream's start: calls opened and announced, text begun, items known
OPENERS: dict[str, list[dict[str, Any]]] = {
    "openai-chat": [
        chat({"role": "assistant", "content": "Hi"}),
        chat_call(0, '{"path": "', id="a", name="f"),
        chat_call(1, '{"cmd": "', id="b", name="g"),
    ],
    "anthropic": [
        {"type": "message_start", "message": {"model": "m", "content": [], "usage": {}}},
        block_start(0, "text", text=""),
        block_start(1, "thinking", thinking=""),
        block_start(2, "tool_use", id="t", name="f", input={}),
    ],
    "openai-responses": [
        item_added(0, "reasoning", "rs_1"),
        item_added(1, "message", "msg_1"),
        item_added(2, "function_call", "fc_1", call_id="call_1", name="f", arguments=""),
    ],
}
OPENERS["kimi-k2"] = OPENERS["openai-chat"]

ODD_VALUES = [None, "", 0, 1, -1, 2**70, 1.5, True, [], {}, "x", [1], {"a": 1}]
ODD_KEYS = [
    "type", "index", "delta", "content", "tool_calls", "function", "arguments", "name", "id",
    "text", "thinking", "partial_json", "item_id", "sequence_number", "content_index",
    "summary_index", "model", "usage", "error", "x_groq", "citations", "search_results",
    "finish_reason", "refusal", "annotations", "reasoning", "reasoning_content",
    "reasoning_details", "function_call", "role", "choices", "obfuscation",
]  # fmt: skip


def paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place inside ``obj`` (dict keys and list positions)."""
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += paths(v, (*prefix, i))
    return out


@st.composite
def odd_event(draw: st.DrawFn, converter: str) -> str:
    """A hot event, perhaps bent: a value replaced, a field removed or added, a key repeated."""
    obj = json.loads(json.dumps(draw(st.sampled_from(HOT_SHAPES[converter]))))
    how = draw(st.sampled_from(["same", "same", "replace", "remove", "add", "repeat", "deep"]))
    where = draw(st.sampled_from(paths(obj)))
    parent: Any = obj
    for step in where[:-1]:
        parent = parent[step]
    if how == "replace" and where:
        parent[where[-1]] = draw(st.sampled_from(ODD_VALUES))
    elif how == "remove" and where and isinstance(parent, dict):
        del parent[where[-1]]
    elif how == "add":
        target = parent[where[-1]] if where else obj
        if isinstance(target, dict):
            target[draw(st.sampled_from(ODD_KEYS))] = draw(st.sampled_from(ODD_VALUES))
    elif how == "deep":
        obj["nested"] = json.loads("[" * 250 + "]" * 250)
    text = json.dumps(obj)
    if how == "repeat" and text.startswith("{") and len(text) > 2:
        key = draw(st.sampled_from(ODD_KEYS))
        text = "{" + json.dumps(key) + ": " + json.dumps(draw(st.sampled_from(ODD_VALUES))) + ", "
        text += json.dumps(obj)[1:]
    return text


def replay(converter: str, items: list[Any], struct_path: bool) -> list[str]:
    return feed_many_replay(converter, items, struct_path, batch=5)


@SETTINGS
@pytest.mark.parametrize("converter", sorted(HOT_SHAPES))
@given(data=st.data())
def test_struct_path_reads_what_the_dict_path_reads(converter: str, data: st.DataObject) -> None:
    events = [json.dumps(o) for o in OPENERS[converter]]
    events += data.draw(st.lists(odd_event(converter), min_size=1, max_size=25))
    items: list[Any] = [SSEEvent(e) for e in events]
    if data.draw(st.booleans()):
        items.insert(data.draw(st.integers(0, len(items))), SSEComment("keep-alive"))
    assert replay(converter, items, True) == replay(converter, items, False)


def test_every_hot_shape_takes_the_struct_path() -> None:
    """Each hot shape decodes as its converter's Struct and is taken by ``hot_struct``."""
    for converter, shapes in HOT_SHAPES.items():
        conv = make_converter(converter)
        conv.feed_many([SSEEvent(json.dumps(o)) for o in OPENERS[converter]])
        decoder = type(conv).hot_decoder
        assert decoder is not None
        for shape in shapes:
            assert conv.hot_struct(decoder.decode(json.dumps(shape))) is not None, shape


# -- the wire watch ----------------------------------------------------------------------------
@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.text(st.sampled_from("\n\ra"), max_size=5), max_size=6), max_size=5))
@example([["a\r"], ["", "\na\n\n"]])  # a CRLF split between two batches
@example([["a\n\n", "a\r"], ["\n", "a"]])
@example([["a\n\n", "\n\n"], ["a\n\n"]])  # every read a whole event
def test_read_texts_notes_what_reads_note(batches: list[list[str]]) -> None:
    one, many = WireWatch(), WireWatch()
    for texts in batches:
        for text in texts:
            one.read(text)
        many.read_texts(texts, "".join(texts))
        assert many.found == one.found
    reads = sum(len(texts) for texts in batches)
    one.finish(None, reads, reads, None)  # whole events in every read: noted at the end
    many.finish(None, reads, reads, None)
    assert many.found == one.found


# -- the tracker's runs ------------------------------------------------------------------------
@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 2), st.lists(st.text("ab", min_size=1, max_size=3), max_size=9)),
        max_size=12,
    ),
    st.sampled_from([2, 3, 256]),
)
def test_a_run_taken_at_once_is_kept_as_taken_one_by_one(
    runs: list[tuple[int, list[str]]], seal: int
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tracker_module, "SEAL", seal)
        patch.setattr(textbuf, "SEAL", seal)
        one, many = ToolCallTracker(lambda *a: None), ToolCallTracker(lambda *a: None)
        for t in (one, many):
            for i in range(3):
                t.update(t.open(i), call_id=f"c{i}", name="f", arguments="{")
        for index, fragments in runs:
            if not fragments:
                continue
            a, b = one.find(index), many.find(index)
            assert a is not None and b is not None
            for fragment in fragments:
                one.take(a, fragment)
            many.take_run(b, fragments, "".join(fragments))
        for a, b in zip(one.calls, many.calls, strict=True):
            assert b.argument_blocks() == a.argument_blocks()
            assert (b.fragments, len(b.arguments)) == (a.fragments, len(a.arguments))
            assert many.appends_plainly(b, "x") == one.appends_plainly(a, "x")
