"""Kimi K2 special-token tool calls inside streamed text: a sans-IO scanner.

Kimi K2 writes its tool calls as special tokens (reference/text-formats.md, "Kimi K2 special
tokens")::

    <|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0
    <|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>

When a server's tool parser misfires, these tokens reach the client inside ``content`` or the
reasoning text. :class:`KimiTokenScanner` reads one such text stream as it arrives: ``feed(text)``
returns :data:`Piece`s in order (ordinary :class:`Text`, whole :class:`Call`s, :class:`Note`s),
``finish()`` flushes at the end of the stream. Markers may be cut anywhere between two feeds: only a
possible marker prefix at the end of a feed is held back, so each character is scanned once.

Rules (each repair is reported by a :class:`Note`):

- text before and after a section is ordinary text, whitespace included;
- the call id is the text between ``<|tool_call_begin|>`` and ``<|tool_call_argument_begin|>``,
  trimmed and otherwise verbatim; the arguments are the text up to ``<|tool_call_end|>``, trimmed;
- the singular ``<|tool_call_section_begin|>`` / ``<|tool_call_section_end|>`` are accepted;
- a ``<|tool_call_begin|>`` outside any section opens a one-call section;
- a call closed by the section end or by the next ``<|tool_call_begin|>`` (no
  ``<|tool_call_end|>``) still counts;
- a call without ``<|tool_call_argument_begin|>`` is given back as text, with an error;
- text between calls inside a section is not content: it is dropped with an error naming it
  (whitespace is dropped silently);
- a section still open at the end of the stream, or whose unresolved text grows past
  :data:`SECTION_LIMIT` (1 MiB), is given back as text, with an error. Calls that were already
  closed by ``<|tool_call_end|>`` stay calls.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from ...model.quirk_ids import QuirkId
from ...model.vocabulary import ErrorKind
from ...wire import fastjson

SECTION_BEGIN = "<|tool_calls_section_begin|>"
SECTION_END = "<|tool_calls_section_end|>"
SECTION_BEGIN_SINGULAR = "<|tool_call_section_begin|>"
SECTION_END_SINGULAR = "<|tool_call_section_end|>"
CALL_BEGIN = "<|tool_call_begin|>"
ARGUMENT_BEGIN = "<|tool_call_argument_begin|>"
CALL_END = "<|tool_call_end|>"

MARKERS = (
    SECTION_BEGIN,
    SECTION_END,
    SECTION_BEGIN_SINGULAR,
    SECTION_END_SINGULAR,
    CALL_BEGIN,
    ARGUMENT_BEGIN,
    CALL_END,
)
MARKER_PREFIX = "<|tool_call"  # every marker starts with it
_LONGEST = max(len(m) for m in MARKERS)
SECTION_LIMIT = 1 << 20  # characters of unresolved section text held at most


class Text(msgspec.Struct, frozen=True, gc=False):
    """Ordinary text of the stream (outside any section, or given back)."""

    text: str


class Call(msgspec.Struct, frozen=True, gc=False):
    """One whole tool call: ``call_id`` and ``arguments`` trimmed; ``raw`` the text it came from."""

    call_id: str
    arguments: str
    raw: str


class Note(msgspec.Struct, frozen=True):
    """A repair (``error=False``: a quirk) or a problem (``error=True``) met while scanning."""

    kind: QuirkId | ErrorKind  # a repair's quirk, a problem's error kind
    message: str
    detail: Any = None
    error: bool = False


Piece = Text | Call | Note

_TEXT, _SECTION, _CALL_ID, _ARGUMENTS = range(4)
_PARTIAL = ""  # _match result: the rest of the buffer may still become a marker


def _match(buf: str, i: int) -> str | None:
    """The marker at ``buf[i:]`` (which starts with ``<|``), ``_PARTIAL``, or ``None``."""
    if not buf.startswith(MARKER_PREFIX, i):
        rest = len(buf) - i
        if rest < len(MARKER_PREFIX) and MARKER_PREFIX.startswith(buf[i:]):
            return _PARTIAL
        return None
    for marker in MARKERS:
        if buf.startswith(marker, i):
            return marker
    if len(buf) - i < _LONGEST:
        tail = buf[i:]
        if any(m.startswith(tail) for m in MARKERS):
            return _PARTIAL
    return None


class KimiTokenScanner:
    """Finds Kimi tool-call sections in one text stream. ``feed(text)``, ``finish()``."""

    def __init__(self, limit: int = SECTION_LIMIT) -> None:
        self.limit = limit
        self.sections = 0  # sections opened so far
        self.calls = 0  # calls found so far
        self._mode = _TEXT
        # the possible marker prefix held back at the end of the last feed (read by the
        # converters before each read: a plain attribute)
        self.tail = ""
        self._raw: list[str] = []  # section text not yet resolved into calls
        self._raw_len = 0
        self._call_at = 0  # where the current call starts in _raw
        self._id: list[str] = []
        self._args: list[str] = []
        self._stray: list[str] = []
        self._implicit = False  # the section was opened by a bare <|tool_call_begin|>
        self._section_calls = 0
        self._finished = False

    @property
    def in_section(self) -> bool:
        return self._mode != _TEXT

    # -- input -----------------------------------------------------------------------------
    def feed_plain(self, text: str) -> str | None:
        """:meth:`feed` of the commonest read, without a piece made: ``text`` holds no ``<``
        and nothing is held back. Outside any section it is ordinary text, returned as it is
        (:meth:`feed` would give ``[Text(text)]``); inside a call's arguments it is held, and
        ``""`` is returned (:meth:`feed` would give ``[]``). Anything else: ``None``, nothing
        done (:meth:`feed` reads it)."""
        if self.tail or "<" in text:
            return None
        mode = self._mode
        if mode == _TEXT:
            return text
        if mode == _ARGUMENTS:
            size = self._raw_len + len(text)
            if size <= self.limit:
                if text:
                    self._raw.append(text)
                    self._raw_len = size
                    self._args.append(text)
                return ""
        return None

    def plain_room(self) -> int:
        """How many characters of text holding no ``<`` :meth:`feed_plain` now holds (inside a
        call's arguments, nothing held back), read after read, in all; ``-1`` when it holds
        none. A caller may keep such reads and give them joined, by one :meth:`feed_plain`,
        before it gives anything else: the scanner ends in the same state."""
        if self.tail or self._mode != _ARGUMENTS:
            return -1
        return self.limit - self._raw_len

    def feed(self, text: str) -> list[Piece]:
        out: list[Piece] = []
        if not text:
            return out
        plain = self.feed_plain(text)  # the commonest read (as the loop below would do)
        if plain is not None:
            if plain:
                out.append(Text(plain))
            return out
        if self.tail:
            buf = self.tail + text
            self.tail = ""
        else:
            buf = text
        n = len(buf)
        pos = 0  # start of the text not yet consumed
        search = 0
        while True:
            i = buf.find("<|", search)
            if i < 0:
                end = n - 1 if n > pos and buf[-1] == "<" else n
                if end > pos:
                    self._consume(buf[pos:end], out)
                self.tail = buf[end:]
                return out
            marker = _match(buf, i)
            if marker is None:
                search = i + 2
                continue
            if i > pos:
                self._consume(buf[pos:i], out)
            if marker == _PARTIAL:
                self.tail = buf[i:]
                return out
            self._marker(marker, out)
            pos = search = i + len(marker)

    def flush_tail(self) -> list[Piece]:
        """Give back a held marker prefix as text (outside sections only): another stream's
        text or a structured tool call comes next, so the prefix is not a marker."""
        if self.tail and self._mode == _TEXT:
            tail, self.tail = self.tail, ""
            return [Text(tail)]
        return []

    def finish(self) -> list[Piece]:
        """End of the stream: flush held text; give back a section that is still open."""
        out: list[Piece] = []
        if self._finished:
            return out
        self._finished = True
        if self.tail:
            tail, self.tail = self.tail, ""
            self._consume(tail, out)
        if self._mode == _TEXT:
            return out
        if self._mode == _SECTION and self._section_calls and not "".join(self._raw).strip():
            out.append(
                Note(
                    QuirkId.KIMI_SECTION_END_MISSING,
                    "the stream ended inside a Kimi tool-call section after its last call "
                    "(no <|tool_calls_section_end|>)",
                )
            )
            self._reset()
            return out
        self._give_back(
            out,
            ErrorKind.KIMI_SECTION_UNTERMINATED,
            "the stream ended inside a Kimi tool-call section; its unfinished text is given "
            "back as ordinary text",
        )
        return out

    # -- internals -------------------------------------------------------------------------
    def _reset(self) -> None:
        self._mode = _TEXT
        self._raw = []
        self._raw_len = 0
        self._id = []
        self._args = []
        self._stray = []
        self._implicit = False

    def _hold(self, text: str, out: list[Piece]) -> bool:
        """Add section text to the unresolved buffer; ``False`` when it overflowed."""
        self._raw.append(text)
        self._raw_len += len(text)
        if self._raw_len > self.limit:
            self._give_back(
                out,
                ErrorKind.KIMI_SECTION_TOO_LARGE,
                f"a Kimi tool-call section grew past {self.limit} characters without closing; "
                "it is given back as ordinary text",
            )
            return False
        return True

    def _give_back(self, out: list[Piece], kind: ErrorKind, message: str) -> None:
        """Give the whole unresolved section text back as ordinary text; leave the section."""
        raw = "".join(self._raw)
        # the excerpt covers no more than the limit: the same whatever the chunking
        out.append(Note(kind, message, _excerpt(raw[: self.limit]), error=True))
        if raw:
            out.append(Text(raw))
        self._reset()

    def _consume(self, text: str, out: list[Piece]) -> None:
        mode = self._mode
        if mode == _TEXT:
            out.append(Text(text))
            return
        if not self._hold(text, out):
            return
        if mode == _CALL_ID:
            self._id.append(text)
        elif mode == _ARGUMENTS:
            self._args.append(text)
        else:
            self._stray.append(text)

    def _marker(self, marker: str, out: list[Piece]) -> None:
        mode = self._mode
        if mode == _TEXT:
            if marker in (SECTION_BEGIN, SECTION_BEGIN_SINGULAR):
                if marker == SECTION_BEGIN_SINGULAR:
                    note = "sections opened by <|tool_call_section_begin|> (singular)"
                    out.append(Note(QuirkId.KIMI_SINGULAR_SECTION_MARKER, note))
                self._open_section(marker, implicit=False)
            elif marker == CALL_BEGIN:
                out.append(
                    Note(
                        QuirkId.KIMI_CALL_WITHOUT_SECTION,
                        "<|tool_call_begin|> outside a <|tool_calls_section_begin|> section",
                    )
                )
                self._open_section("", implicit=True)
                self._begin_call(marker, out)
            else:
                out.append(Text(marker))  # a closing marker with nothing open: plain text
            return
        if mode == _SECTION:
            if marker == CALL_BEGIN:
                self._flush_stray(out)
                self._begin_call(marker, out)
            elif marker in (SECTION_END, SECTION_END_SINGULAR):
                self._flush_stray(out)
                self._reset()
            elif self._hold(marker, out):
                self._stray.append(marker)
            return
        if mode == _CALL_ID:
            if marker == ARGUMENT_BEGIN:
                if self._hold(marker, out):
                    self._mode = _ARGUMENTS
                    self._args = []
            elif marker == CALL_BEGIN:
                self._bad_call(out)
                self._begin_call(marker, out)
            elif marker == CALL_END:
                if self._hold(marker, out):
                    self._bad_call(out)
                    self._after_call()
            elif marker in (SECTION_END, SECTION_END_SINGULAR):
                self._bad_call(out)
                self._reset()
            elif self._hold(marker, out):
                self._id.append(marker)
            return
        # _ARGUMENTS
        if marker == CALL_END:
            if self._hold(marker, out):
                self._emit_call(out)
                self._after_call()
        elif marker in (SECTION_END, SECTION_END_SINGULAR, CALL_BEGIN):
            out.append(
                Note(
                    QuirkId.KIMI_CALL_END_MISSING,
                    "a Kimi tool call closed without <|tool_call_end|>",
                )
            )
            self._emit_call(out)
            if marker == CALL_BEGIN:
                self._begin_call(marker, out)
            else:
                self._reset()
        elif self._hold(marker, out):
            self._args.append(marker)

    def _open_section(self, marker: str, implicit: bool) -> None:
        self.sections += 1
        self._section_calls = 0
        self._mode = _SECTION
        self._implicit = implicit
        self._raw = [marker] if marker else []
        self._raw_len = len(marker)
        self._stray = []

    def _begin_call(self, marker: str, out: list[Piece]) -> None:
        self._call_at = len(self._raw)
        self._id = []
        self._args = []
        if self._hold(marker, out):
            self._mode = _CALL_ID

    def _after_call(self) -> None:
        if self._implicit:
            self._reset()
        else:
            self._mode = _SECTION
            self._stray = []

    def _emit_call(self, out: list[Piece]) -> None:
        raw = "".join(self._raw[self._call_at :])
        out.append(Call("".join(self._id).strip(), "".join(self._args).strip(), raw))
        self.calls += 1
        self._section_calls += 1
        self._raw = []
        self._raw_len = 0
        self._call_at = 0
        self._id = []
        self._args = []

    def _bad_call(self, out: list[Piece]) -> None:
        """A call without ``<|tool_call_argument_begin|>``: its text goes back to the stream."""
        call_id = "".join(self._id).strip()
        raw = "".join(self._raw[self._call_at :])
        out.append(
            Note(
                ErrorKind.KIMI_CALL_WITHOUT_ARGUMENTS,
                f"Kimi tool call {call_id!r} has no <|tool_call_argument_begin|>; its text is "
                "given back as ordinary text",
                _excerpt(raw),
                error=True,
            )
        )
        out.append(Text(raw))
        del self._raw[self._call_at :]
        self._raw_len = sum(map(len, self._raw))
        self._id = []

    def _flush_stray(self, out: list[Piece]) -> None:
        if self._stray:
            stray = "".join(self._stray)
            self._stray = []
            if stray.strip():
                out.append(
                    Note(
                        ErrorKind.KIMI_STRAY_TEXT,
                        "text between tool calls inside a Kimi tool-call section was dropped",
                        stray,
                        error=True,
                    )
                )


def _excerpt(text: str, limit: int = 200) -> str:
    if len(text) <= limit:
        return text
    return text[: limit // 2] + f"...[{len(text) - limit} characters]..." + text[-limit // 2 :]


# -- call ids and arguments ------------------------------------------------------------------
_UNDERSCORE_ID = re.compile(r"functions_(.+)_([0-9]+)")


def parse_call_id(call_id: str) -> tuple[str | None, str]:
    """The tool name a Kimi call id names, and the id's form.

    Forms: ``"dot"`` (``functions.NAME:IDX``, or ``NAME:IDX``), ``"underscore"``
    (``functions_NAME_IDX``), ``"counter"`` (a bare number: no name), ``"invalid"``.
    """
    head, sep, index = call_id.rpartition(":")
    if sep and index.isascii() and index.isdigit():
        name = head.removeprefix("functions.")
        if name and not any(c.isspace() for c in name):
            return name, "dot"
        return None, "invalid"
    m = _UNDERSCORE_ID.fullmatch(call_id)
    if m and not any(c.isspace() for c in m.group(1)):
        return m.group(1), "underscore"
    if call_id.isascii() and call_id.isdigit():
        return None, "counter"
    return None, "invalid"


def decode_double_encoded(arguments: str) -> str | None:
    """The inner JSON text when ``arguments`` is a JSON string holding a JSON object or array."""
    if arguments[:1] != '"':
        return None
    try:
        inner = fastjson.loads(arguments)
    except ValueError:
        return None
    if not isinstance(inner, str) or inner.strip()[:1] not in ("{", "["):
        return None
    try:
        fastjson.loads(inner)
    except ValueError:
        return None
    return inner.strip()


class MarkerSniffer:
    """Says once whether a text stream contains a Kimi marker, even one cut across feeds.

    O(1) extra work per feed: only the last few characters of the previous feed are kept.
    """

    __slots__ = ("found", "_tail")
    _KEEP = len(MARKER_PREFIX) - 1

    def __init__(self) -> None:
        self.found = False
        self._tail = ""

    def feed(self, text: str) -> bool:
        """``True`` the first time a marker is seen."""
        if self.found or not text:
            return False
        keep = self._KEEP
        if MARKER_PREFIX in text or (self._tail and MARKER_PREFIX in self._tail + text[:keep]):
            self.found = True
            return True
        self._tail = text[-keep:] if len(text) >= keep else (self._tail + text)[-keep:]
        return False
