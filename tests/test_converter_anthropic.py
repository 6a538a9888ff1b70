"""The ``anthropic`` converter (Messages API streams)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from streamtool.core.converters import make_converter
from streamtool.core.model.records import Header
from streamtool.core.wire.sse import SSEEvent

from .conftest import RECORDINGS, corpus_params
from .sdk_reference import Streams, anthropic_message, body_reads
from .wire_helpers import (
    assert_chunking_invariant,
    body,
    calls,
    run,
    run_file,
    segments,
    summary,
)

HEADER = Header(
    provider="anthropic", api="messages", request={"url": "https://api.anthropic.com/v1/messages"}
)
RECORDED = sorted(RECORDINGS.glob("anthropic-*.jsonl"))


def message_start(input_tokens: int = 10, output_tokens: int = 1, **usage: int) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": "msg_01Test",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens, **usage},
        },
    }


def start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def delta(index: int, **d: Any) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": d}


def stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def tool(index: int, call_id: str, name: str, kind: str = "tool_use") -> dict[str, Any]:
    return start(index, {"type": kind, "id": call_id, "name": name, "input": {}})


def args(index: int, fragment: str) -> dict[str, Any]:
    return delta(index, type="input_json_delta", partial_json=fragment)


def end(reason: str = "tool_use", **usage: int) -> list[dict[str, Any]]:
    return [
        {"type": "message_delta", "delta": {"stop_reason": reason}, "usage": usage},
        {"type": "message_stop"},
    ]


# -- the SDK's own accumulator as the reference ---------------------------------------------


def sdk_snapshot(streams: Streams, path: Path) -> Any:
    """What ``anthropic``'s ``MessageStream`` builds from the same bytes served over HTTP: its
    final message, or its snapshot where it raised (it stops at an ``error`` event)."""
    return anthropic_message(streams.base(body_reads(path))).value


def sdk_view(snapshot: Any) -> dict[str, Any]:
    blocks = snapshot.content
    return {
        "text": "".join(b.text for b in blocks if b.type == "text"),
        "reasoning": "".join(b.thinking for b in blocks if b.type == "thinking"),
        "calls": [
            (b.id, b.name, b.input, b.type == "server_tool_use")
            for b in blocks
            if b.type in ("tool_use", "server_tool_use")
        ],
        "signatures": [b.signature for b in blocks if b.type == "thinking"],
        "redacted": [b.data for b in blocks if b.type == "redacted_thinking"],
        "results": {b.tool_use_id: b.to_dict() for b in blocks if hasattr(b, "tool_use_id")},
    }


def our_view(result: dict[str, Any], items: list[dict[str, Any]]) -> dict[str, Any]:
    reasoning_meta = segments(items, "reasoning")
    return {
        "text": result["text"],
        "reasoning": result["reasoning"],
        "calls": [
            (i["id"], i["name"], i["arguments"], i.get("server_side", False))
            for i in result["invocations"]
        ],
        "signatures": [s for m in reasoning_meta for s in _signatures(m)],
        "redacted": [d for m in reasoning_meta for d in m.get("redacted_thinking", [])],
        "results": {
            i["id"]: i["metadata"]["result"]
            for i in result["invocations"]
            if "result" in i.get("metadata", {})
        },
    }


def _signatures(metadata: dict[str, Any]) -> list[str]:
    if "signatures" in metadata:
        return list(metadata["signatures"])
    return [metadata["signature"]] if "signature" in metadata else []


@pytest.mark.parametrize("path", corpus_params("anthropic/*.sse"))
def test_corpus_equals_the_sdk_accumulator(streams: Streams, path: Path) -> None:
    result, items = run(path.read_bytes(), converter="anthropic")
    snapshot = sdk_snapshot(streams, path)
    assert our_view(result, items) == sdk_view(snapshot)
    assert result["finish_reason"] == snapshot.stop_reason
    # usage is cumulative: the latest value of each field, as the SDK keeps it
    usage = snapshot.usage
    assert result["usage"]["input_tokens"] == usage.input_tokens
    assert result["usage"]["output_tokens"] == usage.output_tokens
    assert result["usage"]["cached_input_tokens"] == usage.cache_read_input_tokens
    assert result["errors"] == []


@pytest.mark.parametrize("path", [p for p in RECORDED if "overloaded" not in p.name], ids=str)
def test_bundled_recordings_equal_the_sdk_accumulator(streams: Streams, path: Path) -> None:
    result, items = run_file(path)
    assert our_view(result, items) == sdk_view(sdk_snapshot(streams, path))


def test_overloaded_mid_stream_differs_from_the_sdk_on_purpose(streams: Streams) -> None:
    """The SDK raises at ``event: error``; its snapshot then holds the cut-off tool input as its
    partial-JSON parser reads it: ``{}``, the unfinished string silently dropped. streamtool
    never replaces arguments: the call keeps ``arguments: null`` with the raw text, and the
    errors say why."""
    path = RECORDINGS / "anthropic-overloaded-mid-stream.jsonl"
    result, _ = run_file(path)
    snapshot = sdk_snapshot(streams, path)
    assert snapshot.content[1].input == {}  # what the SDK would have run
    assert result["invocations"] == [
        {
            "id": "toolu_01Pw4Zx7Nk2Jv9Qs6Hb3Tc8e",
            "name": "run_bash",
            "arguments": None,
            "raw_arguments": '{"command": "du -ah . | sort -rh | he',
        }
    ]
    assert result["text"] == snapshot.content[0].text
    assert [e["kind"] for e in result["errors"]] == ["provider_error", "segment"]
    assert "overloaded_error: Overloaded" in result["errors"][0]["message"]
    assert result["finish_reason"] is None


# -- chunking never changes meaning ------------------------------------------------------------


@pytest.mark.parametrize("path", corpus_params("anthropic/*.sse") + RECORDED, ids=str)
def test_same_result_for_every_chunking(path: Path | None) -> None:
    assert path is not None
    result = assert_chunking_invariant(path)
    assert result["converter"] == "anthropic"


# -- bundled recordings: their expected summaries ---------------------------------------------


def test_recording_parallel_tool_calls() -> None:
    result, _ = run_file(RECORDINGS / "anthropic-parallel-tool-calls.jsonl")
    assert result["text"] == "I'll check the current weather in both cities at the same time."
    assert calls(result) == [
        ("toolu_01A09q90qw90lq917835lq9", "get_weather", {"city": "Paris", "unit": "celsius"}),
        ("toolu_01D7FLrfh4GYq7yT1ULFeyMV", "get_weather", {"city": "Tokyo", "unit": "celsius"}),
    ]
    assert result["finish_reason"] == "tool_use"
    assert result["usage"] == {
        "input_tokens": 612,
        "output_tokens": 131,
        "cached_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }
    assert result["errors"] == [] and result["quirks"] == []


def test_recording_thinking_web_search_then_tool_call() -> None:
    result, items = run_file(RECORDINGS / "anthropic-thinking-web-search-then-tool-call.jsonl")
    assert result["reasoning"].startswith("The user wants the Python 3.13 release date")
    assert result["text"] == (
        "Python 3.13.0 was released on October 7, 2024. I'll save that to notes.md."
    )
    search, write = result["invocations"]
    assert (search["id"], search["name"], search["arguments"]) == (
        "srvtoolu_014hJH82Qum7Td6UV8gDXThB",
        "web_search",
        {"query": "Python 3.13 release date"},
    )
    assert search["server_side"] is True
    assert search["metadata"]["result"]["type"] == "web_search_tool_result"
    assert [r["url"] for r in search["metadata"]["result"]["content"]] == [
        "https://docs.python.org/3/whatsnew/3.13.html",
        "https://www.python.org/downloads/release/python-3130/",
    ]
    assert write["name"] == "write_file" and "server_side" not in write
    assert write["arguments"] == {
        "path": "notes.md",
        "content": "# Python 3.13\n\nReleased on October 7, 2024 (3.13.0).\n",
    }
    (thinking,) = segments(items, "reasoning")
    assert thinking["signature"].startswith("EqQDCkYIBxgCKkB0")
    texts = segments(items, "text")
    assert [c["url"] for m in texts for c in m.get("citations", [])] == [
        "https://www.python.org/downloads/release/python-3130/"
    ]
    assert result["usage"]["input_tokens"] == 8963 and result["usage"]["output_tokens"] == 248


# -- behaviours, one at a time ---------------------------------------------------------------


def test_input_json_fragments_are_appended_exactly() -> None:
    """An empty first fragment and fragments cut mid-token; no merge heuristics: a fragment
    that happens to start with everything received so far is still appended."""
    events = [
        message_start(),
        tool(0, "toolu_01A", "lookup"),
        args(0, ""),
        args(0, '{"'),
        args(0, '{": 1, "n'),  # starts with the buffer '{"': still an append, not a resend
        args(0, 'ame": "caf\u00e9 \\"x\\""}'),
        stop(0),
        *end(),
    ]
    result = summary(body(events), header=HEADER)
    assert calls(result) == [("toolu_01A", "lookup", {"{": 1, "name": 'caf\u00e9 "x"'})]
    assert result["quirks"] == []


def test_tool_use_without_input_deltas_has_empty_arguments() -> None:
    events = [message_start(), tool(0, "toolu_01B", "now"), stop(0), *end()]
    result, items = run(body(events), header=HEADER)
    assert calls(result) == [("toolu_01B", "now", {})]
    (tool_end,) = segments(items, "tool_call")
    assert tool_end["arguments"] == {}


def test_tool_input_given_whole_in_the_start_block() -> None:
    block = {"type": "tool_use", "id": "toolu_01C", "name": "f", "input": {"a": [1, 2]}}
    result = summary(body([message_start(), start(0, block), stop(0), *end()]), header=HEADER)
    assert calls(result) == [("toolu_01C", "f", {"a": [1, 2]})]
    assert [q["id"] for q in result["quirks"]] == ["anthropic_tool_input_in_start"]


def test_text_block_index_and_tool_block_index_are_separate_from_canonical_index() -> None:
    converter = make_converter("anthropic")
    events = [
        message_start(),
        start(0, {"type": "text", "text": ""}),
        delta(0, type="text_delta", text="Hi"),
        stop(0),
        tool(1, "toolu_01D", "a"),
        tool(2, "toolu_01E", "b"),  # two blocks open before either closes
        args(2, '{"y": 2}'),
        args(1, '{"x": 1}'),
        stop(2),
        stop(1),
        *end(),
    ]
    deltas = []
    for payload in events:
        for chunk in converter.feed(SSEEvent(json.dumps(payload), payload["type"])):
            deltas.extend(chunk.tool_calls or [])
    assert [(d.index, d.call_id, d.arguments_delta, d.is_complete) for d in deltas] == [
        (0, "toolu_01D", None, False),
        (1, "toolu_01E", None, False),
        (1, None, '{"y": 2}', False),
        (0, None, '{"x": 1}', False),
        (1, None, None, True),
        (0, None, None, True),
    ]
    assert converter.tracker.find("toolu_01D") is converter.tracker.find(1)


def test_thinking_signature_stays_with_its_reasoning_segment() -> None:
    events = [
        message_start(),
        start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        delta(0, type="thinking_delta", thinking="Let me think."),
        delta(0, type="thinking_delta", thinking=""),
        delta(0, type="signature_delta", signature="EqQBsig1"),
        stop(0),
        start(1, {"type": "text", "text": ""}),
        delta(1, type="text_delta", text="Answer."),
        stop(1),
        *end("end_turn"),
    ]
    result, items = run(body(events), header=HEADER)
    assert result["reasoning"] == "Let me think." and result["text"] == "Answer."
    assert segments(items, "reasoning") == [{"signature": "EqQBsig1"}]
    assert segments(items, "text") == [{}]


def test_two_thinking_blocks_in_a_row_keep_both_signatures() -> None:
    events = [message_start()]
    for i, sig in enumerate(["sigA", "sigB"]):
        events += [
            start(i, {"type": "thinking", "thinking": "", "signature": ""}),
            delta(i, type="thinking_delta", thinking=f"step {i}. "),
            delta(i, type="signature_delta", signature=sig),
            stop(i),
        ]
    events += [start(2, {"type": "redacted_thinking", "data": "EmwKAhgBEgy3"}), stop(2), *end()]
    _, items = run(body(events), header=HEADER)
    assert segments(items, "reasoning") == [
        {"signature": "sigB", "signatures": ["sigA", "sigB"], "redacted_thinking": ["EmwKAhgBEgy3"]}
    ]


def test_redacted_thinking_alone_gives_a_reasoning_segment_with_its_data() -> None:
    events = [
        message_start(),
        start(0, {"type": "redacted_thinking", "data": "EqkECkYIBx"}),
        stop(0),
    ]
    result, items = run(body(events + end("end_turn")), header=HEADER)
    assert result["reasoning"] == ""
    assert segments(items, "reasoning") == [{"redacted_thinking": ["EqkECkYIBx"]}]


def test_server_tool_use_is_server_side_and_carries_its_result() -> None:
    result_block = {
        "type": "bash_code_execution_tool_result",
        "tool_use_id": "srvtoolu_01X",
        "content": {
            "type": "bash_code_execution_result",
            "stdout": "4\n",
            "stderr": "",
            "return_code": 0,
        },
    }
    events = [
        message_start(),
        tool(0, "srvtoolu_01X", "bash_code_execution", "server_tool_use"),
        args(0, ""),
        args(0, '{"command": "echo $((2+2))"}'),
        stop(0),
        start(1, result_block),
        stop(1),
        start(2, {"type": "text", "text": ""}),
        delta(2, type="text_delta", text="It is 4."),
        stop(2),
        *end("end_turn"),
    ]
    result, items = run(body(events), header=HEADER)
    assert result["invocations"] == [
        {
            "id": "srvtoolu_01X",
            "name": "bash_code_execution",
            "arguments": {"command": "echo $((2+2))"},
            "server_side": True,
            "metadata": {"result": result_block},
        }
    ]
    assert result["text"] == "It is 4."
    assert result["finish_reason"] == "end_turn"


def test_server_tool_without_a_result_is_closed_at_message_stop() -> None:
    events = [message_start(), tool(0, "srvtoolu_01Y", "web_search", "server_tool_use")]
    events += [args(0, '{"query": "x"}'), stop(0), *end("pause_turn")]
    result = summary(body(events), header=HEADER)
    assert result["invocations"] == [
        {
            "id": "srvtoolu_01Y",
            "name": "web_search",
            "arguments": {"query": "x"},
            "server_side": True,
        }
    ]


def test_result_for_an_unknown_tool_use_is_kept_in_the_text_segment() -> None:
    block = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_none", "content": []}
    result, items = run(
        body([message_start(), start(0, block), stop(0), *end("end_turn")]), header=HEADER
    )
    assert segments(items, "text") == [{"tool_results": [block]}]
    assert [q["id"] for q in result["quirks"]] == ["anthropic_orphan_tool_result"]


def test_usage_is_cumulative_latest_per_field_never_summed() -> None:
    events = [
        message_start(input_tokens=500, output_tokens=1, cache_read_input_tokens=40),
        start(0, {"type": "text", "text": ""}),
        delta(0, type="text_delta", text="x"),
        stop(0),
        {"type": "message_delta", "delta": {"stop_reason": None}, "usage": {"output_tokens": 20}},
        *end("end_turn", output_tokens=57, input_tokens=500),
    ]
    result = summary(body(events), header=HEADER)
    assert result["usage"] == {"input_tokens": 500, "output_tokens": 57, "cached_input_tokens": 40}


def test_ping_and_data_only_framing() -> None:
    events = [
        message_start(),
        {"type": "ping"},
        start(0, {"type": "text", "text": ""}),
        {"type": "ping"},
        delta(0, type="text_delta", text="plain"),
        stop(0),
        *end("end_turn"),
    ]
    named = summary(body(events), header=HEADER)
    unnamed = summary(body(events, named=False))  # no event: lines, no header: detected
    assert unnamed == named
    assert named["text"] == "plain" and named["converter"] == "anthropic"


def test_mid_stream_error_leaves_the_open_call_unclosed() -> None:
    events = [
        message_start(),
        tool(0, "toolu_01Z", "save_note"),
        args(0, '{"title": "a", "body": "pri'),
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    ]
    result, items = run(body(events), header=HEADER)
    assert result["errors"][0] == {
        "kind": "provider_error",
        "message": "error event in the stream: overloaded_error: Overloaded",
        "detail": {"type": "overloaded_error", "message": "Overloaded"},
    }
    (tool_end,) = segments(items, "tool_call")
    assert tool_end["unclosed"] is True and tool_end["arguments"] is None
    assert result["invocations"][0]["raw_arguments"] == '{"title": "a", "body": "pri'


def test_stream_cut_without_message_stop_is_reported() -> None:
    events = [message_start(), tool(0, "toolu_01Q", "f"), args(0, '{"a":')]
    result = summary(body(events), header=HEADER)
    assert result["errors"][0]["kind"] == "truncated"
    assert "toolu_01Q" in result["errors"][0]["message"]


def test_orphan_input_json_delta_is_ignored_and_noted() -> None:
    events = [message_start(), args(3, '{"x": 1}'), *end("end_turn")]
    result = summary(body(events), header=HEADER)
    assert result["invocations"] == []
    assert [q["id"] for q in result["quirks"]] == ["anthropic_orphan_input_json"]


def test_bad_json_is_an_error_not_a_crash() -> None:
    text = body([message_start()]) + "event: content_block_delta\ndata: {not json\n\n"
    result = summary(text, header=HEADER)
    assert result["errors"][0]["kind"] == "bad_json"
