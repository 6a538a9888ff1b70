"""Handler contract: segments, deterministic ids, real invocations, finalize and reset."""

from __future__ import annotations

import pytest

from streamtool.core.handlers import make_handler
from streamtool.core.model import (
    ChunkResponse,
    SegmentEventType,
    SegmentType,
    ToolCallDelta,
)

E = SegmentEventType


def shape(events):
    return [(e.event_type, e.segment_id, e.segment_type) for e in events]


def test_api_tool_call_segments_and_invocations():
    h = make_handler("api_tool_call", keep_events=True)
    out = []
    out += h.feed(ChunkResponse(reasoning="think"))
    out += h.feed(ChunkResponse(content="Hello"))
    out += h.feed(ChunkResponse(tool_calls=[ToolCallDelta(0, "call_x", "f", '{"a": 1}')]))
    out += h.feed(ChunkResponse(tool_calls=[ToolCallDelta(0, is_complete=True)]))
    out += h.feed(ChunkResponse(content=" again"))
    out += h.finalize()
    assert shape(out) == [
        (E.START, "seg_1", SegmentType.REASONING),
        (E.CONTENT, "seg_1", None),
        (E.END, "seg_1", None),
        (E.START, "seg_2", SegmentType.TEXT),
        (E.CONTENT, "seg_2", None),
        (E.END, "seg_2", None),
        (E.START, "call_x", SegmentType.TOOL_CALL),
        (E.CONTENT, "call_x", None),
        (E.END, "call_x", None),
        (E.START, "seg_3", SegmentType.TEXT),
        (E.CONTENT, "seg_3", None),
        (E.END, "seg_3", None),
    ]
    assert out[8].metadata == {"tool_name": "f", "arguments": {"a": 1}}
    invs = h.get_all_invocations()
    assert [(i.id, i.name, i.arguments) for i in invs] == [("call_x", "f", {"a": 1})]
    assert h.get_all_events() == out
    # the lists handed out are copies
    h.get_all_events().clear()
    assert len(h.get_all_events()) == len(out)


def test_feed_after_finalize_raises_and_reset_allows_reuse():
    h = make_handler("api_tool_call", keep_events=True)
    h.feed(ChunkResponse(content="x"))
    h.finalize()
    assert h.finalize() == []
    with pytest.raises(RuntimeError):
        h.feed(ChunkResponse(content="y"))
    h.reset()
    assert h.get_all_events() == [] and h.get_all_invocations() == []
    out = h.feed(ChunkResponse(content="y"))
    assert out[0].segment_id == "seg_1"


def test_unclosed_call_with_broken_arguments_keeps_raw_text():
    h = make_handler("api_tool_call", keep_events=True)
    h.feed(ChunkResponse(tool_calls=[ToolCallDelta(0, "c", "run", '{"cmd": "ls')]))
    end = h.finalize()[-1]
    assert end.metadata["unclosed"] is True and end.metadata["arguments"] is None
    assert (
        end.metadata["raw_arguments"] == '{"cmd": "ls' and "not valid JSON" in end.metadata["error"]
    )
    inv = h.get_all_invocations()[0]
    assert inv.arguments is None and inv.raw_arguments == '{"cmd": "ls'


def test_passthrough_text_and_reasoning_only():
    h = make_handler("passthrough", keep_events=True)
    out = h.feed(ChunkResponse(content="a", tool_calls=[ToolCallDelta(0, "c", "f", "{}")]))
    out += h.finalize()
    assert [e.segment_type for e in out if e.event_type is E.START] == [SegmentType.TEXT]
    assert h.get_all_invocations() == []
    assert [q.id for q in h.quirks] == ["tool_calls_ignored_by_parser"]
    # the quirks are handed over once: the handler lets go of them
    assert [q.id for q in h.take_quirks()] == ["tool_calls_ignored_by_parser"]
    assert h.quirks == [] and h.take_quirks() == []


def test_invocations_is_a_view_and_get_all_invocations_a_copy():
    h = make_handler("api_tool_call")
    view = h.invocations
    h.feed(ChunkResponse(tool_calls=[ToolCallDelta(0, "call_x", "f", "{}", is_complete=True)]))
    assert [inv.id for inv in view] == ["call_x"]  # it follows the handler
    copy = h.get_all_invocations()
    assert copy == list(view) and copy is not view


def test_segment_id_prefix_and_callback():
    seen = []
    h = make_handler(
        "api_tool_call", on_segment_event=seen.append, segment_id_prefix="turn1:", keep_events=True
    )
    h.feed(ChunkResponse(content="a"))
    h.finalize()
    assert [e.segment_id for e in seen] == ["turn1:seg_1"] * 3


def test_reasoning_metadata_is_kept_with_its_segment():
    h = make_handler("api_tool_call", keep_events=True)
    h.feed(ChunkResponse(reasoning="r"))
    h.feed(ChunkResponse(reasoning_metadata={"signature": "sig"}))
    out = h.feed(ChunkResponse(content="t"))
    end = next(e for e in out if e.event_type is E.END)
    assert end.metadata == {"signature": "sig"}


def test_arguments_nested_too_deeply_are_an_error_not_a_crash():
    from streamtool.core.handlers.api_tool_call import parse_arguments

    raw = "[" * 100_000 + "]" * 100_000
    assert parse_arguments(raw) == (None, "arguments are nested too deeply to parse")
