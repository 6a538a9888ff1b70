"""``--parser xml``: tool calls written as XML inside the model's text.

See reference/text-formats.md, "XML". In the text, only a tag that can still be (any case) the
start of ``<tool``, ``<write_file`` or ``<run_bash`` is held back; every other ``<`` is text.

- ``<tool name="X">BODY</tool>``: a ``tool_call`` segment (START metadata ``tool_name``) whose
  CONTENT is the raw body; at END the body is parsed (JSON, or XML arguments by the
  text-argument parser) into ``arguments``. ``</tool>`` inside ``<![CDATA[...]]>`` is content.
- ``write_file`` / ``patch_file``: a file segment whose CONTENT is the file text only. START
  waits for the path (START ``path``) or for the content (then the path comes in END metadata).
  ``__START_CONTENT__``/``__END_CONTENT__`` (``__START_PATCH__``/``__END_PATCH__``) markers are
  optional; one newline after the start marker is dropped; the end marker counts only when
  optional whitespace and the closing tag follow it. Without markers the content runs to the
  first closing tag (a CDATA section's text is content, without its wrapper).
- ``run_bash``: a ``run_bash`` segment streaming only the command.
- File text, patches and commands are taken verbatim (entities are not decoded: models write
  code raw); argument values of generic tools are XML text (``&amp;`` is ``&``, a stray ``&``
  stays). Text between the arguments of a file tool is ignored and reported in END ``error``.
- Shorthands ``<write_file path="...">...</write_file>`` and ``<run_bash>...</run_bash>``.

A call still open when the stream ends is ENDed with ``incomplete: True`` and an ``error``;
everything it received so far stays in its content.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from ..model import SegmentType
from ..wire.marker_scan import close_tag_atoms, last_char_hold, literal_hold, prefix_pattern
from .base import TextParser, tool_end_metadata
from .xml_args import unescape_xml

_NAMES = ("tool", "write_file", "run_bash")
_CAND = re.compile(r"<(?:tool|write_file|run_bash)(?=[\s/>])", re.I)
_CAND_PARTIAL = re.compile(
    "|".join(prefix_pattern(["<", *(re.escape(c) for c in n)]) for n in _NAMES), re.I
)
_OPEN_TAG = re.compile(
    r"<(tool|write_file|run_bash)((?:\s+[\w.\-:]+\s*=\s*(?:\"[^\"]*\"|'[^']*'))*)\s*(/?)>", re.I
)
_ANY_TAG = re.compile(r"<(/?)\s*([A-Za-z_][\w.\-:]*)([^<>]*?)(/?)>")
_ATTR = re.compile(r"([\w.\-:]+)\s*=\s*(?:\"([^\"]*)\"|'([^']*)')")
_ARG_NAME = re.compile(r"""\bname\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.I)
_WS = re.compile(r"\s*")
_NON_WS = re.compile(r"\S")
_GENERIC_STOP = re.compile(r"</tool\s*>|<!\[CDATA\[", re.I)
_CDATA_ATOMS = ["<", "!", r"\[", "C", "D", "A", "T", "A"]
_GENERIC_PARTIAL = re.compile(
    prefix_pattern(close_tag_atoms("tool")) + "|" + prefix_pattern(_CDATA_ATOMS), re.I
)
MAX_TAG = 1024  # an opening tag longer than this is text

_FILE_TYPES = {
    "write_file": (SegmentType.WRITE_FILE, "content", ("__START_CONTENT__", "__END_CONTENT__")),
    "patch_file": (SegmentType.PATCH_FILE, "patch", ("__START_PATCH__", "__END_PATCH__")),
    "run_bash": (SegmentType.RUN_BASH, "command", None),
}


class _Close:
    """Regexes for one closing tag name: plain stop, its cut-off tail, the end-marker follow."""

    def __init__(self, name: str) -> None:
        esc = re.escape(name)
        atoms = close_tag_atoms(name)
        self.stop = re.compile(rf"</{esc}\s*>", re.I)
        self.partial = re.compile(prefix_pattern(atoms), re.I)
        self.plain_stop = re.compile(rf"</{esc}\s*>|<!\[CDATA\[", re.I)
        self.plain_partial = re.compile(
            prefix_pattern(atoms) + "|" + prefix_pattern(_CDATA_ATOMS), re.I
        )
        self.follow = re.compile(rf"\s*</{esc}\s*>", re.I)
        self.follow_partial = re.compile(r"\s*" + prefix_pattern(atoms), re.I)


@lru_cache(maxsize=32)
def _close(name: str) -> _Close:
    return _Close(name.lower())


def _attrs(raw: str) -> dict[str, str]:
    if not raw:
        return {}
    return {
        m.group(1).lower(): unescape_xml(m.group(2) if m.group(2) is not None else m.group(3))
        for m in _ATTR.finditer(raw)
    }


State = Callable[[str, int], tuple[int, bool]]


class XmlParser(TextParser):
    name = "xml"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._state: State = self._s_text
        self._kind = ""  # "tool", "write_file", "patch_file", "run_bash" (inside <tool>)
        self._shorthand = False  # <write_file path> / <run_bash> rather than <tool name>
        self._seg: str | None = None
        self._tool_name = ""
        self._parts: list[str] = []  # raw body of a generic tool
        self._path: str | None = None
        self._stray = False  # text between the arguments of a file tool
        self._value: list[str] | None = None  # a small argument value being collected
        self._close_name = "arg"
        self._markers: tuple[str, str] | None = None
        self._lead: list[str] = []
        self._mpos = 0

    # -- text ------------------------------------------------------------------------------
    def _plain(self, text: str) -> bool:
        return "<" not in text and self._state == self._s_text

    def _s_text(self, buf: str, pos: int) -> tuple[int, bool]:
        scan = pos
        while True:
            m = _CAND.search(buf, scan)
            if m is None:
                hold = last_char_hold(buf, scan, "<", _CAND_PARTIAL)
                self._text(buf[pos:hold])
                return hold, False
            i = m.start()
            j = buf.find(">", i, i + MAX_TAG + 1)
            if j < 0:
                if len(buf) - i > MAX_TAG:
                    scan = i + 1
                    continue
                self._text(buf[pos:i])
                return i, False
            tag = _OPEN_TAG.fullmatch(buf, i, j + 1)
            if tag is not None:
                name = tag.group(1).lower()
                attrs = _attrs(tag.group(2))
                needed = "name" if name == "tool" else "path" if name == "write_file" else ""
                if not needed or attrs.get(needed, "").strip():
                    self._text(buf[pos:i])
                    self._open(name, attrs, bool(tag.group(3)))
                    return j + 1, True
            scan = i + 1

    def _open(self, name: str, attrs: dict[str, str], self_closing: bool) -> None:
        self._parts = []
        self._path = None
        self._seg = None
        self._stray = False
        if name == "tool":
            tool = attrs["name"].strip()
            self._tool_name = tool
            self._shorthand = False
            if tool in _FILE_TYPES:
                self._kind = tool
                if attrs.get("path", "").strip():
                    self._path = attrs["path"].strip()
                if tool == "run_bash":
                    self._seg = self._start(SegmentType.RUN_BASH)
                self._state = self._s_file
                if self_closing:
                    self._end_file()
            else:
                self._kind = "tool"
                self._seg = self._start(SegmentType.TOOL_CALL, {"tool_name": tool})
                self._state = self._s_generic
                if self_closing:
                    self._end_generic()
            return
        self._shorthand = True
        self._kind = name
        if name == "write_file":
            self._path = attrs["path"].strip()
            self._seg = self._start(SegmentType.WRITE_FILE, {"path": self._path})
            self._begin_content("write_file", _FILE_TYPES["write_file"][2])
        else:
            self._seg = self._start(SegmentType.RUN_BASH)
            self._begin_content("run_bash", None)
        if self_closing:
            self._content_done()

    # -- generic tool ----------------------------------------------------------------------
    def _raw(self, text: str) -> None:
        if text:
            assert self._seg is not None
            self._parts.append(text)
            self._content(self._seg, text)

    def _s_generic(self, buf: str, pos: int) -> tuple[int, bool]:
        m = _GENERIC_STOP.search(buf, pos)
        if m is None:
            hold = last_char_hold(buf, pos, "<", _GENERIC_PARTIAL)
            self._raw(buf[pos:hold])
            return hold, False
        if m.group()[1] == "!":
            self._raw(buf[pos : m.end()])
            self._state = self._s_generic_cdata
            return m.end(), True
        self._raw(buf[pos : m.start()])
        self._end_generic()
        return m.end(), True

    def _s_generic_cdata(self, buf: str, pos: int) -> tuple[int, bool]:
        i = buf.find("]]>", pos)
        if i < 0:
            hold = literal_hold(buf, pos, "]]>")
            self._raw(buf[pos:hold])
            return hold, False
        self._raw(buf[pos : i + 3])
        self._state = self._s_generic
        return i + 3, True

    def _end_generic(self) -> None:
        assert self._seg is not None
        body = "".join(self._parts)
        self._parts = []
        arguments, error = self._resolve_arguments(body)
        where = f"tool call {self._tool_name} ({self._seg})"
        meta = tool_end_metadata({"tool_name": self._tool_name}, arguments, error, body, where)
        self._end(self._seg, meta)
        self._seg = None
        self._state = self._s_text

    # -- write_file / patch_file / run_bash inside <tool> ------------------------------------
    def _s_file(self, buf: str, pos: int) -> tuple[int, bool]:
        """Between the arguments: whitespace and tags; other text is ignored, and reported."""
        i = buf.find("<", pos)
        if i < 0:
            self._stray = self._stray or _NON_WS.search(buf, pos) is not None
            return len(buf), False
        self._stray = self._stray or _NON_WS.search(buf, pos, i) is not None
        j = buf.find(">", i, i + MAX_TAG + 1)
        if j < 0:
            if len(buf) - i > MAX_TAG:
                self._stray = True
                return i + 1, True
            return i, False
        m = _ANY_TAG.fullmatch(buf, i, j + 1)
        if m is None:
            self._stray = True
            return i + 1, True
        closing, tag, raw_attrs, self_closing = m.groups()
        low = tag.lower()
        if closing:
            if low == "tool":
                self._end_file()
            elif low != "arguments":
                self._stray = True  # a closing tag that closes nothing
            return j + 1, True
        if self_closing:
            self._stray = self._stray or low != "arg"
            return j + 1, True
        if low in ("arguments", "tool"):
            return j + 1, True
        if low == "arg":
            named = _ARG_NAME.search(raw_attrs)
            # name="" is a name (an empty one): group 1 is "", not None
            value = named.group(1) if named and named.group(1) is not None else ""
            if named and named.group(2) is not None:
                value = named.group(2)
            key = unescape_xml(value).strip().lower()
        else:
            key = low
        _, content_key, markers = _FILE_TYPES[self._kind]
        if key == content_key:
            self._file_segment()
            self._begin_content(low, markers)
        else:
            self._value = [] if key == "path" else None
            self._close_name = low
            self._state = self._s_value
        return j + 1, True

    def _s_value(self, buf: str, pos: int) -> tuple[int, bool]:
        close = _close(self._close_name)
        m = close.stop.search(buf, pos)
        if m is None:
            hold = last_char_hold(buf, pos, "<", close.partial)
            if self._value is not None:
                self._value.append(buf[pos:hold])
            return hold, False
        if self._value is not None:
            self._value.append(buf[pos : m.start()])
            path = unescape_xml("".join(self._value)).strip()
            self._value = None
            if path:
                self._path = path
                self._file_segment()
        self._state = self._s_file
        return m.end(), True

    def _file_metadata(self) -> dict[str, Any]:
        if self._kind != "run_bash" and self._path:
            return {"path": self._path}
        return {}

    def _file_segment(self) -> str:
        """The file tool's segment, started (with what is known of its path) if not yet."""
        if self._seg is None:
            self._seg = self._start(_FILE_TYPES[self._kind][0], self._file_metadata())
        return self._seg

    def _end_file(self) -> None:
        seg = self._file_segment()
        meta = self._file_metadata()
        problems = []
        if self._kind != "run_bash" and not self._path:
            problems.append("has no path")
        if self._stray:
            problems.append("holds text outside its arguments, which was ignored")
        if problems:
            meta["error"] = f"{self._kind} call ({seg}) {' and '.join(problems)}"
        self._end(seg, meta)
        self._seg = None
        self._state = self._s_text

    # -- streamed content (file text, patch, command) ----------------------------------------
    def _begin_content(self, close_name: str, markers: tuple[str, str] | None) -> None:
        self._close_name = close_name
        self._markers = markers
        self._lead = []
        self._mpos = 0
        self._state = self._s_lead if markers else self._s_plain

    def _emit(self, text: str) -> None:
        if text:
            assert self._seg is not None
            self._content(self._seg, text)

    def _content_done(self) -> None:
        if self._shorthand:
            assert self._seg is not None
            self._end(self._seg, self._file_metadata())
            self._seg = None
            self._state = self._s_text
        else:
            self._state = self._s_file

    def _s_lead(self, buf: str, pos: int) -> tuple[int, bool]:
        """Before the content: whitespace, then the start marker or not."""
        assert self._markers is not None
        marker = self._markers[0]
        n = len(buf)
        if self._mpos == 0:
            e = _WS.match(buf, pos).end()  # type: ignore[union-attr]
            if e > pos:
                self._lead.append(buf[pos:e])
                pos = e
            if pos >= n:
                return n, False
        need = marker[self._mpos :]
        got = buf[pos : pos + len(need)]
        if need.startswith(got):
            self._mpos += len(got)
            pos += len(got)
            if self._mpos == len(marker):
                self._lead = []
                self._mpos = 0
                self._state = self._s_newline
                return pos, True
            self._lead.append(got)
            return pos, False
        # no marker: what was held (whitespace, a marker's first letters) is content
        self._emit("".join(self._lead))
        self._lead = []
        self._mpos = 0
        self._state = self._s_plain
        return pos, True

    def _s_newline(self, buf: str, pos: int) -> tuple[int, bool]:
        """Right after the start marker: drop one newline (LF, CRLF or CR)."""
        n = len(buf)
        if pos >= n:
            return pos, False
        c = buf[pos]
        if c == "\r":
            if pos + 1 >= n:
                return pos, False
            pos += 2 if buf[pos + 1] == "\n" else 1
        elif c == "\n":
            pos += 1
        self._state = self._s_marked
        return pos, True

    def _s_marked(self, buf: str, pos: int) -> tuple[int, bool]:
        assert self._markers is not None
        end_marker = self._markers[1]
        i = buf.find(end_marker, pos)
        if i < 0:
            hold = literal_hold(buf, pos, end_marker)
            self._emit(buf[pos:hold])
            return hold, False
        after = i + len(end_marker)
        close = _close(self._close_name)
        m = close.follow.match(buf, after)
        if m is not None:
            self._emit(buf[pos:i])
            self._content_done()
            return m.end(), True
        if close.follow_partial.fullmatch(buf, after) is not None:
            self._emit(buf[pos:i])
            return i, False
        self._emit(buf[pos:after])  # the marker text itself is part of the file
        return after, True

    def _s_plain(self, buf: str, pos: int) -> tuple[int, bool]:
        close = _close(self._close_name)
        m = close.plain_stop.search(buf, pos)
        if m is None:
            hold = last_char_hold(buf, pos, "<", close.plain_partial)
            self._emit(buf[pos:hold])
            return hold, False
        self._emit(buf[pos : m.start()])
        if m.group()[1] == "!":
            self._state = self._s_cdata
        else:
            self._content_done()
        return m.end(), True

    def _s_cdata(self, buf: str, pos: int) -> tuple[int, bool]:
        i = buf.find("]]>", pos)
        if i < 0:
            hold = literal_hold(buf, pos, "]]>")
            self._emit(buf[pos:hold])
            return hold, False
        self._emit(buf[pos:i])
        self._state = self._s_plain
        return i + 3, True

    # -- end of stream ---------------------------------------------------------------------
    def _flush(self) -> None:
        buf = self._buf
        state = self._state
        if state == self._s_text:
            self._text(buf)
            return
        if state in (self._s_generic, self._s_generic_cdata):
            self._raw(buf)
            assert self._seg is not None
            self._end_incomplete(
                self._seg,
                {"tool_name": self._tool_name},
                f"unterminated tool call {self._tool_name} ({self._seg}): "
                "the stream ended before </tool>",
            )
            self._seg = None
            return
        if state == self._s_lead:
            self._emit("".join(self._lead) + buf)
        elif state in (self._s_marked, self._s_plain, self._s_cdata):
            self._emit(buf)
        # _s_newline: a lone CR after the start marker is the dropped newline;
        # _s_file / _s_value: markup between the arguments, not content
        seg = self._file_segment()
        closing = f"</{self._kind}>" if self._shorthand else "</tool>"
        self._end_incomplete(
            seg,
            self._file_metadata(),
            f"unterminated {self._kind} call ({seg}): the stream ended before {closing}",
        )
        self._seg = None
        self._state = self._s_text
