"""Conformance: every Kimi K2 case of the shared corpus through the ``kimi-k2`` converter.

Each case's model output is streamed as OpenAI-compatible ``content`` deltas whole, one character
per event, as the case's own deltas (streaming cases), and cut at random points. Skips cleanly
when the corpus is absent.

Two cases record a behaviour of the vLLM parser that streamtool does not share, on purpose (its
rules are those of its issue, "nothing lost"): ``DEVIATIONS`` says which, and what streamtool does
instead; the tests assert that behaviour.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .conftest import CORPUS
from .kimi_streams import function_tool, summary, text_stream, tools_header

CASE_FILES = ("vllm-kimi_k2-parser-cases.json", "vllm-legacy-kimi_k2-parser-cases.json")

DEVIATIONS = {
    # vLLM surfaces a call whose section never closed (max_tokens cut it) with its partial
    # arguments; streamtool gives the open section back as text with an error and runs nothing.
    "stream_truncated_no_end_markers": "unterminated",
    # vLLM drops the text after a section; streamtool keeps it as content.
    "stream_content_after_section": "text_after",
}


def load_cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    for name in CASE_FILES:
        path = CORPUS / "kimi-k2" / name
        if not path.is_file():
            continue
        doc = json.loads(path.read_text(encoding="utf-8"))
        for key in ("cases", "non_streaming_cases", "streaming_cases"):
            for case in doc.get(key, []):
                case = dict(case)
                case["file"] = name
                if "deltas" in case:
                    case["model_output"] = "".join(case["deltas"])
                cases.append(case)
    return cases


def case_params() -> list[Any]:
    cases = load_cases()
    if not cases:
        return [pytest.param(None, marks=pytest.mark.skip(reason="corpus not present"))]
    return [pytest.param(c, id=f"{c['file'].split('-parser')[0]}/{c['id']}") for c in cases]


_OFFERED = re.compile(r"(\w+)\(([^)]*)\)")


def header_for(case: dict[str, Any]):
    offered = case.get("tools_offered")
    if not offered:
        return tools_header()
    tools = []
    for spec in offered:
        m = _OFFERED.fullmatch(spec)
        assert m, spec
        tools.append(function_tool(m.group(1), [p.strip() for p in m.group(2).split(",")]))
    return tools_header(tools)


def check(case: dict[str, Any], pieces: list[str]) -> None:
    result = summary(text_stream(pieces), header=header_for(case))
    text = result["text"]
    invocations = result["invocations"]
    deviation = DEVIATIONS.get(case["id"])
    if deviation == "unterminated":
        (expected,) = case["expected_tool_calls"]
        assert invocations == []
        section = case["model_output"][case["model_output"].index("<|tool_calls_section_begin|>") :]
        assert text.endswith(section)  # given back whole: id and partial arguments included
        assert expected["id"] in text and expected["arguments_raw"] in text
        assert [e["kind"] for e in result["errors"]] == ["kimi_section_unterminated"]
        return
    if "expected_tool_calls" in case:
        expected_calls = case["expected_tool_calls"]
        assert [i["name"] for i in invocations] == [c["name"] for c in expected_calls]
        for inv, exp in zip(invocations, expected_calls, strict=True):
            if "id" in exp:
                assert inv["id"] == exp["id"]
            if "arguments" in exp:
                assert inv["arguments"] == exp["arguments"]
    if "expected_tool_call_names" in case:
        assert [i["name"] for i in invocations] == case["expected_tool_call_names"]
    if "expected_content" in case:
        assert text == case["expected_content"]
    if deviation == "text_after":
        assert text.endswith(" After tools.")
    else:
        for fragment in case.get("expected_content_must_not_contain", []):
            assert fragment not in text
    for inv in invocations:  # no markup leaks into a call
        assert "<|tool_call" not in json.dumps(inv) and "<|tool_call" not in inv["id"]


@pytest.mark.parametrize("case", case_params())
def test_case_whole(case):
    check(case, [case["model_output"]])


@pytest.mark.parametrize("case", case_params())
def test_case_one_character_per_event(case):
    check(case, list(case["model_output"]))


@pytest.mark.parametrize("case", case_params())
def test_case_as_its_own_deltas(case):
    check(case, case.get("deltas") or [case["model_output"]])


@pytest.mark.parametrize("case", case_params())
@given(points=st.lists(st.integers(0, 700), min_size=1, max_size=10))
@settings(max_examples=15, deadline=None)
def test_case_random_cuts(case, points):
    text = case["model_output"]
    bounds = sorted({min(p, len(text)) for p in points} | {0, len(text)})
    check(case, [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)])


def test_every_case_is_checked_against_something():
    for case in load_cases():
        assert {
            "expected_tool_calls",
            "expected_tool_call_names",
            "expected_content",
            "expected_content_must_not_contain",
        } & set(case), case["id"]
