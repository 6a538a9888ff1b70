"""JSON text produced piece by piece, for outputs too large to hold twice. Sans-IO.

:func:`iter_json` yields exactly the text of ``json.dumps(value, ensure_ascii=False,
indent=indent)``, in pieces: the whole text is never built, and a long string (a file a tool call
wrote, the text of a long answer) is escaped a slice at a time instead of as one more copy of it.
The standard library's encoder, given an indent, builds each string's escaped form whole and then
joins it to the indentation before writing: two extra copies of the longest string, and a third
when the text stream encodes it.
"""

from __future__ import annotations

from collections.abc import Iterator
from json.encoder import encode_basestring
from typing import Any

from ..model.textbuf import TextPieces

SLICE = 1 << 16  # characters of a long string escaped at a time

_INF = float("inf")


def iter_json(value: Any, indent: int | None = None) -> Iterator[str]:
    """The text of ``json.dumps(value, ensure_ascii=False, indent=indent)``, in pieces."""
    return _value(value, None if indent is None else " " * indent, 0)


def _string(text: str) -> Iterator[str]:
    if len(text) <= SLICE:
        yield encode_basestring(text)
        return
    # escaping maps each character on its own: slices escape to the slices of the whole
    yield '"'
    for start in range(0, len(text), SLICE):
        yield encode_basestring(text[start : start + SLICE])[1:-1]
    yield '"'


def _float(number: float) -> str:
    if number != number:
        return "NaN"
    if number == _INF:
        return "Infinity"
    if number == -_INF:
        return "-Infinity"
    return float.__repr__(number)


def _pieces(pieces: TextPieces) -> Iterator[str]:
    yield '"'
    for piece in pieces:
        for start in range(0, len(piece), SLICE):
            yield encode_basestring(piece[start : start + SLICE])[1:-1]
    yield '"'


def _value(value: Any, indent: str | None, level: int) -> Iterator[str]:
    if isinstance(value, str):
        yield from _string(value)
    elif type(value) is TextPieces:
        yield from _pieces(value)
    elif isinstance(value, (list, tuple)):
        yield from _array(value, indent, level)
    elif isinstance(value, dict):
        yield from _object(value, indent, level)
    else:
        text = _scalar(value)
        if text is None:
            raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")
        yield text


def _scalar(value: Any) -> str | None:
    """The JSON text of null, a boolean or a number (``None`` for any other value)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _float(value)
    return None


def _members(
    brackets: str, members: Iterator[Iterator[str]], indent: str | None, level: int
) -> Iterator[str]:
    """A non-empty array or object: ``brackets`` ("[]" or "{}") around the members' pieces,
    laid out as ``json.dumps`` lays them out."""
    if indent is None:
        separator, closing = ", ", brackets[1]
        yield brackets[0]
    else:
        newline = "\n" + indent * (level + 1)
        separator, closing = "," + newline, "\n" + indent * level + brackets[1]
        yield brackets[0] + newline
    first = True
    for member in members:
        if first:
            first = False
        else:
            yield separator
        yield from member
    yield closing


def _array(items: list[Any] | tuple[Any, ...], indent: str | None, level: int) -> Iterator[str]:
    if not items:
        yield "[]"
        return
    inner = level + 1
    yield from _members("[]", (_value(item, indent, inner) for item in items), indent, level)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    text = _scalar(key)
    if text is not None:
        return text
    raise TypeError(f"keys must be str, int, float, bool or None, not {key.__class__.__name__}")


def _object(obj: dict[Any, Any], indent: str | None, level: int) -> Iterator[str]:
    if not obj:
        yield "{}"
        return
    inner = level + 1
    yield from _members("{}", (_pair(k, v, indent, inner) for k, v in obj.items()), indent, level)


def _pair(key: Any, item: Any, indent: str | None, level: int) -> Iterator[str]:
    yield from _string(_key(key))
    yield ": "
    yield from _value(item, indent, level)
