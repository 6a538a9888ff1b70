"""Choosing the stream decoder from the first bytes of a body.

Every decoder has the interface of :class:`~streamtool.core.wire.sse.SSEDecoder`
(``feed(bytes|str) -> list[SSEItem]``, ``finish()``), so converters see SSE events whatever the
framing was. The first non-whitespace character of the body (after a BOM) decides: ``[`` is a
streamed JSON array (Gemini without ``alt=sse``), ``{`` is a sequence of JSON values (NDJSON as
Ollama's native API sends it, or one pretty-printed JSON body), anything else is SSE. A body
that starts with a NUL byte whose first twelve bytes are an event-stream prelude (its CRC
matches) is AWS's binary event-stream framing (Bedrock). A first read that holds only whitespace
(or part of a BOM, or fewer than twelve bytes of a binary body) does not decide yet: the body is
buffered until a read that does.
"""

from __future__ import annotations

import re
from typing import Protocol

from .jsonstream import JSONArrayDecoder, NDJSONDecoder
from .sse import SSEDecoder, SSEItem


class Decoder(Protocol):
    def feed(self, data: bytes | str) -> list[SSEItem]: ...

    def finish(self) -> list[SSEItem]: ...


_FIRST = re.compile(rb"[^ \t\r\n]")
_BOM = b"\xef\xbb\xbf"
# bytes of the body's beginning kept while the framing is undecided: an event-stream prelude's
# (the binary framing's module is imported only for a body that starts as one might)
_HEAD = 12


def sniff(first: bytes | str) -> str | None:
    """``"json-array"``, ``"ndjson"``, ``"eventstream"`` or ``"sse"`` from the start of a body;
    ``None`` if blank (or binary and shorter than a prelude)."""
    data = _as_bytes(first)
    if data[:1] == b"\x00":
        from .eventstream import PRELUDE, looks_like_prelude

        binary = looks_like_prelude(data[:PRELUDE])
        if binary is None:
            return None
        return "eventstream" if binary else "sse"
    if data.startswith(_BOM):
        return _kind(data, len(_BOM))
    if _BOM.startswith(data):
        return None  # empty, or a BOM cut by the read: wait for more
    return _kind(data, 0)


def _kind(data: bytes, start: int) -> str | None:
    m = _FIRST.search(data, start)
    if m is None:
        return None
    c = data[m.start() : m.start() + 1]
    if c == b"[":
        return "json-array"
    if c == b"{":
        return "ndjson"
    return "sse"


def make_decoder(kind: str) -> Decoder:
    if kind == "json-array":
        return JSONArrayDecoder()
    if kind == "ndjson":
        return NDJSONDecoder()
    if kind == "eventstream":
        from .eventstream import EventStreamDecoder

        return EventStreamDecoder()
    return SSEDecoder()


class PendingDecoder:
    """Buffers a body that has been blank so far; becomes the right decoder at its first sign."""

    kind = "pending"

    def __init__(self) -> None:
        self._head: list[bytes | str] = []
        self._start = b""  # the body's first bytes, while fewer than a prelude's twelve
        self._inner: Decoder | None = None

    @property
    def inner(self) -> Decoder | None:
        return self._inner

    @property
    def saw_cr(self) -> bool:
        return bool(getattr(self._inner, "saw_cr", False))

    @property
    def mid_event(self) -> bool:
        return bool(getattr(self._inner, "mid_event", False))

    @property
    def errors(self) -> list[object]:
        """The framing errors of the decoder it became (see :meth:`take_errors`)."""
        return list(getattr(self._inner, "errors", ()))

    def take_errors(self) -> list[object]:
        take = getattr(self._inner, "take_errors", None)
        return list(take()) if take is not None else []

    def feed(self, data: bytes | str) -> list[SSEItem]:
        if self._inner is not None:
            return self._inner.feed(data)
        self._head.append(data)
        raw = _as_bytes(data)
        if len(self._start) < _HEAD:
            # everything seen so far is in _start: the body's beginning is still undecided
            seen = self._start + raw
            self._start = seen[:_HEAD]
            kind = sniff(seen)
        else:
            kind = _kind(raw, 0)  # the body so far is blank: the new read decides
        if kind is None:
            return []
        return self._open(kind)

    def finish(self) -> list[SSEItem]:
        out: list[SSEItem] = []
        if self._inner is None:
            # a binary start too short to check: the event-stream decoder says it is cut off
            out = self._open("eventstream" if self._start[:1] == b"\x00" else "sse")
        assert self._inner is not None
        return out + self._inner.finish()

    def _open(self, kind: str) -> list[SSEItem]:
        self._inner = inner = make_decoder(kind)
        head, self._head = self._head, []
        out: list[SSEItem] = []
        for data in head:
            out.extend(inner.feed(data))
        return out


def _as_bytes(data: bytes | str) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else bytes(data)


def open_decoder(first: bytes | str) -> Decoder:
    """The decoder for a body whose first read is ``first`` (not yet fed to it)."""
    kind = sniff(first)
    if kind is None:
        return PendingDecoder()
    return make_decoder(kind)
