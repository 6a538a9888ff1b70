"""write_file / patch_file calls become file segments in api_tool_call mode (issue 5)."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from benchmarks.generators import OPENAI_CHAT_URL, recording_header
from streamtool.core.converters import CONVERTERS
from streamtool.core.drive.replay_file import replay_file
from streamtool.core.handlers import make_handler
from streamtool.core.handlers.api_tool_call import (
    ApiToolCallStreamingResponseHandler,
    FileToolsError,
    parse_file_tools,
)
from streamtool.core.model import (
    ChunkResponse,
    SegmentEvent,
    SegmentEventType,
    SegmentType,
    ToolCallDelta,
    ToolInvocation,
)

RECORDINGS = Path(__file__).resolve().parents[1] / "recordings"

START, CONTENT, END = SegmentEventType.START, SegmentEventType.CONTENT, SegmentEventType.END


# -- helpers --
def call_chunks(
    fragments: list[str],
    *,
    shape: str = "openai-chat",
    name: str = "write_file",
    call_id: str = "call_1",
    index: int = 0,
) -> list[ChunkResponse]:
    """The ChunkResponses each converter family produces for one streamed call."""

    def cr(delta: ToolCallDelta) -> ChunkResponse:
        return ChunkResponse(tool_calls=[delta])

    if shape == "gemini-whole":  # the whole call in one delta, closed at once
        return [cr(ToolCallDelta(index, call_id, name, "".join(fragments), is_complete=True))]
    if shape == "openai-chat":  # header with "" arguments, fragments, closed by finish_reason
        out = [cr(ToolCallDelta(index, call_id, name, None))]
        out += [cr(ToolCallDelta(index, arguments_delta=f)) for f in fragments]
        out.append(ChunkResponse(tool_calls=[ToolCallDelta(index, is_complete=True)]))
        return out
    if shape == "first-fragment-in-header":  # the tracker held early text until the name came
        head, *rest = fragments or [""]
        out = [cr(ToolCallDelta(index, call_id, name, head or None))]
        out += [cr(ToolCallDelta(index, arguments_delta=f)) for f in rest]
        out.append(cr(ToolCallDelta(index, is_complete=True)))
        return out
    if shape == "closed-with-last-fragment":  # e.g. Responses .done carrying the tail
        out = [cr(ToolCallDelta(index, call_id, name, None))]
        out += [cr(ToolCallDelta(index, arguments_delta=f)) for f in fragments[:-1]]
        last = fragments[-1] if fragments else None
        out.append(cr(ToolCallDelta(index, arguments_delta=last, is_complete=True)))
        return out
    raise AssertionError(shape)


SHAPES = ["openai-chat", "gemini-whole", "first-fragment-in-header", "closed-with-last-fragment"]


def run(
    chunks: list[ChunkResponse], **options: Any
) -> tuple[list[SegmentEvent], list[ToolInvocation], ApiToolCallStreamingResponseHandler]:
    handler = ApiToolCallStreamingResponseHandler(keep_events=True, **options)
    events: list[SegmentEvent] = []
    for chunk in chunks:
        events += handler.feed(chunk)
    events += handler.finalize()
    assert events == handler.get_all_events()
    return events, handler.get_all_invocations(), handler


def segments(events: list[SegmentEvent]) -> dict[str, dict[str, Any]]:
    """Per segment id: type, content deltas, START and END metadata, event order."""
    out: dict[str, dict[str, Any]] = {}
    for ev in events:
        if ev.event_type is START:
            assert ev.segment_id not in out, "a segment started twice"
            out[ev.segment_id] = {"type": ev.segment_type, "deltas": [], "start": ev.metadata}
        else:
            seg = out[ev.segment_id]
            assert "end" not in seg, "an event after END"
            if ev.event_type is CONTENT:
                if ev.metadata:  # what the segment learnt mid-stream (the path...)
                    seg.setdefault("updates", []).append(ev.metadata)
                if ev.delta or not ev.metadata:
                    seg["deltas"].append(ev.delta)
            else:
                seg["end"] = ev.metadata
    for seg in out.values():
        seg["content"] = "".join(seg["deltas"])
    return out


def cut(text: str, points: list[int]) -> list[str]:
    points = sorted(set(p for p in points if 0 < p < len(text)))
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]


# -- the segment contract --
ARGS = '{"path": "src/app.py", "content": "print(\\"hi\\")\\n\\u00e9\\ud83d\\ude80\\n"}'


@pytest.mark.parametrize("shape", SHAPES)
def test_write_file_becomes_a_file_segment(shape: str) -> None:
    events, invocations, _ = run(call_chunks(cut(ARGS, [3, 17, 40, 47, 58, 64]), shape=shape))
    segs = segments(events)
    assert list(segs) == ["call_1"]
    seg = segs["call_1"]
    assert seg["type"] is SegmentType.WRITE_FILE
    assert seg["start"]["tool_name"] == "write_file"
    assert seg["content"] == 'print("hi")\né🚀\n'
    assert all(seg["deltas"]), "empty CONTENT deltas"
    assert seg["end"]["path"] == "src/app.py"
    assert seg["end"]["arguments"] == json.loads(ARGS)
    assert "error" not in seg["end"]
    assert [inv.to_dict() for inv in invocations] == [
        {"id": "call_1", "name": "write_file", "arguments": json.loads(ARGS)}
    ]


def test_content_deltas_carry_only_newly_decoded_characters() -> None:
    fragments = ['{"path": "a.py", "con', 'tent": "ab', "c\\", "n", "\\u00", "e9", '"}']
    events, _, _ = run(call_chunks(fragments))
    contents = [ev for ev in events if ev.event_type is CONTENT]
    assert [ev.delta for ev in contents] == ["", "ab", "c", "\n", "é"]
    # the path is carried as soon as its string closed, on a CONTENT event without text
    assert contents[0].metadata == {"path": "a.py", "known_arguments": {"path": "a.py"}}
    assert all(ev.metadata is None for ev in contents[1:])
    # START is emitted with the call's first delta, before any argument text
    assert events[0].event_type is START and events[0].metadata == {"tool_name": "write_file"}


def test_gemini_whole_call_gives_one_content_delta() -> None:
    events, invocations, _ = run(call_chunks([ARGS], shape="gemini-whole"))
    assert [ev.event_type for ev in events] == [START, CONTENT, END]
    assert events[0].metadata["path"] == "src/app.py"  # known already when the segment starts
    assert events[1].delta == 'print("hi")\né🚀\n'
    assert len(invocations) == 1


def test_path_after_content_lands_in_end_metadata() -> None:
    args = '{"content": "body\\n", "path": "late/path.txt"}'
    events, invocations, _ = run(call_chunks(cut(args, [5, 12, 20, 33])))
    seg = segments(events)["call_1"]
    assert "path" not in seg["start"]
    assert seg["end"]["path"] == "late/path.txt"
    assert seg["content"] == "body\n"
    assert invocations[0].arguments == {"content": "body\n", "path": "late/path.txt"}


def test_patch_file_streams_the_patch_field() -> None:
    args = '{"path": "a.py", "patch": "--- a/a.py\\n+++ b/a.py\\n", "content": "not this"}'
    events, invocations, _ = run(call_chunks(cut(args, [9, 30]), name="patch_file"))
    seg = segments(events)["call_1"]
    assert seg["type"] is SegmentType.PATCH_FILE
    assert seg["content"] == "--- a/a.py\n+++ b/a.py\n"
    assert invocations[0].name == "patch_file"
    assert invocations[0].arguments == json.loads(args)


def test_other_tools_keep_their_tool_call_segment() -> None:
    args = '{"city": "Paris", "content": "x"}'
    events, invocations, _ = run(call_chunks(cut(args, [4, 11]), name="get_weather"))
    seg = segments(events)["call_1"]
    assert seg["type"] is SegmentType.TOOL_CALL
    assert seg["content"] == args  # raw argument text, as before
    assert invocations[0].arguments == {"city": "Paris", "content": "x"}


def test_parallel_calls_interleaved_one_invocation_each() -> None:
    a = call_chunks(['{"path": "a", ', '"content": "A1', 'A2"}'], call_id="call_a", index=0)
    b = call_chunks(['{"q": ', '"x"}'], name="search", call_id="call_b", index=1)
    c = call_chunks(['{"content": "C"', ', "path": "c"}'], call_id="call_c", index=2)
    order = [a[0], b[0], a[1], c[0], b[1], a[2], c[1], b[2], c[2], a[3], b[3], c[3]]
    events, invocations, _ = run(order)
    segs = segments(events)
    assert {k: v["type"] for k, v in segs.items()} == {
        "call_a": SegmentType.WRITE_FILE,
        "call_b": SegmentType.TOOL_CALL,
        "call_c": SegmentType.WRITE_FILE,
    }
    assert segs["call_a"]["content"] == "A1A2" and segs["call_c"]["content"] == "C"
    assert sorted(inv.id for inv in invocations) == ["call_a", "call_b", "call_c"]


def test_late_deltas_after_the_call_closed_are_ignored() -> None:
    chunks = call_chunks(['{"path": "a", "content": "x"}'])
    chunks.append(ChunkResponse(tool_calls=[ToolCallDelta(0, arguments_delta="junk")]))
    events, invocations, _ = run(chunks)
    assert segments(events)["call_1"]["content"] == "x"
    assert len(invocations) == 1


def test_text_before_the_call_is_closed_first() -> None:
    events, _, _ = run([ChunkResponse(content="Writing it."), *call_chunks(['{"content": "x"}'])])
    kinds = [(ev.event_type, ev.segment_type) for ev in events]
    assert kinds[:3] == [(START, SegmentType.TEXT), (CONTENT, None), (END, None)]
    assert kinds[3] == (START, SegmentType.WRITE_FILE)


# -- markers --
@pytest.mark.parametrize(
    ("name", "field", "start", "end"),
    [
        ("write_file", "content", "__START_CONTENT__", "__END_CONTENT__"),
        ("patch_file", "patch", "__START_PATCH__", "__END_PATCH__"),
    ],
)
def test_markers_are_stripped_wherever_fragments_cut_them(
    name: str, field: str, start: str, end: str
) -> None:
    body = "line 1\nline __END__ 2\n"
    args = json.dumps({"path": "f", field: f"{start}\n{body}{end}\n"})
    results = set()
    for i in range(1, len(args)):
        for j in (i + 1, i + 7, len(args)):
            events, invocations, _ = run(call_chunks(cut(args, [i, j]), name=name))
            seg = segments(events)["call_1"]
            results.add(seg["content"])
            assert invocations[0].arguments == {"path": "f", field: body}
    assert results == {body}


# -- broken arguments --
def test_truncated_arguments_keep_the_content_and_the_raw_text() -> None:
    fragments = ['{"path": "big.py", "content": "def f():\\n', "    return 1\\n", "    # cut he"]
    chunks = call_chunks(fragments)[:-1]  # the stream ended before the call was closed
    events, invocations, _ = run(chunks)
    seg = segments(events)["call_1"]
    assert seg["content"] == "def f():\n    return 1\n    # cut he"
    assert seg["end"]["unclosed"] is True
    assert seg["end"]["path"] == "big.py"
    assert "not valid JSON" in seg["end"]["error"]
    inv = invocations[0]
    assert inv.arguments is None  # never {} and never a silently truncated file
    assert inv.raw_arguments == "".join(fragments)
    assert inv.to_dict()["raw_arguments"] == "".join(fragments)


def test_malformed_arguments_of_a_closed_call() -> None:
    fragments = ['{"path": "a.py", "content": "x = 1\\n"', ' "mode": 420}']  # a missing comma
    events, invocations, _ = run(call_chunks(fragments))
    seg = segments(events)["call_1"]
    assert seg["content"] == "x = 1\n"
    assert "unclosed" not in seg["end"] and "error" in seg["end"]
    assert invocations[0].arguments is None
    assert invocations[0].raw_arguments == "".join(fragments)


def test_a_truncated_end_marker_is_not_stripped() -> None:
    fragments = ['{"content": "__START_CONTENT__\\nabc\\n__END_CONT']
    events, _, _ = run(call_chunks(fragments)[:-1])
    assert segments(events)["call_1"]["content"] == "abc\n__END_CONT"


def test_double_encoded_arguments_still_give_the_content() -> None:
    inner = json.dumps({"path": "a.txt", "content": "hello\n"})
    events, invocations, _ = run(call_chunks(cut(json.dumps(inner), [10, 20])))
    seg = segments(events)["call_1"]
    assert seg["content"] == "hello\n" and seg["end"]["path"] == "a.txt"
    assert invocations[0].arguments == {"path": "a.txt", "content": "hello\n"}


def test_duplicate_content_key_is_reported_as_a_quirk() -> None:
    events, invocations, handler = run(call_chunks(['{"content": "a", "content": "b"}']))
    assert [q.id for q in handler.quirks] == ["tool_args_duplicate_key"]
    assert invocations[0].arguments == {"content": "b"}  # what json.loads keeps
    assert segments(events)["call_1"]["content"] == "ab"  # nothing that streamed is hidden


def test_content_that_is_not_a_string_streams_nothing() -> None:
    events, invocations, _ = run(call_chunks(['{"path": "a", "content": ["x"]}']))
    seg = segments(events)["call_1"]
    assert seg["content"] == "" and seg["end"]["path"] == "a"
    assert invocations[0].arguments == {"path": "a", "content": ["x"]}


# -- configuration --
def test_file_tool_names_are_configurable() -> None:
    tools = {"create_file": "text", "apply_diff": "diff"}
    chunks = call_chunks(['{"file": "x", "text": "T"}'], name="create_file", call_id="c1")
    chunks += call_chunks(['{"diff": "D"}'], name="apply_diff", call_id="c2", index=1)
    chunks += call_chunks(['{"content": "W"}'], name="write_file", call_id="c3", index=2)
    segs = segments(run(chunks, file_tools=tools)[0])
    assert (segs["c1"]["type"], segs["c1"]["content"]) == (SegmentType.WRITE_FILE, "T")
    assert (segs["c2"]["type"], segs["c2"]["content"]) == (SegmentType.WRITE_FILE, "D")
    assert segs["c3"]["type"] is SegmentType.TOOL_CALL  # no longer a file tool

    patch = call_chunks(['{"path": "p", "diff": "@@"}'], name="apply_patch")
    seg = segments(run(patch, file_tools={"apply_patch": "diff"})[0])["call_1"]
    assert (seg["type"], seg["content"]) == (SegmentType.PATCH_FILE, "@@")


def test_file_streaming_can_be_turned_off() -> None:
    events, _, _ = run(call_chunks(['{"content": "x"}']), file_tools={})
    assert segments(events)["call_1"]["type"] is SegmentType.TOOL_CALL


def test_handler_registry_passes_the_option() -> None:
    handler = make_handler("api_tool_call", file_tools={"mk": "body"}, keep_events=True)
    assert isinstance(handler, ApiToolCallStreamingResponseHandler)
    assert handler.file_tools == {"mk": "body"}
    handler.reset()
    assert handler.file_tools == {"mk": "body"}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("write_file=content,patch_file=patch", {"write_file": "content", "patch_file": "patch"}),
        (" create_file = text ", {"create_file": "text"}),
        ("", {}),
        ("none", {}),
    ],
)
def test_parse_file_tools(spec: str, expected: dict[str, str]) -> None:
    assert parse_file_tools(spec) == expected


@pytest.mark.parametrize("spec", ["write_file", "=content", "a=", "a=b,a=c", "a=path", "a=b,,c=d"])
def test_parse_file_tools_rejects(spec: str) -> None:
    with pytest.raises(FileToolsError):
        parse_file_tools(spec)


# -- property: any object, any serialisation, any cut, every converter shape --
TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from(list('ab /"\\\n\r\t\b\f\x00{}[]:,é中😀') + ["\ud83d", "\ude00"]),
        st.characters(),
    ),
    max_size=40,
)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | TEXT,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from(["content", "path", "x"]) | TEXT, children, max_size=3)
    ),
    max_leaves=6,
)


@st.composite
def file_calls(draw: st.DrawFn) -> tuple[str, str, list[str], str]:
    name, field = draw(st.sampled_from([("write_file", "content"), ("patch_file", "patch")]))
    obj = draw(st.dictionaries(st.sampled_from(["path", "mode", "x"]) | TEXT, VALUES, max_size=4))
    obj[field] = draw(TEXT)
    keys = list(obj)
    order = draw(st.permutations(keys))
    obj = {k: obj[k] for k in order}
    whole = json.dumps(
        obj,
        ensure_ascii=draw(st.booleans()),
        indent=draw(st.sampled_from([None, 1, "\t"])),
        separators=draw(st.sampled_from([None, (",", ":"), (" ,\n", " : ")])),
    )
    points = draw(st.lists(st.integers(0, len(whole)), max_size=15))
    return name, field, cut(whole, points), draw(st.sampled_from(SHAPES))


@settings(max_examples=100, deadline=None)
@given(file_calls())
def test_streamed_content_and_arguments_equal_json_loads(
    case: tuple[str, str, list[str], str],
) -> None:
    name, field, fragments, shape = case
    expected = json.loads("".join(fragments))
    assume("__START_" not in expected[field])
    events, invocations, _ = run(call_chunks(fragments, name=name, shape=shape, call_id="call_p"))
    segs = segments(events)
    assert list(segs) == ["call_p"]
    seg = segs["call_p"]
    assert seg["type"] is (
        SegmentType.WRITE_FILE if name == "write_file" else SegmentType.PATCH_FILE
    )
    assert seg["content"] == expected[field]
    assert all(seg["deltas"])
    if isinstance(expected.get("path"), str):
        assert seg["end"]["path"] == expected["path"]
    else:
        assert "path" not in seg["end"]
    assert len(invocations) == 1
    assert invocations[0].id == "call_p" and invocations[0].name == name
    assert invocations[0].arguments == expected


@settings(max_examples=40, deadline=None)
@given(TEXT, st.lists(st.integers(0, 400), max_size=12), st.sampled_from(SHAPES))
def test_marked_content_is_the_same_for_any_cut(body: str, points: list[int], shape: str) -> None:
    assume("__END_CONTENT__" not in body)
    args = json.dumps({"path": "p", "content": "__START_CONTENT__\n" + body + "__END_CONTENT__"})
    events, invocations, _ = run(call_chunks(cut(args, points), shape=shape))
    assert segments(events)["call_1"]["content"] == body
    assert invocations[0].arguments == {"path": "p", "content": body}


# -- bundled recordings, checked against the wire itself --
def wire_events(path: Path) -> list[tuple[str | None, Any]]:
    """(event name, JSON data) of a recording, read without streamtool's decoder."""
    raw = b""
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["type"] == "chunk":
            raw += base64.b64decode(record["b64"]) if "b64" in record else record["text"].encode()
    out = []
    for block in re.split(r"\r?\n\r?\n", raw.decode("utf-8")):
        name, data = None, []
        for line in block.splitlines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        if data and data != ["[DONE]"]:
            out.append((name, json.loads("\n".join(data))))
    return out


def wire_calls(path: Path) -> list[dict[str, Any]]:
    """Every tool call of a recording: id, name and the whole argument text."""
    calls: dict[Any, dict[str, Any]] = {}
    for _name, obj in wire_events(path):
        kind = obj.get("type")
        if "choices" in obj:
            for choice in obj["choices"]:
                for tc in (choice.get("delta") or {}).get("tool_calls") or []:
                    call = calls.setdefault(tc["index"], {"id": None, "name": None, "args": ""})
                    call["id"] = call["id"] or tc.get("id")
                    call["name"] = call["name"] or tc.get("function", {}).get("name")
                    call["args"] += tc.get("function", {}).get("arguments") or ""
        elif kind == "content_block_start" and obj["content_block"]["type"] == "tool_use":
            block = obj["content_block"]
            calls[obj["index"]] = {"id": block["id"], "name": block["name"], "args": ""}
        elif kind == "content_block_delta" and obj["delta"]["type"] == "input_json_delta":
            calls[obj["index"]]["args"] += obj["delta"]["partial_json"]
        elif kind == "response.output_item.added" and obj["item"]["type"] == "function_call":
            item = obj["item"]
            calls[item["id"]] = {"id": item["call_id"], "name": item["name"], "args": ""}
        elif kind == "response.function_call_arguments.delta":
            calls[obj["item_id"]]["args"] += obj["delta"]
        elif "candidates" in obj:
            for cand in obj["candidates"]:
                for part in cand.get("content", {}).get("parts", []):
                    if "functionCall" in part:
                        fc = part["functionCall"]
                        calls[len(calls)] = {
                            "id": fc.get("id"),
                            "name": fc["name"],
                            "args": json.dumps(fc.get("args", {})),
                        }
    return list(calls.values())


def strip_reference(text: str, kind: str) -> str:
    start, end = (
        ("__START_PATCH__", "__END_PATCH__")
        if kind == "patch"
        else ("__START_CONTENT__", "__END_CONTENT__")
    )
    m = re.match(r"\s*" + start + r"(\r\n|\n|\r)?", text)
    if not m:
        return text
    body = text[m.end() :]
    tail = re.search(end + r"\s*\Z", body)
    return body[: tail.start()] if tail else body


BUNDLED = {
    "openai-write-file.jsonl": "openai-chat",
    "openai-write-file-escapes-unicode.jsonl": "openai-chat",
    "openai-write-file-path-after-content.jsonl": "openai-chat",
    "openai-patch-file-markers.jsonl": "openai-chat",
    "anthropic-write-file.jsonl": "anthropic",
    "openai-responses-write-file.jsonl": "openai-responses",
    "gemini-write-file.jsonl": "gemini",
}


@pytest.mark.parametrize("name", list(BUNDLED))
def test_bundled_recording_streams_the_file(name: str) -> None:
    converter = BUNDLED[name]
    if converter not in CONVERTERS:
        pytest.skip(f"the {converter} converter is not registered")
    path = RECORDINGS / name
    engine = replay_file(path, keep_events=True)
    assert engine.converter_name == converter
    assert engine.errors == []
    segs = segments(engine.handler.get_all_events())
    file_segs = [(k, v) for k, v in segs.items() if v["type"] is not SegmentType.TEXT]
    calls = wire_calls(path)
    assert len(file_segs) == len(calls) == len(engine.invocations()) == 1
    (seg_id, seg), call, inv = file_segs[0], calls[0], engine.invocations()[0]
    field = {"write_file": "content", "patch_file": "patch"}[call["name"]]
    args = json.loads(call["args"])
    expected_content = strip_reference(args[field], field)
    assert seg["type"].value == call["name"]
    assert seg["content"] == expected_content
    assert len(seg["deltas"]) > (1 if converter != "gemini" else 0)
    assert seg["end"]["path"] == args["path"]
    if call["id"] is not None:
        assert seg_id == call["id"]
    assert inv.id == seg_id and inv.name == call["name"]
    assert inv.arguments == {**args, field: expected_content}


def test_bundled_recordings_exercise_what_they_claim() -> None:
    escapes = wire_calls(RECORDINGS / "openai-write-file-escapes-unicode.jsonl")[0]["args"]
    for escape in ("\\u00e9", "\\ud83d\\ude80", "\\t", "\\\\", '\\"', "\\/"):
        assert escape in escapes
    assert "你好，世界" in escapes  # raw UTF-8 too, split inside 世 between two network reads
    records = (RECORDINGS / "openai-write-file-escapes-unicode.jsonl").read_text().splitlines()
    assert any('"b64"' in record for record in records)
    late = json.loads(
        wire_calls(RECORDINGS / "openai-write-file-path-after-content.jsonl")[0]["args"]
    )
    assert list(late) == ["content", "path"]
    patch = json.loads(wire_calls(RECORDINGS / "openai-patch-file-markers.jsonl")[0]["args"])
    assert patch["patch"].startswith("__START_PATCH__\n")


# -- replay engine and CLI --
def chat_recording(path: Path, fragments: list[str], name: str, *, finished: bool = True) -> Path:
    def sse(delta: dict[str, Any], finish: str | None = None) -> str:
        obj = {
            "id": "chatcmpl-t",
            "object": "chat.completion.chunk",
            "created": 1763700000,
            "model": "gpt-4o-2024-08-06",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return "data: " + json.dumps(obj) + "\n\n"

    head = {
        "index": 0,
        "id": "call_T1",
        "type": "function",
        "function": {"name": name, "arguments": ""},
    }
    reads = [sse({"role": "assistant", "tool_calls": [head]})]
    reads += [sse({"tool_calls": [{"index": 0, "function": {"arguments": f}}]}) for f in fragments]
    if finished:
        reads += [sse({}, "tool_calls"), "data: [DONE]\n\n"]
    request = {"method": "POST", "url": OPENAI_CHAT_URL}
    header = recording_header(request=request, response_headers={})
    lines = [json.dumps(header)]
    lines += [
        json.dumps({"type": "chunk", "t": 0.1 + i / 100, "text": r}) for i, r in enumerate(reads)
    ]
    if finished:
        lines.append(json.dumps({"type": "end", "t": 1.0, "reason": "complete", "error": None}))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_replay_of_a_cut_off_write_file_reports_it(tmp_path: Path) -> None:
    fragments = ['{"path": "x.py", "content": "a = 1\\n', "b = "]
    rec = chat_recording(tmp_path / "cut.jsonl", fragments, "write_file", finished=False)
    engine = replay_file(rec, keep_events=True)
    summary = engine.summary()
    assert summary["invocations"] == [
        {
            "id": "call_T1",
            "name": "write_file",
            "arguments": None,
            "raw_arguments": "".join(fragments),
        }
    ]
    kinds = {e["kind"] for e in summary["errors"]}
    assert "segment" in kinds and "recording_cut_off" in kinds
    seg = segments(engine.handler.get_all_events())["call_T1"]
    assert seg["content"] == "a = 1\nb = "


def streamtool(*args: str) -> subprocess.CompletedProcess[str]:
    code = "from streamtool.cli.main import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60
    )


def test_cli_file_tools_option(tmp_path: Path) -> None:
    rec = chat_recording(
        tmp_path / "c.jsonl", ['{"file": "n.txt", ', '"text": "hi\\n"}'], "create_file"
    )
    default = json.loads(streamtool("replay", str(rec), "--format", "json").stdout)
    assert default["invocations"][0]["arguments"] == {"file": "n.txt", "text": "hi\n"}
    out = streamtool("replay", str(rec), "--format", "jsonl", "--file-tools", "create_file=text")
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    starts = [ev for ev in lines if ev.get("event") == "SEGMENT_START"]
    assert [ev["segment_type"] for ev in starts] == ["write_file"]
    deltas = [ev["delta"] for ev in lines if ev.get("event") == "SEGMENT_CONTENT"]
    assert "".join(deltas) == "hi\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--file-tools", "create_file"], "is not TOOL=FIELD"),
        (["--file-tools", "a=b", "--parser", "passthrough"], "applies to --parser api_tool_call"),
    ],
)
def test_cli_bad_file_tools_is_a_one_line_error(
    tmp_path: Path, args: list[str], message: str
) -> None:
    rec = chat_recording(tmp_path / "c.jsonl", ['{"content": "x"}'], "write_file")
    out = streamtool("replay", str(rec), *args)
    assert out.returncode == 2
    assert out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1 and message in out.stderr
    assert "Traceback" not in out.stderr


# -- the path (and every other string argument) reaches the sinks as soon as it is complete --
@settings(max_examples=60, deadline=None)
@given(
    path=TEXT,
    mode=TEXT,
    content=TEXT,
    order=st.permutations(["path", "mode", "content", "size"]),
    points=st.lists(st.integers(0, 400), max_size=12),
    ensure_ascii=st.booleans(),
)
def test_string_arguments_are_announced_by_the_fragment_that_completes_them(
    path: str,
    mode: str,
    content: str,
    order: list[str],
    points: list[int],
    ensure_ascii: bool,
) -> None:
    values: dict[str, Any] = {"path": path, "mode": mode, "content": content, "size": 3}
    whole = json.dumps({k: values[k] for k in order}, ensure_ascii=ensure_ascii)
    fragments = cut(whole, points)
    handler = ApiToolCallStreamingResponseHandler(keep_events=True)
    handler.feed(ChunkResponse(tool_calls=[ToolCallDelta(0, "call_1", "write_file", None)]))
    known: dict[str, str] = {}  # what the sinks have been told so far
    sent = ""
    for fragment in fragments:
        sent += fragment
        for ev in handler.feed(ChunkResponse(tool_calls=[ToolCallDelta(0, None, None, fragment)])):
            if ev.event_type is START and ev.metadata and "path" in ev.metadata:
                known["path"] = ev.metadata["path"]
            if ev.event_type is CONTENT and ev.metadata:
                assert ev.metadata["known_arguments"] == {
                    **ev.metadata["known_arguments"],
                    **known,
                }  # nothing told earlier is forgotten
                known = dict(ev.metadata["known_arguments"])
                assert ev.metadata.get("path") == known.get("path")
        # every string argument (but the streamed file field) whose value is complete in the
        # text sent so far is known, with its decoded value; nothing else is
        complete = {
            key: values[key]
            for key in ("path", "mode")
            if _string_closed(whole, key, values[key], ensure_ascii, len(sent))
        }
        assert known == complete
    end = handler.finalize()[-1]
    assert end.event_type is END and end.metadata["path"] == path


def _string_closed(whole: str, key: str, value: str, ensure_ascii: bool, sent: int) -> bool:
    """Whether the value of top-level ``key`` ends (its closing quote) within ``sent`` chars."""
    head = json.dumps(key) + ": " + json.dumps(value, ensure_ascii=ensure_ascii)
    start = whole.index(head)  # keys are distinct; a value can hold this text only escaped
    return start + len(head) <= sent


def test_the_path_comes_before_the_content_on_the_bundled_recordings() -> None:
    """With path first, the tree learns it before the file's first line (OpenAI, Anthropic)."""
    for name in ("openai-write-file.jsonl", "anthropic-write-file.jsonl"):
        engine = replay_file(RECORDINGS / name, keep_events=True)
        events = engine.handler.get_all_events()
        start = next(ev for ev in events if ev.segment_type is SegmentType.WRITE_FILE)
        files = [ev for ev in events if ev.segment_id == start.segment_id]
        first_text = next(i for i, ev in enumerate(files) if ev.delta)
        told = next(i for i, ev in enumerate(files) if ev.metadata and ev.metadata.get("path"))
        assert files[0].segment_type is SegmentType.WRITE_FILE
        assert told < first_text, name
        assert files[told].metadata["path"] == files[-1].metadata["path"]
