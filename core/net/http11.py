"""The client side of HTTP/1.1, sans-IO: a request out as bytes, its response in read by read.

:class:`ResponseParser` takes the bytes of one socket read and gives back the response head
(once complete) and the body bytes that this read carried, transfer-encoding removed and
nothing held back: every body byte comes out of the read it arrived in. h11 writes the
request and reads the head and any body framed by ``Content-Length`` or by the connection's
end; a chunked body is decoded by :class:`ChunkedBody`, because h11 makes one event per HTTP
chunk and an upstream that sends one chunk per server-sent event sends thousands of them
(h11 costs about 4.5 us a chunk, :class:`ChunkedBody` under 1 us).

The errors of the whole client live here, named as httpx names its own and derived from the
matching built-in: see :mod:`.upstream`.
"""

from __future__ import annotations

import re

import h11

MAX_HEAD = 100 * 1024  # bytes of a response head or of a chunked body's trailer section
MAX_CHUNK_LINE = 4096  # bytes of a chunk-size line (extensions included)


# -- errors --------------------------------------------------------------------------------------
class UpstreamError(Exception):
    """Anything that stopped an exchange with the upstream."""


class ConnectError(UpstreamError, ConnectionError):
    """No connection could be opened (name resolution, refused, TLS handshake or certificate)."""


class ConnectTimeout(UpstreamError, TimeoutError):
    """No connection within the connect timeout."""


class ReadTimeout(UpstreamError, TimeoutError):
    """A read stalled past the timeout."""


class WriteTimeout(UpstreamError, TimeoutError):
    """The request could not be written within the timeout."""


class ReadError(UpstreamError, ConnectionError):
    """The connection broke while reading (a reset)."""


class WriteError(UpstreamError, ConnectionError):
    """The connection broke while the request was written."""


class RemoteProtocolError(UpstreamError, ConnectionError):
    """The upstream closed the connection early, or did not speak HTTP/1.1."""


class LocalProtocolError(UpstreamError, ValueError):
    """The request cannot be sent as HTTP/1.1 (an invalid header, say)."""


# -- chunked transfer-coding ---------------------------------------------------------------------
# RFC 9112 section 7.1, as h11 takes it: a size in hex, extensions (ignored), optional spaces
_CHUNK_LINE = re.compile(rb"([0-9A-Fa-f]{1,20})(?:;[^\r\n]*)?[ \t]*")
_SIZE, _DATA, _DATA_END, _TRAILER, _DONE = range(5)


class ChunkedBody:
    """Removes the chunked transfer-coding, one read at a time.

    ``feed(read)`` returns the chunk data that the read carried (chunk data is given out as soon
    as it arrives, a chunk cut across reads included; only size lines, their line ends and the
    trailer section wait for the rest of themselves). :attr:`done` once the last chunk and the
    trailer section (whose fields are dropped) arrived; :attr:`extra` holds whatever followed.
    """

    def __init__(self) -> None:
        self._buf = b""  # an incomplete size line, line end or trailer line
        self._left = 0  # data bytes still to come in the current chunk
        self._state = _SIZE
        self._trailer = 0  # bytes of trailer section so far
        self.extra = b""

    @property
    def done(self) -> bool:
        return self._state == _DONE

    def feed(self, data: bytes) -> bytes:
        if self._state == _DONE:
            self.extra += data
            return b""
        buf = self._buf + data if self._buf else data
        n = len(buf)
        pos = 0
        out: list[bytes] = []
        state = self._state
        left = self._left
        find = buf.find
        while pos < n:
            if state == _DATA:
                end = pos + left
                if end > n:
                    out.append(buf[pos:] if pos else buf)
                    left -= n - pos
                    pos = n
                    break
                out.append(buf[pos:end])
                pos = end
                left = 0
                state = _DATA_END
            if state == _DATA_END:
                if n - pos < 2:
                    if buf[pos:] not in (b"", b"\r"):
                        raise RemoteProtocolError("malformed chunked body: no CRLF after a chunk")
                    break
                if buf[pos : pos + 2] != b"\r\n":
                    raise RemoteProtocolError("malformed chunked body: no CRLF after a chunk")
                pos += 2
                state = _SIZE
            elif state == _SIZE:
                end = find(b"\r\n", pos)
                if end < 0:
                    if n - pos > MAX_CHUNK_LINE:
                        raise RemoteProtocolError("malformed chunked body: a long chunk-size line")
                    break
                found = _CHUNK_LINE.fullmatch(buf, pos, end)
                if found is None:
                    line = buf[pos:end][:40]
                    raise RemoteProtocolError(f"malformed chunked body: chunk-size line {line!r}")
                left = int(found.group(1), 16)
                pos = end + 2
                state = _DATA if left else _TRAILER
            else:  # _TRAILER: header lines up to an empty one
                end = find(b"\r\n", pos)
                if end < 0:
                    if self._trailer + n - pos > MAX_HEAD:
                        raise RemoteProtocolError("malformed chunked body: trailer too long")
                    break
                self._trailer += end + 2 - pos
                if self._trailer > MAX_HEAD:
                    raise RemoteProtocolError("malformed chunked body: trailer too long")
                empty = end == pos
                pos = end + 2
                if empty:
                    state = _DONE
                    self.extra = buf[pos:]
                    pos = n
        self._buf = buf[pos:] if pos < n else b""
        self._state = state
        self._left = left
        if not out:
            return b""
        return out[0] if len(out) == 1 else b"".join(out)

    def eof(self) -> None:
        """The connection ended: an error unless the body was complete."""
        if self._state != _DONE:
            raise RemoteProtocolError(
                "peer closed connection without sending complete message body "
                "(incomplete chunked read)"
            )


# -- the exchange --------------------------------------------------------------------------------
class Head:
    """A response's status line and headers (names lowercased, values as received)."""

    __slots__ = ("status", "reason", "headers", "http_version")

    def __init__(
        self, status: int, reason: bytes, headers: list[tuple[bytes, bytes]], http_version: bytes
    ) -> None:
        self.status = status
        self.reason = reason
        self.headers = headers
        self.http_version = http_version

    def tokens(self, name: bytes) -> list[bytes]:
        """The comma-separated values of header ``name``, lowercased."""
        return [t.strip().lower() for k, v in self.headers if k == name for t in v.split(b",")]


class ResponseParser:
    """One request on a connection, and its response read by read.

    ``feed(data)`` takes one read (``b""``: the upstream closed the connection) and returns the
    response head if this read completed it, else ``None``, and the body bytes that the read
    carried. :attr:`done` is set once the body ended; a :class:`RemoteProtocolError` says the
    response broke off or was not HTTP. Make a new parser for the next request on the same
    connection, when :attr:`reusable` says it may have one.
    """

    def __init__(self) -> None:
        self._h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD)
        self._method = b""
        self._chunked: ChunkedBody | None = None
        self._keep_alive = False
        self.head: Head | None = None
        self.done = False

    def request(
        self, method: str, target: bytes, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> bytes:
        """The request's bytes. ``headers`` must hold ``Host`` and the body's framing."""
        conn = self._h11
        self._method = method.upper().encode("ascii")
        try:
            out = [conn.send(h11.Request(method=method, target=target, headers=headers)) or b""]
            if body:
                out.append(conn.send(h11.Data(data=body)) or b"")
            out.append(conn.send(h11.EndOfMessage()) or b"")
        except h11.LocalProtocolError as exc:
            raise LocalProtocolError(str(exc)) from None
        return b"".join(out)

    def feed(self, data: bytes) -> tuple[Head | None, bytes]:
        chunked = self._chunked
        if chunked is not None:
            if not data:
                chunked.eof()
            out = chunked.feed(data)
            self.done = chunked.done
            return None, out
        if not data and self.head is None:
            raise RemoteProtocolError("the upstream closed the connection without a response")
        conn = self._h11
        head = None
        parts: list[bytes | bytearray] = []
        try:
            conn.receive_data(data)
            while True:
                event = conn.next_event()
                kind = type(event)
                if kind is h11.Data:
                    parts.append(event.data)  # type: ignore[union-attr]
                elif kind is h11.Response:
                    head = self._start(event)  # type: ignore[arg-type]
                    if self._chunked is not None:
                        rest, _ = conn.trailing_data
                        out = self._chunked.feed(bytes(rest))
                        self.done = self._chunked.done
                        return head, out
                elif kind is h11.EndOfMessage:
                    self.done = True
                    break
                elif event is h11.NEED_DATA or event is h11.PAUSED:
                    break
                elif kind is h11.ConnectionClosed:
                    raise RemoteProtocolError("the upstream closed the connection")
                # an InformationalResponse (1xx) is not the response: read on
        except h11.RemoteProtocolError as exc:
            raise RemoteProtocolError(str(exc)) from None
        if not parts:
            return head, b""
        return head, bytes(parts[0]) if len(parts) == 1 else b"".join(parts)

    def _start(self, event: h11.Response) -> Head:
        head = self.head = Head(
            event.status_code, event.reason, list(event.headers), event.http_version
        )
        # h11's own rules: the framing (it has checked that a transfer-encoding is "chunked"
        # alone) and whether the connection may be kept
        self._keep_alive = b"close" not in head.tokens(b"connection") and (
            event.http_version >= b"1.1"
        )
        bodiless = head.status in (204, 304) or self._method == b"HEAD"
        if not bodiless and head.tokens(b"transfer-encoding"):
            self._chunked = ChunkedBody()
        return head

    @property
    def reusable(self) -> bool:
        """Request and response complete and neither side asked to close: the connection may
        carry another request (with a new parser)."""
        if self._chunked is not None:
            return self._chunked.done and not self._chunked.extra and self._keep_alive
        conn = self._h11
        return conn.our_state is h11.DONE and conn.their_state is h11.DONE
