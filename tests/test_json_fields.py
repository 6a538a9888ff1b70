"""The incremental JSON string-field extractor and the marker stripper (wire/json_fields.py)."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamtool.core.wire.json_fields import JsonStringFields, MarkerStripper, strip_markers

FIELDS = ("content", "path")


def extract(
    fragments: list[str], fields: tuple[str, ...] = FIELDS
) -> tuple[dict, dict, JsonStringFields]:
    """Feed ``fragments``; returns (decoded text per field, closes per field, the extractor)."""
    ex = JsonStringFields(fields)
    text: dict[str, str] = {}
    closes: dict[str, int] = {}
    for fragment in fragments:
        for field, piece, closed in ex.feed(fragment):
            assert field in fields
            text[field] = text.get(field, "") + piece
            if closed:
                closes[field] = closes.get(field, 0) + 1
    return text, closes, ex


def cut(text: str, points: list[int]) -> list[str]:
    points = sorted(set(p for p in points if 0 < p < len(text)))
    out, prev = [], 0
    for p in points:
        out.append(text[prev:p])
        prev = p
    out.append(text[prev:])
    return out


def every_cut(text: str) -> list[list[str]]:
    """The text whole, in single characters, and cut once at every position."""
    cases = [[text], list(text)]
    cases += [[text[:i], text[i:]] for i in range(1, len(text))]
    return cases


# -- escapes --
ESCAPED = (
    r'{"content": "q\"b\\s\/f\bf\fn\nr\rt\t u\u00e9\u4E2D pair\ud83d\ude80 end", "path": "a\/b.py"}'
)


def test_every_escape_decoded_for_every_cut() -> None:
    expected = json.loads(ESCAPED)
    for fragments in every_cut(ESCAPED):
        text, closes, ex = extract(fragments)
        assert text == expected, fragments
        assert closes == {"content": 1, "path": 1}
        assert ex.error is None and ex.done


@pytest.mark.parametrize(
    "literal",
    [
        r"\ud83d\ude80",
        r"\uD83D\uDE80",
        r"\ud83d",
        r"\ude80",
        r"\ud83d\u0041",
        r"\ud83dx",
        r"\ud83d\n",
    ],
)
def test_surrogates_cut_anywhere_match_json_loads(literal: str) -> None:
    whole = '{"content": "<' + literal + '>"}'
    expected = json.loads(whole)["content"]
    for fragments in every_cut(whole):
        assert extract(fragments)[0]["content"] == expected, fragments


def test_text_is_emitted_as_soon_as_it_is_decodable() -> None:
    ex = JsonStringFields(FIELDS)
    assert ex.feed('{"path": "src/') == [("path", "src/", False)]
    assert ex.feed('a.py", "content": "line\\') == [
        ("path", "a.py", True),
        ("content", "line", False),
    ]
    assert ex.in_field == "content"
    assert ex.feed("n\\u00") == [("content", "\n", False)]  # the cut \u escape is held back
    assert ex.feed("e9\\ud83d") == [("content", "é", False)]  # the high surrogate waits
    assert ex.feed('\\ude00"}') == [("content", "😀", True)]
    assert ex.done and ex.in_field is None


def test_raw_non_ascii_and_control_characters_pass_through() -> None:
    whole = '{"content": "中文 ☕ 😀\u2028 tab\there"}'
    assert extract([whole[:5], whole[5:9], whole[9:]])[0]["content"] == "中文 ☕ 😀\u2028 tab\there"


# -- structure --
def test_keys_in_any_order_other_keys_and_nested_names_ignored() -> None:
    whole = (
        '{ "meta" : {"content": "nested", "path": ["no"]},\n'
        '  "list": [{"content": "x"}, "path", 1],\n'
        '  "content"\t:\n "real", "n": 1.5e3, "flag": true, "none": null,\n'
        '  "path" : "late.py" }'
    )
    for fragments in every_cut(whole):
        text, closes, _ = extract(fragments)
        assert text == {"content": "real", "path": "late.py"}, fragments
        assert closes == {"content": 1, "path": 1}


def test_string_values_that_look_like_keys_are_not_keys() -> None:
    whole = '{"a": "content", "b": ":", "c": "\\"content\\": \\"no\\"", "content": "yes"}'
    for fragments in every_cut(whole):
        assert extract(fragments)[0] == {"content": "yes"}


def test_escaped_key_names_are_matched_by_their_value() -> None:
    whole = '{"con\\u0074ent": "a", "p\\u0061th": "b"}'
    for fragments in every_cut(whole):
        assert extract(fragments)[0] == {"content": "a", "path": "b"}


def test_non_string_values_give_nothing() -> None:
    whole = '{"content": null, "path": 12, "x": "content"}'
    text, closes, ex = extract([whole])
    assert text == {} and closes == {}
    assert ex.seen == {}


def test_duplicate_keys_are_counted() -> None:
    whole = '{"content": "one", "content": "two"}'
    text, closes, ex = extract([whole])
    assert text == {"content": "onetwo"}  # both streamed; the caller resolves (json keeps "two")
    assert ex.seen == {"content": 2} and closes == {"content": 2}


@pytest.mark.parametrize(
    "whole",
    ['["content", {"content": "x"}]', '"{\\"content\\": \\"x\\"}"', "42", "  "],
)
def test_top_level_that_is_not_an_object_gives_nothing(whole: str) -> None:
    for fragments in every_cut(whole):
        assert extract(fragments)[0] == {}


def test_text_after_the_object_closes_is_ignored() -> None:
    text, _, ex = extract(['{"content": "a"} {"content": "b"}'])
    assert text == {"content": "a"} and ex.done


def test_invalid_escape_is_reported_and_passed_through() -> None:
    text, _, ex = extract(['{"content": "a\\x', 'b"}'])
    assert text == {"content": "a\\xb"}
    assert ex.error is not None and "\\x" in ex.error


def test_truncated_string_keeps_what_arrived() -> None:
    text, closes, ex = extract(['{"path": "a.py", "content": "partial te', "xt\\"])
    assert text == {"path": "a.py", "content": "partial text"}
    assert closes == {"path": 1}
    assert ex.in_field == "content" and not ex.done


def test_only_requested_fields_are_reported() -> None:
    whole = '{"patch": "p", "content": "c", "path": "x"}'
    assert extract([whole], ("patch",))[0] == {"patch": "p"}


# -- property: random objects, random serialisation, random cuts --
KEYS = st.sampled_from(["content", "path", "patch", "x", "Content", "content ", "pa\\th", 'c"x'])
CHARS = st.one_of(
    st.sampled_from(list('ab /"\\\n\r\t\b\f\x00\x1f{}[]:,_é中\u2028😀') + ["\ud83d", "\ude00"]),
    st.characters(),
)
TEXT = st.text(alphabet=CHARS, max_size=30)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), TEXT)
VALUES = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(KEYS | TEXT, children, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def serialized_objects(draw: st.DrawFn) -> tuple[str, list[str]]:
    obj = draw(st.dictionaries(KEYS | TEXT, VALUES, max_size=6))
    if draw(st.booleans()):
        obj["content"] = draw(TEXT)
    if draw(st.booleans()):
        obj["path"] = draw(TEXT)
    whole = json.dumps(
        obj,
        ensure_ascii=draw(st.booleans()),
        indent=draw(st.sampled_from([None, 0, 2, "\t"])),
        separators=draw(st.sampled_from([None, (",", ":"), (" , ", " : "), (",\n", ":\t")])),
        sort_keys=draw(st.booleans()),
    )
    if draw(st.booleans()):
        whole = whole.replace("/", "\\/")  # "/" only occurs inside strings: same value
    whole = draw(st.sampled_from(["", " ", "\n\t"])) + whole + draw(st.sampled_from(["", " \r\n"]))
    points = draw(st.lists(st.integers(0, len(whole)), max_size=12))
    return whole, cut(whole, points)


@settings(max_examples=120, deadline=None)
@given(serialized_objects())
def test_streamed_fields_equal_json_loads_for_any_cut(case: tuple[str, list[str]]) -> None:
    whole, fragments = case
    expected = json.loads(whole)
    text, closes, ex = extract(fragments)
    for field in FIELDS:
        value = expected.get(field)
        if isinstance(value, str):
            assert text.get(field, "") == value
            assert closes.get(field) == 1
        else:
            assert field not in text
    assert ex.done and ex.error is None


@settings(max_examples=60, deadline=None)
@given(serialized_objects())
def test_one_character_fragments_give_the_same_text(case: tuple[str, list[str]]) -> None:
    whole, fragments = case
    assert extract(list(whole))[0] == extract(fragments)[0]


# -- markers --
START, END = "__START_CONTENT__", "__END_CONTENT__"


def reference_strip(text: str, start: str = START, end: str = END) -> str:
    """An independent statement of the marker rules (reference/text-formats.md)."""
    m = re.match(r"[ \t\r\n]*" + re.escape(start) + r"(?:\r\n|\n|\r)?", text)
    if m is None:
        return text
    body = text[m.end() :]
    tail = re.search(re.escape(end) + r"[ \t\r\n]*\Z", body)
    return body[: tail.start()] if tail else body


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("__START_CONTENT__\nprint(1)\n__END_CONTENT__\n", "print(1)\n"),
        ("  \n__START_CONTENT__\r\nx\r\n__END_CONTENT__  ", "x\r\n"),
        ("__START_CONTENT__\n\nkeep one newline", "\nkeep one newline"),
        ("__START_CONTENT__x", "x"),
        ("__START_CONTENT__", ""),
        ("__START_CONTENT__\na __END_CONTENT__ b", "a __END_CONTENT__ b"),
        ("no markers __END_CONTENT__", "no markers __END_CONTENT__"),
        ("text then __START_CONTENT__\n", "text then __START_CONTENT__\n"),
        ("__START_CONT", "__START_CONT"),
        ("__START_CONTENT__\nends __END_CONT", "ends __END_CONT"),
    ],
)
def test_marker_rules(text: str, expected: str) -> None:
    assert reference_strip(text) == expected
    for fragments in every_cut(text):
        stripper = MarkerStripper(START, END)
        got = "".join(stripper.feed(f) for f in fragments) + stripper.finish(closed=True)
        assert got == expected, fragments


def test_unclosed_string_keeps_a_trailing_end_marker() -> None:
    stripper = MarkerStripper(START, END)
    got = stripper.feed("__START_CONTENT__\nabc\n__END_CONTENT__")
    assert got + stripper.finish(closed=False) == "abc\n__END_CONTENT__"


MARKER_TEXT = st.lists(
    st.sampled_from(
        [START, END, "__", "_", "__END", "_CONTENT__", "__START", " ", "\n", "\r", "\t", "x", "é"]
    ),
    max_size=10,
).map("".join)


@settings(max_examples=150, deadline=None)
@given(MARKER_TEXT, st.lists(st.integers(0, 200), max_size=8))
def test_marker_stripping_is_the_same_for_every_cut(text: str, points: list[int]) -> None:
    stripper = MarkerStripper(START, END)
    got = "".join(stripper.feed(f) for f in cut(text, points)) + stripper.finish(closed=True)
    assert got == reference_strip(text)
    assert strip_markers(text, START, END) == reference_strip(text)
