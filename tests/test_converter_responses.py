"""The ``openai-responses`` converter (OpenAI Responses API streams)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.generators import responses_usage
from streamtool.core.model.records import Header

from .conftest import CORPUS, RECORDINGS, corpus_params
from .sdk_reference import Outcome, Streams, body_reads, openai_response
from .wire_helpers import (
    assert_chunking_invariant,
    body,
    calls,
    payloads,
    run,
    run_file,
    segments,
    summary,
)

HEADER = Header(
    provider="openai", api="responses", request={"url": "https://api.openai.com/v1/responses"}
)
RECORDED = sorted(RECORDINGS.glob("openai-responses-*.jsonl"))
CORPUS_RESPONSES = [
    *corpus_params("openai/responses-*.sse"),
    *corpus_params("deepseek/responses-*.sse"),
]
# the captures the SDK's accumulator cannot take have their own tests below
SDK_FAILS = ("responses-parallel-function-calls-prerelease", "responses-error-insufficient-quota")
SDK_WORKS = [p for p in CORPUS_RESPONSES if not str(p.id).endswith(SDK_FAILS)]


class Stream:
    """Builds a Responses event stream with running sequence numbers."""

    def __init__(self, seq: bool = True) -> None:
        self.events: list[dict[str, Any]] = []
        self.seq = seq

    def add(self, kind: str, **fields: Any) -> Stream:
        event: dict[str, Any] = {"type": kind}
        if self.seq:
            event["sequence_number"] = len(self.events)
        event.update(fields)
        self.events.append(event)
        return self

    def created(self) -> Stream:
        return self.add("response.created", response=response("in_progress"))

    def call_added(
        self, index: int, item_id: str, call_id: str, name: str, arguments: str = ""
    ) -> Stream:
        item = function_call(item_id, call_id, name, arguments, "in_progress")
        return self.add("response.output_item.added", output_index=index, item=item)

    def args(self, index: int, item_id: str, delta: str) -> Stream:
        return self.add(
            "response.function_call_arguments.delta",
            item_id=item_id,
            output_index=index,
            delta=delta,
        )

    def args_done(self, index: int, item_id: str, arguments: str) -> Stream:
        return self.add(
            "response.function_call_arguments.done",
            item_id=item_id,
            output_index=index,
            arguments=arguments,
        )

    def call_done(
        self, index: int, item_id: str, call_id: str, name: str, arguments: str
    ) -> Stream:
        item = function_call(item_id, call_id, name, arguments, "completed")
        return self.add("response.output_item.done", output_index=index, item=item)

    def completed(
        self, output: list[dict[str, Any]], usage: dict[str, Any] | None = None
    ) -> Stream:
        return self.add("response.completed", response=response("completed", output, usage))

    def text(self, named: bool = True) -> str:
        return body(self.events, named=named)


def response(
    status: str, output: list | None = None, usage: dict | None = None, **extra: Any
) -> dict:
    return {
        "id": "resp_test",
        "object": "response",
        "status": status,
        "model": "gpt-4.1-2025-04-14",
        "output": output or [],
        "usage": usage,
        **extra,
    }


def function_call(item_id: str, call_id: str, name: str, arguments: str, status: str) -> dict:
    return {
        "id": item_id,
        "type": "function_call",
        "status": status,
        "arguments": arguments,
        "call_id": call_id,
        "name": name,
    }


USAGE = responses_usage(120, 30, cached=64, reasoning=12)


# -- the SDK's own accumulator as the reference ---------------------------------------------


def sdk_final(streams: Streams, path: Path) -> Outcome:
    """``openai``'s Responses stream helper on the same bytes served over HTTP: its final
    response, or what it raised."""
    return openai_response(streams.base(body_reads(path)))


def sdk_view(response: Any) -> dict[str, Any]:
    text, reasoning, found = [], [], []
    for item in response.output:
        if item.type == "message":
            text.extend(c.text for c in item.content if c.type == "output_text")
        elif item.type == "reasoning":
            reasoning.extend(s.text for s in item.summary or [])
            reasoning.extend(c.text for c in getattr(item, "content", None) or [])
        elif item.type == "function_call":
            found.append((item.call_id, item.name, json.loads(item.arguments)))
    return {"text": "".join(text), "reasoning": "".join(reasoning), "calls": found}


def our_view(result: dict[str, Any]) -> dict[str, Any]:
    return {"text": result["text"], "reasoning": result["reasoning"], "calls": calls(result)}


@pytest.mark.parametrize("path", SDK_WORKS)
def test_corpus_equals_the_sdk_accumulator_where_it_works(streams: Streams, path: Path) -> None:
    result = summary(path.read_bytes())
    assert result["converter"] == "openai-responses"
    final = sdk_final(streams, path).value
    assert our_view(result) == sdk_view(final)
    usage = final.usage
    assert result["usage"]["input_tokens"] == usage.input_tokens
    assert result["usage"]["output_tokens"] == usage.output_tokens
    assert result["usage"]["total_tokens"] == usage.total_tokens
    assert result["finish_reason"] == final.status == "completed"
    assert result["errors"] == []


# the mismatch recording states another text in its final events on purpose (the SDK takes it);
# the SDK's own models do not know a hosted shell call's `environment: container_auto` and warn
# while it builds the final response: that warning is the SDK's, shown by nobody
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
@pytest.mark.parametrize(
    "path", [p for p in RECORDED if "error" not in p.name and "mismatch" not in p.name], ids=str
)
def test_bundled_recordings_equal_the_sdk_accumulator(streams: Streams, path: Path) -> None:
    result, _ = run_file(path)
    final = sdk_final(streams, path).value
    ours = our_view(result)
    # the SDK's view lists function calls; built-in tool calls are checked by their own tests
    functions = {item.call_id for item in final.output if item.type == "function_call"}
    ours["calls"] = [c for c in ours["calls"] if c[0] in functions]
    assert ours == sdk_view(final)


def test_prerelease_capture_where_the_sdk_fails(streams: Streams) -> None:
    """The SDK refuses this capture (``RuntimeError: Completed output item identity changed``):
    each function_call item names a different ``call_id`` in ``output_item.added``,
    ``output_item.done`` and ``response.completed`` (the corpus marks the capture semi-real).
    The correct replay keeps both calls with their arguments, gives each the call id its item
    held when the call was whole (``output_item.done``: the item a client runs the call from and
    answers), keeps the id it began with as the segment's, and reports the change as a quirk."""
    path = CORPUS / "openai" / "responses-parallel-function-calls-prerelease.sse"
    if not path.exists():
        pytest.skip("the shared provider corpus (../shared/corpus) is not present")
    raised = sdk_final(streams, path).raised
    assert isinstance(raised, RuntimeError) and "identity changed" in str(raised)
    result = summary(path.read_bytes())
    assert calls(result) == [
        ("call_pgjcAI4ZegMkP6bsAV7sfrJA", "currentLocation", {}),
        ("call_X2PAkDJInno9VVnNkDrfhboW", "weather", {"location": "Rome"}),
    ]
    first = [c["segment_id"] for c in result["invocations"]]
    assert first == ["call_6KxSghkb4MVnunFH2TxPErLP", "call_Dg6WUmFHNeR5JxX1s53s1G4b"]
    (quirk,) = result["quirks"]
    assert quirk["id"] == "responses_call_id_changed"
    assert "call_pgjcAI4ZegMkP6bsAV7sfrJA" in quirk["detail"]
    assert result["finish_reason"] == "completed" and result["errors"] == []


def test_error_capture_where_the_sdk_raises(streams: Streams) -> None:
    """The SDK's stream raises ``APIError`` at the ``error`` event (its data has an ``error``
    key) and never builds a final response. The correct replay: no output, the provider's
    error once (``response.failed`` repeats the same message), finish reason ``failed``."""
    path = CORPUS / "openai" / "responses-error-insufficient-quota.sse"
    if not path.exists():
        pytest.skip("the shared provider corpus (../shared/corpus) is not present")
    events = payloads(path)
    assert any(p.get("type") == "error" and p.get("error") for _, p in events)
    outcome = sdk_final(streams, path)
    assert outcome.value is None and outcome.raised is not None
    result = summary(path.read_bytes())
    assert result["text"] == "" and result["invocations"] == []
    assert result["finish_reason"] == "failed"
    (error,) = result["errors"]
    assert error["kind"] == "provider_error"
    assert error["message"].startswith(
        "error event in the stream: insufficient_quota: You exceeded"
    )


# -- chunking never changes meaning ------------------------------------------------------------


@pytest.mark.parametrize("path", CORPUS_RESPONSES + RECORDED, ids=str)
def test_same_result_for_every_chunking(path: Path | None) -> None:
    assert path is not None
    assert assert_chunking_invariant(path)["converter"] == "openai-responses"


# -- bundled recordings: their expected summaries ---------------------------------------------


def test_recording_parallel_function_calls() -> None:
    result, _ = run_file(RECORDINGS / "openai-responses-parallel-function-calls.jsonl")
    assert calls(result) == [
        ("call_Rk7mW2xQpL9vT4nB8yZc3Fd1", "get_weather", {"city": "Paris", "unit": "celsius"}),
        ("call_Hs3pX8vN1qJ6wK0mT5bR9Ye2", "get_weather", {"city": "Tokyo", "unit": "celsius"}),
    ]
    assert result["finish_reason"] == "completed"
    assert result["usage"] == {
        "input_tokens": 318,
        "cached_input_tokens": 0,
        "output_tokens": 54,
        "reasoning_tokens": 0,
        "total_tokens": 372,
    }
    assert result["errors"] == [] and result["quirks"] == []


def test_recording_reasoning_then_function_call() -> None:
    result, items = run_file(RECORDINGS / "openai-responses-reasoning-then-function-call.jsonl")
    assert result["reasoning"] == (
        "**Inspecting build configuration**\n\nThe failure likely comes from setup.cfg "
        "metadata; I'll read it before guessing."
    )
    assert calls(result) == [("call_Vb2Nm7Qx4Lp9Ws1Kt6Hy3Jd8", "read_file", {"path": "setup.cfg"})]
    (reasoning,) = segments(items, "reasoning")
    assert reasoning["encrypted_content"].startswith("gAAAAABpHn0x")
    assert result["usage"]["reasoning_tokens"] == 128
    assert result["errors"] == [] and result["quirks"] == []


def test_recording_error_mid_stream() -> None:
    result, _ = run_file(RECORDINGS / "openai-responses-error-mid-stream.jsonl")
    assert result["text"] == (
        "- **Faster startup**: imports are lazy, so the CLI starts in half the time.\n-"
    )
    assert result["finish_reason"] == "failed"
    (error,) = result["errors"]
    assert error["kind"] == "provider_error"
    assert error["message"].startswith("error event in the stream: server_error: The server had")
    assert error["detail"]["code"] == "server_error"


# -- behaviours, one at a time ---------------------------------------------------------------


def test_item_id_maps_to_call_id_and_parallel_calls_interleave() -> None:
    s = Stream().created()
    s.call_added(0, "fc_A", "call_A", "get_weather").call_added(1, "fc_B", "call_B", "get_time")
    s.args(1, "fc_B", '{"tz":').args(0, "fc_A", '{"city":').args(1, "fc_B", '"UTC"}')
    s.args(0, "fc_A", '"Oslo"}')
    s.args_done(1, "fc_B", '{"tz":"UTC"}').args_done(0, "fc_A", '{"city":"Oslo"}')
    s.call_done(0, "fc_A", "call_A", "get_weather", '{"city":"Oslo"}')
    s.call_done(1, "fc_B", "call_B", "get_time", '{"tz":"UTC"}')
    s.completed(
        [
            function_call("fc_A", "call_A", "get_weather", '{"city":"Oslo"}', "completed"),
            function_call("fc_B", "call_B", "get_time", '{"tz":"UTC"}', "completed"),
        ],
        USAGE,
    )
    result = summary(s.text(), header=HEADER)
    assert calls(result) == [
        ("call_A", "get_weather", {"city": "Oslo"}),
        ("call_B", "get_time", {"tz": "UTC"}),
    ]
    assert [q["id"] for q in result["quirks"]] == ["responses_parallel_interleaved"]
    assert result["usage"] == {
        "input_tokens": 120,
        "cached_input_tokens": 64,
        "output_tokens": 30,
        "reasoning_tokens": 12,
        "total_tokens": 150,
    }


def test_arguments_only_in_the_done_event() -> None:
    s = Stream().created().call_added(0, "fc_1", "call_1", "f")
    s.args_done(0, "fc_1", '{"a":1}').call_done(0, "fc_1", "call_1", "f", '{"a":1}')
    s.completed([function_call("fc_1", "call_1", "f", '{"a":1}', "completed")])
    result = summary(s.text(), header=HEADER)
    assert calls(result) == [("call_1", "f", {"a": 1})]
    assert [q["id"] for q in result["quirks"]] == ["responses_args_done_only"]


def test_arguments_only_in_response_completed() -> None:
    s = Stream().created()
    s.completed([function_call("fc_9", "call_9", "lookup", '{"q":"x"}', "completed")], USAGE)
    result, items = run(s.text(), header=HEADER)
    assert calls(result) == [("call_9", "lookup", {"q": "x"})]
    assert [q["id"] for q in result["quirks"]] == ["responses_completed_only"]
    (tool_end,) = segments(items, "tool_call")
    assert "unclosed" not in tool_end


def test_arguments_only_in_output_item_done() -> None:
    s = Stream().created().call_added(0, "fc_1", "call_1", "f")
    s.call_done(0, "fc_1", "call_1", "f", '{"b":[1,2]}')
    s.completed([function_call("fc_1", "call_1", "f", '{"b":[1,2]}', "completed")])
    result = summary(s.text(), header=HEADER)
    assert calls(result) == [("call_1", "f", {"b": [1, 2]})]


def test_done_with_more_than_was_streamed_adds_only_the_suffix() -> None:
    s = Stream().created().call_added(0, "fc_1", "call_1", "f").args(0, "fc_1", '{"a":')
    s.args_done(0, "fc_1", '{"a":2}').completed([])
    result = summary(s.text(), header=HEADER)
    assert calls(result) == [("call_1", "f", {"a": 2})]
    assert [q["id"] for q in result["quirks"]] == ["responses_args_suffix_in_done"]


def test_done_that_contradicts_the_deltas_is_an_error_and_the_stream_wins() -> None:
    s = Stream().created().call_added(0, "fc_1", "call_1", "f").args(0, "fc_1", '{"a":1}')
    s.args_done(0, "fc_1", '{"a":9}').completed([])
    result = summary(s.text(), header=HEADER)
    assert calls(result) == [("call_1", "f", {"a": 1})]
    assert result["errors"] == [
        {
            "kind": "arguments_mismatch",
            "message": "call call_1: response.function_call_arguments.done states other "
            "arguments than were streamed (the streamed ones are kept)",
            "detail": {"streamed": '{"a":1}', "stated": '{"a":9}'},
        }
    ]


def test_text_deltas_and_text_only_in_done() -> None:
    s = Stream().created()
    s.add("response.output_item.added", output_index=0, item={"id": "msg_1", "type": "message"})
    s.add(
        "response.output_text.delta", item_id="msg_1", output_index=0, content_index=0, delta="Hel"
    )
    s.add(
        "response.output_text.delta", item_id="msg_1", output_index=0, content_index=0, delta="lo"
    )
    s.add(
        "response.output_text.done", item_id="msg_1", output_index=0, content_index=0, text="Hello"
    )
    s.add("response.output_item.added", output_index=1, item={"id": "msg_2", "type": "message"})
    s.add("response.output_text.done", item_id="msg_2", output_index=1, content_index=0, text="!")
    s.completed([])
    result = summary(s.text(), header=HEADER)
    assert result["text"] == "Hello!"
    assert [q["id"] for q in result["quirks"]] == ["responses_text_done_only"]


def test_reasoning_text_and_summary_are_reasoning() -> None:
    s = Stream().created()
    s.add("response.output_item.added", output_index=0, item={"id": "rs_1", "type": "reasoning"})
    s.add(
        "response.reasoning_text.delta",
        item_id="rs_1",
        output_index=0,
        content_index=0,
        delta="raw ",
    )
    s.add(
        "response.reasoning_summary_text.delta",
        item_id="rs_1",
        output_index=0,
        summary_index=0,
        delta="summary",
    )
    done = {
        "id": "rs_1",
        "type": "reasoning",
        "encrypted_content": "gAAAAenc",
        "summary": [{"type": "summary_text", "text": "summary"}],
        "content": [{"type": "reasoning_text", "text": "raw "}],
    }
    s.add("response.output_item.done", output_index=0, item=done)
    s.completed([done])
    result, items = run(s.text(), header=HEADER)
    assert result["reasoning"] == "raw summary"
    assert segments(items, "reasoning") == [{"encrypted_content": "gAAAAenc"}]
    assert result["quirks"] == []


def test_error_event_and_response_failed() -> None:
    s = Stream().created()
    s.add("error", code="rate_limit_exceeded", message="Slow down", param=None)
    s.add(
        "response.failed",
        response=response("failed", error={"code": "server_error", "message": "Boom"}),
    )
    result = summary(s.text(), header=HEADER)
    assert [e["message"] for e in result["errors"]] == [
        "error event in the stream: rate_limit_exceeded: Slow down",
        "response failed: server_error: Boom",
    ]
    assert result["finish_reason"] == "failed"


def test_data_only_framing_and_a_trailing_done_marker() -> None:
    s = Stream(seq=False).created().call_added(0, "fc_1", "call_1", "f").args(0, "fc_1", "{}")
    s.completed([function_call("fc_1", "call_1", "f", "{}", "completed")])
    named = summary(s.text(), header=HEADER)
    unnamed = summary(s.text(named=False) + "data: [DONE]\n\n")  # detected from the events
    assert unnamed == named
    assert calls(named) == [("call_1", "f", {})] and named["converter"] == "openai-responses"


def test_deltas_without_item_id_find_the_call_by_output_index() -> None:
    s = Stream().created().call_added(3, "fc_1", "call_1", "f")
    s.add("response.function_call_arguments.delta", output_index=3, delta='{"k":true}')
    s.completed([])
    assert calls(summary(s.text(), header=HEADER)) == [("call_1", "f", {"k": True})]


def test_incomplete_response_leaves_a_cut_call_unclosed() -> None:
    s = Stream().created().call_added(0, "fc_1", "call_1", "save_note").args(0, "fc_1", '{"t":')
    s.add(
        "response.incomplete",
        response=response("incomplete", incomplete_details={"reason": "max_output_tokens"}),
    )
    result, items = run(s.text(), header=HEADER)
    assert result["finish_reason"] == "max_output_tokens"
    (tool_end,) = segments(items, "tool_call")
    assert tool_end["unclosed"] is True and tool_end["arguments"] is None


def test_stream_cut_before_response_completed() -> None:
    s = Stream().created().call_added(0, "fc_1", "call_1", "f").args(0, "fc_1", '{"a":')
    result = summary(s.text(), header=HEADER)
    assert result["errors"][0]["kind"] == "truncated"
    assert "call_1" in result["errors"][0]["message"]


def test_custom_tool_input_is_a_json_string() -> None:
    s = Stream().created()
    item = {
        "id": "ctc_1",
        "type": "custom_tool_call",
        "call_id": "call_c",
        "name": "apply_patch",
        "input": "",
    }
    s.add("response.output_item.added", output_index=0, item=item)
    for piece in ["*** Begin Patch\n", '+print("hi")\n', "*** End Patch"]:
        s.add("response.custom_tool_call_input.delta", item_id="ctc_1", output_index=0, delta=piece)
    text = '*** Begin Patch\n+print("hi")\n*** End Patch'
    s.add("response.custom_tool_call_input.done", item_id="ctc_1", output_index=0, input=text)
    s.add("response.output_item.done", output_index=0, item=dict(item, input=text))
    s.completed([dict(item, input=text)])
    result = summary(s.text(), header=HEADER)
    assert calls(result) == [("call_c", "apply_patch", text)]
    assert result["errors"] == [] and result["quirks"] == []


def test_hosted_web_search_is_server_side_with_its_result() -> None:
    s = Stream().created()
    added = {"id": "ws_1", "type": "web_search_call", "status": "in_progress"}
    s.add("response.output_item.added", output_index=0, item=added)
    s.add("response.web_search_call.searching", item_id="ws_1", output_index=0)
    done = dict(added, status="completed", action={"type": "search", "query": "streamtool"})
    s.add("response.output_item.done", output_index=0, item=done)
    s.completed([done])
    result = summary(s.text(), header=HEADER)
    assert result["invocations"] == [
        {
            "id": "ws_1",
            "name": "web_search_call",
            "arguments": {"action": {"type": "search", "query": "streamtool"}},
            "server_side": True,
            "metadata": {"result": done},
        }
    ]
    assert result["quirks"] == []


def test_sequence_gap_is_noted() -> None:
    s = Stream().created().completed([])
    s.events[1]["sequence_number"] = 5
    result = summary(s.text(), header=HEADER)
    assert [q["id"] for q in result["quirks"]] == ["responses_sequence_gap"]


def test_argument_deltas_before_their_item_are_kept_once_with_the_items_call_id() -> None:
    """Deltas that arrive before ``output_item.added`` (nothing names the call yet) are held,
    appended once each, and the call takes the item's ``call_id`` when the item arrives."""
    s = Stream().created().args(0, "fc_1", '{"a"').args(0, "fc_1", ":1}")
    s.call_done(0, "fc_1", "call_1", "f", '{"a":1}')
    s.completed([function_call("fc_1", "call_1", "f", '{"a":1}', "completed")])
    result = summary(s.text(), header=HEADER)
    assert calls(result) == [("call_1", "f", {"a": 1})]
    assert result["errors"] == []
