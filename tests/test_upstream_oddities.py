"""Two upstream answers that used to lose the stream, from a real upstream on 127.0.0.1 that sends
them byte for byte: a status HTTP does not define (999) and a body labelled gzip that is not
gzip. The agent gets what the upstream sent; the proxy's recording keeps it (the body as it
came, with a note that it did not decode) and its index tells the truth; ``serve
--record-missing`` passes it on and does not keep it; each says so in one line."""

from __future__ import annotations

import gzip
import logging
import time
import zlib
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamtool.core.net.proxy import ProxyConfig, ProxyThread, parse_upstreams
from streamtool.core.net.tape import serving_tape
from streamtool.core.recording.tape_index import read_index
from streamtool.core.wire.http_body import BodyDecoder

from .odd_upstreams import CHAT_BODY, chat_request, raw_answer
from .proxy_helpers import ScriptedUpstream
from .serve_helpers import read_all

SSE = [b"content-type: text/event-stream"]
ODD = {
    # a status outside 100-599: uvicorn's table of reason phrases has none for it
    "status-999": raw_answer(b"999 Whatever", SSE, CHAT_BODY),
    # plain text under a gzip label (a gateway that compressed nothing, or mislabelled)
    "not-gzip": raw_answer(b"200 OK", [*SSE, b"content-encoding: gzip"], CHAT_BODY),
}


def send(origin: str) -> tuple[int, bytes]:
    """One request; the status and the body's bytes as they came (not decoded)."""
    with (
        httpx.Client(timeout=10) as client,
        client.stream("POST", origin + "/v1/chat/completions", json=chat_request("hi")) as r,
    ):
        return r.status_code, b"".join(r.iter_raw())


def ended(tape: Path, n: int = 1) -> list:
    deadline = time.monotonic() + 10
    while len(entries := read_index(tape)) < n:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return entries


@pytest.mark.parametrize("odd", sorted(ODD))
def test_the_proxy_passes_on_records_and_indexes_an_odd_answer_as_it_came(
    tmp_path: Path, odd: str, caplog: pytest.LogCaptureFixture
) -> None:
    tape = tmp_path / "tape"
    lines: list[str] = []
    with ScriptedUpstream([(0, ODD[odd])]) as up, caplog.at_level(logging.WARNING):
        config = ProxyConfig(out=tape, upstreams=parse_upstreams([up.url]), log=lines.append)
        with ProxyThread(config) as proxy:
            status, body = send(proxy.url)
            [entry] = ended(tape)
    assert body == CHAT_BODY  # every byte, as sent
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
    header, chunks, end = read_all(tape / entry.file)
    assert b"".join(chunks) == CHAT_BODY  # the recording keeps it too
    assert entry.end == end.reason == "error"  # the index says what the recording says
    [line] = lines
    if odd == "status-999":
        assert status == entry.status == header.response["status"] == 999
        assert "status 999, which HTTP does not define" in line
        with serving_tape(tape) as server:  # and the tape answers it as it was recorded
            assert send(server.url) == (999, CHAT_BODY)
    else:
        assert status == entry.status == 200
        note = "labelled Content-Encoding: gzip but does not decode"
        assert note in end.error and "kept as received, not decoded" in end.error
        assert note in line


@pytest.mark.parametrize("odd", sorted(ODD))
def test_record_missing_passes_an_odd_answer_on_and_keeps_nothing(tmp_path: Path, odd: str) -> None:
    tape = tmp_path / "tape"
    lines: list[str] = []
    with (
        ScriptedUpstream([(0, ODD[odd])]) as up,
        serving_tape(tape, record_missing=True, upstream=up.url, log=lines.append) as server,
    ):
        status, body = send(server.url)
        deadline = time.monotonic() + 10
        while not any("not kept" in line for line in lines):
            assert time.monotonic() < deadline, lines
            time.sleep(0.01)
    assert (status, body) == (999 if odd == "status-999" else 200, CHAT_BODY)
    assert read_index(tape) == [] and not list(tape.glob("*.jsonl"))
    [line] = [line for line in lines if "not kept" in line]
    assert ("HTTP 999" if odd == "status-999" else "does not decode") in line


# -- the decoder on its own: a body that stops decoding is kept as it came, for every split -------
_GOOD = gzip.compress(CHAT_BODY * 3, mtime=0)


def reference(reads: list[bytes]) -> tuple[list[bytes], int | None]:
    """Each read decoded, until one does not decode: that one and every later one as they
    came (and the index of the first read kept as it came)."""
    z = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out: list[bytes] = []
    for i, read in enumerate(reads):
        try:
            out.append(z.decompress(read))
        except zlib.error:
            return out + reads[i:], i
    return out, None


@settings(max_examples=300, deadline=None)
@given(
    good=st.integers(0, len(_GOOD)),
    junk=st.binary(min_size=1, max_size=64),
    cuts=st.lists(st.integers(0, 1000), max_size=8),
)
def test_a_body_that_stops_decoding_is_kept_as_it_came_from_the_read_that_failed(
    good: int, junk: bytes, cuts: list[int]
) -> None:
    body = _GOOD[:good] + b"\x00not gzip" + junk
    points = sorted({c % (len(body) + 1) for c in cuts} | {0, len(body)})
    reads = [body[a:b] for a, b in zip(points, points[1:], strict=False) if b > a]
    decoder = BodyDecoder("gzip")
    out = [decoder.feed(read) for read in reads]  # never raises
    tail = decoder.flush()
    expected, failed_at = reference(reads)
    assert out == expected
    if failed_at is None:  # the junk lay past the end of the gzip member: ignored, as zlib does
        assert decoder.failed is None
        return
    assert tail == b""
    assert decoder.failed is not None and "\n" not in decoder.failed
    assert "does not decode" in decoder.failed and "kept as received" in decoder.failed
