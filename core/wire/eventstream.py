"""AWS event-stream binary framing (``application/vnd.amazon.eventstream``), sans-IO.

Amazon Bedrock streams (``ConverseStream``, ``InvokeModelWithResponseStream``) come as binary
messages, each framed as:

- a 12-byte prelude: total length (uint32, big endian, the whole message), headers length
  (uint32) and the CRC32 of those eight bytes;
- the headers: each a name (one length byte, then UTF-8), a type byte and a typed value (``true``,
  ``false``, byte, short, int, long, bytes and string with a uint16 length, timestamp in
  milliseconds, UUID);
- the payload (JSON for Bedrock);
- the CRC32 of everything before it (uint32).

:class:`EventStreamDecoder` has the decoder interface of :class:`~.sse.SSEDecoder`: bytes in, in
any cut (byte by byte included), SSE-shaped events out, so the converters read frames as they
read SSE events. A frame becomes ``SSEEvent(data=payload text, event=name)`` where ``name`` is
the ``:event-type`` header of an ``event`` message, ``exception:TYPE`` for an ``exception``
message (``:exception-type``) and ``error:CODE`` for an ``error`` message (``:error-code``; its
data is ``{"code", "message"}`` from the headers, as such messages carry no payload). Header names
never hold a colon inside a type name, so the two cannot be confused.

A frame whose prelude CRC does not match leaves no way to find the next frame: the rest of the
body is counted and not decoded. A frame whose message CRC does not match (its lengths are known)
is skipped. Both, bad lengths, malformed headers and a frame cut off by the end of the body are
:attr:`EventStreamDecoder.errors` entries, never an exception. Work is linear: each byte is
looked at a bounded number of times (the buffer is trimmed once per read).

:func:`encode_message` is the inverse (one message's bytes), for tests and emitters.
"""

from __future__ import annotations

import json
import struct
import uuid
import zlib
from typing import Any, NamedTuple

from .sse import SSEEvent, SSEItem

PRELUDE = 12  # total length, headers length, prelude CRC
MIN_MESSAGE = PRELUDE + 4  # a message with no headers and no payload
MAX_MESSAGE = 16 * 1024 * 1024  # the framing's limit on one message
MAX_HEADERS = 128 * 1024  # and on its headers

_PRELUDE = struct.Struct(">III")
_U32 = struct.Struct(">I")

# header value types
_TRUE, _FALSE, _BYTE, _SHORT, _INT, _LONG, _BYTES, _STRING, _TIMESTAMP, _UUID = range(10)
_FIXED = {_BYTE: struct.Struct(">b"), _SHORT: struct.Struct(">h"), _INT: struct.Struct(">i")}
_I64 = struct.Struct(">q")
_U16 = struct.Struct(">H")

HeaderValue = bool | int | bytes | str | uuid.UUID


class Frame(NamedTuple):
    """One decoded message: its headers (in order) and its payload."""

    headers: dict[str, HeaderValue]
    payload: bytes

    @property
    def message_type(self) -> str:
        value = self.headers.get(":message-type", "event")
        return value if isinstance(value, str) else "event"

    @property
    def name(self) -> str:
        """What the frame is: its event type, ``exception:TYPE`` or ``error:CODE``."""
        kind = self.message_type
        if kind == "exception":
            return "exception:" + _text(self.headers.get(":exception-type"))
        if kind == "error":
            return "error:" + _text(self.headers.get(":error-code"))
        return _text(self.headers.get(":event-type"))

    def data(self) -> str:
        """The payload as text (an ``error`` message: its code and message, as JSON)."""
        if self.message_type == "error" and not self.payload:
            return json.dumps(
                {
                    "code": _text(self.headers.get(":error-code")),
                    "message": _text(self.headers.get(":error-message")),
                }
            )
        return self.payload.decode("utf-8", "replace")


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)


class FramingError(NamedTuple):
    """What went wrong in the framing: ``kind`` (``frame_crc``, ``frame_length``,
    ``frame_headers``, ``frame_cut_off``), a message, and the byte offset of the frame."""

    kind: str
    message: str
    offset: int


class HeaderError(ValueError):
    pass


def parse_headers(data: bytes | memoryview) -> dict[str, HeaderValue]:
    """The headers of one message (its header bytes); :class:`HeaderError` when malformed."""
    headers: dict[str, HeaderValue] = {}
    view = memoryview(data)
    pos = 0
    end = len(view)
    while pos < end:
        n = view[pos]
        pos += 1
        if n == 0 or pos + n + 1 > end:
            raise HeaderError(f"a header name of {n} bytes does not fit")
        name = bytes(view[pos : pos + n]).decode("utf-8", "replace")
        pos += n
        kind = view[pos]
        pos += 1
        value: HeaderValue
        if kind == _TRUE:
            value = True
        elif kind == _FALSE:
            value = False
        elif kind in _FIXED:
            fixed = _FIXED[kind]
            if pos + fixed.size > end:
                raise HeaderError(f"header {name!r} is cut off")
            value = fixed.unpack_from(view, pos)[0]
            pos += fixed.size
        elif kind in (_LONG, _TIMESTAMP):
            if pos + 8 > end:
                raise HeaderError(f"header {name!r} is cut off")
            value = _I64.unpack_from(view, pos)[0]
            pos += 8
        elif kind in (_BYTES, _STRING):
            if pos + 2 > end:
                raise HeaderError(f"header {name!r} is cut off")
            size = _U16.unpack_from(view, pos)[0]
            pos += 2
            if pos + size > end:
                raise HeaderError(f"header {name!r} is cut off")
            raw = bytes(view[pos : pos + size])
            pos += size
            value = raw.decode("utf-8", "replace") if kind == _STRING else raw
        elif kind == _UUID:
            if pos + 16 > end:
                raise HeaderError(f"header {name!r} is cut off")
            value = uuid.UUID(bytes=bytes(view[pos : pos + 16]))
            pos += 16
        else:
            raise HeaderError(f"header {name!r} has an unknown value type {kind}")
        headers[name] = value
    return headers


class EventStreamDecoder:
    """Incremental decoder: ``feed(bytes) -> list[SSEItem]``, then ``finish()``.

    Besides the events: :attr:`errors` (framing errors not yet taken, see :meth:`take_errors`),
    :attr:`frames` (messages decoded), :attr:`recent` (the names of the frames the last
    :meth:`feed` decoded, for a view of the reads) and :attr:`mid_event` (a frame is cut by the
    end of what was fed)."""

    kind = "eventstream"
    saw_cr = False  # the framing has no line ends

    def __init__(self) -> None:
        self._buf = bytearray()
        self._offset = 0  # byte offset in the body of _buf[0]
        self._broken = False  # a prelude failed its check: nothing after it is decoded
        self.skipped = 0  # bytes not decoded after the body broke
        self.errors: list[FramingError] = []
        self.frames = 0
        self.recent: list[str] = []

    @property
    def mid_event(self) -> bool:
        return bool(self._buf) and not self._broken

    def take_errors(self) -> list[FramingError]:
        errors, self.errors = self.errors, []
        return errors

    def feed(self, data: bytes | str) -> list[SSEItem]:
        raw = data.encode("utf-8") if isinstance(data, str) else data
        self.recent = []
        if self._broken:
            self.skipped += len(raw)
            return []
        buf = self._buf
        buf += raw
        out: list[SSEItem] = []
        pos = 0
        size = len(buf)
        while size - pos >= PRELUDE:
            total, header_len, crc = _PRELUDE.unpack_from(buf, pos)
            where = self._offset + pos
            if zlib.crc32(buf[pos : pos + 8]) != crc:
                self._break("frame_crc", where, size - pos, "its prelude CRC does not match")
                pos = size
                break
            if (
                total < MIN_MESSAGE
                or total > MAX_MESSAGE
                or header_len > total - MIN_MESSAGE
                or header_len > MAX_HEADERS
            ):
                self._break(
                    "frame_length",
                    where,
                    size - pos,
                    f"its lengths are impossible (total {total}, headers {header_len})",
                )
                pos = size
                break
            if size - pos < total:
                break  # the rest of this frame has not come yet
            frame = memoryview(buf)[pos : pos + total]
            (message_crc,) = _U32.unpack_from(frame, total - 4)
            if zlib.crc32(frame[: total - 4]) != message_crc:
                self.errors.append(
                    FramingError(
                        "frame_crc",
                        f"the frame at byte {where} ({total} bytes) fails its message CRC: "
                        "it is skipped",
                        where,
                    )
                )
            else:
                try:
                    headers = parse_headers(frame[PRELUDE : PRELUDE + header_len])
                except HeaderError as exc:
                    self.errors.append(
                        FramingError(
                            "frame_headers",
                            f"the frame at byte {where} has malformed headers ({exc}): "
                            "it is skipped",
                            where,
                        )
                    )
                else:
                    decoded = Frame(headers, bytes(frame[PRELUDE + header_len : total - 4]))
                    self.frames += 1
                    name = decoded.name
                    self.recent.append(name)
                    out.append(SSEEvent(decoded.data(), name))
            frame.release()
            pos += total
        if pos:
            del buf[:pos]
            self._offset += pos
        return out

    def _break(self, kind: str, where: int, remaining: int, why: str) -> None:
        self._broken = True
        self.skipped += remaining
        self._buf = bytearray()
        self.errors.append(
            FramingError(
                kind,
                f"the frame at byte {where} cannot be read: {why}; the rest of the body is "
                "not decoded",
                where,
            )
        )

    def finish(self) -> list[SSEItem]:
        self.recent = []
        if self._broken:
            if self.errors and self.errors[-1].kind in ("frame_crc", "frame_length"):
                # the error is not taken yet: it says how much was left undecoded
                self.errors[-1] = self.errors[-1]._replace(
                    message=self.errors[-1].message + f" ({self.skipped:,} bytes)"
                )
            return []
        if self._buf:
            n = len(self._buf)
            expected = ""
            if n >= 4:
                expected = f" of {_U32.unpack_from(self._buf, 0)[0]}"
            self.errors.append(
                FramingError(
                    "frame_cut_off",
                    f"the body ends inside a frame at byte {self._offset} "
                    f"({n}{expected} bytes came)",
                    self._offset,
                )
            )
            self._buf = bytearray()
        return []


def looks_like_prelude(data: bytes) -> bool | None:
    """Whether a body starting with ``data`` is event-stream framed: ``None`` while fewer than
    the prelude's 12 bytes are known."""
    if len(data) < PRELUDE:
        return None
    total, header_len, crc = _PRELUDE.unpack_from(data, 0)
    return zlib.crc32(data[:8]) == crc and total >= MIN_MESSAGE and header_len <= total


def _header_bytes(name: str, value: HeaderValue) -> bytes:
    encoded = name.encode("utf-8")
    out = bytes([len(encoded)]) + encoded
    if value is True:
        return out + bytes([_TRUE])
    if value is False:
        return out + bytes([_FALSE])
    if isinstance(value, int):
        return out + bytes([_LONG]) + _I64.pack(value)
    if isinstance(value, uuid.UUID):
        return out + bytes([_UUID]) + value.bytes
    raw = value.encode("utf-8") if isinstance(value, str) else value
    kind = _STRING if isinstance(value, str) else _BYTES
    return out + bytes([kind]) + _U16.pack(len(raw)) + raw


def encode_message(headers: dict[str, HeaderValue], payload: bytes) -> bytes:
    """One message's bytes: prelude, headers (strings as strings, ints as longs), payload, CRC."""
    header_bytes = b"".join(_header_bytes(k, v) for k, v in headers.items())
    total = PRELUDE + len(header_bytes) + len(payload) + 4
    head = _U32.pack(total) + _U32.pack(len(header_bytes))
    body = head + _U32.pack(zlib.crc32(head)) + header_bytes + payload
    return body + _U32.pack(zlib.crc32(body))


def encode_event(event_type: str, payload: bytes) -> bytes:
    """An ``event`` message as AWS services send one (JSON payload)."""
    return _json_message("event", event_type, payload)


def encode_exception(exception_type: str, payload: bytes) -> bytes:
    """An ``exception`` message (a modelled error, in the stream)."""
    return _json_message("exception", exception_type, payload)


def _json_message(kind: str, name: str, payload: bytes) -> bytes:
    """A message of ``kind`` (``event``, ``exception``) named ``name``, its payload JSON."""
    headers: dict[str, HeaderValue] = {
        f":{kind}-type": name,
        ":content-type": "application/json",
        ":message-type": kind,
    }
    return encode_message(headers, payload)
