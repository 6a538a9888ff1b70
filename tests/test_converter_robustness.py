"""Malformed events never crash the openai-responses, anthropic, gemini and gemini-interactions
converters.

Events are built from each API's own vocabulary (event types, field names) with values of the
wrong type, missing fields and junk in between; the replay must always finish with a summary.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamtool.core.apis.gemini_interactions.detect import EVENTS as INTERACTIONS_EVENTS

from .wire_helpers import run

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=3),
    st.text(max_size=6),
    st.just("{"),
    st.just('{"a": 1}'),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)

VOCABULARY: dict[str, dict[str, Any]] = {
    "anthropic": {
        "type": [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
            "ping",
            "error",
        ],
        "fields": ["index", "message", "content_block", "delta", "usage", "error"],
        "inner": [
            "type",
            "text",
            "thinking",
            "signature",
            "partial_json",
            "id",
            "name",
            "input",
            "tool_use_id",
            "stop_reason",
            "data",
            "citation",
            "usage",
            "model",
        ],
        "inner_types": [
            "text",
            "thinking",
            "tool_use",
            "server_tool_use",
            "redacted_thinking",
            "text_delta",
            "thinking_delta",
            "signature_delta",
            "input_json_delta",
            "citations_delta",
            "web_search_tool_result",
        ],
    },
    "openai-responses": {
        "type": [
            "response.created",
            "response.output_item.added",
            "response.output_item.done",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.custom_tool_call_input.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.reasoning_summary_text.delta",
            "response.completed",
            "response.incomplete",
            "response.failed",
            "error",
        ],
        "fields": [
            "item",
            "item_id",
            "output_index",
            "delta",
            "arguments",
            "response",
            "sequence_number",
            "text",
            "error",
            "content_index",
        ],
        "inner": [
            "type",
            "id",
            "call_id",
            "name",
            "arguments",
            "input",
            "output",
            "usage",
            "status",
            "error",
            "content",
            "summary",
            "encrypted_content",
        ],
        "inner_types": [
            "function_call",
            "custom_tool_call",
            "message",
            "reasoning",
            "web_search_call",
            "output_text",
            "computer_call",
        ],
    },
    "gemini": {
        "type": [None],
        "fields": ["candidates", "usageMetadata", "promptFeedback", "error", "modelVersion"],
        "inner": [
            "content",
            "parts",
            "text",
            "thought",
            "thoughtSignature",
            "functionCall",
            "name",
            "args",
            "id",
            "willContinue",
            "partialArgs",
            "jsonPath",
            "stringValue",
            "finishReason",
            "index",
            "executableCode",
            "codeExecutionResult",
        ],
        "inner_types": [],
    },
    "gemini-interactions": {
        "type_key": "event_type",
        "type": [*sorted(INTERACTIONS_EVENTS), "error"],
        "fields": ["index", "step", "content", "delta", "interaction", "usage", "status", "error"],
        "inner": [
            "type",
            "text",
            "id",
            "name",
            "arguments",
            "call_id",
            "result",
            "signature",
            "summary",
            "content",
            "annotations",
            "status",
            "usage",
            "total_output_tokens",
            "errors",
            "code",
            "message",
            "data",
        ],
        "inner_types": [
            "text",
            "thought",
            "model_output",
            "function_call",
            "arguments_delta",
            "thought_summary",
            "thought_signature",
            "google_search_call",
            "google_search_result",
            "function_result",
            "text_annotation_delta",
            "image",
            "url_citation",
        ],
    },
}


@st.composite
def events(draw: st.DrawFn, api: str) -> dict[str, Any]:
    vocab = VOCABULARY[api]
    event: dict[str, Any] = {}
    kind = draw(st.sampled_from(vocab["type"]))
    if kind is not None:
        event[vocab.get("type_key", "type")] = kind
    for field in draw(st.lists(st.sampled_from(vocab["fields"]), max_size=4)):
        event[field] = draw(_nested(vocab, 2))
    return event


def _nested(vocab: dict[str, list], depth: int) -> st.SearchStrategy[Any]:
    if depth == 0:
        return _values
    inner = st.dictionaries(
        st.sampled_from(vocab["inner"]),
        st.one_of(
            _values,
            st.sampled_from(vocab["inner_types"] or ["x"]),
            st.deferred(lambda: _nested(vocab, depth - 1)),
        ),
        max_size=5,
    )
    return st.one_of(_values, inner, st.lists(inner, max_size=3), st.integers(0, 2))


@pytest.mark.parametrize("api", list(VOCABULARY))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_malformed_events_never_crash(api: str, data: st.DataObject) -> None:
    evs = data.draw(st.lists(events(api), min_size=1, max_size=12))
    junk = data.draw(st.sampled_from(["", "data: {not json\n\n", "data: [DONE]\n\n", ": ping\n\n"]))
    body = junk + "".join("data: " + json.dumps(e) + "\n\n" for e in evs)
    result, _ = run(body, converter=api)
    assert result["converter"] == api
    assert isinstance(result["invocations"], list)
