"""Request matching for tapes (sans-IO): normalization, ordered consumption, the miss message."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamtool.core.exchange.tape_match import (
    DEFAULT_IGNORED,
    Exchange,
    Matcher,
    MatchRules,
    canonical,
    first_difference,
    parse_ignore_path,
)

CHAT = "/chat/completions"

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)
bodies = st.dictionaries(st.text(max_size=6), json_values, max_size=6)


def shuffled(value: Any, rng: random.Random) -> Any:
    """The same JSON value with every object's keys in another order."""
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: shuffled(v, rng) for k, v in items}
    if isinstance(value, list):
        return [shuffled(v, rng) for v in value]
    return value


def turn(messages: list[dict], **extra: Any) -> dict:
    return {"model": "gpt-4o", "stream": True, "messages": messages, **extra}


USER = {"role": "user", "content": "What is the weather in Paris?"}
CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "weather", "arguments": '{"city":"Paris"}'},
        }
    ],
}


def result(text: str) -> dict:
    return {"role": "tool", "tool_call_id": "call_1", "content": text}


# -- normalization -------------------------------------------------------------------------------
@settings(max_examples=80, deadline=None)
@given(bodies, st.integers(0, 2**32))
def test_key_order_and_whitespace_never_count(body: dict, seed: int) -> None:
    other = shuffled(body, random.Random(seed))
    # what a client sends: any spacing, any key order
    sent = json.loads(json.dumps(other, indent=seed % 4 or None))
    matcher = Matcher([Exchange("rec", CHAT, body)])
    assert matcher.match(CHAT, sent) is not None
    assert first_difference(body, other) is None


@settings(max_examples=80, deadline=None)
@given(bodies, bodies)
def test_bodies_differ_exactly_when_a_difference_is_named(a: dict, b: dict) -> None:
    diff = first_difference(a, b)
    assert (diff is None) == (canonical(a) == canonical(b))
    if diff is not None:
        assert diff.describe()


@pytest.mark.parametrize("field", DEFAULT_IGNORED)
def test_default_ignored_fields_do_not_count(field: str) -> None:
    recorded = turn([USER], **{field: "recorded value"})
    matcher = Matcher([Exchange("rec", CHAT, recorded)])
    assert matcher.match(CHAT, turn([USER], **{field: {"other": 1}})) is not None
    matcher = Matcher([Exchange("rec", CHAT, recorded)])
    assert matcher.match(CHAT, turn([USER])) is not None


def test_a_field_that_counts_is_a_miss_and_named() -> None:
    matcher = Matcher([Exchange("rec", CHAT, turn([USER], temperature=0))])
    sent = turn([USER], temperature=1)
    assert matcher.match(CHAT, sent) is None
    miss = matcher.miss(CHAT, sent)
    assert miss.closest == "rec"
    assert "temperature differs: 1 vs 0" in miss.message


def test_match_ignore_adds_dotted_paths_with_wildcards() -> None:
    recorded = turn([dict(USER, cache_control={"type": "ephemeral"})], extra={"a": 1, "b": 2})
    sent = turn([USER], extra={"a": 5, "b": 2})
    assert Matcher([Exchange("rec", CHAT, recorded)]).match(CHAT, sent) is None
    rules = MatchRules.with_extra(["messages[*].cache_control", "extra.a"])
    assert Matcher([Exchange("rec", CHAT, recorded)], rules).match(CHAT, sent) is not None
    rules = MatchRules.with_extra(["messages.*.cache_control", "extra.a"])
    assert Matcher([Exchange("rec", CHAT, recorded)], rules).match(CHAT, sent) is not None


def test_normalizing_never_changes_the_body_given() -> None:
    body = turn([USER], metadata={"x": 1})
    before = json.dumps(body)
    MatchRules.with_extra(["messages.*.content"]).normalize(body)
    assert json.dumps(body) == before


@pytest.mark.parametrize("bad", ["", "a..b", ".a", "a.", "a[x]"])
def test_a_bad_ignore_path_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="--match-ignore"):
        parse_ignore_path(bad)


def test_ignore_paths_parse() -> None:
    assert parse_ignore_path("metadata") == ("metadata",)
    assert parse_ignore_path("messages[2].content") == ("messages", 2, "content")
    assert parse_ignore_path("messages.*.cache_control") == ("messages", "*", "cache_control")


# -- order ---------------------------------------------------------------------------------------
def test_endpoints_must_agree() -> None:
    body = turn([USER])
    matcher = Matcher([Exchange("chat", CHAT, body)])
    assert matcher.match("/responses", body) is None
    assert "holds no exchange for /responses (it holds /chat/completions)" in (
        matcher.miss("/responses", body).message
    )


def test_duplicates_are_served_in_recorded_order_then_again_from_the_first() -> None:
    same = turn([USER])
    matcher = Matcher(
        [
            Exchange("0001", CHAT, same),
            Exchange("0002", CHAT, turn([USER, CALL, result("21°C")])),
            Exchange("0003", CHAT, same),  # the retried turn
        ]
    )
    got = [matcher.match(CHAT, same) for _ in range(5)]
    assert [g.name if g else None for g in got] == ["0001", "0003", "0001", "0003", "0001"]
    hit = matcher.match(CHAT, turn([USER, CALL, result("21°C")]))
    assert hit is not None and hit.name == "0002"


def test_a_body_less_exchange_never_matches_by_body() -> None:
    matcher = Matcher([Exchange("raw", CHAT, None)])
    assert matcher.match(CHAT, turn([USER])) is None
    assert matcher.match(CHAT, None) is None


# -- the miss ------------------------------------------------------------------------------------
def test_a_changed_tool_result_names_the_closest_turn_and_the_difference() -> None:
    long_result = "The tool reported: temperature in Paris right now, result: 21°C"
    matcher = Matcher(
        [
            Exchange("0001-openai-chat-gpt-4o", CHAT, turn([USER])),
            Exchange("0002-openai-chat-gpt-4o", CHAT, turn([USER, CALL, result(long_result)])),
        ]
    )
    sent = turn([USER, CALL, result(long_result.replace("21", "19"))])
    assert matcher.match(CHAT, sent) is None
    miss = matcher.miss(CHAT, sent, "/v1/chat/completions")
    assert miss.closest == "0002-openai-chat-gpt-4o"
    assert miss.difference is not None and miss.difference.path == "messages[2].content"
    assert (
        'messages[2].content differs: "...right now, result: 19°C" vs "...right now, result: 21°C"'
    ) in miss.message
    assert "/v1/chat/completions" in miss.message


def test_a_missing_turn_says_how_many_messages() -> None:
    matcher = Matcher([Exchange("0001", CHAT, turn([USER, CALL]))])
    miss = matcher.miss(CHAT, turn([USER]))
    assert "messages has 1 item vs 2" in miss.message


def test_absent_fields_and_long_values_are_shown_short() -> None:
    matcher = Matcher([Exchange("0001", CHAT, turn([USER], tools=[{"x": "y" * 200}]))])
    miss = matcher.miss(CHAT, turn([USER]))
    assert "tools differs: (absent) vs [" in miss.message
    assert len(miss.message) < 250


def test_strings_differing_at_the_start_are_cut_on_the_right_only() -> None:
    diff = first_difference({"a": "x" + "b" * 100}, {"a": "y" + "b" * 100})
    assert diff is not None
    text = diff.describe()
    assert text.startswith('a differs: "x' + "b" * 23 + '..." vs "y')


def test_odd_keys_are_quoted_in_the_path() -> None:
    diff = first_difference({"a b": {"c": 1}}, {"a b": {"c": 2}})
    assert diff is not None and diff.path == '["a b"].c'
