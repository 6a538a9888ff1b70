"""Converter ``openai-chat``: each real quirk is handled and named in the summary's quirks."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamtool.core.recording.reader import Source

from .conftest import RECORDINGS, corpus_params
from .helpers import chat_chunk, meaning, random_cuts, replay_bytes, sse


def summary(body: bytes, **kw):
    return replay_bytes(body, converter="openai-chat", **kw).summary()


def quirk_ids(s: dict) -> list[str]:
    return [q["id"] for q in s["quirks"]]


def tc(index=None, id=None, name=None, args=None, type_=None, **extra):
    call: dict = {}
    if index is not None:
        call["index"] = index
    if id is not None:
        call["id"] = id
    if type_ is not None:
        call["type"] = type_
    fn = {}
    if name is not None:
        fn["name"] = name
    if args is not None:
        fn["arguments"] = args
    if fn:
        call["function"] = fn
    call.update(extra)
    return call


def calls(s: dict) -> list[tuple]:
    return [(i["id"], i["name"], i["arguments"]) for i in s["invocations"]]


def test_standard_stream_text_and_one_call():
    body = sse(
        chat_chunk({"role": "assistant", "content": "Let me check."}),
        chat_chunk({"tool_calls": [tc(0, "call_1", "get_weather", "", "function")]}),
        chat_chunk({"tool_calls": [tc(0, args='{"city"')]}),
        chat_chunk({"tool_calls": [tc(0, args=': "Paris"}')]}),
        chat_chunk({}, "tool_calls"),
    )
    s = summary(body)
    assert s["text"] == "Let me check."
    assert calls(s) == [("call_1", "get_weather", {"city": "Paris"})]
    assert s["finish_reason"] == "tool_calls"
    assert s["errors"] == [] and s["quirks"] == []


def test_tool_calls_without_index():
    body = sse(
        chat_chunk({"tool_calls": [tc(id="call_a", name="read", args='{"path": ')]}),
        chat_chunk({"tool_calls": [tc(args='"/a"}')]}),
        chat_chunk({"tool_calls": [tc(id="call_b", name="read", args='{"path": "/b"}')]}),
        chat_chunk({}, "tool_calls"),
    )
    s = summary(body)
    assert calls(s) == [("call_a", "read", {"path": "/a"}), ("call_b", "read", {"path": "/b"})]
    assert "oai_tool_index_missing" in quirk_ids(s)


def test_parallel_calls_sharing_index_zero_with_distinct_ids():
    body = sse(
        *[
            chat_chunk({"tool_calls": [tc(0, f"call_{c}", "get_weather", f'{{"city": "{c}"}}')]})
            for c in ("北京", "上海", "广州")
        ],
        chat_chunk({}, "tool_calls"),
    )
    s = summary(body)
    assert [c[2]["city"] for c in calls(s)] == ["北京", "上海", "广州"]
    assert len({c[0] for c in calls(s)}) == 3
    assert "oai_parallel_same_index" in quirk_ids(s)


def test_id_name_and_type_repeated_on_every_chunk():
    frags = ['{"a"', ": 1", ', "b": 2}']
    body = sse(
        *[
            chat_chunk({"tool_calls": [tc(0, "chatcmpl-tool-aa62", "read_file", f, "function")]})
            for f in frags
        ],
        chat_chunk({}, "tool_calls"),
    )
    s = summary(body)
    assert calls(s) == [("chatcmpl-tool-aa62", "read_file", {"a": 1, "b": 2})]
    assert {"oai_id_every_chunk", "oai_name_every_chunk"} <= set(quirk_ids(s))


def test_empty_string_id_and_type():
    body = sse(
        chat_chunk({"tool_calls": [tc(0, "", "search", '{"q": "x"}', "")]}),
        chat_chunk({"tool_calls": [tc(0, "", None, "", "")]}),
        chat_chunk({}, "tool_calls"),
    )
    s = summary(body)
    assert calls(s) == [("call_0", "search", {"q": "x"})]
    assert "oai_empty_id" in quirk_ids(s)


def test_whole_call_in_one_chunk_with_finish_reason():
    body = sse(
        chat_chunk(
            {"tool_calls": [{"id": "gSIMJiOkT", "function": {"name": "w", "arguments": "{}"}}]},
            "tool_calls",
            usage={"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
        ),
        done=False,
    )
    s = summary(body)
    assert calls(s) == [("gSIMJiOkT", "w", {})]
    assert s["usage"] == {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7}
    assert "eof_no_done" in quirk_ids(s)
    assert s["errors"] == []


def test_arguments_sent_as_a_json_object():
    body = sse(
        chat_chunk({"tool_calls": [tc(0, "c1", "get", {"city": "Paris", "n": [1, 2]})]}),
        chat_chunk({}, "tool_calls"),
    )
    s = summary(body)
    assert calls(s) == [("c1", "get", {"city": "Paris", "n": [1, 2]})]
    assert "oai_args_object" in quirk_ids(s)


def test_cumulative_arguments_are_not_duplicated():
    body = sse(
        chat_chunk({"tool_calls": [tc(0, "c1", "f", '{"a": ')]}),
        chat_chunk({"tool_calls": [tc(0, args='{"a": 1, ')]}),
        chat_chunk({"tool_calls": [tc(0, args='{"a": 1, "b": "xx"}')]}),
        chat_chunk({}, "tool_calls"),
    )
    s = summary(body)
    assert calls(s) == [("c1", "f", {"a": 1, "b": "xx"})]
    assert "oai_args_cumulative" in quirk_ids(s)


def test_placeholder_then_full_and_summary_resend():
    body = sse(
        chat_chunk({"tool_calls": [tc(0, "c1", "f", "{}")]}),
        chat_chunk({"tool_calls": [tc(0, args='{"x": "y"}')]}),
        chat_chunk({"tool_calls": [tc(1, "c2", "g", '{"k": ')]}),
        chat_chunk({"tool_calls": [tc(1, args="1}")]}),
        chat_chunk({"tool_calls": [tc(1, args='{"k": 1}')]}),
        chat_chunk({}, "tool_calls"),
    )
    s = summary(body)
    assert calls(s) == [("c1", "f", {"x": "y"}), ("c2", "g", {"k": 1})]
    assert {"oai_args_placeholder_then_full", "oai_args_delta_plus_summary"} <= set(quirk_ids(s))


def test_repeated_characters_are_never_fuzzily_deduplicated():
    body = sse(
        chat_chunk({"tool_calls": [tc(0, "c1", "f", '{"a":"')]}),
        chat_chunk({"tool_calls": [tc(0, args="x")]}),
        chat_chunk({"tool_calls": [tc(0, args="x")]}),
        chat_chunk({"tool_calls": [tc(0, args='"}')]}),
        chat_chunk({}, "tool_calls"),
    )
    assert calls(summary(body)) == [("c1", "f", {"a": "xx"})]


@pytest.mark.parametrize(
    ("field", "delta", "quirk"),
    [
        ("reasoning_content", {"reasoning_content": "think"}, "reasoning_field_reasoning_content"),
        ("reasoning", {"reasoning": "think"}, "reasoning_field_reasoning"),
        (
            "reasoning_details",
            {"reasoning_details": [{"type": "reasoning.text", "text": "think"}]},
            "reasoning_field_reasoning_details",
        ),
    ],
)
def test_reasoning_fields(field, delta, quirk):
    body = sse(chat_chunk(delta), chat_chunk({"content": "answer"}), chat_chunk({}, "stop"))
    s = summary(body)
    assert s["reasoning"] == "think" and s["text"] == "answer"
    assert quirk in quirk_ids(s)


def test_reasoning_and_reasoning_details_together_are_not_doubled():
    d = {"reasoning": "abc", "reasoning_details": [{"type": "reasoning.text", "text": "abc"}]}
    s = summary(sse(chat_chunk(d), chat_chunk({}, "stop")))
    assert s["reasoning"] == "abc"


def test_mistral_content_arrays():
    body = sse(
        chat_chunk(
            {"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "hm"}]}]}
        ),
        chat_chunk({"content": [{"type": "text", "text": "Hello"}]}),
        chat_chunk({"content": " world"}),
        chat_chunk({}, "stop"),
    )
    s = summary(body)
    assert (s["reasoning"], s["text"]) == ("hm", "Hello world")
    assert "mistral_content_array" in quirk_ids(s)


def test_azure_empty_first_choices_and_usage_only_last_chunk():
    body = sse(
        {"id": "", "choices": [], "created": 0, "model": "", "prompt_filter_results": []},
        chat_chunk({"content": "hi"}),
        chat_chunk({}, "stop"),
        {"id": "x", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1}},
    )
    s = summary(body)
    assert s["text"] == "hi" and s["usage"] == {"input_tokens": 3, "output_tokens": 1}
    assert {"azure_empty_first_chunk", "usage_only_chunk"} <= set(quirk_ids(s))


def test_error_object_inside_a_200_stream():
    body = sse(
        chat_chunk({"content": "partial"}),
        {"error": {"code": "tool_use_failed", "message": "Failed to call a function"}},
    )
    s = summary(body)
    assert s["text"] == "partial"
    assert s["errors"][0]["kind"] == "provider_error"
    assert "Failed to call a function" in s["errors"][0]["message"]


def test_finish_stop_although_tool_calls_were_made_keeps_raw_value():
    body = sse(
        chat_chunk({"tool_calls": [tc(0, "c1", "f", "{}")]}),
        chat_chunk({}, "stop"),
    )
    s = summary(body)
    assert s["finish_reason"] == "stop"
    assert calls(s) == [("c1", "f", {})]
    assert "finish_stop_with_tools" in quirk_ids(s)


def test_no_done_and_no_finish_reason_is_a_truncation_error():
    body = sse(
        chat_chunk({"tool_calls": [tc(0, "c1", "run", '{"cmd": "rm -rf build/x')]}),
        done=False,
    )
    s = summary(body)
    # the cut-off arguments are never repaired nor replaced by {}
    assert s["invocations"] == [
        {"id": "c1", "name": "run", "arguments": None, "raw_arguments": '{"cmd": "rm -rf build/x'}
    ]
    kinds = [e["kind"] for e in s["errors"]]
    assert "truncated" in kinds and "segment" in kinds


def test_unparsable_arguments_are_null_with_raw_text_and_an_error():
    body = sse(
        chat_chunk({"tool_calls": [tc(0, "c1", "f", "{not json")]}), chat_chunk({}, "tool_calls")
    )
    s = summary(body)
    assert s["invocations"][0]["arguments"] is None
    assert s["invocations"][0]["raw_arguments"] == "{not json"
    assert any("not valid JSON" in e["message"] for e in s["errors"])


def test_empty_arguments_mean_no_parameters():
    s = summary(
        sse(chat_chunk({"tool_calls": [tc(0, "c1", "now", "")]}), chat_chunk({}, "tool_calls"))
    )
    assert calls(s) == [("c1", "now", {})]


def test_trailing_empty_tool_stub_is_not_a_new_call():
    body = sse(
        chat_chunk({"tool_calls": [tc(0, "c1", "f", '{"a": 1}')]}, "tool_calls"),
        chat_chunk({"tool_calls": [tc(0, args="")]}),
    )
    s = summary(body)
    assert calls(s) == [("c1", "f", {"a": 1})]


def test_name_after_arguments_and_finish_double():
    body = sse(
        chat_chunk({"tool_calls": [tc(0, args='{"q": 1}')]}),
        chat_chunk({"tool_calls": [tc(0, "call_late", "search")]}),
        chat_chunk({}, "tool_calls"),
        chat_chunk({}, "tool_calls"),
    )
    s = summary(body)
    assert calls(s) == [("call_late", "search", {"q": 1})]
    assert "finish_double" in quirk_ids(s)


def test_events_separated_by_a_single_newline():
    one = b'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n'
    two = b'data: {"choices":[{"index":0,"delta":{"content":"b"},"finish_reason":"stop"}]}\n\n'
    body = one + two
    s = summary(body)
    assert s["text"] == "ab"
    assert "sse_single_newline_separator" in quirk_ids(s)


def test_keepalive_comments_and_think_tags_are_named():
    body = b": OPENROUTER PROCESSING\n\n" + sse(
        chat_chunk({"content": "<think>x</think>y"}), chat_chunk({}, "stop")
    )
    s = summary(body)
    assert s["text"] == "<think>x</think>y"  # nothing rewritten
    assert {"sse_comment_keepalive", "think_tags_in_content"} <= set(quirk_ids(s))
    assert s["stats"]["comments"] == 1


# -- chunking never changes meaning ----------------------------------------------------------------


def _chat_sources() -> list:
    params = [
        pytest.param(p, id=p.name)
        for p in sorted(RECORDINGS.glob("*.jsonl"))
        if Source(p).header.api == "chat.completions"
    ]
    return params + corpus_params(api="chat.completions")


@pytest.mark.parametrize("path", _chat_sources())
def test_summary_meaning_identical_for_every_chunking(path):
    reads = [
        c.data if isinstance(c.data, bytes) else c.data.encode() for c in Source(path).chunks()
    ]
    body = b"".join(reads)
    base = meaning(replay_bytes(reads, converter="openai-chat").summary())
    assert meaning(replay_bytes([body], converter="openai-chat").summary()) == base
    single = [body[i : i + 1] for i in range(len(body))]
    assert meaning(replay_bytes(single, converter="openai-chat").summary()) == base
    rng = random.Random(path.name)
    for _ in range(3):
        pieces = random_cuts(body, rng)
        assert meaning(replay_bytes(pieces, converter="openai-chat").summary()) == base


@settings(max_examples=60, deadline=None)
@given(
    frags=st.lists(st.text(alphabet='ab"{}:, é\\', min_size=1, max_size=6), max_size=8),
    data=st.data(),
)
def test_argument_fragments_reassemble_exactly(frags, data):
    """Whatever the fragments, the invocation holds exactly their concatenation (or its parse)."""
    raw = '{"k": ' + '"' + "".join(f.replace("\\", "").replace('"', "") for f in frags) + '"}'
    cuts = sorted(data.draw(st.sets(st.integers(1, len(raw) - 1), max_size=6)))
    pieces = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
    body = sse(
        chat_chunk({"tool_calls": [tc(0, "c1", "f", "")]}),
        *[chat_chunk({"tool_calls": [tc(0, args=p)]}) for p in pieces],
        chat_chunk({}, "tool_calls"),
    )
    import json

    assert calls(summary(body)) == [("c1", "f", json.loads(raw))]
