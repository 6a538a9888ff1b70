"""The proxy's HTTP/1.1 client protocol (sans-IO): every body byte comes out of the read it
arrived in, for every way the upstream's bytes can be cut into reads and every framing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamtool.core.net.http11 import ChunkedBody, RemoteProtocolError, ResponseParser

HOST = [(b"host", b"upstream.test")]


def parser(method: str = "POST") -> ResponseParser:
    p = ResponseParser()
    p.request(method, b"/v1/chat/completions", [*HOST, (b"content-length", b"2")], b"{}")
    return p


def response(
    framing: str, pieces: list[bytes], extensions: bool, trailers: bool
) -> tuple[bytes, int, list[int]]:
    """The upstream's bytes, the length of its head, and the offset in them of every body byte."""
    body = b"".join(pieces)
    headers = b"content-type: text/event-stream\r\n"
    if framing == "chunked":
        headers += b"transfer-encoding: chunked\r\n"
    elif framing == "length":
        headers += b"content-length: %d\r\n" % len(body)
    else:  # the body ends with the connection
        headers += b"connection: close\r\n"
    wire = bytearray(b"HTTP/1.1 200 OK\r\n" + headers + b"\r\n")
    head_len = len(wire)
    offsets: list[int] = []
    if framing != "chunked":
        offsets = list(range(len(wire), len(wire) + len(body)))
        return bytes(wire + body), head_len, offsets
    for piece in pieces:
        if not piece:
            continue
        wire += b"%x%s\r\n" % (len(piece), b";ext=1" if extensions else b"")
        offsets += range(len(wire), len(wire) + len(piece))
        wire += piece + b"\r\n"
    wire += b"0\r\n" + (b"x-trailer: yes\r\n" if trailers else b"") + b"\r\n"
    return bytes(wire), head_len, offsets


def cut(data: bytes, points: list[int]) -> list[tuple[int, int]]:
    marks = sorted({p % (len(data) + 1) for p in points} | {0, len(data)})
    return [(a, b) for a, b in zip(marks, marks[1:], strict=False) if b > a]


# body pieces that look like framing: a chunk-size line, CRLFs, a last chunk, a head
_piece = st.one_of(
    st.binary(max_size=40),
    st.sampled_from([b"\r\n", b"0\r\n\r\n", b"data: {}\n\n", b"5\r\nhello\r\n", b"HTTP/1.1 200"]),
)


@settings(max_examples=400, deadline=None)
@given(
    framing=st.sampled_from(["chunked", "length", "close"]),
    pieces=st.lists(_piece, max_size=12),
    extensions=st.booleans(),
    trailers=st.booleans(),
    points=st.lists(st.integers(0, 5_000), max_size=30),
)
def test_each_read_gives_the_body_bytes_it_carried(framing, pieces, extensions, trailers, points):
    wire, head_len, offsets = response(framing, pieces, extensions, trailers)
    body = b"".join(pieces)
    p = parser()
    heads = []
    for a, b in cut(wire, points):
        head, out = p.feed(wire[a:b])
        # exactly the body bytes that arrived in this read: none held back, none invented
        assert out == bytes(body[i] for i, at in enumerate(offsets) if a <= at < b)
        if head is not None:
            heads.append((head, a, b))
    if framing == "close":
        assert not p.done
        assert p.feed(b"") == (None, b"")
    assert p.done
    [(head, a, b)] = heads
    assert a < head_len <= b  # given by the read that completed it
    assert head.status == 200 and (b"content-type", b"text/event-stream") in head.headers
    assert p.reusable == (framing != "close")


@settings(max_examples=200, deadline=None)
@given(
    pieces=st.lists(st.binary(min_size=1, max_size=30), max_size=10),
    points=st.lists(st.integers(0, 2_000), max_size=20),
)
def test_chunked_body_alone(pieces, points):
    wire = b"".join(b"%X\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"
    body = ChunkedBody()
    out = b"".join(body.feed(wire[a:b]) for a, b in cut(wire, points))
    assert out == b"".join(pieces)
    assert body.done and body.extra == b""


def test_a_burst_of_chunks_in_one_read_is_one_output():
    events = [b'data: {"n": %d}\n\n' % i for i in range(500)]
    wire = b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events)
    body = ChunkedBody()
    assert body.feed(wire) == b"".join(events)
    assert not body.done
    assert body.feed(b"0\r\n\r\n") == b"" and body.done


@pytest.mark.parametrize(
    ("wire", "words"),
    [
        (b"5\r\nhel", "incomplete chunked read"),
        (b"zz\r\n", "chunk-size line"),
        (b"5\r\nhelloXX", "no CRLF after a chunk"),
        (b"1" * 5000, "long chunk-size line"),
    ],
)
def test_broken_chunked_bodies(wire: bytes, words: str) -> None:
    p = parser()
    head, _ = p.feed(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
    assert head is not None
    with pytest.raises(RemoteProtocolError, match=words):
        p.feed(wire)
        p.feed(b"")  # the upstream goes away


def test_no_response_at_all() -> None:
    with pytest.raises(RemoteProtocolError, match="without a response"):
        parser().feed(b"")
    with pytest.raises(RemoteProtocolError, match="illegal status line"):
        parser().feed(b"SSH-2.0-OpenSSH\r\n\r\n")


def test_keep_alive_rules() -> None:
    chunked = b"transfer-encoding: chunked\r\n"
    for head, reusable in (
        (b"HTTP/1.1 200 OK\r\n" + chunked, True),
        (b"HTTP/1.1 200 OK\r\nconnection: close\r\n" + chunked, False),
        (b"HTTP/1.0 200 OK\r\n" + chunked, False),
    ):
        p = parser()
        p.feed(head + b"\r\n2\r\nok\r\n0\r\n\r\n")
        assert p.done and p.reusable == reusable, head
    p = parser()
    p.feed(b"HTTP/1.1 200 OK\r\n" + chunked + b"\r\n0\r\n\r\nunasked-for")
    assert p.done and not p.reusable


def test_informational_and_bodiless_responses() -> None:
    p = parser()
    head, out = p.feed(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n")
    assert head is not None and head.status == 204 and out == b"" and p.done
    p = parser("HEAD")
    head, out = p.feed(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
    assert head is not None and out == b"" and p.done and p.reusable
