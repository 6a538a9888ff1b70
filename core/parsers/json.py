"""``--parser json``: tool calls written as JSON inside the model's text.

See reference/text-formats.md, "JSON". A ``{`` or ``[`` that may start a call (``{`` then a
string, ``[`` then ``{``) is held back while its first JSON tokens (whitespace between them does
not matter) can still become one of the call signatures below ("maybe"); any other brace is text.

    {"tool": {"function": "NAME", ...}}          {"tool": {"function": {"name": "NAME"}, ...}}
    {"tool": {"name": "NAME", ...}}              {"function": {"name": "NAME", ...}}
    {"name": "NAME", "args"|"arguments"|"parameters"|"input": ...}
    [CALL, CALL, ...]  (an array whose first element has one of the shapes above)
    {"tool_calls": [CALL, ...]}

A single call is one ``tool_call`` segment holding its raw JSON (START metadata ``tool_name``).
In an array, or in ``tool_calls``, every element is its own ``tool_call`` segment, so every call
becomes an invocation; the array's brackets and commas are syntax and belong to no segment. The
end of the JSON is found by bracket counting that respects strings and escapes. At END the
element is decoded: ``function`` may be ``{"name": ...}``, ``arguments``/``args``/``input`` may
stand for ``parameters``, string arguments are JSON-decoded. Text around the JSON, code fences
included, stays text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..model import SegmentType
from ..wire import fastjson
from .base import JsonBracketScanner, TextParser, tool_end_metadata

MAX_SIGNATURE = 1024  # raw characters looked at to decide whether a brace starts a call

_NAME = None  # template token: any JSON string (the tool name)
_ARG_KEYS = ("args", "arguments", "parameters", "input")
_CALL_SHAPES: list[tuple[str | None, ...]] = [
    ("{", '"tool"', ":", "{", '"function"', ":", _NAME),
    ("{", '"tool"', ":", "{", '"function"', ":", "{", '"name"', ":", _NAME),
    ("{", '"tool"', ":", "{", '"name"', ":", _NAME),
    ("{", '"function"', ":", "{", '"name"', ":", _NAME),
    *[("{", '"name"', ":", _NAME, ",", f'"{key}"', ":") for key in _ARG_KEYS],
]
# (mode, tokens); the templates are mutually exclusive: no text matches two of them
_TEMPLATES: list[tuple[str, tuple[str | None, ...]]] = [
    *[("object", shape) for shape in _CALL_SHAPES],
    *[("array", ("[", *shape)) for shape in _CALL_SHAPES],
    ("tool_calls", ("{", '"tool_calls"', ":", "[", "{")),
]
_MAX_TOKENS = max(len(tokens) for _, tokens in _TEMPLATES)
_CONTAINER_DEPTH = {"array": 1, "tool_calls": 2}

_SPACE = frozenset(" \t\r\n")
_WS = re.compile(r"[ \t\r\n]*")
# one JSON token after optional whitespace: a whole string, punctuation, a string cut by the end
# of the text, or anything else (which no signature accepts)
_LEX = re.compile(r'\s*(?:("(?:[^"\\]|\\[\s\S])*")|([{}\[\]:,])|("(?:[^"\\]|\\[\s\S])*\\?\Z)|(\S))')

_NO = "no"
_MAYBE = "maybe"


def _lex(raw: str) -> tuple[list[str | None], str | None]:
    """The first JSON tokens of ``raw`` (``None`` for a token no signature accepts) and the
    unterminated string that ends it, if any."""
    tokens: list[str | None] = []
    pos = 0
    while len(tokens) < _MAX_TOKENS:
        m = _LEX.match(raw, pos)
        if m is None:  # only whitespace is left
            return tokens, None
        whole, punct, cut, _other = m.groups()
        if cut is not None:
            return tokens, cut
        tokens.append(whole or punct)
        if whole is None and punct is None:
            break
        pos = m.end()
    return tokens, None


def _match(template: tuple[str | None, ...], tokens: list[str | None], cut: str | None) -> str:
    for i, want in enumerate(template):
        if i >= len(tokens):
            if cut is None:
                return _MAYBE
            if want is _NAME or want[0] == '"' and want.startswith(cut):
                return _MAYBE
            return _NO
        got = tokens[i]
        if got is None:
            return _NO
        if want is _NAME:
            if got[0] != '"':
                return _NO
        elif got != want:
            return _NO
    return "yes"


def classify(raw: str) -> str | tuple[str, str | None]:
    """``"no"``, ``"maybe"`` or ``(mode, raw JSON of the name or None)`` for a call's start.

    Whitespace between JSON tokens does not matter; the first tokens are compared with the
    signatures, and the answer is "maybe" while the text ends before one of them is complete.
    """
    tokens, cut = _lex(raw)
    verdict = _NO
    for mode, template in _TEMPLATES:
        result = _match(template, tokens, cut)
        if result == "yes":
            name = None
            if _NAME in template:
                name = tokens[template.index(_NAME)]
            return mode, name
        if result == _MAYBE:
            verdict = _MAYBE
    return verdict


_MISSING = object()


def call_from_json(value: Any) -> tuple[str, Any]:
    """``(tool name, arguments)`` of one decoded call; ``ValueError`` when it is not a call."""
    if not isinstance(value, dict):
        raise ValueError("the JSON is not an object")
    call = value["tool"] if isinstance(value.get("tool"), dict) else value
    name: Any = None
    arguments: Any = _MISSING
    function = call.get("function")
    if isinstance(function, str):
        name = function
    elif isinstance(function, dict):
        name = function.get("name")
        for key in ("arguments", "parameters"):
            if key in function:
                arguments = function[key]
                break
    if name is None:
        name = call.get("name")
    if arguments is _MISSING:
        for key in ("parameters", "arguments", "args", "input"):
            if key in call:
                arguments = call[key]
                break
    if not isinstance(name, str) or not name:
        raise ValueError("the JSON names no tool")
    if arguments is _MISSING or arguments is None:
        return name, {}
    if isinstance(arguments, str):
        text = arguments.strip()
        if not text:
            return name, {}
        try:
            arguments = fastjson.loads(text)
        except ValueError as exc:
            raise ValueError(f"the string arguments of {name} are not valid JSON ({exc})") from exc
        except RecursionError as exc:
            raise ValueError(f"the string arguments of {name} are nested too deeply") from exc
    return name, arguments


State = Callable[[str, int], tuple[int, bool]]


class JsonParser(TextParser):
    name = "json"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._state: State = self._s_text
        self._mode = ""
        self._scanner = JsonBracketScanner()
        self._container_open = False
        self._container_seen = False
        self._seg: str | None = None
        self._seg_meta: dict[str, Any] = {}
        self._parts: list[str] = []

    # -- text ------------------------------------------------------------------------------
    def _plain(self, text: str) -> bool:
        return "{" not in text and "[" not in text and self._state == self._s_text

    def _s_text(self, buf: str, pos: int) -> tuple[int, bool]:
        """Find the next ``{`` that may start a call: followed by a string, or preceded by a
        ``[`` (an array of calls). ``str.find`` does the scanning; a brace at the end of the
        buffer waits for the next text."""
        n = len(buf)
        scan = pos
        while True:
            j = buf.find("{", scan)
            if j < 0:
                hold = n if self._final else _tail_hold(buf, scan)
                self._text(buf[pos:hold])
                return hold, False
            k = j
            while k > scan and buf[k - 1] in _SPACE:
                k -= 1
            start = k - 1 if k > scan and buf[k - 1] == "[" else j
            after = buf[j + 1 : j + 2]
            if after != '"' and start == j:
                e = _WS.match(buf, j + 1).end() if after in _SPACE else j + 1  # type: ignore[union-attr]
                if e >= n and not self._final:
                    self._text(buf[pos:start])
                    return start, False
                if e >= n or buf[e] != '"':
                    scan = j + 1
                    continue
            self._text(buf[pos:start])
            self._state = self._s_signature
            return start, True

    def _s_signature(self, buf: str, pos: int) -> tuple[int, bool]:
        raw = buf[pos : pos + MAX_SIGNATURE]
        verdict = classify(raw)
        if verdict is _MAYBE:
            if len(raw) < MAX_SIGNATURE and not self._final:
                return pos, False
            verdict = _NO
        if not isinstance(verdict, tuple):
            self._text(buf[pos])  # an ordinary brace
            self._state = self._s_text
            return pos + 1, True
        mode, name = verdict
        self._mode = mode
        self._scanner = JsonBracketScanner()
        self._container_open = self._container_seen = False
        if mode == "object":
            self._open_call(_decode_name(name))
        self._state = self._s_json
        return pos, True

    # -- inside the JSON -------------------------------------------------------------------
    def _open_call(self, name: str | None) -> None:
        self._seg_meta = {"tool_name": name} if name else {}
        self._seg = self._start(SegmentType.TOOL_CALL, self._seg_meta)
        self._parts = []

    def _emit(self, text: str) -> None:
        if text:
            assert self._seg is not None
            self._parts.append(text)
            self._content(self._seg, text)

    def _s_json(self, buf: str, pos: int) -> tuple[int, bool]:
        scanner = self._scanner
        mode = self._mode
        start = pos if self._seg is not None else -1  # where unsent call text begins
        while True:
            found = scanner.next_bracket(buf, pos)
            if found is None:
                if start >= 0:
                    self._emit(buf[start:])
                return len(buf), False
            pos, bracket = found
            depth = scanner.depth
            if mode == "object":
                if depth == 0:
                    self._emit(buf[start:pos])
                    self._close_call()
                    self._state = self._s_text
                    return pos, True
                continue
            container = _CONTAINER_DEPTH[mode]
            if bracket in "{[":
                if depth == container and not self._container_seen:
                    self._container_open = self._container_seen = True
                elif depth == container + 1 and self._container_open and bracket == "{":
                    self._open_call(None)
                    start = pos - 1
            else:
                if depth == container and self._seg is not None:
                    self._emit(buf[start:pos])
                    self._close_call()
                    start = -1
                elif depth < container:
                    self._container_open = False
                if depth == 0:
                    self._state = self._s_text
                    return pos, True

    def _close_call(self) -> None:
        assert self._seg is not None
        raw = "".join(self._parts)
        self._parts = []
        base = self._seg_meta
        error = None
        try:
            name, arguments = call_from_json(fastjson.loads(raw))
        except RecursionError:
            arguments, error = None, "the JSON is nested too deeply"
        except ValueError as exc:
            arguments, error = None, str(exc)
        else:
            base = {**base, "tool_name": name}
        where = f"JSON tool call ({self._seg})"
        self._end(self._seg, tool_end_metadata(base, arguments, error, raw, where))
        self._seg = None

    # -- end of stream ---------------------------------------------------------------------
    def _flush(self) -> None:
        if self._state != self._s_json:
            self._run()  # final: every "maybe" is now "no"
        if self._state == self._s_json:
            if self._buf and self._seg is not None:
                self._emit(self._buf)
            if self._seg is not None:
                self._end_incomplete(
                    self._seg,
                    self._seg_meta,
                    f"unterminated JSON tool call ({self._seg}): the stream ended inside the JSON",
                )
                self._seg = None
            self._state = self._s_text


def _decode_name(raw: str | None) -> str | None:
    """The tool name a signature found (a JSON string token), or None if it does not decode."""
    if raw is None:
        return None
    try:
        name = fastjson.loads(raw, strict=False)
    except ValueError:
        return None
    return name if isinstance(name, str) and name else None


def _tail_hold(buf: str, pos: int) -> int:
    """Hold back a trailing ``[`` (and whitespace): a ``{`` may follow in the next text."""
    n = len(buf)
    k = len(buf.rstrip(" \t\r\n")) if n > pos and buf[n - 1] in _SPACE else n
    if k > pos and buf[k - 1] == "[":
        return k - 1
    return n
