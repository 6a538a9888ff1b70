"""Tool-call arguments too long to hold twice, parsed from the blocks they are kept in. Sans-IO.

A call that writes a whole file brings its arguments as one JSON object holding one long string.
Parsed the usual way, the argument text is joined into one string (the blocks and the joined
text are held at once) and then decoded (the text and the value are held at once): twice the
size of the file at each step. For a writer that streams the value
(:func:`~streamtool.core.outputs.json_text.iter_json`), :func:`parse_blocks` gives the value
that :func:`~streamtool.core.handlers.api_tool_call.parse_arguments` gives for the joined text,
except that each long string in it is a :class:`~streamtool.core.model.textbuf.TextPieces` of its
decoded text, and it decodes the long strings a block at a time, letting each block of argument
text go once it is decoded: the text is held about once.

How: the string literals are found in the blocks and checked by decoding them (the standard
decoder finds where each ends; one that runs across blocks is decoded slice by slice, each slice
cut where no escape sequence can straddle the cut), and the long ones are replaced by short
placeholders; that skeleton is parsed as any argument text is. The arguments parse exactly
when the skeleton does, to the same value but for the placeholders (a JSON parser reads the
same tokens up to each literal, and a valid literal leaves it where the placeholder does), so
anything else (an error, a top-level string, a placeholder text found in the arguments
themselves, a long string as a key) is left to the usual parse of the joined text: the results
and the error messages stay those of ``json.loads``. Only once every check has passed are the
long literals decoded for good, the blocks let go as they are read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ..model.textbuf import TextPieces

LONG = 1 << 16  # a string literal at least this long (its JSON text) is kept in pieces
CUT = 1 << 16  # characters of a literal decoded at a time
SHORT = 1 << 12  # a literal first tried within this many characters
MAX_LITERALS = 10_000  # more string literals than this: the usual parse is as good
ESCAPE_REACH = 12  # an escape sequence (a surrogate pair of \uXXXX) is at most this long

_decoder = json.JSONDecoder()


class _NotHere:
    """The usual parse of the joined text must read these arguments."""

    __slots__ = ()


NOT_HERE = _NotHere()


def parse_blocks(blocks: list[str], parse: Any) -> Any:
    """The arguments whose text is ``"".join(blocks)``, each long string as ``TextPieces``, or
    :data:`NOT_HERE` (``blocks`` then untouched) when ``parse`` (``parse_arguments``) of the
    joined text must read them. ``parse(text) -> (value, error)``. On success every item of
    ``blocks`` has been replaced by ``""`` (the caller holding the list no longer holds the
    text)."""
    blocks[:] = [b for b in blocks if b]
    spans = _long_literals(blocks)
    if not spans:
        return NOT_HERE
    marks = _marks(blocks, len(spans))
    if marks is None:
        return NOT_HERE
    value, error = parse(_skeleton(blocks, spans, marks))
    if error is not None or not isinstance(value, dict | list):
        return NOT_HERE
    places = _places(value, marks)
    if places is None:
        return NOT_HERE
    # every check passed: decode for good, letting each block go once it is read
    for span, (container, key) in zip(spans, places, strict=True):
        container[key] = TextPieces(_decoded(blocks, span, free=True))
    blocks[:] = [""] * len(blocks)
    return value


Span = tuple[int, int, int, int]  # block and offset of the opening quote; of the closing one


def _long_literals(blocks: list[str]) -> list[Span] | None:
    """Every string literal at least :data:`LONG` long, in order, each checked to be a JSON
    string (decoded once); None when the text is not worth it (a string that is not valid or
    not terminated, too many strings)."""
    spans: list[Span] = []
    raw_decode = _decoder.raw_decode
    n = len(blocks)
    i, pos = 0, 0
    literals = 0
    while i < n:
        block = blocks[i]
        start = block.find('"', pos)
        if start < 0:
            i, pos = i + 1, 0
            continue
        literals += 1
        if literals > MAX_LITERALS:
            return None
        try:
            # a short literal: decoded from a short slice (a long one is not decoded past
            # this slice twice, and the rest of the block is not copied for a short one)
            _, after = raw_decode(block[start : start + SHORT])
            j, end = i, start + after - 1
            length = after
        except ValueError:
            closing = _closing_quote(blocks, i, start)  # long, across blocks, or not valid
            if closing is None:
                return None
            j, end, length = closing
        if length >= LONG:
            spans.append((i, start, j, end))
        i, pos = j, end + 1
    return spans


def _closing_quote(blocks: list[str], i: int, start: int) -> tuple[int, int, int] | None:
    """The block and offset of the closing quote of the literal opened at ``start`` in block
    ``i``, and the literal's length, checked a slice at a time; None when it is not a valid
    JSON string (or has no end)."""
    raw_decode = _decoder.raw_decode
    carry = ""
    read = 1  # characters of the literal before ``carry``
    last_block = len(blocks) - 1
    for k in range(i, last_block + 1):
        block = blocks[k]
        pos = start + 1 if k == i else 0
        while pos < len(block):
            window = carry + block[pos : pos + CUT]
            pos += CUT
            if k == last_block and pos >= len(block):
                cut = len(window)
            else:
                cut = _cut(window, len(window))
            text, carry = window[:cut], window[cut:]
            del window
            if not text:
                continue
            try:
                json.loads('"' + text + '"')  # no closing quote in it (else "Extra data")
            except ValueError:
                try:
                    _, after = raw_decode('"' + text)
                except ValueError:
                    return None
                # the closing quote is at ``after - 2`` in ``text``: which block holds it
                at = after - 2 - len(text) - len(carry)  # from ``pos`` in block k (< 0)
                offset = min(pos, len(block)) + at
                length = read + after - 1
                while offset < 0:
                    k -= 1
                    offset += len(blocks[k])
                return k, offset, length
            read += len(text)
    return None


def _cut(text: str, limit: int) -> int:
    """A place at most ``limit`` in ``text`` where no escape sequence is cut (nothing that may
    belong to one within :data:`ESCAPE_REACH` before it), or 0."""
    p = limit
    while p > 0:
        back = text.rfind("\\", max(0, p - ESCAPE_REACH), p)
        if back < 0:
            return p
        p = back
    return 0


def _bodies(blocks: list[str], span: Span, free: bool) -> Iterator[tuple[str, bool]]:
    """The literal's body block by block, each with whether it is the last (``free``: each
    block but the last let go once read)."""
    i, start, j, end = span
    for k in range(i, j + 1):
        block = blocks[k]
        lo = start + 1 if k == i else 0
        hi = end if k == j else len(block)
        if free and k < j:
            blocks[k] = ""
        body = block[lo:hi] if (lo or hi < len(block)) else block
        del block
        yield body, k == j


def _decoded(blocks: list[str], span: Span, free: bool) -> Iterator[str]:
    """The decoded text of a literal's body, a slice at a time; raises ``ValueError`` where the
    body is not a JSON string's."""
    carry = ""
    for body, last in _bodies(blocks, span, free):
        pos = 0
        size = len(body)
        while pos < size:
            window = carry + body[pos : pos + CUT]
            pos += CUT
            if last and pos >= size:
                cut = len(window)  # the end of the literal: nothing straddles it
            else:
                cut = _cut(window, len(window))
            text, carry = window[:cut], window[cut:]
            del window
            if text:
                yield _decode(text)
        del body
    if carry:
        yield _decode(carry)


def _decode(body: str) -> str:
    text = json.loads('"' + body + '"')  # a quote inside the body: "Extra data"
    assert type(text) is str
    return text


def _marks(blocks: list[str], count: int) -> list[str] | None:
    """Placeholder texts (JSON string literals) not found in the argument text."""
    for salt in range(8):
        stem = f"\\u0000streamtool-pieces-{salt}-"
        if not any(stem in block for block in blocks):
            return [f'"{stem}{n}\\u0000"' for n in range(count)]
    return None


def _skeleton(blocks: list[str], spans: list[Span], marks: list[str]) -> str:
    parts: list[str] = []
    i, pos = 0, 0
    for (si, start, sj, end), mark in zip(spans, marks, strict=True):
        while i < si:
            parts.append(blocks[i][pos:])
            i, pos = i + 1, 0
        parts.append(blocks[i][pos:start])
        parts.append(mark)
        i, pos = sj, end + 1
    while i < len(blocks):
        parts.append(blocks[i][pos:])
        i, pos = i + 1, 0
    return "".join(parts)


def _places(value: dict[Any, Any] | list[Any], marks: list[str]) -> list[tuple[Any, Any]] | None:
    """Where each placeholder is (container, key or index), in order; None unless each is found
    exactly once, as a value (not as a key)."""
    wanted = {mark[1:-1].replace("\\u0000", "\x00"): n for n, mark in enumerate(marks)}
    found: list[tuple[Any, Any] | None] = [None] * len(marks)
    stack: list[Any] = [value]
    while stack:
        container = stack.pop()
        items = container.items() if isinstance(container, dict) else enumerate(container)
        for key, item in items:
            if isinstance(key, str) and key in wanted:
                return None
            if isinstance(item, str):
                n = wanted.get(item)
                if n is not None:
                    if found[n] is not None:
                        return None
                    found[n] = (container, key)
            elif isinstance(item, dict | list):
                stack.append(item)
    if any(place is None for place in found):
        return None
    return [place for place in found if place is not None]
