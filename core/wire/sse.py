"""Server-sent-event decoding, sans-IO: bytes (or text) in, events out.

Implements the WHATWG event-stream rules: LF, CR and CRLF line ends (a CRLF split across two
reads is one line end), an optional single space after the field colon, multi-line ``data``,
``event`` / ``id`` / ``retry``, UTF-8 characters split across reads, a leading BOM. Comments are
surfaced as :class:`SSEComment` events instead of being dropped, and a stream that ends without
the final blank line yields its pending event flagged ``unterminated``.

The scanning is done by ``str.split`` / regular expressions over whole reads; a long line that
arrives in many reads is kept as a list of pieces and joined once, so work stays linear.
"""

from __future__ import annotations

import codecs
import re
from itertools import chain
from typing import NamedTuple

_LINE_SPLIT = re.compile(r"\r\n|\r|\n")
# a whole event of the most common shape, "[event: NAME LF] data: DATA LF LF" (used only on
# text without CR, from an event boundary; anything else goes through the line-by-line rules)
_SIMPLE_EVENT = re.compile(r"(?:event: ?(.*)\n)?data: ?(.*)\n\n")
# runs of whole events of one of the two commonest shapes, found at once: "data: DATA LF LF"
# (8 characters besides DATA) and "event: NAME LF data: DATA LF LF" (16 besides NAME and DATA)
_DATA_EVENTS = re.compile(r"data: (.*)\n\n")
_NAMED_EVENTS = re.compile(r"event: (.*)\ndata: (.*)\n\n")


class SSEEvent(NamedTuple):
    """A dispatched event. ``event`` is ``None`` when the stream gave no ``event:`` field.

    A named tuple (immutable, compared by value): a replay makes one per event, and a tuple is
    made several times faster than a frozen dataclass."""

    data: str
    event: str | None = None
    id: str | None = None
    retry: int | None = None
    unterminated: bool = False


class SSEComment(NamedTuple):
    """A comment line (``: OPENROUTER PROCESSING``); ``text`` is what follows the colon."""

    text: str


# ``SSEEvent(data, name)`` is ``_new(SSEEvent, (data, name, None, None, False))`` without the
# keyword handling of the named tuple's constructor (the decoder's hot path)
_new = tuple.__new__


SSEItem = SSEEvent | SSEComment


class SSEDecoder:
    """Incremental event-stream decoder. ``feed(bytes|str) -> list[SSEItem]``, then ``finish()``."""

    __slots__ = (
        "_utf8",
        "_pending",
        "_skip_lf",
        "_started",
        "_data",
        "_event",
        "_id",
        "_retry",
        "lines",
        "saw_cr",
        "scanned",
        "_bytes_fed",
    )

    def __init__(self) -> None:
        self._utf8 = codecs.getincrementaldecoder("utf-8")("replace")
        self._pending: list[str] = []  # pieces of the current, not yet ended line
        self._skip_lf = False  # the previous text ended with CR: a leading LF belongs to it
        self._started = False  # BOM check done
        self._data: list[str] = []
        self._event: str | None = None
        self._id: str | None = None
        self._retry: int | None = None
        self.lines = 0  # complete lines seen (for statistics)
        self.saw_cr = False  # CR or CRLF line ends were used (framing statistics)
        # characters the run finder (:meth:`_runs`) read, each read once or twice at most: the
        # work beyond one pass over the text, which stays linear in its length
        self.scanned = 0
        self._bytes_fed = False  # a read came as bytes (it may have ended inside a character)

    @property
    def mid_event(self) -> bool:
        """Part of a line or an event has arrived and the rest has not (the last read cut it)."""
        return bool(
            self._pending
            or self._data
            or self._event is not None
            or self._id is not None
            or self._retry is not None
        )

    # -- input -----------------------------------------------------------------------------
    def feed(self, data: bytes | str) -> list[SSEItem]:
        if (
            type(data) is str
            and self._started
            and not self._pending
            and not self._data
            and self._event is None
            and not self._skip_lf
            and not self._bytes_fed
        ):
            # fast path: a read that is exactly one whole event of the common shape
            m = _SIMPLE_EVENT.fullmatch(data)
            if m is not None and self._id is None and self._retry is None and "\r" not in data:
                name, value = m.group(1, 2)
                self.lines += 2 if name is None else 3
                return [_new(SSEEvent, (value, name, None, None, False))]
        if isinstance(data, bytes | bytearray | memoryview):
            self._bytes_fed = True
            text = self._utf8.decode(bytes(data))
        else:
            if self._bytes_fed and self._utf8.getstate()[0]:
                # an earlier read ended inside a UTF-8 sequence: keep decoding bytewise
                text = self._utf8.decode(data.encode("utf-8"))
            else:
                text = data
        return self._feed_text(text)

    def finish(self) -> list[SSEItem]:
        """End of stream: flush a partial UTF-8 sequence, the last line and a pending event."""
        out = self._feed_text(self._utf8.decode(b"", final=True))
        if self._pending:
            line = "".join(self._pending)
            self._pending = []
            self._line(line, out)
        if self._data:
            out.append(self._dispatch(unterminated=True))
        self._reset_event()
        return out

    # -- internals -------------------------------------------------------------------------
    def _feed_text(self, text: str) -> list[SSEItem]:
        out: list[SSEItem] = []
        if not text:
            return out
        if not self._started:
            self._started = True
            if text[0] == "\ufeff":
                text = text[1:]
                if not text:
                    return out
        if self._skip_lf:
            self._skip_lf = False
            if text[0] == "\n":
                text = text[1:]
                if not text:
                    return out
        has_cr = "\r" in text
        if not has_cr and "\n" not in text:
            self._pending.append(text)
            return out
        if self._pending:
            self._pending.append(text)
            text = "".join(self._pending)
            self._pending = []
        if not has_cr:
            # whole events of the common shape one regex match each; anything else (comments,
            # multi-line data, id or retry fields, events without data, an event begun in an
            # earlier read) line by line up to the blank line that ends its event, then the fast
            # path again. Runs of events are looked for again after a look that found something
            # else among them only once half the text left has been read: the looks read the
            # text left at most twice in all, however many events have no data
            pos = 0
            end = len(text)
            simple = _SIMPLE_EVENT.match
            new = _new
            busy = bool(
                self._data
                or self._event is not None
                or self._id is not None
                or self._retry is not None
            )
            runs_at = 0  # where runs of events are looked for again
            if not busy:
                pos = self._runs(text, 0, out)
                if pos == end:
                    return out
                if pos == 0:
                    runs_at = end // 2
            while True:
                if not busy:
                    lines = 0
                    m = simple(text, pos)
                    while m is not None:
                        name, value = m.group(1, 2)
                        out.append(new(SSEEvent, (value, name, None, None, False)))
                        lines += 2 if name is None else 3
                        pos = m.end()
                        if pos == end:
                            break
                        m = simple(text, pos)
                    self.lines += lines
                    if pos == end:
                        return out
                busy = False
                cut = text.find("\n\n", pos) + 2
                if cut < 2:
                    self._lines(text[pos:].split("\n") if pos else text.split("\n"), out)
                    return out
                self._lines(text[pos:cut].split("\n"), out)
                if cut == end:
                    return out
                pos = cut
                if pos >= runs_at:
                    pos = self._runs(text, cut, out)
                    if pos == end:
                        return out
                    if pos == cut:
                        runs_at = cut + (end - cut) // 2
        self.saw_cr = True
        if text[-1] == "\r":
            self._skip_lf = True
        self._lines(_LINE_SPLIT.split(text), out)
        return out

    def _runs(self, text: str, pos: int, out: list[SSEItem]) -> int:
        """The whole events of ``text`` from ``pos`` (no CR in it, no event begun before
        ``pos``) when all of them have one of the two commonest shapes: found by one
        ``findall``, then told apart from anything else by their lengths (matches found with
        text left between them add up to less than the text they were found in). Returns where
        the events taken end (``pos``: none taken)."""
        last = text.rfind("\n\n", pos) + 2
        if last < 2:
            return pos
        if text.startswith("data: ", pos):
            self.scanned += last - pos
            values = _DATA_EVENTS.findall(text, pos, last)
            if sum(map(len, values)) + 8 * len(values) != last - pos:
                return pos
            new = _new
            out.extend([new(SSEEvent, (value, None, None, None, False)) for value in values])
            self.lines += 2 * len(values)
            return last
        if text.startswith("event: ", pos):
            self.scanned += last - pos
            pairs = _NAMED_EVENTS.findall(text, pos, last)
            if sum(map(len, chain.from_iterable(pairs))) + 16 * len(pairs) != last - pos:
                return pos
            new = _new
            out.extend([new(SSEEvent, (value, name, None, None, False)) for name, value in pairs])
            self.lines += 3 * len(pairs)
            return last
        return pos

    def _lines(self, lines: list[str], out: list[SSEItem]) -> None:
        """Whole lines, then an unfinished one (``lines[-1]``, often empty) that waits."""
        rest = lines.pop()
        if rest:
            self._pending.append(rest)
        self.lines += len(lines)
        line_fn = self._line
        for line in lines:
            # the two commonest lines inline: a blank line (dispatch) and "data:"
            if not line:
                if self._data:
                    out.append(self._dispatch(unterminated=False))
                    self._reset_event()
                elif self._event is not None or self._id is not None or self._retry is not None:
                    self._reset_event()
            elif line[:5] == "data:":
                self._data.append(line[6:] if line[5:6] == " " else line[5:])
            else:
                line_fn(line, out)

    def _line(self, line: str, out: list[SSEItem]) -> None:
        if not line:
            if self._data:
                out.append(self._dispatch(unterminated=False))
            self._reset_event()
            return
        # the common case first: "data: ..."
        if line.startswith("data:"):
            value = line[5:]
            if value[:1] == " ":
                value = value[1:]
            self._data.append(value)
            return
        colon = line.find(":")
        if colon == 0:
            text = line[1:]
            if text[:1] == " ":
                text = text[1:]
            out.append(SSEComment(text))
            return
        if colon < 0:
            name, value = line, ""
        else:
            name, value = line[:colon], line[colon + 1 :]
            if value[:1] == " ":
                value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self._retry = int(value)
        # any other field name is ignored, as the standard says

    def _dispatch(self, unterminated: bool) -> SSEEvent:
        data = self._data[0] if len(self._data) == 1 else "\n".join(self._data)
        return SSEEvent(data, self._event, self._id, self._retry, unterminated)

    def _reset_event(self) -> None:
        self._data = []
        self._event = None
        self._id = None
        self._retry = None


def decode_all(chunks: list[bytes] | list[str]) -> list[SSEItem]:
    """Decode a whole stream given as a list of reads (a convenience for tests and tools)."""
    decoder = SSEDecoder()
    out: list[SSEItem] = []
    for chunk in chunks:
        out.extend(decoder.feed(chunk))
    out.extend(decoder.finish())
    return out
