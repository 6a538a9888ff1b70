"""Decoders for bodies that are not server-sent events: a streamed JSON array and NDJSON.

Gemini's ``streamGenerateContent`` without ``alt=sse`` answers with one JSON array whose elements
arrive over time (pretty-printed, with read boundaries anywhere, even inside a string or an
escape); Ollama's native API sends NDJSON, one JSON object per line. A body that starts with
``{`` is read as a sequence of JSON values, which covers NDJSON and also a pretty-printed JSON
object spread over many lines (an HTTP error body, a non-streamed answer). Both decoders have the
interface of :class:`~streamtool.core.wire.sse.SSEDecoder` and turn every element into an
:class:`~streamtool.core.wire.sse.SSEEvent` whose ``data`` is the element's JSON text, so converters
never see the difference. Like the SSE decoder they take bytes or text, keep a UTF-8 character
split across reads whole, drop a leading BOM, and flag a last element that the body cut off
``unterminated``.

Scanning is done by regular expressions that jump from one structural character to the next, and
a value that spans many reads is kept as a list of pieces joined once, so work stays linear.
"""

from __future__ import annotations

import codecs
import re

from .sse import SSEEvent, SSEItem

_NON_WS = re.compile(r"[^ \t\r\n]")
_IN_STRING = re.compile(r'["\\]')
_STRUCTURE = re.compile(r'[{}\[\]"]')
_SCALAR_END = re.compile(r"[,\] \t\r\n]")
_SCALAR_END_SEQ = re.compile(r"[ \t\r\n]")

# top-level states of the array decoder
_BEFORE = 0  # nothing but whitespace so far: expecting "["
_VALUE = 1  # after "[" or ",": expecting an element or "]"
_INSIDE = 2  # inside an element
_AFTER = 3  # after an element: expecting "," or "]"
_DONE = 4  # after the closing "]"


class _TextInput:
    """Bytes-or-text input with incremental UTF-8 decoding and a leading BOM removed."""

    __slots__ = ("_utf8", "_started")

    def __init__(self) -> None:
        self._utf8 = codecs.getincrementaldecoder("utf-8")("replace")
        self._started = False

    def text(self, data: bytes | str) -> str:
        if isinstance(data, bytes | bytearray | memoryview):
            text = self._utf8.decode(bytes(data))
        elif self._utf8.getstate()[0]:
            text = self._utf8.decode(data.encode("utf-8"))
        else:
            text = data
        if not self._started and text:
            self._started = True
            if text[0] == "\ufeff":
                text = text[1:]
        return text

    def final(self) -> str:
        return self.text(self._utf8.decode(b"", final=True))


class JSONArrayDecoder:
    """A streamed top-level JSON array: one event per element, as soon as the element is whole.

    Text that is not where an element may be (garbage between elements, a value after the
    closing bracket) is passed on as an event of its own, so that the converter reports it
    instead of it vanishing. ``closed`` tells whether the closing ``]`` arrived.
    """

    __slots__ = (
        "_input",
        "_state",
        "_depth",
        "_in_string",
        "_escape",
        "_scalar",
        "_parts",
        "_array",
        "saw_cr",
    )

    kind = "json-array"

    def __init__(self, array: bool = True) -> None:
        self._input = _TextInput()
        self._array = array  # False: top-level values one after another (NDJSON and the like)
        self._state = _BEFORE if array else _VALUE
        self.saw_cr = False  # CR or CRLF line ends (framing statistics)
        self._depth = 0
        self._in_string = False
        self._escape = False  # the previous read ended on a backslash inside a string
        self._scalar = False  # the element is a bare scalar (number, literal, garbage)
        self._parts: list[str] = []

    @property
    def closed(self) -> bool:
        return self._state == _DONE or (not self._array and self._state != _INSIDE)

    @property
    def mid_event(self) -> bool:
        """Part of an element has arrived and the rest has not (the last read cut it)."""
        return self._state == _INSIDE

    def feed(self, data: bytes | str) -> list[SSEItem]:
        text = self._input.text(data)
        if not self.saw_cr and "\r" in text:
            self.saw_cr = True
        return self._scan(text)

    def finish(self) -> list[SSEItem]:
        out = self._scan(self._input.final())
        if self._state == _INSIDE:
            text = "".join(self._parts)
            self._parts = []
            self._state = _AFTER
            if self._scalar:
                out.append(SSEEvent(text))
            elif text.strip():
                out.append(SSEEvent(text, unterminated=True))
        return out

    # -- internals -------------------------------------------------------------------------
    def _scan(self, text: str) -> list[SSEItem]:
        out: list[SSEItem] = []
        n = len(text)
        pos = 0
        start = 0  # where the current element began in ``text``
        state = self._state
        while pos < n:
            if state != _INSIDE:
                m = _NON_WS.search(text, pos)
                if m is None:
                    break
                pos = m.start()
                c = text[pos]
                if not self._array:
                    pass  # a sequence: every value starts here
                elif state in (_BEFORE, _DONE):
                    if c == "[":
                        state = _VALUE
                        pos += 1
                        continue
                elif state == _VALUE:
                    if c == "]":
                        state = _DONE
                        pos += 1
                        continue
                elif c == ",":  # _AFTER
                    state = _VALUE
                    pos += 1
                    continue
                elif c == "]":
                    state = _DONE
                    pos += 1
                    continue
                # an element starts here (or text that is not JSON, passed on as it is)
                state = _INSIDE
                start = pos
                self._depth = 0
                if c == "{" or c == "[":
                    self._depth = 1
                    self._scalar = False
                    pos += 1
                elif c == '"':
                    self._in_string = True
                    self._scalar = False
                    pos += 1
                else:
                    self._scalar = True
                continue
            # inside an element
            if self._scalar:
                m = (_SCALAR_END if self._array else _SCALAR_END_SEQ).search(text, pos)
                if m is None:
                    pos = n
                    break
                pos = m.start()
                state = self._emit(text, start, pos, out)
                continue
            if self._escape:
                self._escape = False
                pos += 1
                continue
            if self._in_string:
                m = _IN_STRING.search(text, pos)
                if m is None:
                    pos = n
                    break
                p = m.start()
                if text[p] == "\\":
                    if p + 1 < n:
                        pos = p + 2
                    else:
                        self._escape = True
                        pos = n
                    continue
                self._in_string = False
                pos = p + 1
                if self._depth == 0:
                    state = self._emit(text, start, pos, out)
                continue
            m = _STRUCTURE.search(text, pos)
            if m is None:
                pos = n
                break
            p = m.start()
            c = text[p]
            pos = p + 1
            if c == '"':
                self._in_string = True
            elif c == "{" or c == "[":
                self._depth += 1
            else:
                self._depth -= 1
                if self._depth == 0:
                    state = self._emit(text, start, pos, out)
        if state == _INSIDE and start < n:
            self._parts.append(text[start:])
        self._state = state
        return out

    def _emit(self, text: str, start: int, end: int, out: list[SSEItem]) -> int:
        piece = text[start:end]
        if self._parts:
            self._parts.append(piece)
            piece = "".join(self._parts)
            self._parts = []
        out.append(SSEEvent(piece))
        return _AFTER if self._array else _VALUE


class NDJSONDecoder(JSONArrayDecoder):
    """NDJSON, or any sequence of JSON values: one event per top-level value, as soon as it is
    whole (a value may span lines, as a pretty-printed object does)."""

    __slots__ = ()

    kind = "ndjson"

    def __init__(self) -> None:
        super().__init__(array=False)
