"""``--parser sentinel``: ``[[SEG_START {header}]]body[[SEG_END]]`` blocks inside the text.

See reference/text-formats.md, "Sentinel". The header is a JSON object whose end is found by
bracket counting that respects strings (so ``]]`` inside a header string does not cut it), then
optional whitespace and ``]]``. ``type`` is ``text``, ``tool``/``tool_call``, ``write_file``,
``patch_file`` or ``run_bash``; the other keys become the segment's metadata (``tool_name`` —
or ``name`` — and ``arguments`` are used directly). The body is raw up to ``[[SEG_END]]``.
A header that is not such a JSON object, or names no known type (or a tool without a name), is
text, and scanning goes on right after its ``[[SEG_START``. A ``text`` block's body joins the
text. Markers cut across chunks are held back until the next text decides them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from ..model import SegmentType
from ..wire import fastjson
from ..wire.marker_scan import literal_hold
from .base import JsonBracketScanner, TextParser, tool_end_metadata

START = "[[SEG_START"
END = "[[SEG_END]]"
MAX_HEADER = 1 << 20  # characters from [[SEG_START to the end of its header

_TYPES = {
    "text": SegmentType.TEXT,
    "tool": SegmentType.TOOL_CALL,
    "tool_call": SegmentType.TOOL_CALL,
    "write_file": SegmentType.WRITE_FILE,
    "patch_file": SegmentType.PATCH_FILE,
    "run_bash": SegmentType.RUN_BASH,
}
_WS = re.compile(r"\s*")
_HEADER_CLOSE = re.compile(r"\s*\]\]")
_HEADER_CLOSE_PARTIAL = re.compile(r"\s*\]?")
_DECODER = json.JSONDecoder()
_UNSET = object()

State = Callable[[str, int], tuple[int, bool]]


def _header_segment(header: Any) -> tuple[SegmentType, dict[str, Any]] | None:
    if not isinstance(header, dict):
        return None
    kind = header.get("type")
    segment_type = _TYPES.get(kind) if isinstance(kind, str) else None
    if segment_type is None:
        return None
    metadata = {k: v for k, v in header.items() if k != "type"}
    if segment_type is SegmentType.TOOL_CALL:
        name = metadata.pop("name", None) if "tool_name" not in metadata else None
        if name is not None:
            metadata["tool_name"] = name
        if not isinstance(metadata.get("tool_name"), str) or not metadata["tool_name"]:
            return None
    return segment_type, metadata


class SentinelParser(TextParser):
    name = "sentinel"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._state: State = self._s_text
        self._scanner = JsonBracketScanner()
        self._offset = 0  # header scanning progress, from the [[SEG_START
        self._json_at = -1  # offset of the header's "{" (-1: not reached yet)
        self._json_end = -1  # offset just after its "}"
        self._type = SegmentType.TEXT
        self._seg: str | None = None
        self._meta: dict[str, Any] = {}
        self._parts: list[str] = []

    # -- text ------------------------------------------------------------------------------
    def _plain(self, text: str) -> bool:
        return "[" not in text and self._state == self._s_text

    def _s_text(self, buf: str, pos: int) -> tuple[int, bool]:
        i = buf.find(START, pos)
        if i < 0:
            hold = len(buf) if self._final else literal_hold(buf, pos, START)
            self._text(buf[pos:hold])
            return hold, False
        self._text(buf[pos:i])
        self._scanner = JsonBracketScanner()
        self._offset = len(START)
        self._json_at = self._json_end = -1
        self._state = self._s_header
        return i, True

    # -- header ----------------------------------------------------------------------------
    def _s_header(self, buf: str, pos: int) -> tuple[int, bool]:
        """``pos`` is the ``[[SEG_START``; offsets are kept from there across chunks."""
        limit = pos + MAX_HEADER
        n = min(len(buf), limit)
        p = pos + self._offset
        header: Any = _UNSET
        if self._json_at < 0:
            p = _WS.match(buf, p, n).end()  # type: ignore[union-attr]
            if p >= n:
                return self._header_wait(buf, pos, p)
            if buf[p] != "{":
                return self._not_a_header(pos)
            self._json_at = p - pos
            # fast path: the whole header is already here (one C call instead of the scan)
            try:
                header, end = _DECODER.raw_decode(buf, p)
            except (ValueError, RecursionError):
                pass
            else:
                if end <= n:
                    self._json_end = end - pos
                else:
                    header = _UNSET
        if self._json_end < 0:
            scanner = self._scanner
            while True:
                found = scanner.next_bracket(buf, p, n)
                if found is None:
                    return self._header_wait(buf, pos, n)
                p = found[0]
                if scanner.depth == 0:
                    self._json_end = p - pos
                    break
        p = pos + self._json_end
        m = _HEADER_CLOSE.match(buf, p, n)
        if m is None:
            if _HEADER_CLOSE_PARTIAL.fullmatch(buf, p, n) is not None:
                return self._header_wait(buf, pos, pos + self._json_end)
            return self._not_a_header(pos)
        if header is _UNSET:
            try:
                header = fastjson.loads(buf[pos + self._json_at : p])
            except (ValueError, RecursionError):
                return self._not_a_header(pos)
        parsed = _header_segment(header)
        if parsed is None:
            return self._not_a_header(pos)
        self._open(*parsed)
        return m.end(), True

    def _header_wait(self, buf: str, pos: int, p: int) -> tuple[int, bool]:
        if self._final or len(buf) - pos >= MAX_HEADER:
            return self._not_a_header(pos)
        self._offset = p - pos
        return pos, False

    def _not_a_header(self, pos: int) -> tuple[int, bool]:
        self._text(START)
        self._state = self._s_text
        return pos + len(START), True

    # -- body ------------------------------------------------------------------------------
    def _open(self, segment_type: SegmentType, metadata: dict[str, Any]) -> None:
        self._type = segment_type
        self._meta = metadata
        self._parts = []
        if segment_type is not SegmentType.TEXT:
            self._seg = self._start(segment_type, metadata)
        self._state = self._s_body

    def _emit(self, text: str) -> None:
        if not text:
            return
        if self._type is SegmentType.TEXT:
            self._text(text)
            return
        assert self._seg is not None
        if self._type is SegmentType.TOOL_CALL:
            self._parts.append(text)
        self._content(self._seg, text)

    def _s_body(self, buf: str, pos: int) -> tuple[int, bool]:
        i = buf.find(END, pos)
        if i < 0:
            hold = literal_hold(buf, pos, END)
            self._emit(buf[pos:hold])
            return hold, False
        self._emit(buf[pos:i])
        self._close()
        self._state = self._s_text
        return i + len(END), True

    def _close(self) -> None:
        if self._type is SegmentType.TEXT:
            return
        assert self._seg is not None
        meta = dict(self._meta)
        if self._type is SegmentType.TOOL_CALL:
            where = f"tool call {meta['tool_name']} ({self._seg})"
            body = "".join(self._parts)
            self._parts = []
            if "arguments" in meta:
                arguments: Any = meta["arguments"]
                error = None
                if isinstance(arguments, str):
                    arguments, error = self._resolve_arguments(arguments)
                    body = meta["arguments"]
            else:
                arguments, error = self._resolve_arguments(body)
            meta = tool_end_metadata(meta, arguments, error, body, where)
        elif self._type in (SegmentType.WRITE_FILE, SegmentType.PATCH_FILE) and not meta.get(
            "path"
        ):
            meta["error"] = f"{self._type.value} block ({self._seg}) has no path"
        self._end(self._seg, meta)
        self._seg = None

    # -- end of stream ---------------------------------------------------------------------
    def _flush(self) -> None:
        if self._state != self._s_body:
            self._run()  # final: an unfinished header is text, and what follows it is scanned
        if self._state == self._s_body:
            self._emit(self._buf)  # a cut [[SEG_END marker is content: nothing is lost
            if self._seg is not None:
                self._end_incomplete(
                    self._seg,
                    self._meta,
                    f"unterminated {self._type.value} block ({self._seg}): the stream ended "
                    f"before {END}",
                )
                self._seg = None
            self._state = self._s_text
