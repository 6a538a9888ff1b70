"""Response-body helpers for recording over HTTP (sans-IO).

- :class:`BodyDecoder` undoes a ``Content-Encoding`` a server applied although it was asked for
  ``identity``, one network read at a time, so the recording still holds one chunk per read.
- :class:`StreamEndDetector` tells whether a stream's own final event has arrived.
- :func:`provider_error_message` finds the human message in a provider's HTTP error body.
"""

from __future__ import annotations

import json
import re
import zlib
from typing import Any

from . import fastjson
from .sse import SSEDecoder, SSEEvent, decode_all

DECODABLE = ("gzip", "x-gzip", "deflate")


MAX_RATIO = 100  # decoded bytes per compressed byte, once past RATIO_FLOOR decoded
RATIO_FLOOR = 1024 * 1024
_STEP = 256 * 1024  # decoded bytes made at a time, so that a bomb never lands in memory whole


class DecodeLimit(ValueError):
    """A compressed body decodes to more than the decoder allows (a decompression bomb)."""


class BodyDecoder:
    """Incremental ``gzip``/``deflate`` decoding; anything else passes through unchanged.

    ``decoded`` says whether bytes are being transformed (the recording notes it), ``encoding``
    is the header value as sent. Decoding is bounded: past :data:`RATIO_FLOOR` decoded bytes, a
    body that decodes to more than ``max_ratio`` times its compressed size, or to more than
    ``max_output`` bytes in all, raises :class:`DecodeLimit` (no more than a step of
    :data:`_STEP` bytes past the bound is ever held).
    """

    def __init__(
        self, encoding: str | None, *, max_ratio: float = MAX_RATIO, max_output: int | None = None
    ) -> None:
        self.encoding = (encoding or "").strip().lower()
        self.decoded = self.encoding in DECODABLE
        self.max_ratio = max_ratio
        self.max_output = max_output
        self.consumed = 0  # compressed bytes taken
        self.produced = 0  # decoded bytes given out
        # why the body stopped being decoded (it is not what its encoding says): from the read
        # that did not decode on, every read is given out as it came
        self.failed: str | None = None
        self._z: Any = None
        self._head = b""  # deflate: the first bytes, until the zlib header can be checked
        if self.encoding in ("gzip", "x-gzip"):
            self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)

    def feed(self, data: bytes) -> bytes:
        if self.failed is not None:
            return data
        if self._z is None:
            if self.encoding != "deflate":
                return data
            self._head += data
            if len(self._head) < 2:
                return b""
            data, self._head = self._head, b""
            cmf, flg = data[0], data[1]
            wrapped = cmf & 0x0F == 8 and (cmf * 256 + flg) % 31 == 0
            # "deflate" is meant to be zlib-wrapped, but servers also send it raw
            self._z = zlib.decompressobj() if wrapped else zlib.decompressobj(-zlib.MAX_WBITS)
        start = self.consumed
        self.consumed += len(data)
        try:
            return self._decode(data)
        except zlib.error as exc:
            self._give_up(exc, start)
            return data  # this read whole, as it came: none of it was given out decoded

    def _give_up(self, exc: zlib.error, start: int) -> None:
        where = f" from its byte {start} on" if start else ""
        self.failed = (
            f"the body is labelled Content-Encoding: {self.encoding} but does not decode "
            f"({exc}): kept as received{where}, not decoded"
        )

    def _decode(self, data: bytes) -> bytes:
        z = self._z
        out: list[bytes] = []
        while True:
            piece = z.decompress(data, _STEP)
            self.produced += len(piece)
            self._check()
            if piece:
                out.append(piece)
            data = z.unconsumed_tail
            if not data:
                break
        return out[0] if len(out) == 1 else b"".join(out)

    def _check(self) -> None:
        produced = self.produced
        if self.max_output is not None and produced > self.max_output:
            raise DecodeLimit(
                f"the {self.encoding} body decodes to more than {self.max_output} bytes"
            )
        if produced > RATIO_FLOOR and produced > self.max_ratio * self.consumed:
            raise DecodeLimit(
                f"the {self.encoding} body decodes to more than {self.max_ratio:g} times "
                f"its size ({self.consumed} bytes to {produced} so far)"
            )

    def flush(self) -> bytes:
        if self.failed is not None:
            return b""
        if self._z is None:
            if self._head:  # a deflate body of one byte cannot be valid; keep it as it came
                head, self._head = self._head, b""
                return head
            return b""
        try:
            tail = self._decode(self._z.unconsumed_tail) if self._z.unconsumed_tail else b""
            rest = bytes(self._z.flush(_STEP))
        except zlib.error as exc:
            self._give_up(exc, self.consumed)
            return b""
        self.produced += len(rest)
        self._check()
        return tail + rest


TERMINAL_EVENTS = frozenset(
    {"message_stop", "response.completed", "response.failed", "response.incomplete"}
)
_TYPE_FIELD = re.compile(r'^\s*\{\s*"type"\s*:\s*"([^"]+)"')


class StreamEndDetector:
    """Follows a body's SSE events to see whether the last one ends the stream.

    OpenAI chat ends with ``data: [DONE]``, Anthropic with ``message_stop``, Responses with
    ``response.completed`` / ``.failed`` / ``.incomplete``. An SDK stops reading there and closes
    the response before the transport saw the end of the body; this says it was complete.
    """

    def __init__(self) -> None:
        self._decoder = SSEDecoder()
        self._last: SSEEvent | None = None

    def feed(self, data: bytes | str) -> None:
        for item in self._decoder.feed(data):
            if type(item) is SSEEvent:
                self._last = item

    @property
    def terminated(self) -> bool:
        """The last event so far ends the stream (looked at only when asked, not per event)."""
        return self._last is not None and _is_terminal(self._last)


def _is_terminal(event: SSEEvent) -> bool:
    if event.event in TERMINAL_EVENTS:
        return True
    data = event.data
    if data.strip() == "[DONE]":
        return True
    found = _TYPE_FIELD.match(data[:80])
    return bool(found and found.group(1) in TERMINAL_EVENTS)


def provider_error_message(status: int, body: bytes) -> str:
    """``HTTP 401: <the provider's message>``, from any of the common error body shapes.

    OpenAI and compatibles: ``{"error": {"message"}}``; Anthropic: ``{"type": "error", "error":
    {"type", "message"}}``; Gemini: ``{"error": {"code", "message", "status"}}`` (sometimes in a
    list); Mistral: ``{"object": "error", "message": ...}``; some gateways: ``{"detail": ...}``.
    """
    text = body.decode("utf-8", "replace").strip()
    message = _message_from_json(text) if text else None
    if message is None:
        message = " ".join(text.split())[:300] if text else "(empty body)"
    return f"HTTP {status}: {message}"


def _message_from_json(text: str) -> str | None:
    try:
        obj: Any = fastjson.loads(text)
    except ValueError:
        # an SSE-framed error (``event: error`` / ``data: {...}``)
        for item in decode_all([text]):
            if type(item) is SSEEvent:
                found = _message_from_json(item.data.strip())
                if found:
                    return found
        return None
    if isinstance(obj, list) and obj:
        obj = obj[0]
    if not isinstance(obj, dict):
        return None
    err = obj.get("error")
    if isinstance(err, dict):
        msg = err.get("message")
        kind = err.get("type") or err.get("status") or err.get("code")
        if isinstance(msg, str) and msg:
            return f"{msg} ({kind})" if isinstance(kind, str) and kind else msg
    if isinstance(err, str) and err:
        return err
    for key in ("message", "detail"):
        value = obj.get(key)
        if isinstance(value, str) and value:
            return value
        if value:
            return json.dumps(value, ensure_ascii=False)[:300]
    return None
