"""``loads``: ``json.loads`` without its two Python wrapper layers (the hot path of replay), and
with a nesting limit and without the non-JSON constants ``NaN`` and ``Infinity``.

The C scanner does the parsing; any input it does not take whole (leading whitespace, trailing
data, invalid JSON) is handed to ``json.loads``, so results and error messages are identical.

JSON nested deeper than :data:`MAX_DEPTH` is refused with a ``json.JSONDecodeError`` ("nested too
deeply"), like any other text that is not usable JSON: the standard decoder would raise
``RecursionError`` near a thousand levels, and everything downstream (rendering, golden files,
diffs) walks values recursively. Counting brackets first keeps the check off the hot path.
"""

from __future__ import annotations

import json
import json.scanner
from typing import Any

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

    def __init__(self, doc: str) -> None:
        message = f"nested too deeply (more than {MAX_DEPTH} levels)"
        super().__init__(message, doc, 0)
        self.args = (message,)  # no position: the whole value is the problem

    def __str__(self) -> str:
        return str(self.msg)


def loads(text: str | bytes | bytearray, **kwargs: Any) -> Any:
    if not isinstance(text, str):  # as json.loads: UTF-8/16/32 bytes
        text = bytes(text).decode(json.detect_encoding(text), "surrogatepass")
    if kwargs:
        try:
            obj = json.loads(text, parse_constant=_constant, **kwargs)
        except RecursionError:
            raise NestingError(text) from None
    else:
        obj = loads_unchecked(text)
    check_depth(text, obj)
    return obj


def loads_unchecked(text: str) -> Any:
    """:func:`loads` of a ``str`` without the nesting limit, for a caller that keeps no nested
    value of the result (a recording's chunk record keeps two scalars) or calls
    :func:`check_depth` itself. Nesting that the decoder itself cannot take still raises
    :class:`NestingError`."""
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


def check_depth(text: str, obj: Any) -> None:
    """Raise :class:`NestingError` when ``obj`` (parsed from ``text``) nests deeper than
    :data:`MAX_DEPTH`. JSON that deep holds more than ``MAX_DEPTH`` opening brackets, and as
    many closing ones: shorter text needs no look."""
    if (
        len(text) > 2 * MAX_DEPTH
        and text.count("[") + text.count("{") > MAX_DEPTH
        and too_deep(obj)
    ):
        raise NestingError(text)


def too_deep(obj: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether a parsed value nests deeper than ``limit`` (no recursion)."""
    stack = [(obj, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            value = value.values()
        elif not isinstance(value, list):
            continue
        if depth > limit:
            return True
        stack.extend((v, depth + 1) for v in value if isinstance(v, dict | list))
    return False
