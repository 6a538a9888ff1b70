"""Incremental extraction of top-level JSON string fields from argument fragments. Sans-IO.

A tool call's arguments arrive as fragments of one JSON object, cut anywhere. To show a file being
written, the handler needs the *decoded* text of a few top-level string fields (``content`` or
``patch``, and ``path``) while they stream, long before the object is whole.

:class:`JsonStringFields` is fed the fragments in order and returns, per fragment, the newly
decoded characters of the requested fields as ``(field, text, closed)`` triples; ``closed`` says
the field's string has ended. It understands every JSON escape (``\\uXXXX`` surrogate pairs and
escapes cut between fragments included), keys in any order and written with escapes, whitespace
anywhere JSON allows it, and ignores other keys, non-string values and nested objects or arrays
that reuse the field names. It does not validate: the caller parses the whole text at the end.

The work is linear in the input: each fragment is scanned once with compiled regular expressions
and ``str.find``; runs of string content are decoded in bulk by the C string scanner of the
``json`` module; only text held back at a fragment boundary (at most an escape) is looked at twice.

:class:`MarkerStripper` removes the ``__START_CONTENT__`` / ``__END_CONTENT__`` (or ``_PATCH_``)
markers from a decoded string as it streams, wherever the pieces cut them (the rules of
reference/text-formats.md, with the end of the JSON string in place of ``</arg>``).
"""

from __future__ import annotations

import json.decoder
import re
from collections.abc import Callable, Iterable

from .marker_scan import literal_hold

# the json module's C string scanner: (decoded text, index after the closing quote)
_ScanString = Callable[[str, int, bool], tuple[str, int]]
_scanstring: _ScanString = json.decoder.scanstring  # type: ignore[attr-defined]

# outside strings only these characters matter; everything else (whitespace, numbers,
# true/false/null) is skipped in bulk
_STRUCT = re.compile(r'["{}\[\]:,]')
# the body of a string we do not decode (any escape pair is skipped); stops before the closing
# quote, or before a backslash that ends the fragment
_SKIP = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)
# the decodable body of a target string: complete, valid escapes only; stops before the closing
# quote, before an escape that is cut (or invalid), or at the end of the fragment
_VALUE = re.compile(r'[^"\\]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\]*)*')
# an escape cut by the end of a fragment
_PARTIAL_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{0,3})?")

FieldPiece = tuple[str, str, bool]

# parser states
_OUT, _KEY, _VALUE_STR, _SKIP_STR = 0, 1, 2, 3
# what the top-level object expects next
_EXPECT_KEY, _EXPECT_COLON, _EXPECT_VALUE, _EXPECT_COMMA = 0, 1, 2, 3


def _is_high_surrogate(ch: str) -> bool:
    return "\ud800" <= ch <= "\udbff"


class JsonStringFields:
    """Streams the decoded values of top-level string fields of one JSON object.

    ``feed(fragment)`` returns ``(field, text, closed)`` triples in input order: ``text`` is the
    newly decoded part of the field's string (possibly empty when only ``closed`` is news).
    ``seen[field]`` counts how often the field's string value began (a count above one means a
    duplicate key, which ``json.loads`` resolves to the last value). ``error`` notes the first
    invalid escape met (its two characters are passed through as they are). ``done`` is set once
    the top-level object has closed; later text is ignored. With ``every_string=True`` the
    strings of all other top-level keys are decoded and returned as well (a file tool's ``path``
    and its other string arguments, shown while the file streams).
    """

    __slots__ = (
        "fields",
        "every_string",
        "seen",
        "error",
        "done",
        "_state",
        "_depth",
        "_top_object",
        "_expect",
        "_key",
        "_key_parts",
        "_field",
        "_pending",
        "_skip_escape",
    )

    def __init__(self, fields: Iterable[str], *, every_string: bool = False) -> None:
        self.fields = frozenset(fields)
        self.every_string = every_string
        self.seen: dict[str, int] = {}
        self.error: str | None = None
        self.done = False
        self._state = _OUT
        self._depth = 0
        self._top_object: bool | None = None
        self._expect = _EXPECT_KEY
        self._key: str | None = None  # the pending top-level key, when it is a wanted field
        self._key_parts: list[str] = []
        self._field = ""  # the field whose string is being decoded
        self._pending = ""  # raw text of a cut escape (or a high surrogate awaiting its pair)
        self._skip_escape = False  # a skipped string or key ended a fragment with a backslash

    @property
    def in_field(self) -> str | None:
        """The field whose string value is open, if any."""
        return self._field if self._state == _VALUE_STR else None

    def feed(self, fragment: str) -> list[FieldPiece]:
        out: list[FieldPiece] = []
        if self.done or not fragment:
            return out
        pos = 0
        n = len(fragment)
        state = self._state
        if state == _VALUE_STR and not self._pending:
            # fast path: the whole fragment lies inside the string and ends on a whole
            # character (no closing quote, no cut escape, no high surrogate awaiting its pair)
            if "\\" not in fragment:
                if '"' not in fragment:
                    return [(self._field, fragment, False)]
            else:
                try:
                    text, end = _scanstring(fragment + '"', 0, False)
                except ValueError:  # a cut or invalid escape: the general path says which
                    end = -1
                if end == n + 1 and (
                    not _is_high_surrogate(text[-1]) or _is_high_surrogate(fragment[-1])
                ):
                    return [(self._field, text, False)]
        if state == _VALUE_STR and self._pending:
            fragment = self._pending + fragment
            n = len(fragment)
            self._pending = ""
        elif self._skip_escape:
            # the first character is escaped by the backslash that ended the last fragment
            self._skip_escape = False
            if state == _KEY:
                self._key_parts.append(fragment[0])
            pos = 1
        while pos < n:
            if state == _OUT:
                m = _STRUCT.search(fragment, pos)
                if m is None:
                    break
                pos = m.end()
                state = self._structural(fragment[m.start()])
                if self.done:
                    break
            elif state == _VALUE_STR:
                pos, state = self._value(fragment, pos, n, out)
            else:
                end = _SKIP.match(fragment, pos).end()  # type: ignore[union-attr]
                if end < n and fragment[end] == '"':
                    if state == _KEY:
                        self._key_parts.append(fragment[pos:end])
                        self._end_key()
                    state = _OUT
                    pos = end + 1
                else:
                    if state == _KEY:
                        self._key_parts.append(fragment[pos:end])
                    if end < n:  # a lone backslash ends the fragment
                        if state == _KEY:
                            self._key_parts.append("\\")
                        self._skip_escape = True
                    pos = n
        self._state = state
        return out

    # -- outside strings -------------------------------------------------------------------
    def _structural(self, ch: str) -> int:
        depth = self._depth
        if ch == '"':
            if depth == 1 and self._top_object:
                expect = self._expect
                if expect == _EXPECT_KEY:
                    self._key_parts = []
                    return _KEY
                if expect == _EXPECT_VALUE:
                    self._expect = _EXPECT_COMMA
                    key = self._key
                    if key is not None:
                        self._key = None
                        self._field = key
                        self.seen[key] = self.seen.get(key, 0) + 1
                        return _VALUE_STR
            elif depth == 0 and self._top_object is None:
                self._top_object = False  # a top-level string: no fields to find
            return _SKIP_STR
        if ch == "{" or ch == "[":
            if depth == 0:
                if self._top_object is None:
                    self._top_object = ch == "{"
                    self._expect = _EXPECT_KEY
                else:
                    self._top_object = False
            elif depth == 1 and self._expect == _EXPECT_VALUE:
                self._expect = _EXPECT_COMMA
                self._key = None
            self._depth = depth + 1
        elif ch == "}" or ch == "]":
            if depth > 0:
                self._depth = depth - 1
                if depth == 1:
                    self.done = True
        elif depth == 1:
            if ch == ":":
                if self._expect == _EXPECT_COLON:
                    self._expect = _EXPECT_VALUE
            else:  # ","
                self._expect = _EXPECT_KEY
                self._key = None
        return _OUT

    def _end_key(self) -> None:
        raw = "".join(self._key_parts)
        self._key_parts = []
        key: str | None = raw
        if "\\" in raw:
            try:
                key = _scanstring(raw + '"', 0, False)[0]
            except ValueError:
                key = None
        self._key = key if key is not None and (self.every_string or key in self.fields) else None
        self._expect = _EXPECT_COLON

    # -- inside a wanted string ------------------------------------------------------------
    def _value(self, fragment: str, pos: int, n: int, out: list[FieldPiece]) -> tuple[int, int]:
        end = _VALUE.match(fragment, pos).end()  # type: ignore[union-attr]
        field = self._field
        if end < n and fragment[end] == '"':
            if end == pos:
                text = ""
            elif "\\" in fragment[pos:end]:
                text = _scanstring(fragment, pos, False)[0]
            else:
                text = fragment[pos:end]
            out.append((field, text, True))
            return end + 1, _OUT
        run = fragment[pos:end]
        hold = ""  # raw text kept for the next fragment
        invalid = ""  # an invalid escape, passed through as it is
        next_pos = n
        if end < n:  # stopped at a backslash: an escape cut by the fragment's end, or invalid
            rest = fragment[end:]
            if len(rest) < 6 and _PARTIAL_ESCAPE.fullmatch(rest):
                hold = rest
            else:
                invalid = fragment[end : end + 2]
                next_pos = end + 2
                if self.error is None:
                    self.error = f"invalid escape {invalid!r} in the {field!r} string"
        text = run
        if "\\" in run:
            text = _scanstring(run + '"', 0, False)[0]
            if not invalid and _is_high_surrogate(text[-1]) and not _is_high_surrogate(run[-1]):
                # the run ends with a \\uD8xx escape whose low half may come next
                text = text[:-1]
                hold = run[-6:] + hold
        text += invalid
        self._pending = hold
        if text:
            out.append((field, text, False))
        return next_pos, _VALUE_STR


class MarkerStripper:
    """Removes start/end markers from a string that arrives in pieces.

    Marker mode starts when the string begins (after optional whitespace) with ``start``; the
    marker, the whitespace before it and one line break right after it are dropped. In marker
    mode ``end`` followed only by whitespace up to the end of the string is dropped too (an end
    marker elsewhere is content). A string that does not begin with ``start`` passes unchanged.
    The result does not depend on how the string is cut into pieces.
    """

    __slots__ = ("start", "end", "mode", "finished", "_buf")

    _WS = " \t\r\n"

    def __init__(self, start: str, end: str) -> None:
        self.start = start
        self.end = end
        self.mode = 0  # 0 deciding, 1 marker mode, 2 plain
        self.finished = False
        self._buf = ""

    def feed(self, text: str) -> str:
        mode = self.mode
        if mode == 2:
            return text
        if mode == 1:
            return self._body(text)
        buf = self._buf + text
        head = buf.lstrip(self._WS)
        start = self.start
        if len(head) <= len(start):
            if start.startswith(head):
                self._buf = buf
                return ""
            return self._plain(buf)
        if not head.startswith(start):
            return self._plain(buf)
        after = head[len(start) :]
        if after == "\r":
            self._buf = buf
            return ""
        self.mode = 1
        self._buf = ""
        if after.startswith("\r\n"):
            after = after[2:]
        elif after[:1] in ("\n", "\r"):
            after = after[1:]
        return self._body(after)

    def finish(self, closed: bool = True) -> str:
        """End of the string (``closed``) or of the stream (cut); returns the held text."""
        self.finished = True
        buf, self._buf = self._buf, ""
        if self.mode == 0:
            head = buf.lstrip(self._WS)
            if head.startswith(self.start) and head[len(self.start) :] in ("", "\r"):
                self.mode = 1
                return ""
            self.mode = 2
            return buf
        end = self.end
        if (
            self.mode == 1
            and closed
            and buf.startswith(end)
            and not buf[len(end) :].strip(self._WS)
        ):
            return ""
        return buf

    def _plain(self, buf: str) -> str:
        self.mode = 2
        self._buf = ""
        return buf

    def _body(self, text: str) -> str:
        s = self._buf + text if self._buf else text
        end = self.end
        i = s.rfind(end)
        if i < 0 or s[i + len(end) :].strip(self._WS):
            # hold a tail that may be the beginning of the end marker
            i = literal_hold(s, 0, end)
        self._buf = s[i:]
        return s[:i]


def strip_markers(text: str, start: str, end: str) -> str:
    """The whole-string form of :class:`MarkerStripper` (same rules, same result)."""
    stripper = MarkerStripper(start, end)
    return stripper.feed(text) + stripper.finish(closed=True)
