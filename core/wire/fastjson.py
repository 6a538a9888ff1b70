"""``loads``: ``json.loads``'s results and errors at msgspec's speed (the hot path of replay),
with a nesting limit and without the non-JSON constants ``NaN`` and ``Infinity``.

msgspec parses (``str`` as it is, no encoding first; integers of any length exactly, as the
standard library reads them); whatever it refuses (invalid JSON, ``NaN``, numbers beyond a double,
integers longer than the standard library takes, lone surrogates, other encodings than UTF-8) is
handed to the standard library's C scanner, and from there to ``json.loads``, so results and error
messages are those of ``json.loads`` (with ``parse_constant`` refusing the constants). A ``str``
larger than :data:`FAST_MAX` goes to the standard library too (msgspec keeps the UTF-8 copy of a
text that is not ASCII beside it: a whole file written by a tool call would be held twice); an
ASCII ``str`` of any size is msgspec's (its UTF-8 is its own text: no copy).
Duplicate keys: both keep the last value, at the first key's place.

JSON nested deeper than :data:`MAX_DEPTH` is refused with a ``json.JSONDecodeError`` ("nested too
deeply"), like any other text that is not usable JSON: the standard decoder would raise
``RecursionError`` near a thousand levels, and everything downstream (rendering, golden files,
diffs) walks values recursively. Counting brackets first keeps the check off the hot path.
"""

from __future__ import annotations

import json
import json.scanner
from typing import Any

import msgspec

MAX_DEPTH = 200


class NotJSONConstant(json.JSONDecodeError):
    """``NaN``, ``Infinity`` or ``-Infinity``: Python reads them, JSON (RFC 8259) has no such
    values, and a strict JSON reader of our output would choke on them."""

    def __init__(self, name: str) -> None:
        message = f"{name} is not a JSON value"
        super().__init__(message, name, 0)
        self.args = (message,)

    def __str__(self) -> str:
        return str(self.msg)


def _constant(name: str) -> Any:
    raise NotJSONConstant(name)


_decoder = json.JSONDecoder(parse_constant=_constant)
_scan = json.scanner.make_scanner(_decoder)  # type: ignore[arg-type]
_slow = _decoder.decode


class NestingError(json.JSONDecodeError):
    """JSON nested deeper than :data:`MAX_DEPTH` (a ``ValueError``, as any unusable JSON)."""

    def __init__(self, doc: str | bytes | bytearray) -> None:
        message = f"nested too deeply (more than {MAX_DEPTH} levels)"
        if not isinstance(doc, str):
            doc = bytes(doc).decode("utf-8", "replace")
        super().__init__(message, doc, 0)
        self.args = (message,)  # no position: the whole value is the problem

    def __str__(self) -> str:
        return str(self.msg)


def error_text(exc: ValueError) -> str:
    """Why a text is not JSON, in a phrase that ends (the caller names the line): ``Expecting
    value``, and where the message points at a place, the place: ``Invalid control character at
    column 44``, ``Unterminated string starting at column 9``."""
    if isinstance(exc, json.JSONDecodeError) and exc.msg.endswith(" at"):
        line = "" if exc.lineno == 1 else f"line {exc.lineno} "
        return f"{exc.msg} {line}column {exc.colno}"
    if isinstance(exc, json.JSONDecodeError):
        return str(exc.msg)
    return str(exc.args[0]).split(": line ")[0] if exc.args else type(exc).__name__


# a larger ``str`` that is not ASCII goes to the standard library, which needs about its size
# (msgspec adds the UTF-8 copy of a text that is not ASCII, kept as long as the text; an ASCII
# text is its own UTF-8, and ``str.isascii`` reads a flag, not the text). Bytes of any size go to
# msgspec, which reads them as they are where the standard library decodes them into a copy;
# it also parses a large document in three quarters of the time (a 9.5 MB request body: 57
# against 76 ms, one call holding the interpreter's lock: what a proxy's other streams wait).
# A recording's line (:func:`loads_utf8_unchecked`) keeps the limit, as the replay's peak
# memory was measured with it.
FAST_MAX = 256 * 1024
_fast = msgspec.json.Decoder().decode
# what msgspec raises for what it refuses: invalid or unusual JSON (DecodeError, ValidationError
# for numbers out of range), a str holding a lone surrogate (no UTF-8 of it) or bytes that are not
# UTF-8 (UnicodeError), deep nesting
_Refused = (msgspec.DecodeError, UnicodeError, RecursionError)


def loads(text: str | bytes | bytearray, **kwargs: Any) -> Any:
    if kwargs:
        return stdlib_loads(text, **kwargs)
    obj = loads_unchecked(text)
    check_depth(text, obj)
    return obj


def stdlib_loads(text: str | bytes | bytearray, **kwargs: Any) -> Any:
    """:func:`loads` through the standard library alone (the reference msgspec's path keeps to)."""
    if not isinstance(text, str):  # as json.loads: UTF-8/16/32 bytes
        text = bytes(text).decode(json.detect_encoding(text), "surrogatepass")
    if kwargs:
        try:
            obj = json.loads(text, parse_constant=_constant, **kwargs)
        except RecursionError:
            raise NestingError(text) from None
    else:
        obj = _stdlib_unchecked(text)
    check_depth(text, obj)
    return obj


def loads_unchecked(text: str | bytes | bytearray) -> Any:
    """:func:`loads` without the nesting limit, for a caller that keeps no nested value of the
    result (a recording's chunk record keeps two scalars) or calls :func:`check_depth` itself.
    Nesting that the decoder itself cannot take still raises :class:`NestingError`."""
    if len(text) <= FAST_MAX or not isinstance(text, str) or text.isascii():
        try:
            return _fast(text)
        except _Refused:
            pass
    return stdlib_loads_unchecked(text)


def stdlib_loads_unchecked(text: str | bytes | bytearray) -> Any:
    """:func:`loads_unchecked` through the standard library alone."""
    if not isinstance(text, str):
        text = bytes(text).decode(json.detect_encoding(text), "surrogatepass")
    return _stdlib_unchecked(text)


def loads_utf8_unchecked(data: bytes) -> Any:
    """:func:`loads_unchecked` of bytes that must be UTF-8 text (a recording's line): bytes
    that are not raise ``UnicodeDecodeError``, whatever encoding ``json.loads`` would guess."""
    if len(data) <= FAST_MAX:
        try:
            return _fast(data)
        except _Refused:
            pass
    return _stdlib_unchecked(data.decode("utf-8"))


def _stdlib_unchecked(text: str) -> Any:
    try:
        try:
            obj, end = _scan(text, 0)
        except StopIteration:
            return _slow(text)
        if end != len(text) and text[end:].strip():
            return _slow(text)  # raises "Extra data" with the usual message
    except RecursionError:
        raise NestingError(text) from None
    return obj


def too_deep_text(text: str | bytes | bytearray) -> bool:
    """Whether ``text`` holds more than :data:`MAX_DEPTH` opening brackets."""
    if isinstance(text, str):
        return text.count("[") + text.count("{") > MAX_DEPTH
    return text.count(b"[") + text.count(b"{") > MAX_DEPTH


# text longer than this: the value is walked first, as far as WALK_FIRST_BUDGET containers (a
# long document is mostly long strings: a handful of containers, where counting the brackets of
# the text would read all of it, twice); only a value with more containers has its brackets
# counted before the whole walk
WALK_FIRST = 64 * 1024
WALK_FIRST_BUDGET = 1_000


def check_depth(text: str | bytes | bytearray, obj: Any) -> None:
    """Raise :class:`NestingError` when ``obj`` (parsed from ``text``) nests deeper than
    :data:`MAX_DEPTH`. JSON that deep holds more than ``MAX_DEPTH`` opening brackets, and as
    many closing ones: shorter text needs no look."""
    size = len(text)
    if size <= 2 * MAX_DEPTH:
        return
    if size > WALK_FIRST:
        deep = too_deep(obj, budget=WALK_FIRST_BUDGET)
        if deep is not None:
            if deep:
                raise NestingError(text)
            return
    if too_deep_text(text) and too_deep(obj):
        raise NestingError(text)


def too_deep(obj: Any, limit: int = MAX_DEPTH, budget: int | None = None) -> bool | None:
    """Whether a parsed value nests deeper than ``limit`` (no recursion); ``None`` when it holds
    more than ``budget`` containers (the walk stops there)."""
    stack = [(obj, 1)]
    left = -1 if budget is None else budget
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            value = value.values()
        elif not isinstance(value, list):
            continue
        if depth > limit:
            return True
        if left == 0:
            return None
        left -= 1
        stack.extend((v, depth + 1) for v in value if isinstance(v, dict | list))
    return False


def canonical(value: Any) -> str:
    """One string per JSON value: equal values, equal strings, whatever the key order (how a
    request body is compared and keyed)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
