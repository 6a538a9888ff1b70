"""``ParsingStreamingResponseHandler``: registry, reasoning, ids, options, quirks, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streamtool.core.drive.replay_file import replay_file
from streamtool.core.handlers import make_handler, parser_names
from streamtool.core.handlers.parsing import ParsingStreamingResponseHandler
from streamtool.core.model import (
    ChunkResponse,
    SegmentEvent,
    SegmentEventType,
    SegmentType,
    ToolCallDelta,
)

from .parsing_support import check_well_formed, coalesce, run

XML_CALL = '<tool name="read_file"><arguments><arg name="path">/a</arg></arguments></tool>'


@pytest.mark.parametrize("name", ["xml", "json", "sentinel"])
def test_registered_parsers(name: str) -> None:
    assert name in parser_names()
    handler = make_handler(name, keep_events=True)
    assert isinstance(handler, ParsingStreamingResponseHandler)
    assert handler.name == name


def test_parser_name_option_and_unknown_name() -> None:
    handler = ParsingStreamingResponseHandler(parser_name="sentinel")
    handler.feed(ChunkResponse(content='[[SEG_START {"type":"run_bash"}]]ls[[SEG_END]]'))
    handler.finalize()
    assert [i.arguments for i in handler.get_all_invocations()] == [{"command": "ls"}]
    with pytest.raises(ValueError, match="unknown text parser"):
        ParsingStreamingResponseHandler(parser_name="yaml")


def test_reasoning_segments_and_ids() -> None:
    handler = make_handler("xml", segment_id_prefix="turn1_", keep_events=True)
    handler.feed(ChunkResponse(reasoning="Need the "))
    handler.feed(ChunkResponse(reasoning="file."))
    handler.feed(ChunkResponse(content="Reading. " + XML_CALL[:20]))
    handler.feed(ChunkResponse(content=XML_CALL[20:] + " then"))
    handler.feed(ChunkResponse(reasoning="Now think again."))
    handler.feed(ChunkResponse(content=" more"))
    handler.finalize()
    events = handler.get_all_events()
    check_well_formed(events)
    segs = coalesce(events)
    assert [(s["id"], s["type"], s["content"]) for s in segs] == [
        ("turn1_seg_1", "reasoning", "Need the file."),
        ("turn1_seg_2", "text", "Reading. "),
        ("turn1_seg_3", "tool_call", '<arguments><arg name="path">/a</arg></arguments>'),
        ("turn1_seg_4", "text", " then"),
        ("turn1_seg_5", "reasoning", "Now think again."),
        ("turn1_seg_6", "text", " more"),
    ]
    # the reasoning segment ends before the text starts; text ends before reasoning starts
    order = [
        (e.event_type, e.segment_id) for e in events if e.event_type is not SegmentEventType.CONTENT
    ]
    assert order.index((SegmentEventType.END, "turn1_seg_1")) < order.index(
        (SegmentEventType.START, "turn1_seg_2")
    )
    assert order.index((SegmentEventType.END, "turn1_seg_4")) < order.index(
        (SegmentEventType.START, "turn1_seg_5")
    )
    assert [i.id for i in handler.get_all_invocations()] == ["turn1_seg_3"]


def test_callback_reset_and_finalize() -> None:
    seen: list[SegmentEvent] = []
    handler = make_handler("json", on_segment_event=seen.append, keep_events=True)
    text = 'Call {"name": "f", "args": {"x": 1}} done'
    handler.feed(ChunkResponse(content=text))
    handler.finalize()
    first = [e.to_dict() for e in handler.get_all_events()]
    assert [e.to_dict() for e in seen] == first
    assert handler.finalize() == []
    with pytest.raises(RuntimeError):
        handler.feed(ChunkResponse(content="x"))
    handler.reset()
    assert handler.get_all_events() == [] and handler.get_all_invocations() == []
    handler.feed(ChunkResponse(content=text))
    handler.finalize()
    assert [e.to_dict() for e in handler.get_all_events()] == first
    assert [i.to_dict() for i in handler.get_all_invocations()] == [
        {"id": "seg_2", "name": "f", "arguments": {"x": 1}}
    ]


def test_custom_text_argument_parser_is_used() -> None:
    def upper(body: str) -> dict[str, str]:
        return {"body": body.upper()}

    handler = make_handler("xml", text_argument_parser=upper)
    handler.feed(ChunkResponse(content='<tool name="t">some words</tool>'))
    handler.finalize()
    assert handler.get_all_invocations()[0].arguments == {"body": "SOME WORDS"}


def test_content_metadata_joins_the_text_segment() -> None:
    handler = make_handler("sentinel", keep_events=True)
    handler.feed(ChunkResponse(content="Hi", content_metadata={"thought_signature": "abc"}))
    handler.finalize()
    events = handler.get_all_events()
    assert events[-1].event_type is SegmentEventType.END
    assert events[-1].metadata == {"thought_signature": "abc"}


def test_api_tool_calls_are_a_quirk_not_dropped_silently() -> None:
    handler = make_handler("xml", keep_events=True)
    delta = ToolCallDelta(0, "call_1", "get_weather", '{"city": "Paris"}', True)
    handler.feed(ChunkResponse(content="Hi", tool_calls=[delta]))
    handler.feed(ChunkResponse(tool_calls=[ToolCallDelta(1, "call_2", "get_time", "{}", True)]))
    handler.finalize()
    assert [q.id for q in handler.quirks] == ["tool_calls_ignored_by_parser"]
    assert "get_weather" in handler.quirks[0].detail
    assert handler.get_all_invocations() == []


def test_unterminated_calls_are_not_invoked() -> None:
    cases = {
        "xml": '<tool name="write_file"><arg name="path">/a</arg><arg name="content">x',
        "json": '{"name": "f", "args": {"x": ',
        "sentinel": '[[SEG_START {"type":"tool","tool_name":"f"}]]{"x": 1',
    }
    for parser, text in cases.items():
        handler = run(parser, text)
        assert handler.get_all_invocations() == []
        ends = [e for e in handler.get_all_events() if e.event_type is SegmentEventType.END]
        assert ends[-1].metadata is not None and ends[-1].metadata["incomplete"] is True
        starts = [e for e in handler.get_all_events() if e.event_type is SegmentEventType.START]
        assert starts[-1].segment_type in (SegmentType.WRITE_FILE, SegmentType.TOOL_CALL)


def _sse_body(contents: list[str], finish: bool = True) -> str:
    out = []
    for i, content in enumerate(contents):
        delta = {"role": "assistant", "content": content} if i == 0 else {"content": content}
        payload = {
            "id": "chatcmpl-T1",
            "object": "chat.completion.chunk",
            "created": 1763717000,
            "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
        }
        out.append(f"data: {json.dumps(payload)}\n\n")
    if finish:
        payload = {
            "id": "chatcmpl-T1",
            "object": "chat.completion.chunk",
            "created": 1763717000,
            "model": "m",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        }
        out.append(f"data: {json.dumps(payload)}\n\ndata: [DONE]\n\n")
    return "".join(out)


@pytest.mark.parametrize(
    ("parser", "contents", "fragment"),
    [
        ("xml", ["Go ", '<tool name="read_file"><arg name="path">/a'], "unterminated tool call"),
        ("json", ["Go ", '{"name": "f", "args": {"q": "a'], "unterminated JSON tool call"),
        ("sentinel", ["Go ", '[[SEG_START {"type":"write_file","path":"/w"}]]ab'], "unterminated"),
    ],
)
def test_unterminated_call_is_a_summary_error(
    tmp_path: Path, parser: str, contents: list[str], fragment: str
) -> None:
    body = tmp_path / "cut.sse"
    body.write_text(_sse_body(contents))
    summary = replay_file(body, parser=parser).summary()
    assert summary["invocations"] == []
    assert summary["text"] == "Go "
    segment_errors = [e for e in summary["errors"] if e["kind"] == "segment"]
    assert len(segment_errors) == 1 and fragment in segment_errors[0]["message"]


def test_bad_arguments_are_a_summary_error(tmp_path: Path) -> None:
    body = tmp_path / "bad.sse"
    body.write_text(_sse_body(['<tool name="f">', "not arguments</tool>"]))
    summary = replay_file(body, parser="xml").summary()
    assert summary["invocations"] == [
        {"id": "seg_1", "name": "f", "arguments": None, "raw_arguments": "not arguments"}
    ]
    assert [e["kind"] for e in summary["errors"]] == ["segment"]
    assert "tool call f (seg_1)" in summary["errors"][0]["message"]


DEEP = "[" * 50_000 + "]" * 50_000


@pytest.mark.parametrize(
    ("parser", "text"),
    [
        ("json", '{"name": "f", "args": ' + DEEP + "}"),
        ("json", '{"name": "a\nb", "args": {}}'),
        ("sentinel", '[[SEG_START {"type":"tool","tool_name":"t"}]]' + DEEP + "[[SEG_END]]"),
        ("xml", '<tool name="t">' + '<arg name="a">' * 5000 + "x" + "</arg>" * 5000 + "</tool>"),
        ("xml", '<tool name="t">' + DEEP + "</tool>"),
    ],
    ids=["json-deep", "json-control-char", "sentinel-deep", "xml-deep-args", "xml-deep-json"],
)
def test_hostile_arguments_are_an_error_not_a_crash(parser: str, text: str) -> None:
    handler = run(parser, text)
    ends = [e for e in handler.get_all_events() if e.event_type is SegmentEventType.END]
    assert ends[-1].metadata is not None and "error" in ends[-1].metadata
    (invocation,) = handler.get_all_invocations()
    assert invocation.arguments is None and invocation.raw_arguments


def test_a_header_too_deep_to_decode_is_text() -> None:
    text = '[[SEG_START {"type":"tool","tool_name":"t","arguments":' + DEEP + "}]][[SEG_END]]"
    handler = run("sentinel", text)
    assert handler.get_all_invocations() == []
    assert [s["type"] for s in coalesce(handler.get_all_events())] == ["text"]
