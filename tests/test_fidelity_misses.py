"""Streams that used to read wrong, silently: each against its bundled recording (cut every way)
and, where the corpus holds the capture, against the capture."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from streamtool.core.model.finish import finish_class
from streamtool.core.model.quirks import CATALOGUE
from streamtool.core.model.records import Header

from .conftest import RECORDINGS
from .helpers import chat_chunk, sse
from .wire_helpers import assert_chunking_invariant, calls, load, run, summary

CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"


def corpus_file(name: str) -> Path:
    path = CORPUS / name
    if not path.is_file():
        pytest.skip(f"{name} is not in the corpus (../shared/corpus)")
    return path


# -- Chat Completions: multi_tool_use.parallel ----------------------------------------------------
def test_multi_tool_use_parallel_is_unwrapped_into_its_calls() -> None:
    result = assert_chunking_invariant(RECORDINGS / "openai-chat-multi-tool-use-parallel.jsonl")
    wrapper = "call_Qm7RtYx2Kp9LwN4sVb1Hc3Dz"
    assert calls(result) == [
        (f"{wrapper}_0", "get_weather", {"city": "Paris", "unit": "celsius"}),
        (f"{wrapper}_1", "get_weather", {"city": "Tokyo", "unit": "celsius"}),
    ]
    assert "oai_multi_tool_use_parallel" in [q["id"] for q in result["quirks"]]
    assert result["finish_class"] == "tool_calls"
    assert result["errors"] == []
    assert CATALOGUE["oai_multi_tool_use_parallel"].severity == "error"


def test_a_wrapper_that_is_not_the_documented_shape_is_kept_as_sent() -> None:
    args = '{"tool_uses": "not a list"}'
    body = sse(
        chat_chunk({"tool_calls": [{"index": 0, "id": "call_w", "function": {
            "name": "multi_tool_use.parallel", "arguments": args}}]}),
        chat_chunk({}, "tool_calls"),
    )  # fmt: skip
    result = summary(body)
    assert calls(result) == [("call_w", "multi_tool_use.parallel", {"tool_uses": "not a list"})]
    assert "oai_multi_tool_use_parallel" not in [q["id"] for q in result["quirks"]]


def test_a_wrapper_beside_an_ordinary_call_keeps_both() -> None:
    inner = {"tool_uses": [{"recipient_name": "functions.read", "parameters": {"path": "a"}}]}
    body = sse(
        chat_chunk({"tool_calls": [{"index": 0, "id": "call_r", "function": {
            "name": "read", "arguments": '{"path": "b"}'}}]}),
        chat_chunk({"tool_calls": [{"index": 1, "id": "call_p", "function": {
            "name": "multi_tool_use.parallel", "arguments": ""}}]}),
        chat_chunk({"tool_calls": [{"index": 1, "function": {"arguments": json.dumps(inner)}}]}),
        chat_chunk({}, "tool_calls"),
    )  # fmt: skip
    result = summary(body)
    assert calls(result) == [("call_r", "read", {"path": "b"}), ("call_p_0", "read", {"path": "a"})]
    reversed_body = sse(
        chat_chunk({"tool_calls": [{"index": 0, "id": "call_p", "function": {
            "name": "multi_tool_use.parallel", "arguments": json.dumps(inner)}}]}),
        chat_chunk({"tool_calls": [{"index": 1, "id": "call_r", "function": {
            "name": "read", "arguments": '{"path": "b"}'}}]}),
        chat_chunk({}, "tool_calls"),
    )  # fmt: skip
    again = summary(reversed_body)
    assert calls(again) == [("call_p_0", "read", {"path": "a"}), ("call_r", "read", {"path": "b"})]


# -- Responses: apply_patch_call, tool_search_call, xAI -------------------------------------------
def test_apply_patch_without_a_diff_is_the_operation_as_stated() -> None:
    result = assert_chunking_invariant(
        RECORDINGS / "openai-responses-apply-patch-delete-and-update.jsonl"
    )
    assert result["errors"] == []  # no arguments_mismatch, no unparsable arguments
    deleted, updated = (i["arguments"] for i in result["invocations"])
    assert deleted == {"operation": {"type": "delete_file", "path": "src/legacy_utils.py"}}
    assert updated["operation"]["type"] == "update_file"
    assert updated["operation"]["diff"].startswith("@@ def main():\n-    from legacy_utils")


def test_a_hosted_tool_search_keeps_its_own_id_and_its_place() -> None:
    result = assert_chunking_invariant(
        RECORDINGS / "openai-responses-hosted-tool-search-then-function-call.jsonl"
    )
    search, weather = result["invocations"]
    assert (search["id"], search["name"], search["server_side"]) == (
        "tsc_0c4a1e7b9d2f3a5c0069270f1b6a1d",
        "tool_search_call",
        True,
    )
    assert search["metadata"]["result"]["tools"][0]["name"] == "get_weather"
    assert (weather["id"], weather["name"]) == ("call_Vn3kQ8sWz1Lp5Rt7Ym2Xb4Hd", "get_weather")
    assert not weather.get("server_side")
    assert result["finish_class"] == "tool_calls"  # the function call is the client's


def _ev(kind: str, **fields: object) -> str:
    """An SSE event named ``kind``, its data the JSON of ``fields`` typed ``kind``."""
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n"


def _one_item_response(
    created: dict[str, Any], added: dict[str, Any], done: dict[str, Any] | None = None
) -> str:
    """A Responses stream of one output item: the response ``created``, the item ``added`` and
    ``done`` (the same when not given), the response completed with it."""
    done = done or added
    return (
        _ev("response.created", response=created)
        + _ev("response.output_item.added", output_index=0, item=added)
        + _ev("response.output_item.done", output_index=0, item=done)
        + _ev("response.completed", response={"id": "r", "status": "completed", "output": [done]})
    )


def test_a_client_tool_search_is_the_clients_under_its_call_id() -> None:
    item = {
        "id": "tsc_9",
        "type": "tool_search_call",
        "call_id": "call_search",
        "execution": "client",
        "status": "completed",
        "arguments": {"query": "weather"},
    }
    created = {"id": "r", "status": "in_progress", "output": []}
    (call,) = summary(_one_item_response(created, item))["invocations"]
    assert (call["id"], call.get("server_side", False)) == ("call_search", False)


def test_xai_server_side_tools_in_a_raw_body_are_the_providers() -> None:
    """The same stream without its request (a body saved from a log): Grok's own tools are
    still told from the stream (its model) and their names."""
    _, reads, _ = load(RECORDINGS / "xai-responses-server-side-custom-tool-call.jsonl")
    raw = summary(b"".join(reads))
    with_header = json.loads(
        (RECORDINGS / "xai-responses-server-side-custom-tool-call.golden.json").read_text()
    )["transcript"]["invocations"]
    assert [(c["id"], c.get("server_side", False)) for c in raw["invocations"]] == [
        (c["id"], c.get("server_side", False)) for c in with_header
    ]
    assert all(c.get("server_side") for c in raw["invocations"])
    assert raw["finish_class"] == "stop"


def test_a_client_function_named_like_an_xai_tool_stays_the_clients() -> None:
    item = {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "web_search",
            "arguments": '{"q": "x"}', "status": "completed"}  # fmt: skip
    created = {"id": "r", "model": "gpt-5", "output": []}
    (call,) = summary(_one_item_response(created, item))["invocations"]
    assert not call.get("server_side")  # not Grok: a function the client offered


# -- Gemini ---------------------------------------------------------------------------------------
def test_gemini_executable_code_keeps_its_part_id() -> None:
    result = assert_chunking_invariant(RECORDINGS / "gemini-code-execution-part-ids.jsonl")
    (code,) = result["invocations"]
    assert code["id"] == "h8v2k1q9" and code["server_side"] is True
    assert code["metadata"]["result"]["output"] == "2432902008176640000\n"
    assert result["finish_class"] == "stop"  # the provider ran the code; nothing for the client


@pytest.mark.parametrize(
    "name",
    [
        "gemini-parallel-function-calls",
        "gemini-text-then-function-call",
        "gemini-thinking-then-function-call",
        "gemini-write-file",
    ],
)
def test_gemini_stop_with_function_calls_is_the_contract_not_a_quirk(name: str) -> None:
    result = assert_chunking_invariant(RECORDINGS / f"{name}.jsonl")
    assert result["finish_reason"] == "STOP" and result["finish_class"] == "tool_calls"
    ids = {q["id"] for q in result["quirks"]}
    assert not ids & {"finish_stop_with_tools", "gemini_no_call_id"}
    assert not any(CATALOGUE[i].severity in ("error", "warn") for i in ids)


def test_gemini_corpus_function_calls_pass_fail_on_error() -> None:
    for name in (
        "gemini/gemini-2.0-function-call-single-chunk.sse",
        "gemini/gemini-3-function-call-thought-signature.sse",
    ):
        result = summary(corpus_file(name).read_bytes())
        assert result["finish_class"] == "tool_calls"
        assert not [q for q in result["quirks"] if CATALOGUE[q["id"]].severity == "error"]


def test_no_catalogue_entry_names_gemini_call_ids_as_a_quirk() -> None:
    assert "gemini_no_call_id" not in CATALOGUE
    text = CATALOGUE["finish_stop_with_tools"].explanation
    assert "finish_reason" in text  # the Chat Completions contract it departs from


# -- refusals -------------------------------------------------------------------------------------
def test_chat_refusal_is_kept_apart_at_every_cut() -> None:
    result = assert_chunking_invariant(RECORDINGS / "openai-chat-refusal.jsonl")
    assert result["text"] == ""
    assert result["refusal"] == "I'm sorry, I can't help with that."
    assert result["finish_class"] == "refusal"


def test_text_then_refusal_keeps_both() -> None:
    body = sse(
        chat_chunk({"role": "assistant", "content": "Let me think. "}),
        chat_chunk({"refusal": "I can't help with that."}),
        chat_chunk({}, "stop"),
    )
    result = summary(body)
    assert result["text"] + result["refusal"] == "Let me think. I can't help with that."


# -- finish class without a finish reason ---------------------------------------------------------
def test_complete_calls_and_done_without_a_finish_reason_are_tool_calls() -> None:
    body = sse(
        chat_chunk({"role": "assistant", "tool_calls": [{"index": 0, "id": "functions.read:0",
                    "type": "function", "function": {"name": "read", "arguments": ""}}]}),
        chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"path": "a.py"}'}}]}),
    )  # fmt: skip
    result, _ = run(body)
    assert result["finish_reason"] is None and result["errors"] == []
    assert "done_no_finish_reason" in [q["id"] for q in result["quirks"]]
    assert result["finish_class"] == "tool_calls"
    cut = sse(chat_chunk({"tool_calls": [{"index": 0, "id": "c", "function": {
        "name": "read", "arguments": '{"pa'}}]}), done=False)  # fmt: skip
    assert summary(cut)["finish_class"] == "error"  # cut off: never "run them"


def test_finish_class_table_for_no_reason() -> None:
    assert finish_class(None, client_calls=True) == "tool_calls"
    assert finish_class(None, client_calls=True, errors=True) == "error"
    assert finish_class(None) == "unknown"
    assert finish_class("", client_calls=False) == "unknown"


def test_anthropic_programmatic_call_handed_to_the_client_is_tool_calls() -> None:
    """A tool_use block called from Claude's code execution (``caller``) is the client's to run;
    a stream whose message_delta names no stop_reason still tells the agent to run it."""

    body = (
        _ev("message_start", message={"id": "msg_1", "type": "message", "role": "assistant",
           "model": "claude-sonnet-4-6", "content": [], "usage": {"input_tokens": 5}})
        + _ev("content_block_start", index=0, content_block={"type": "tool_use", "id": "toolu_1",
             "name": "get_weather", "input": {},
             "caller": {"type": "code_execution_20250825", "tool_id": "srvtoolu_1"}})
        + _ev("content_block_delta", index=0, delta={"type": "input_json_delta",
             "partial_json": '{"city": "Paris"}'})
        + _ev("content_block_stop", index=0)
        + _ev("message_delta", delta={"stop_reason": None}, usage={"output_tokens": 9})
        + _ev("message_stop")
    )  # fmt: skip
    result = summary(body)
    assert calls(result) == [("toolu_1", "get_weather", {"city": "Paris"})]
    assert result["errors"] == []
    assert result["finish_class"] == "tool_calls"


# -- Responses: a function_call named `parallel` that wraps the real calls ----------------------
def _responses_wrapper_body(
    tool_uses: list[dict[str, object]], *, text: str = "Checking both.", raw: str | None = None
) -> bytes:
    """A Responses stream as the API documents its events: a message, then one function_call
    item named ``parallel`` whose arguments (streamed in deltas) hold ``tool_uses``."""
    args = raw if raw is not None else json.dumps({"tool_uses": tool_uses})
    msg = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress",
           "content": []}  # fmt: skip
    call = {"id": "fc_1", "type": "function_call", "call_id": "call_P", "name": "parallel",
            "arguments": "", "status": "in_progress"}  # fmt: skip
    done_call = {**call, "arguments": args, "status": "completed"}
    done_msg = {**msg, "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}  # fmt: skip
    pieces = [args[i : i + 7] for i in range(0, len(args), 7)]
    events: list[dict[str, object]] = [
        {"type": "response.created",
         "response": {"id": "r", "status": "in_progress", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": msg},
        {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
         "content_index": 0, "delta": text},
        {"type": "response.output_item.done", "output_index": 0, "item": done_msg},
        {"type": "response.output_item.added", "output_index": 1, "item": call},
        *({"type": "response.function_call_arguments.delta", "item_id": "fc_1",
           "output_index": 1, "delta": p} for p in pieces),
        {"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 1,
         "arguments": args},
        {"type": "response.output_item.done", "output_index": 1, "item": done_call},
        {"type": "response.completed",
         "response": {"id": "r", "status": "completed", "output": [done_msg, done_call]}},
    ]  # fmt: skip
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def test_a_responses_parallel_wrapper_is_unwrapped_into_its_calls(tmp_path: Path) -> None:
    uses = [
        {"recipient_name": "functions.get_weather", "parameters": {"city": "Paris"}},
        {"recipient_name": "functions.get_time", "parameters": {"tz": "Asia/Tokyo"}},
    ]
    path = tmp_path / "wrapper.sse"
    path.write_bytes(_responses_wrapper_body(uses))
    result = assert_chunking_invariant(path)  # any cut of the reads gives the same
    assert calls(result) == [
        ("call_P_0", "get_weather", {"city": "Paris"}),
        ("call_P_1", "get_time", {"tz": "Asia/Tokyo"}),
    ]
    assert result["text"] == "Checking both."  # nothing else lost
    assert [q["id"] for q in result["quirks"]] == ["responses_parallel_wrapper"]
    assert result["finish_class"] == "tool_calls" and result["errors"] == []
    assert CATALOGUE["responses_parallel_wrapper"].severity == "error"


def test_a_declared_tool_named_parallel_or_another_shape_is_a_call_as_sent() -> None:
    uses = [{"recipient_name": "functions.get_weather", "parameters": {"city": "Paris"}}]
    body = _responses_wrapper_body(uses)
    header = Header(api="openai-responses", request={"body": {"tools": [
        {"type": "function", "name": "parallel", "parameters": {}}]}})  # fmt: skip
    declared = summary([body], header=header)
    assert calls(declared) == [("call_P", "parallel", {"tool_uses": uses})]
    assert "responses_parallel_wrapper" not in [q["id"] for q in declared["quirks"]]
    other = summary([_responses_wrapper_body([], raw='{"tool_uses": "not a list"}')])
    assert calls(other) == [("call_P", "parallel", {"tool_uses": "not a list"})]
    assert "responses_parallel_wrapper" not in [q["id"] for q in other["quirks"]]


def test_a_client_tool_search_whose_call_id_changes_is_answered_under_its_last_id() -> None:
    """The item's ``call_id`` in ``output_item.done`` (and ``response.completed``) is the one
    the client answers with: the summary gives it, the segment keeps the id it began with, and
    the change is reported."""

    added = {"id": "tsc_9", "type": "tool_search_call", "call_id": "call_first",
             "execution": "client", "status": "in_progress", "arguments": {}}  # fmt: skip
    done = {**added, "call_id": "call_last", "status": "completed",
            "arguments": {"query": "weather"}}  # fmt: skip
    body = _one_item_response({"id": "r", "status": "in_progress", "output": []}, added, done)
    result, items = run(body)
    (call,) = result["invocations"]
    assert (call["id"], call["segment_id"]) == ("call_last", "call_first")
    assert call["arguments"] == {"query": "weather"} and not call.get("server_side")
    assert [q["id"] for q in result["quirks"]] == ["responses_call_id_changed"]
    starts = [i for i in items if i.get("event") == "SEGMENT_START"]
    assert [s["segment_id"] for s in starts] == ["call_first"]
