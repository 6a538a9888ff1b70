"""What the three text parsers share: segment bookkeeping, stream scanning helpers, arguments.

A text parser is a sans-IO state machine: ``feed(text) -> list[SegmentEvent]`` and
``finish() -> list[SegmentEvent]``. It owns the TEXT segment of the prose around the tool calls
(one TEXT segment stays open across chunks and closes when a structured segment starts) and draws
segment ids from the ``new_id`` callable its handler gives it, so ids stay ``seg_N`` and shared
with the handler's reasoning segments.

Chunking never changes meaning: whenever the end of the buffered text could be the beginning of a
marker, that tail is held back (never emitted, never dropped) until more text decides it.
Scanning is done by ``str.find`` and compiled regular expressions, never by a Python loop per
character, and a held-back tail is bounded, so each input character costs O(1) amortized.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..model import SegmentEvent, SegmentEventType, SegmentType
from ..pipeline.adapter import TextArgumentParser
from ..wire import fastjson
from .xml_args import parse_xml_arguments

IdFactory = Callable[[], str]
_START = SegmentEventType.START
_CONTENT = SegmentEventType.CONTENT
_END = SegmentEventType.END


def _counter_ids() -> IdFactory:
    count = 0

    def new_id() -> str:
        nonlocal count
        count += 1
        return f"seg_{count}"

    return new_id


class TextParser:
    """Base of the ``xml``, ``json`` and ``sentinel`` parsers."""

    name = "text"

    def __init__(
        self,
        new_id: IdFactory | None = None,
        text_argument_parser: TextArgumentParser | None = None,
    ) -> None:
        self._new_id = new_id or _counter_ids()
        if text_argument_parser is None:
            text_argument_parser = parse_xml_arguments
        self._text_argument_parser: TextArgumentParser = text_argument_parser
        self._out: list[SegmentEvent] = []
        self._buf = ""
        self._text_id: str | None = None
        self._text_metadata: dict[str, Any] = {}
        self._finished = False
        self._final = False  # set by finish(): no more text will come

    # -- public contract -------------------------------------------------------------------
    def feed(self, text: str) -> list[SegmentEvent]:
        if self._finished:
            raise RuntimeError(f"{self.name} parser has finished")
        text_id = self._text_id
        if text_id is not None and not self._buf and self._plain(text):
            # fast path (most chunks of prose): an open text segment, nothing held, and no
            # character that any marker of the format starts with
            return [SegmentEvent(_CONTENT, text_id, None, text, None)]
        out = self._out = []
        if text:
            buf = self._buf
            self._buf = buf + text if buf else text
            self._run()
        return out

    def finish(self) -> list[SegmentEvent]:
        """End of the stream: flush held text, close (as incomplete) what is still open."""
        if self._finished:
            return []
        self._finished = True
        self._final = True
        out = self._out = []
        self._flush()
        self._buf = ""
        self._close_text()
        return out

    def close_text(self) -> list[SegmentEvent]:
        """Close the open TEXT segment (another segment, such as reasoning, starts)."""
        out = self._out = []
        self._close_text()
        return out

    def add_text_metadata(self, metadata: dict[str, Any]) -> list[SegmentEvent]:
        """Metadata the provider attached to the text: merged into the (open) TEXT segment."""
        out = self._out = []
        if self._text_id is None:
            self._open_text()
        self._text_metadata.update(metadata)
        return out

    # -- for subclasses --------------------------------------------------------------------
    _state: Callable[[str, int], tuple[int, bool]]

    def _plain(self, text: str) -> bool:
        """True when ``text``, arriving in the text state with nothing held, is all prose."""
        return False

    def _run(self) -> None:
        """Run the state functions over the buffer: each returns ``(position, go on)``; what
        lies after the last position is held for the next text."""
        buf = self._buf
        pos = 0
        more = True
        while more:
            pos, more = self._state(buf, pos)
        self._buf = buf[pos:] if pos else buf

    def _flush(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- segment bookkeeping ---------------------------------------------------------------
    def _open_text(self) -> None:
        self._text_id = self._new_id()
        self._text_metadata = {}
        self._out.append(SegmentEvent(_START, self._text_id, SegmentType.TEXT, None, {}))

    def _text(self, text: str) -> None:
        if text:
            if self._text_id is None:
                self._open_text()
            self._out.append(SegmentEvent(_CONTENT, self._text_id, None, text, None))  # type: ignore[arg-type]

    def _close_text(self) -> None:
        if self._text_id is not None:
            seg_id, self._text_id = self._text_id, None
            self._out.append(SegmentEvent(_END, seg_id, None, None, self._text_metadata))
            self._text_metadata = {}

    def _start(self, segment_type: SegmentType, metadata: dict[str, Any] | None = None) -> str:
        self._close_text()
        seg_id = self._new_id()
        self._out.append(SegmentEvent(_START, seg_id, segment_type, None, dict(metadata or {})))
        return seg_id

    def _content(self, seg_id: str, text: str) -> None:
        if text:
            self._out.append(SegmentEvent(_CONTENT, seg_id, None, text, None))

    def _end(self, seg_id: str, metadata: dict[str, Any]) -> None:
        self._out.append(SegmentEvent(_END, seg_id, None, None, metadata))

    def _end_incomplete(self, seg_id: str, metadata: dict[str, Any], error: str) -> None:
        """END a segment the stream left open: its metadata plus ``incomplete`` and ``error``."""
        metadata = dict(metadata)
        metadata["incomplete"] = True
        metadata["error"] = error
        self._end(seg_id, metadata)

    # -- arguments -------------------------------------------------------------------------
    def _resolve_arguments(self, body: str) -> tuple[Any, str | None]:
        """A tool body's arguments: ``(arguments, None)`` or ``(None, reason)``.

        Empty means no arguments (``{}``); a body starting with ``{`` or ``[`` is JSON; anything
        else goes to the text-argument parser (XML arguments by default), which raises
        ``ValueError``.
        """
        text = body.strip()
        if not text:
            return {}, None
        if text[0] in "{[":
            try:
                return fastjson.loads(text), None
            except ValueError as exc:
                return None, f"arguments are not valid JSON ({exc})"
            except RecursionError:
                return None, "arguments are nested too deeply"
        try:
            return self._text_argument_parser(body), None
        except ValueError as exc:
            return None, f"arguments do not parse ({exc})"
        except RecursionError:
            return None, "arguments are nested too deeply"


def tool_end_metadata(
    base: dict[str, Any], arguments: Any, error: str | None, raw: str, where: str
) -> dict[str, Any]:
    """END metadata of a finished tool_call segment: parsed arguments, or None + raw + error."""
    metadata = dict(base)
    metadata["arguments"] = arguments
    if error is not None:
        metadata["raw_arguments"] = raw
        metadata["error"] = f"{where}: {error}"
    return metadata


# JSON strings: the body of a string (escapes included) is skipped by one regex match.
_STR_BODY = re.compile(r'[^"\\]*(?:\\[\s\S][^"\\]*)*')
_STRUCT = re.compile(r'["{}\[\]]')


class JsonBracketScanner:
    """String-aware bracket counting over JSON text that arrives in pieces.

    ``next_bracket(text, pos, end)`` returns ``(index after the bracket, bracket)`` for the next
    ``{ } [ ]`` outside strings (``depth`` already updated), or ``None`` when ``text`` (up to
    ``end``) is used up.
    String bodies (with their escapes) are skipped by a single regex match.
    """

    __slots__ = ("depth", "in_string", "escape")

    def __init__(self) -> None:
        self.depth = 0
        self.in_string = False
        self.escape = False

    def next_bracket(self, text: str, pos: int, end: int | None = None) -> tuple[int, str] | None:
        n = len(text) if end is None else min(end, len(text))
        while pos < n:
            if self.in_string:
                if self.escape:
                    self.escape = False
                    pos += 1
                    continue
                m = _STR_BODY.match(text, pos, n)
                assert m is not None
                pos = m.end()
                if pos >= n:
                    return None
                if text[pos] == '"':
                    self.in_string = False
                else:  # a backslash, the last character: its escaped character comes next
                    self.escape = True
                pos += 1
                continue
            m2 = _STRUCT.search(text, pos, n)
            if m2 is None:
                return None
            c = m2.group()
            pos = m2.end()
            if c == '"':
                self.in_string = True
                continue
            self.depth += 1 if c in "{[" else -1
            return pos, c
        return None
