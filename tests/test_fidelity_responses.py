"""OpenAI Responses fidelity: built-in tool items, who ran a call, rotating item ids, a ``.done``
text that contradicts the deltas, partial images and unknown events (see the API's
``ResponseStreamEvent`` union and output item types)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from streamtool.core.model.records import Header

from .conftest import RECORDINGS
from .test_converter_responses import HEADER, Stream
from .wire_helpers import assert_chunking_invariant, load, run, run_file, summary

BUILTIN = RECORDINGS / "openai-responses-builtin-tools-streamed-input.jsonl"
HOSTED = RECORDINGS / "openai-responses-hosted-shell-and-mcp-approval.jsonl"
ROTATING = RECORDINGS / "copilot-responses-rotating-item-ids.jsonl"
MISMATCH = RECORDINGS / "openai-responses-output-text-done-mismatch.jsonl"
IMAGES = RECORDINGS / "openai-responses-image-generation-partial-images.jsonl"
XAI = RECORDINGS / "xai-responses-server-side-custom-tool-call.jsonl"


def contents_before_end(items: list[dict[str, Any]], segment_id: str) -> int:
    """How many CONTENT events a segment got before its END (how its input streamed)."""
    n = 0
    for item in items:
        if item.get("segment_id") != segment_id:
            continue
        if item["event"] == "SEGMENT_CONTENT":
            n += 1
        elif item["event"] == "SEGMENT_END":
            return n
    raise AssertionError(f"segment {segment_id} never ended")


@pytest.mark.parametrize("path", [BUILTIN, HOSTED, ROTATING, MISMATCH, IMAGES, XAI], ids=str)
def test_same_result_for_every_chunking(path: Any) -> None:
    assert_chunking_invariant(path)


def test_builtin_tools_carry_their_real_input_streamed_as_it_arrives() -> None:
    result, items = run_file(BUILTIN)
    assert result["errors"] == [] and result["quirks"] == []
    by_name = {i["name"]: i for i in result["invocations"]}
    code = by_name["code_interpreter_call"]
    assert code["server_side"] is True
    assert code["arguments"]["code"].startswith("with open('/mnt/data/stats.py') as f:\n")
    assert code["arguments"]["container_id"].startswith("cntr_")
    patch = by_name["apply_patch_call"]
    assert "server_side" not in patch  # the client applies it
    assert patch["id"] == "call_Xq7LmN2pR4sT6vW8yZ0aB1cD"
    operation = patch["arguments"]["operation"]
    assert (operation["type"], operation["path"]) == ("update_file", "src/stats.py")
    assert "+def median(xs):\n" in operation["diff"]
    shell = by_name["shell_call"]
    assert "server_side" not in shell
    assert shell["arguments"]["action"]["commands"] == [
        "python -m pytest tests/test_stats.py -q",
        "git diff --stat",
    ]
    # the code, the diff and the commands grow in the tree while they stream
    assert contents_before_end(items, code["id"]) >= 8
    assert contents_before_end(items, patch["id"]) >= 7
    assert contents_before_end(items, shell["id"]) >= 8
    # calls the client must run: the response asks for tool results
    assert (result["finish_reason"], result["finish_class"]) == ("completed", "tool_calls")


def builtin_item(kind: str, index: int, **fields: Any) -> dict[str, Any]:
    return {"id": f"{kind[:2]}_{index}", "type": kind, "status": "in_progress", **fields}


def test_placeholder_in_output_item_added_is_not_the_input() -> None:
    """A web search's ``action`` without its query, a file search's empty ``queries``: only the
    finished item says what the call did; no ``arguments_mismatch`` on a clean stream."""
    s = Stream().created()
    ws = builtin_item("web_search_call", 0, action={"type": "search"})
    fs = builtin_item("file_search_call", 1, queries=[], results=None)
    s.add("response.output_item.added", output_index=0, item=ws)
    ws_done = dict(ws, status="completed", action={"type": "search", "query": "pep 750"})
    s.add("response.output_item.done", output_index=0, item=ws_done)
    s.add("response.output_item.added", output_index=1, item=fs)
    fs_done = dict(fs, status="completed", queries=["t-strings", "template strings"])
    s.add("response.output_item.done", output_index=1, item=fs_done)
    s.completed([ws_done, fs_done])
    result = summary(s.text(), header=HEADER)
    assert result["errors"] == []
    assert [i["arguments"] for i in result["invocations"]] == [
        {"action": {"type": "search", "query": "pep 750"}},
        {"queries": ["t-strings", "template strings"]},
    ]
    assert result["finish_class"] == "stop"  # the provider ran both


@pytest.mark.parametrize("answered", [True, False])
def test_an_output_item_in_the_same_response_makes_a_call_server_side(answered: bool) -> None:
    s = Stream().created()
    op = {"type": "create_file", "path": "NOTES.md", "diff": ""}
    item = builtin_item("apply_patch_call", 0, call_id="call_p", operation=op)
    s.add("response.output_item.added", output_index=0, item=item)
    s.add(
        "response.apply_patch_call_operation_diff.delta",
        output_index=0,
        item_id="ap_0",
        delta="+hi",
    )
    done = dict(item, status="completed", operation=dict(op, diff="+hi"))
    s.add("response.output_item.done", output_index=0, item=done)
    output = [done]
    if answered:
        answer = {"id": "apo_1", "type": "apply_patch_call_output", "call_id": "call_p"}
        answer.update(status="completed", output="created NOTES.md")
        s.add("response.output_item.added", output_index=1, item=answer)
        s.add("response.output_item.done", output_index=1, item=answer)
        output.append(answer)
    s.completed(output)
    result = summary(s.text(), header=HEADER)
    (call,) = result["invocations"]
    assert call["arguments"] == {
        "operation": {"diff": "+hi", "type": "create_file", "path": "NOTES.md"}
    }
    assert call.get("server_side", False) is answered
    assert result["finish_class"] == ("stop" if answered else "tool_calls")
    assert result["errors"] == []


def test_hosted_shell_mcp_tool_list_and_approval_request() -> None:
    result, _ = run_file(HOSTED)
    assert result["errors"] == []
    shell, approval = result["invocations"]
    assert shell["name"] == "shell_call" and shell["server_side"] is True
    assert shell["arguments"]["action"]["commands"] == ["python3 --version"]
    assert shell["metadata"]["result"]["type"] == "shell_call_output"
    # the client must approve the MCP call: its own kind of invocation, never dropped
    assert approval["name"] == "mcp_approval_request"
    assert "server_side" not in approval
    assert approval["arguments"] == {
        "server_label": "deepwiki",
        "name": "ask_question",
        "arguments": {
            "repoName": "modelcontextprotocol/python-sdk",
            "question": "Which transports does the SDK support?",
        },
    }
    # the tool list is metadata, not an invocation
    assert all(i["name"] != "mcp_list_tools" for i in result["invocations"])
    assert result["finish_class"] == "tool_calls"


def test_hosted_shell_metadata_lists_the_mcp_tools() -> None:
    from streamtool.core.drive.replay_file import replay_file
    from streamtool.core.outputs.transcript import build_transcript

    transcript = build_transcript(replay_file(HOSTED, transcript=True))
    listed = [
        s["metadata"]["mcp_list_tools"] for s in transcript["segments"] if s["type"] == "text"
    ]
    assert listed == [
        [{"server_label": "deepwiki", "tools": ["read_wiki_structure", "ask_question"]}]
    ]


def test_rotating_item_ids_give_text_and_arguments_once() -> None:
    result, _ = run_file(ROTATING)
    assert result["text"] == "I'll open `pyproject.toml` to find the package name."
    assert [(i["id"], i["name"], i["arguments"]) for i in result["invocations"]] == [
        ("call_cp_K8sV2dQ9", "read_file", {"path": "pyproject.toml"})
    ]
    assert result["errors"] == []
    assert [q["id"] for q in result["quirks"]] == ["responses_item_id_rotation"]


def test_a_done_text_that_disagrees_is_never_spliced() -> None:
    result, _ = run_file(MISMATCH)
    assert result["text"] == "The capital of Australia is Canberra."
    (error,) = result["errors"]
    assert error["kind"] == "text_mismatch"
    assert error["detail"] == {
        "streamed": "The capital of Australia is Canberra.",
        "stated": "The capital of Australia is Sydney.",
    }


def test_partial_images_are_image_segments_without_their_data() -> None:
    result, items = run_file(IMAGES)
    starts = [i for i in items if i.get("segment_type") == "image"]
    assert [s["metadata"] for s in starts] == [
        {
            "source": "image_generation_call.partial_image",
            "item_id": "ig_0e2c4a6f8b1d3e5a006921c8f1b3d5f7a9c1e3a5c7e9b1d3",
            "index": n,
            "format": "png",
            "size": "1024x1024",
            "quality": "low",
            "background": "opaque",
            "image_bytes": size,
        }
        for n, size in ((0, 8 + 40 * 32), (1, 8 + 64 * 32))
    ]
    text = json.dumps([result, items])
    assert "iVBORw0KGgo" not in text  # no base64 image anywhere (PNG's signature, encoded)
    (call,) = result["invocations"]
    assert call["server_side"] is True
    assert call["metadata"]["result"]["result"] == {"base64_bytes": 8 + 96 * 32}
    # an event type nobody documented: counted and listed once, never an error
    assert result["errors"] == []
    assert result["quirks"] == [
        {
            "id": "unknown_event",
            "detail": "event types this converter does not know: "
            "'response.image_generation_call.heartbeat' (3 events)",
        }
    ]


def test_xai_search_tools_run_by_the_provider_are_server_side() -> None:
    result, _ = run_file(XAI)
    (call,) = result["invocations"]
    assert (call["name"], call["server_side"]) == ("x_keyword_search", True)
    assert call["arguments"] == {"query": "from:ThePSF Python 3.14", "limit": 10, "mode": "Latest"}
    assert result["finish_class"] == "stop"


def test_a_custom_tool_the_request_offered_is_the_clients() -> None:
    offered = Header(
        provider="xai",
        api="responses",
        request={
            "url": "https://api.x.ai/v1/responses",
            "body": {"tools": [{"type": "custom", "name": "x_keyword_search"}]},
        },
    )
    _, reads, end = load(XAI)
    result, _ = run(reads, header=offered, end=end)
    assert "server_side" not in result["invocations"][0]
    assert result["finish_class"] == "tool_calls"
