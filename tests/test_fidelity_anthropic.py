"""Anthropic fidelity: content blocks delivered whole inside ``message_start``."""

from __future__ import annotations

from .conftest import RECORDINGS
from .test_converter_anthropic import HEADER, end, message_start
from .wire_helpers import assert_chunking_invariant, body, run

IN_START = RECORDINGS / "anthropic-content-in-message-start.jsonl"


def test_recording_tool_use_inside_message_start_is_an_invocation() -> None:
    result = assert_chunking_invariant(IN_START)
    assert [(i["id"], i["name"], i["arguments"]) for i in result["invocations"]] == [
        ("toolu_01Bq2XcV6nM9pL3kT8wR4Ysf", "get_region_sales", {"region": "AMER"})
    ]
    assert result["finish_class"] == "tool_calls"
    assert result["errors"] == []
    assert [q["id"] for q in result["quirks"]] == ["anthropic_content_in_message_start"]


def test_text_and_tool_blocks_in_message_start_then_streamed_blocks() -> None:
    start = message_start()
    start["message"]["content"] = [
        {"type": "text", "text": "Fetching the next region.", "citations": None},
        {"type": "tool_use", "id": "toolu_A", "name": "lookup", "input": {"q": "x"}},
        {
            "type": "server_tool_use",
            "id": "srvtoolu_B",
            "name": "web_search",
            "input": {"query": "y"},
        },
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_B", "content": []},
    ]
    events = [
        start,
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": " Done."},
        },
        {"type": "content_block_stop", "index": 0},
        *end("tool_use", output_tokens=40),
    ]
    result, items = run(body(events), header=HEADER)
    assert result["text"] == "Fetching the next region. Done."
    calls = [
        (i["id"], i["name"], i["arguments"], i.get("server_side")) for i in result["invocations"]
    ]
    assert calls == [
        ("toolu_A", "lookup", {"q": "x"}, None),
        ("srvtoolu_B", "web_search", {"query": "y"}, True),
    ]
    assert result["invocations"][1]["metadata"]["result"]["type"] == "web_search_tool_result"
    assert result["errors"] == []
    assert [q["id"] for q in result["quirks"]] == ["anthropic_content_in_message_start"]
