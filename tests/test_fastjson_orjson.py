"""``fastjson.loads`` parses with orjson where it can, and must give exactly what the standard
library path (``fastjson.stdlib_loads``) gives, for every input: the same value (types, key order,
float bits, lone surrogates), or the same error type and message."""

from __future__ import annotations

import json
import sys
from typing import Any

import msgspec
import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from streamtool.core.wire import fastjson

SETTINGS = settings(max_examples=60, deadline=None)

# every code point, lone surrogates included (JSON text may carry them as escapes)
ANY_CHAR = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, categories=None)
INTS = st.one_of(
    st.integers(),
    st.integers(min_value=-(2**65), max_value=2**65),
    st.sampled_from([2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 10**19, 10**30]),
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    INTS,
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(ANY_CHAR, max_size=12),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.text(ANY_CHAR, max_size=6), inner, max_size=4),
    ),
    max_leaves=20,
)
NUMBER_TEXT = st.from_regex(
    r"-?(0|[1-9][0-9]{0,40})(\.[0-9]{1,30})?([eE][+-]?[0-9]{1,4})?", fullmatch=True
)


def outcome(fn: Any, text: Any) -> tuple[Any, ...]:
    try:
        value = fn(text)
    except Exception as exc:  # the error itself is what is compared
        return ("error", type(exc), str(exc), exc.args)
    return ("value", repr(value))


def same(text: str | bytes) -> None:
    assert outcome(fastjson.loads, text) == outcome(fastjson.stdlib_loads, text)
    if isinstance(text, str):
        assert outcome(fastjson.loads_unchecked, text) == outcome(fastjson.stdlib_loads, text) or (
            # loads_unchecked skips the nesting limit only
            outcome(fastjson.stdlib_loads, text)[1] is fastjson.NestingError
        )


@SETTINGS
@given(VALUES, st.booleans(), st.booleans())
def test_dumped_values_parse_alike(value: Any, ascii_only: bool, as_bytes: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)  # NaN and Infinity as their constants
    same(text.encode("utf-8", "surrogatepass") if as_bytes else text)


@SETTINGS
@given(VALUES, st.integers(min_value=0, max_value=200), st.text(ANY_CHAR, max_size=3))
def test_damaged_text_fails_alike(value: Any, at: int, insert: str) -> None:
    text = json.dumps(value, ensure_ascii=False)
    at = min(at, len(text))
    same(text[:at] + insert + text[at:])
    same(text[:at])
    same((text[:at] + insert + text[at:]).encode("utf-8", "surrogatepass"))


@SETTINGS
@given(NUMBER_TEXT, st.sampled_from(["{}", '{{"n": {}}}', "[{}, 1]", " {} "]))
def test_number_literals_parse_alike(number: str, shape: str) -> None:
    same(shape.format(number))


@SETTINGS
@given(
    st.lists(st.sampled_from(["a", "b", "c"]), min_size=8, max_size=8),
    st.lists(VALUES, min_size=8, max_size=8),
)
def test_duplicate_keys_resolve_alike(keys: list[str], values: list[Any]) -> None:
    pairs = zip(keys, values, strict=True)
    members = ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in pairs)
    same("{" + members + "}")


@SETTINGS
@given(st.binary(max_size=40))
def test_arbitrary_bytes_fail_or_parse_alike(data: bytes) -> None:
    same(data)


@pytest.mark.parametrize(
    "text",
    [
        '{"n": 18446744073709551616}',  # 2**64: orjson would read a float
        "-9223372036854775809",
        "1e400",  # inf in the standard library, refused by orjson
        '{"a": NaN}',
        "[Infinity]",
        '"\\ud800"',  # a lone surrogate
        b"\xef\xbb\xbf{}",  # a BOM
        b'"\xff"',  # not UTF-8
        "[1,]",
        '{"a": 1} x',
        "[" * 250 + "]" * 250,  # deeper than MAX_DEPTH
        "[" * 1100 + "]" * 1100,  # deeper than either parser takes
        '"\\u0000 \x7f"',
        "\t{}\n",
    ],
)
def test_known_differences_of_orjson_are_hidden(text: str | bytes) -> None:
    same(text)


def test_values_beyond_64_bits_stay_integers() -> None:
    assert fastjson.loads('{"n": 18446744073709551616}') == {"n": 2**64}
    assert type(fastjson.loads("-9223372036854775809")) is int
    with pytest.raises(fastjson.NestingError, match="nested too deeply"):
        fastjson.loads(b"[" * 250 + b"]" * 250)
    with pytest.raises(fastjson.NotJSONConstant, match="NaN is not a JSON value"):
        fastjson.loads(b'{"a": NaN}')


# -- golden comparison: orjson's bytes stand in for the rendering ---------------------------------
def variants(value: Any) -> st.SearchStrategy[Any]:
    """Values near ``value``: itself, or with ints made floats or bools, or keys reordered."""

    def bend(v: Any, how: str) -> Any:
        if isinstance(v, dict):
            items = [(k, bend(x, how)) for k, x in v.items()]
            return dict(reversed(items) if how == "reorder" else items)
        if isinstance(v, list):
            return [bend(x, how) for x in v]
        if how == "float" and type(v) is int and abs(v) < 2**53:
            return float(v)
        if how == "bool" and type(v) is int and v in (0, 1):
            return bool(v)
        if how == "zero" and v == 0 and type(v) is float:
            return -v
        if how == "none" and type(v) is float and v != v:
            return None
        return v

    return st.sampled_from(["same", "float", "bool", "reorder", "zero", "none"]).map(
        lambda how: bend(value, how)
    )


@settings(max_examples=80, deadline=None)
@given(st.data(), VALUES)
def test_same_document_is_equal_rendering(data: st.DataObject, a: Any) -> None:
    from streamtool.core.outputs.golden import golden_diff, same_document
    from streamtool.core.outputs.transcript import render

    b = data.draw(st.one_of(variants(a), VALUES))
    equal = render(a) == render(b)
    if same_document(a, b):  # the shortcut never hides a difference
        assert equal
    assert (golden_diff(a, b, "golden", "now") is None) == equal
    if not equal:
        assert "--- golden" in (golden_diff(a, b, "golden", "now") or "")


@SETTINGS
@given(VALUES)
def test_same_document_takes_the_shortcut_for_a_copy(a: Any) -> None:
    from streamtool.core.outputs.golden import same_document

    try:
        orjson.dumps(a)
    except TypeError:  # beyond 64 bits, lone surrogates: the caller renders
        return
    text = json.dumps(a)
    copy = json.loads(text)
    assert same_document(a, copy) == (not has_nan(a))  # a copy's NaN equals nothing


def has_nan(v: Any) -> bool:
    if isinstance(v, dict):
        return any(has_nan(x) for x in v.values())
    if isinstance(v, list):
        return any(has_nan(x) for x in v)
    return isinstance(v, float) and v != v


@settings(max_examples=15, deadline=None)  # each example parses 256 KB four times
@given(VALUES, st.booleans(), st.booleans())
def test_large_documents_parse_alike(value: Any, damaged: bool, as_bytes: bool) -> None:
    """Bytes, and an ASCII ``str``, past ``FAST_MAX`` (where a ``str`` that is not ASCII goes to
    the standard library) are still parsed by msgspec: the same values and errors."""
    unit = json.dumps(value, ensure_ascii=not as_bytes)
    text = "[" + ", ".join([unit] * (fastjson.FAST_MAX // (len(unit) + 2) + 2)) + "]"
    if damaged:
        text = text[:-1]
    doc: str | bytes = text.encode("utf-8", "surrogatepass") if as_bytes else text
    assert len(doc) > fastjson.FAST_MAX
    assert as_bytes or text.isascii()
    same(doc)


def test_a_large_text_is_not_held_twice() -> None:
    """A large ``str`` that is not ASCII is not given to msgspec, which would keep a UTF-8 copy
    of it inside the string for as long as the string lives (``sys.getsizeof`` counts it);
    an ASCII one is, and has no copy to keep."""
    wide = '["' + "é" * fastjson.FAST_MAX + '"]'
    size = sys.getsizeof(wide)
    assert fastjson.loads(wide) == ["é" * fastjson.FAST_MAX]
    assert sys.getsizeof(wide) == size
    assert msgspec.json.decode(wide) and sys.getsizeof(wide) > size  # what it would have cost
    narrow = '["' + "e" * fastjson.FAST_MAX + '"]'
    size = sys.getsizeof(narrow)
    assert fastjson.loads(narrow) == ["e" * fastjson.FAST_MAX]
    assert sys.getsizeof(narrow) == size


def nested(depth: int, shapes: list[bool]) -> str:
    """``depth`` containers one inside the other, lists or objects by turns of ``shapes``."""
    opens = ['{"k":' if shapes[i % len(shapes)] else "[" for i in range(depth)]
    closes = ["}" if shapes[i % len(shapes)] else "]" for i in reversed(range(depth))]
    return "".join(opens) + "0" + "".join(closes)


BUDGET = fastjson.WALK_FIRST_BUDGET


@settings(max_examples=40, deadline=None)
@given(
    st.one_of(
        st.integers(1, fastjson.MAX_DEPTH + 3),
        st.integers(fastjson.MAX_DEPTH - 4, fastjson.MAX_DEPTH + 1),  # at the limit
    ),
    st.lists(st.booleans(), min_size=1, max_size=3),
    st.one_of(
        st.integers(0, 2 * BUDGET),
        st.sampled_from([BUDGET - 2, BUDGET - 1, BUDGET, BUDGET + 1, 2 * BUDGET]),
    ),
    st.booleans(),
    st.booleans(),
)
# the deep one walked after the budget is spent, one level within the limit and one beyond
@example(fastjson.MAX_DEPTH - 2, [False], 2 * BUDGET, True, True)
@example(fastjson.MAX_DEPTH - 1, [False], 2 * BUDGET, True, True)
@example(fastjson.MAX_DEPTH - 1, [True, False], BUDGET, True, True)
def test_a_long_document_is_refused_exactly_when_too_deep(
    depth: int, shapes: list[bool], siblings: int, long: bool, deep_first: bool
) -> None:
    """The nesting limit holds for documents long enough that their value is walked before
    their brackets are counted, whether the walk ends within its budget of containers (a long
    string beside a few) or not (as many empty containers as the budget, or twice it, beside
    the deep one, before it or after it)."""
    parts = [nested(depth, shapes), ",".join(["[]"] * siblings) or "0"]
    if not deep_first:
        parts.reverse()
    pad = "x" * (fastjson.WALK_FIRST + 1 if long else 10)
    text = '{"pad": "' + pad + '", "v": [' + ",".join(parts) + "]}"
    deepest = depth + 2  # inside the document's object and its list
    if deepest > fastjson.MAX_DEPTH:
        with pytest.raises(fastjson.NestingError):
            fastjson.loads(text)
        with pytest.raises(fastjson.NestingError):
            fastjson.loads(text.encode())
    else:
        assert fastjson.loads(text) == json.loads(text)
    same(text)
