"""Choosing the stream decoder from the first bytes of a body.

Every decoder has the interface of :class:`~streamtool.core.sse.SSEDecoder`
(``feed(bytes|str) -> list[SSEItem]``, ``finish()``), so converters see SSE events whatever the
framing was.
"""

from __future__ import annotations

from typing import Protocol

from .sse import SSEDecoder, SSEItem


class Decoder(Protocol):
    def feed(self, data: bytes | str) -> list[SSEItem]: ...

    def finish(self) -> list[SSEItem]: ...


def open_decoder(first: bytes | str) -> Decoder:
    """The decoder for a body whose first read is ``first``."""
    return SSEDecoder()
