"""Choosing the stream decoder from the first bytes of a body.

Every decoder has the interface of :class:`~streamtool.core.wire.sse.SSEDecoder`
(``feed(bytes|str) -> list[SSEItem]``, ``finish()``), so converters see SSE events whatever the
framing was. The first non-whitespace character of the body (after a BOM) decides: ``[`` is a
streamed JSON array (Gemini without ``alt=sse``), ``{`` is a sequence of JSON values (NDJSON as
Ollama's native API sends it, or one pretty-printed JSON body), anything else is SSE. A first
read that holds only whitespace (or part of a BOM) does not decide yet: the body is buffered
until a read that does.
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


def sniff(first: bytes | str) -> str | None:
    """``"json-array"``, ``"ndjson"`` or ``"sse"`` from the start of a body; ``None`` if blank."""
    data = _as_bytes(first)
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
    return SSEDecoder()


class PendingDecoder:
    """Buffers a body that has been blank so far; becomes the right decoder at its first sign."""

    kind = "pending"

    def __init__(self) -> None:
        self._head: list[bytes | str] = []
        self._start = b""  # the first bytes of the body, while fewer than a BOM's three
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

    def feed(self, data: bytes | str) -> list[SSEItem]:
        if self._inner is not None:
            return self._inner.feed(data)
        self._head.append(data)
        raw = _as_bytes(data)
        if len(self._start) < len(_BOM):
            # everything seen so far is in _start: the body's beginning is still undecided
            seen = self._start + raw
            self._start = seen[: len(_BOM)]
            kind = sniff(seen)
        else:
            kind = _kind(raw, 0)  # the body so far is blank: the new read decides
        if kind is None:
            return []
        return self._open(kind)

    def finish(self) -> list[SSEItem]:
        out = self._open("sse") if self._inner is None else []
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
