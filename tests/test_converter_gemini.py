"""The ``gemini`` converter (native ``streamGenerateContent``, SSE and JSON-array framing)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamtool.core.apis.gemini.decoder import PartialArgsError, PartialArgsWriter, parse_json_path
from streamtool.core.model.records import Header

from .conftest import CORPUS, RECORDINGS, corpus_params
from .wire_helpers import (
    assert_chunking_invariant,
    calls,
    joined,
    payloads,
    run,
    run_file,
    segments,
    summary,
)

URL = (
    "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent"
)
HEADER = Header(provider="gemini", api=None, request={"url": URL + "?alt=sse"})
RECORDED = sorted(p for p in RECORDINGS.glob("gemini-*.jsonl") if "interactions" not in p.name)


def chunk(
    *parts: dict[str, Any], finish: str | None = None, usage: dict | None = None, **top: Any
) -> dict:
    candidate: dict[str, Any] = {"content": {"parts": list(parts), "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    out: dict[str, Any] = {"candidates": [candidate], "modelVersion": "gemini-2.5-flash"}
    if usage:
        out["usageMetadata"] = usage
    out.update(top)
    return out


def sse(chunks: list[dict[str, Any]]) -> str:
    return "".join(events(chunks))


def events(chunks: list[dict[str, Any]]) -> list[str]:
    """One ``alt=sse`` event per response, as Gemini sends them (each in its own read)."""
    return ["data: " + json.dumps(c) + "\r\n\r\n" for c in chunks]


def array(chunks: list[dict[str, Any]]) -> str:
    return "[" + "\r\n,\r\n".join(json.dumps(c, indent=2) for c in chunks) + "\r\n]"


def fc(name: str | None = None, **fields: Any) -> dict[str, Any]:
    call: dict[str, Any] = {} if name is None else {"name": name}
    call.update(fields)
    return {"functionCall": call}


def partial(path: str, **value: Any) -> dict[str, Any]:
    return {"jsonPath": path, **value}


# -- the corpus: expected results ------------------------------------------------------------


def corpus_file(name: str) -> Path:
    path = CORPUS / "gemini" / name
    if not path.exists():
        pytest.skip("the shared provider corpus (../shared/corpus) is not present")
    return path


def test_corpus_function_call_in_a_single_chunk() -> None:
    result = summary(corpus_file("gemini-2.0-function-call-single-chunk.sse").read_bytes())
    assert result["converter"] == "gemini"
    assert calls(result) == [("call_0", "get_capital", {"country": "France"})]
    assert result["finish_reason"] == "STOP"
    assert result["usage"] == {"input_tokens": 52, "output_tokens": 5, "total_tokens": 57}
    # STOP after function calls, and calls without an id, are Gemini's documented contract:
    # not quirks, and the turn's finish class is tool_calls
    assert result["quirks"] == []
    assert result["finish_class"] == "tool_calls"


def test_corpus_thought_parts_then_signed_text() -> None:
    path = corpus_file("gemini-2.5-thought-parts-crlf.sse")
    result, items = run(path.read_bytes())
    chunks = [data for _, data in payloads(path)]
    parts = [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]
    assert result["reasoning"] == "".join(p["text"] for p in parts if p.get("thought"))
    assert result["text"] == "".join(p["text"] for p in parts if not p.get("thought"))
    assert result["reasoning"].startswith("**Clarifying User Goals**")
    signature = next(p["thoughtSignature"] for p in parts if "thoughtSignature" in p)
    assert segments(items, "text") == [{"thought_signature": signature}]
    assert segments(items, "reasoning") == [{}]
    # usageMetadata is cumulative: the last chunk's counts
    assert result["usage"] == {
        "input_tokens": 34,
        "output_tokens": 469 + 787,  # the answer and the thoughts
        "total_tokens": 1290,
        "reasoning_tokens": 787,
    }
    assert result["finish_reason"] == "STOP" and result["quirks"] == []


def test_corpus_function_call_with_thought_signature() -> None:
    path = corpus_file("gemini-3-function-call-thought-signature.sse")
    result = summary(path.read_bytes())
    (invocation,) = result["invocations"]
    part = payloads(path)[0][1]["candidates"][0]["content"]["parts"][0]
    assert (invocation["name"], invocation["arguments"]) == (
        "weather",
        {"location": "San Francisco"},
    )
    assert invocation["metadata"] == {"thought_signature": part["thoughtSignature"]}
    assert result["text"] == ""  # the closing empty text part carries nothing
    assert result["usage"]["reasoning_tokens"] == 804


def test_corpus_vertex_streamed_arguments() -> None:
    path = corpus_file("vertex-gemini-3.1-streamed-function-call-arguments.sse")
    result = summary(path.read_bytes())
    assert calls(result) == [
        ("call_0", "getWeather", {"location": "Boston"}),
        ("call_1", "getWeather", {"location": "San Francisco"}),
    ]
    assert "thought_signature" in result["invocations"][0]["metadata"]
    assert "metadata" not in result["invocations"][1]
    assert result["errors"] == []
    assert "gemini_partial_args" in {q["id"] for q in result["quirks"]}


@pytest.mark.parametrize("path", corpus_params("gemini/*.sse") + RECORDED, ids=str)
def test_same_result_for_every_chunking(path: Path | None) -> None:
    assert path is not None
    assert assert_chunking_invariant(path)["converter"] == "gemini"


@pytest.mark.parametrize("path", corpus_params("gemini/*.sse"))
def test_corpus_as_a_json_array_gives_the_same_result(path: Path) -> None:
    """The same responses sent without ``alt=sse`` (a streamed JSON array) replay the same."""
    chunks = [data for _, data in payloads(path)]
    as_sse = run(path.read_bytes())
    body = array(chunks).encode()
    rng = random.Random(7)
    points = sorted(rng.sample(range(1, len(body)), 25))
    pieces = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    again, again_items = run(pieces)
    assert (again, joined(again_items)) == (as_sse[0], joined(as_sse[1]))


# -- bundled recordings ----------------------------------------------------------------------


def test_recording_parallel_function_calls() -> None:
    result, _ = run_file(RECORDINGS / "gemini-parallel-function-calls.jsonl")
    assert result["text"] == "I'll look up the weather in both cities."
    assert calls(result) == [
        ("call_0", "get_weather", {"city": "Paris"}),
        ("call_1", "get_weather", {"city": "Tokyo"}),
    ]
    assert result["finish_reason"] == "STOP"
    assert result["usage"] == {"input_tokens": 71, "output_tokens": 41, "total_tokens": 112}
    assert result["errors"] == []


def test_recording_thinking_then_function_call() -> None:
    result, _ = run_file(RECORDINGS / "gemini-thinking-then-function-call.jsonl")
    assert result["reasoning"].startswith("**Searching the documentation**\n\n")
    assert result["reasoning"].endswith("find the client options page.\n\n\n")
    assert result["text"] == ""
    (invocation,) = result["invocations"]
    assert invocation["name"] == "search_docs"
    assert invocation["arguments"] == {"query": "client retry configuration", "limit": 3}
    assert invocation["metadata"]["thought_signature"].startswith("CikB0e2Kb7")
    assert result["usage"] == {
        "input_tokens": 98,
        "output_tokens": 24 + 261,  # the answer and the thoughts
        "total_tokens": 383,
        "reasoning_tokens": 261,
    }


def test_recording_json_array_error_mid_stream() -> None:
    result, _ = run_file(RECORDINGS / "gemini-json-array-error-mid-stream.jsonl")
    assert result["converter"] == "gemini"
    assert result["text"] == (
        "Grey waves fold and break,\nsalt wind carries gull voices\u2014\nthe tide keeps its time."
        "\n\nThe haiku moves from sight (the waves) to sound"
    )
    assert result["errors"] == [
        {
            "kind": "provider_error",
            "message": "error in the stream: UNAVAILABLE: The model is overloaded. "
            "Please try again later.",
            "detail": {
                "code": 503,
                "message": "The model is overloaded. Please try again later.",
                "status": "UNAVAILABLE",
            },
        }
    ]
    assert result["finish_reason"] is None


# -- behaviours, one at a time ---------------------------------------------------------------


def test_function_call_without_args_has_empty_arguments_and_ids_are_kept() -> None:
    stream = sse(
        [
            chunk(fc("now"), fc("get", args={"k": 1}, id="fc_real_7")),
            chunk({"text": ""}, finish="STOP"),
        ]
    )
    result = summary(stream, header=HEADER)
    assert calls(result) == [("call_0", "now", {}), ("fc_real_7", "get", {"k": 1})]


def test_signature_on_an_empty_text_part_opens_a_segment_to_keep_it() -> None:
    stream = sse(
        [chunk({"text": "Hi"}), chunk({"text": "", "thoughtSignature": "sig=="}, finish="STOP")]
    )
    result, items = run(stream, header=HEADER)
    assert result["text"] == "Hi"
    assert segments(items, "text") == [{"thought_signature": "sig=="}]
    assert [q["id"] for q in result["quirks"]] == ["gemini_signature_in_empty_text_part"]


def test_two_signatures_in_one_segment_are_both_kept() -> None:
    stream = sse(
        [
            chunk({"text": "a", "thought": True, "thoughtSignature": "s1"}),
            chunk({"text": "b", "thought": True, "thoughtSignature": "s2"}, finish="STOP"),
        ]
    )
    result, items = run(stream, header=HEADER)
    assert result["reasoning"] == "ab"
    assert segments(items, "reasoning") == [
        {"thought_signature": "s2", "thought_signatures": ["s1", "s2"]}
    ]


def test_streamed_arguments_nested_typed_values() -> None:
    stream = events(
        [
            chunk(fc("save_file", willContinue=True, id="fc_9"), {"thoughtSignature": "sg"}),
            chunk(fc(partialArgs=[partial("$.path", stringValue="src/a.py")], willContinue=True)),
            chunk(
                fc(
                    partialArgs=[partial("$.content", stringValue="print(", willContinue=True)],
                    willContinue=True,
                )
            ),
            chunk(
                fc(
                    partialArgs=[partial("$.content", stringValue='"hi")\n', willContinue=True)],
                    willContinue=True,
                )
            ),
            chunk(fc(partialArgs=[partial("$.content", stringValue="")], willContinue=True)),
            chunk(
                fc(
                    partialArgs=[
                        partial("$.options.mode", numberValue=420),
                        partial("$.options.flags[0]", stringValue="x"),
                        partial("$.options.flags[1]", boolValue=False),
                        partial("$['odd key']", nullValue="NULL_VALUE"),
                    ],
                    willContinue=True,
                )
            ),
            chunk(fc(), finish="STOP"),
        ]
    )
    result, items = run(stream, header=HEADER)
    assert calls(result) == [
        (
            "fc_9",
            "save_file",
            {
                "path": "src/a.py",
                "content": 'print("hi")\n',
                "options": {"mode": 420, "flags": ["x", False]},
                "odd key": None,
            },
        )
    ]
    assert result["errors"] == []
    streamed = [i["delta"] for i in items if i.get("event") == "SEGMENT_CONTENT"]
    assert len(streamed) > 5  # written out as the entries came, not at the end


def test_streamed_call_without_any_entry_has_empty_arguments() -> None:
    stream = sse([chunk(fc("ping", willContinue=True)), chunk(fc(), finish="STOP")])
    assert calls(summary(stream, header=HEADER)) == [("call_0", "ping", {})]


def test_streamed_call_cut_by_the_finish_is_an_error() -> None:
    stream = sse(
        [
            chunk(fc("f", willContinue=True)),
            chunk(
                fc(
                    partialArgs=[partial("$.a", stringValue="x", willContinue=True)],
                    willContinue=True,
                )
            ),
            chunk({"text": ""}, finish="MAX_TOKENS"),
        ]
    )
    result, items = run(stream, header=HEADER)
    assert result["finish_reason"] == "MAX_TOKENS"
    assert result["errors"][0]["kind"] == "truncated"
    (tool_end,) = segments(items, "tool_call")
    assert tool_end["unclosed"] is True and tool_end["arguments"] is None


def test_malformed_function_call_finish_is_an_error() -> None:
    stream = sse([chunk(finish="MALFORMED_FUNCTION_CALL", usage={"promptTokenCount": 5})])
    data = json.loads(stream[6:])
    data["candidates"][0]["finishMessage"] = "Malformed function call: print(default_api.x("
    result = summary("data: " + json.dumps(data) + "\r\n\r\n", header=HEADER)
    assert result["finish_reason"] == "MALFORMED_FUNCTION_CALL"
    assert result["errors"] == [
        {
            "kind": "malformed_function_call",
            "message": "MALFORMED_FUNCTION_CALL: Malformed function call: print(default_api.x(",
        }
    ]
    assert result["invocations"] == []


def test_prompt_block_reason_is_an_error() -> None:
    blocked = {
        "promptFeedback": {"blockReason": "SAFETY"},
        "usageMetadata": {"promptTokenCount": 9},
    }
    result = summary(sse([blocked]), header=HEADER)
    assert result["finish_reason"] == "SAFETY"
    assert [e["kind"] for e in result["errors"]] == ["prompt_blocked"]
    assert result["usage"] == {"input_tokens": 9}


def test_usage_metadata_is_cumulative_latest_wins() -> None:
    stream = sse(
        [
            chunk(
                {"text": "a"},
                usage={"promptTokenCount": 10, "candidatesTokenCount": 1, "totalTokenCount": 11},
            ),
            chunk(
                {"text": "b"},
                usage={"promptTokenCount": 10, "candidatesTokenCount": 2, "totalTokenCount": 12},
            ),
            chunk(
                {"text": "c"},
                finish="STOP",
                usage={"promptTokenCount": 10, "candidatesTokenCount": 3, "totalTokenCount": 13},
            ),
        ]
    )
    assert summary(stream, header=HEADER)["usage"] == {
        "input_tokens": 10,
        "output_tokens": 3,
        "total_tokens": 13,
    }


def test_stream_without_finish_reason_is_truncated() -> None:
    result = summary(sse([chunk({"text": "partial"})]), header=HEADER)
    assert result["text"] == "partial"
    assert [e["kind"] for e in result["errors"]] == ["truncated"]


def test_code_execution_is_a_server_side_call_with_its_result() -> None:
    code = {"language": "PYTHON", "code": "print(6*7)"}
    outcome = {"outcome": "OUTCOME_OK", "output": "42\n"}
    stream = sse(
        [
            chunk({"executableCode": code}),
            chunk({"codeExecutionResult": outcome}),
            chunk({"text": "The answer is 42."}, finish="STOP"),
        ]
    )
    result = summary(stream, header=HEADER)
    assert result["invocations"] == [
        {
            "id": "call_0",
            "name": "code_execution",
            "arguments": code,
            "server_side": True,
            "metadata": {"result": outcome},
        }
    ]
    assert result["text"] == "The answer is 42."


def test_only_the_first_candidate_is_replayed() -> None:
    data = chunk({"text": "one"}, finish="STOP")
    data["candidates"].append({"content": {"parts": [{"text": "two"}]}, "index": 1})
    result = summary(sse([data]), header=HEADER)
    assert result["text"] == "one"
    assert [q["id"] for q in result["quirks"]] == ["n_candidates"]


def test_json_array_body_cut_inside_an_element() -> None:
    body = array([chunk({"text": "Hello"}), chunk({"text": " world"}, finish="STOP")])
    result = summary(body[:-40], header=HEADER)  # cut inside the last element
    assert result["text"] == "Hello"
    assert [e["kind"] for e in result["errors"]] == ["truncated", "truncated"]


# -- Vertex partialArgs: JSON text written as entries arrive ---------------------------------

_keys = st.text(alphabet="abcxyz_ -'\"", min_size=1, max_size=5)
_leaves = st.one_of(
    st.text(max_size=12),
    st.integers(min_value=-(10**6), max_value=10**6),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.booleans(),
    st.none(),
)
_values = st.recursive(
    _leaves,
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=3),
        st.dictionaries(_keys, inner, min_size=1, max_size=3),
    ),
    max_leaves=12,
)
_objects = st.dictionaries(_keys, _values, max_size=4)


def _path(steps: list[str | int]) -> str:
    out = "$"
    for step in steps:
        out += f"[{step}]" if isinstance(step, int) else f"['{_quote(step)}']"
    return out


def _quote(key: str) -> str:
    return key.replace("\\", "\\\\").replace("'", "\\'")


def _entries(value: Any, steps: list[str | int], rng: random.Random) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        return [e for k, v in value.items() for e in _entries(v, [*steps, k], rng)]
    if isinstance(value, list):
        return [e for i, v in enumerate(value) for e in _entries(v, [*steps, i], rng)]
    path = _path(steps)
    if isinstance(value, str):
        cuts = sorted(rng.sample(range(len(value) + 1), min(len(value) + 1, rng.randint(0, 3))))
        pieces = [value[a:b] for a, b in zip([0, *cuts], [*cuts, len(value)], strict=True)]
        return [
            {
                "jsonPath": path,
                "stringValue": p,
                **({"willContinue": True} if i < len(pieces) - 1 else {}),
            }
            for i, p in enumerate(pieces)
        ]
    if isinstance(value, bool):
        return [{"jsonPath": path, "boolValue": value}]
    if value is None:
        return [{"jsonPath": path, "nullValue": "NULL_VALUE"}]
    return [{"jsonPath": path, "numberValue": value}]


@settings(max_examples=80, deadline=None)
@given(_objects, st.integers(min_value=0, max_value=1000))
def test_partial_args_writer_rebuilds_any_object(obj: dict[str, Any], seed: int) -> None:
    """Leaf entries in document order (strings cut into continued pieces) give the object back.

    Empty containers cannot be expressed by leaf entries, so they are left out of the input.
    """
    obj = _without_empty(obj)
    writer = PartialArgsWriter()
    text = "".join(writer.add(e) for e in _entries(obj, [], random.Random(seed))) + writer.close()
    assert json.loads(text) == obj
    assert writer.problem is None


def _without_empty(value: Any) -> Any:
    if isinstance(value, dict):
        out = {k: _without_empty(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in ({}, [])}
    if isinstance(value, list):
        out_list = [_without_empty(v) for v in value]
        return [v for v in out_list if v not in ({}, [])]
    return value


def test_partial_args_out_of_order_is_written_and_reported() -> None:
    writer = PartialArgsWriter()
    text = writer.add(partial("$.a.x", numberValue=1)) + writer.add(partial("$.b", numberValue=2))
    assert writer.problem is None
    text += writer.add(partial("$.a.y", numberValue=3))
    assert writer.problem is not None and "out of order" in writer.problem
    text += writer.close()
    assert text == '{"a":{"x":1},"b":2,"a":{"y":3}}'


def test_json_paths() -> None:
    assert parse_json_path("$.a.b[0]['c d'][\"e\"]") == ["a", "b", 0, "c d", "e"]
    with pytest.raises(PartialArgsError):
        parse_json_path("a.b")
    with pytest.raises(PartialArgsError):
        parse_json_path("$.a[x]")
