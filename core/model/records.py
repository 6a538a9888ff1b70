"""Recording format version 1 (docs/recording-format.md): the pure record types, line parsing;
sans-IO.

A recording is JSONL: a ``header`` record, one ``chunk`` record per network read (``text``, or
``b64`` when the read is not valid UTF-8 on its own), then an ``end`` record. A WebSocket session
(a header whose ``transport`` is ``websocket``) has, instead of chunks, one ``message`` record per
message (:class:`Message`: its direction, ``text`` or ``b64``) and ``ping``, ``pong`` and
``close`` records (:class:`Control`). File access lives in
:mod:`streamtool.core.recording.reader`.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from typing import Any

import msgspec

from ..wire import fastjson

FORMAT_NAME = "streamtool-recording"
FORMAT_VERSION = 1
END_REASONS = ("complete", "interrupted", "error", "timeout", "limit")
# a header's "transport" for a WebSocket session (messages, not reads); its records' directions
WEBSOCKET = "websocket"
DIRECTIONS = ("client", "server")
CONTROLS = ("ping", "pong", "close")
# the file a tape keeps its index in (``recording.tape_index``): in a folder of recordings, never
# one of them
INDEX_NAME = "index.jsonl"


MISSING = "no such file or folder"
URL_GIVEN = (
    "a URL, not a file: record its stream first "
    "(streamtool record --base-url URL ... -o rec.jsonl), then use rec.jsonl"
)
# http(s)://... as typed, or as a path object folds it (https:/...)
_URL = re.compile(r"(?i)(https?|wss?):/+(.*)")


def _url(path: str) -> str | None:
    found = _URL.fullmatch(path)
    return f"{found.group(1)}://{found.group(2)}" if found else None


def missing_text(path: str) -> str:
    """``PATH: no such file or folder`` (for a URL: what to do with one instead)."""
    return str(RecordingError(path, None, MISSING))


class RecordingError(Exception):
    """Unusable input. ``str()`` is one line naming the file and, where known, the line."""

    def __init__(self, path: str, line: int | None, message: str) -> None:
        if message == MISSING and _url(path):
            path, message = _url(path) or path, URL_GIVEN
        self.path = path
        self.line = line
        self.message = message
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {message}")


def read_noun(websocket: bool) -> str:
    """What the outputs call a recording's unit of arrival: a network read, or, in a WebSocket
    session (:attr:`Header.websocket`), a message (or control frame)."""
    return "message" if websocket else "read"


class Header(msgspec.Struct):
    provider: str | None = None
    api: str | None = None
    recorded_at: str | None = None
    request: dict[str, Any] = msgspec.field(default_factory=dict)
    response: dict[str, Any] = msgspec.field(default_factory=dict)
    raw_body: bool = False  # True when the source is a raw SSE body, not a recording
    extra: dict[str, Any] = msgspec.field(default_factory=dict)

    @property
    def url(self) -> str | None:
        url = self.request.get("url")
        return url if isinstance(url, str) else None

    @property
    def model(self) -> str | None:
        body = self.request.get("body")
        if isinstance(body, dict) and isinstance(body.get("model"), str):
            return str(body["model"])
        if self.websocket:  # an upgrade has no body: its model is in the URL's query
            from urllib.parse import parse_qs, urlsplit

            found = parse_qs(urlsplit(self.url or "").query).get("model")
            return found[0] if found else None
        return None

    @property
    def websocket(self) -> bool:
        """The recording is a WebSocket session: messages, not network reads."""
        return self.extra.get("transport") == WEBSOCKET

    def to_record(self) -> dict[str, Any]:
        rec: dict[str, Any] = {
            "type": "header",
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "provider": self.provider,
            "api": self.api,
            "recorded_at": self.recorded_at,
            "request": self.request,
            "response": self.response,
        }
        rec.update(self.extra)
        return rec


class Chunk(msgspec.Struct, gc=False):
    """One network read. ``data`` is ``str`` for a ``text`` record and ``bytes`` for ``b64``.

    A msgspec Struct (made fast, and what the reader decodes a recording's chunk lines into);
    it holds no container, so the garbage collector need not track it (``gc=False``)."""

    t: float | None
    data: str | bytes

    @property
    def nbytes(self) -> int:
        data = self.data
        return len(data) if isinstance(data, bytes) else len(data.encode("utf-8"))

    def to_record(self) -> dict[str, Any]:
        data = self.data
        if isinstance(data, bytes):
            return {"type": "chunk", "t": self.t, "b64": base64.b64encode(data).decode("ascii")}
        return {"type": "chunk", "t": self.t, "text": data}


class Message(msgspec.Struct, gc=False):
    """One WebSocket message of a session: who sent it (``client`` or ``server``), when, and its
    payload: ``str`` for a text message, ``bytes`` for a binary one."""

    t: float | None
    direction: str
    data: str | bytes

    @property
    def binary(self) -> bool:
        return isinstance(self.data, bytes)

    def to_record(self) -> dict[str, Any]:
        data = self.data
        rec: dict[str, Any] = {"type": "message", "t": self.t, "direction": self.direction}
        if isinstance(data, bytes):
            rec["b64"] = base64.b64encode(data).decode("ascii")
        else:
            rec["text"] = data
        return rec


class Control(msgspec.Struct):
    """A WebSocket control frame of a session: ``ping`` or ``pong`` (with its payload) or
    ``close`` (its code and reason; code ``None``: the connection ended without a close frame,
    or one without a code)."""

    t: float | None
    direction: str
    kind: str
    data: bytes = b""
    code: int | None = None
    reason: str = ""

    def to_record(self) -> dict[str, Any]:
        rec: dict[str, Any] = {"type": self.kind, "t": self.t, "direction": self.direction}
        if self.kind == "close":
            rec["code"] = self.code
            rec["reason"] = self.reason
        elif self.data:
            rec["b64"] = base64.b64encode(self.data).decode("ascii")
        return rec


SessionRecord = Message | Control


class End(msgspec.Struct):
    t: float | None = None
    reason: str = "complete"
    error: Any = None

    def to_record(self) -> dict[str, Any]:
        return {"type": "end", "t": self.t, "reason": self.reason, "error": self.error}


class RecordedExchange(msgspec.Struct, frozen=True):
    """A whole recording in memory, under its name (a tape's file stem): what a session's
    player serves and a session's faults edit (MCP), the exchanges of a tape together."""

    name: str
    header: Header
    chunks: list[Chunk]
    end: End | None  # None: the recording was cut off


def chunk_from_read(t: float | None, data: bytes) -> Chunk:
    """The chunk record for one network read: text when the bytes are UTF-8 on their own."""
    try:
        return Chunk(t, data.decode("utf-8"))
    except UnicodeDecodeError:
        return Chunk(t, bytes(data))


def parse_header(obj: Any, path: str, line: int) -> Header:
    if not isinstance(obj, dict) or obj.get("type") != "header":
        raise RecordingError(path, line, "no header: a recording starts with a header record")
    if obj.get("format") != FORMAT_NAME:
        raise RecordingError(
            path, line, f"not a {FORMAT_NAME} header (format={obj.get('format')!r})"
        )
    version = obj.get("version")
    if version != FORMAT_VERSION:
        raise RecordingError(
            path, line, f"unsupported recording version {version!r} (this streamtool reads 1)"
        )
    request = obj.get("request") or {}
    response = obj.get("response") or {}
    if not isinstance(request, dict) or not isinstance(response, dict):
        raise RecordingError(path, line, "header 'request' and 'response' must be objects")
    known = {"type", "format", "version", "provider", "api", "recorded_at", "request", "response"}
    return Header(
        provider=obj.get("provider"),
        api=obj.get("api"),
        recorded_at=obj.get("recorded_at"),
        request=request,
        response=response,
        extra={k: v for k, v in obj.items() if k not in known},
    )


def parse_record(line_text: str, path: str, line: int) -> Chunk | End | Message | Control:
    """Parse one record line after the header (a chunk or the end record)."""
    try:
        obj = fastjson.loads(line_text)
    except ValueError as exc:
        raise RecordingError(path, line, f"not JSON ({fastjson.error_text(exc)})") from None
    return record_from_obj(obj, path, line)


def _time(obj: dict[str, Any], path: str, line: int, kind: str) -> float | None:
    t = obj.get("t")
    if t is None:
        return None
    if isinstance(t, bool) or not isinstance(t, int | float):
        raise RecordingError(path, line, f"{kind} 't' must be a number")
    if not math.isfinite(t):
        raise RecordingError(path, line, f"{kind} 't' is {t}: a time must be a finite number")
    return t


def _direction(obj: dict[str, Any], path: str, line: int, kind: str) -> str:
    direction = obj.get("direction")
    if direction not in DIRECTIONS:
        raise RecordingError(
            path, line, f"{kind} record needs a 'direction' of client or server, not {direction!r}"
        )
    return str(direction)


def _b64(obj: dict[str, Any], path: str, line: int, kind: str) -> bytes:
    try:
        return base64.b64decode(obj["b64"], validate=True)
    except (binascii.Error, ValueError, TypeError):
        raise RecordingError(path, line, f"{kind} 'b64' is not valid base64") from None


def session_record(obj: dict[str, Any], path: str, line: int) -> Message | Control:
    """A WebSocket session's record (``message``, ``ping``, ``pong``, ``close``)."""
    kind = str(obj.get("type"))
    t = _time(obj, path, line, kind)
    direction = _direction(obj, path, line, kind)
    if kind == "message":
        if "text" in obj and "b64" in obj:
            raise RecordingError(path, line, "message has both 'text' and 'b64'")
        text = obj.get("text")
        if isinstance(text, str):
            return Message(t, direction, text)
        if isinstance(obj.get("b64"), str):
            return Message(t, direction, _b64(obj, path, line, kind))
        raise RecordingError(path, line, "message record needs a 'text' or 'b64' string")
    if kind == "close":
        code = obj.get("code")
        reason = obj.get("reason") or ""
        if code is not None and (type(code) is not int or not 1000 <= code <= 4999):
            raise RecordingError(path, line, f"close 'code' {code!r} is not a close code")
        if not isinstance(reason, str):
            raise RecordingError(path, line, "close 'reason' must be a string")
        return Control(t, direction, kind, code=code, reason=reason)
    data = _b64(obj, path, line, kind) if isinstance(obj.get("b64"), str) else b""
    return Control(t, direction, kind, data)


def is_utf8_text(text: str) -> bool:
    """Whether ``text`` can be a read's text: no lone surrogate (which a JSON string may
    escape, ``"\\ud800"``, and no UTF-8 holds)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


NOT_UTF8_TEXT = (
    "chunk 'text' holds a lone surrogate: no read is such text (a read that is not UTF-8 is b64)"
)


def record_from_obj(obj: Any, path: str, line: int) -> Chunk | End | Message | Control:
    if not isinstance(obj, dict):
        raise RecordingError(path, line, "a record must be a JSON object")
    kind = obj.get("type")
    if kind == "message" or kind in CONTROLS:
        return session_record(obj, path, line)
    if kind == "chunk":
        t = _time(obj, path, line, "chunk")
        text = obj.get("text")
        if "text" in obj and "b64" in obj:
            raise RecordingError(path, line, "chunk has both 'text' and 'b64': which is the read?")
        if isinstance(text, str):
            if not is_utf8_text(text):
                raise RecordingError(path, line, NOT_UTF8_TEXT)
            return Chunk(t, text)
        b64 = obj.get("b64")
        if isinstance(b64, str):
            try:
                return Chunk(t, base64.b64decode(b64, validate=True))
            except (binascii.Error, ValueError):  # ValueError: characters other than ASCII
                raise RecordingError(path, line, "chunk 'b64' is not valid base64") from None
        raise RecordingError(path, line, "chunk record needs a 'text' or 'b64' string")
    if kind == "end":
        reason = obj.get("reason", "complete")
        if reason not in END_REASONS:
            raise RecordingError(
                path, line, f"end reason {reason!r} is not one of {', '.join(END_REASONS)}"
            )
        t = obj.get("t")
        t = _time(obj, path, line, "end") if isinstance(t, int | float) else None
        return End(t, reason, obj.get("error"))
    if kind == "header":
        raise RecordingError(path, line, "a second header record")
    raise RecordingError(path, line, f"unknown record type {kind!r}")


def os_error_text(exc: OSError) -> str:
    """An operating-system error in streamtool's one wording ("no such file or folder")."""
    if isinstance(exc, FileNotFoundError):
        return MISSING
    if isinstance(exc, IsADirectoryError):
        return "is a folder, not a file"
    if isinstance(exc, PermissionError):
        return "permission denied"
    text = exc.strerror or str(exc)
    return text[:1].lower() + text[1:]
