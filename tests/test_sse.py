"""The SSE decoder: every rule of the SSE specification, and chunking never changes the decoded
events."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.bench_sse_decoder import SHAPES
from streamtool.core.recording.reader import Source
from streamtool.core.wire.framing import open_decoder
from streamtool.core.wire.sse import SSEComment, SSEDecoder, SSEEvent, decode_all

from .conftest import RECORDINGS, corpus_files


def events(*chunks: bytes | str):
    return decode_all(list(chunks))


def test_lf_cr_and_crlf_line_ends_are_equivalent():
    lf = events(b"event: a\ndata: 1\n\ndata: 2\n\n")
    cr = events(b"event: a\rdata: 1\r\rdata: 2\r\r")
    crlf = events(b"event: a\r\ndata: 1\r\n\r\ndata: 2\r\n\r\n")
    assert lf == cr == crlf == [SSEEvent("1", "a"), SSEEvent("2")]


def test_crlf_split_across_reads_is_one_line_end():
    # a naive decoder that normalises each read sees "\r" then "\n": a false blank line that
    # dispatches the event before its second data line
    got = events(b"data: first\r", b"\ndata: second\r\n\r\n")
    assert got == [SSEEvent("first\nsecond")]


def test_mixed_line_ends_in_one_stream():
    got = events(b"data: a\r\n\ndata: b\r\rdata: c\n\r\n")
    assert got == [SSEEvent("a"), SSEEvent("b"), SSEEvent("c")]


def test_utf8_character_split_across_reads():
    body = 'data: {"t": "ありがとう 🙏"}\n\n'.encode()
    cut = body.index("が".encode()) + 1
    cut2 = body.index("🙏".encode()) + 3
    got = events(body[:cut], body[cut:cut2], body[cut2:])
    assert got == [SSEEvent('{"t": "ありがとう 🙏"}')]
    assert "\ufffd" not in got[0].data


def test_text_and_byte_reads_mix():
    # recordings store valid-UTF-8 reads as text and the others as bytes
    body = "data: é🙏\n\n".encode()
    cut = body.index("🙏".encode()) + 2
    got = events("data: ", body[6:cut], body[cut:-2], "\n\n")
    assert got == [SSEEvent("é🙏")]


def test_bom_is_skipped_once():
    assert events(b"\xef\xbb\xbfdata: x\n\n") == [SSEEvent("x")]
    # a BOM split across reads
    assert events(b"\xef", b"\xbb\xbfdata: x\n\n") == [SSEEvent("x")]
    # only the first BOM is special
    assert events(b"data: \xef\xbb\xbfx\n\n") == [SSEEvent("\ufeffx")]


def test_data_without_space_and_only_one_space_removed():
    assert events(b"data:{}\n\ndata:  two\n\n") == [SSEEvent("{}"), SSEEvent(" two")]


def test_multi_line_data_joined_with_newline():
    assert events(b"data: a\ndata: b\ndata:\n\n") == [SSEEvent("a\nb\n")]


def test_comments_are_surfaced_in_order():
    got = events(b": OPENROUTER PROCESSING\n\n:\ndata: x\n: ping\n\n")
    assert got == [
        SSEComment("OPENROUTER PROCESSING"),
        SSEComment(""),
        SSEComment("ping"),
        SSEEvent("x"),
    ]


def test_event_id_retry_fields_and_unknown_fields():
    got = events(b"event: message_start\nid: 7\nretry: 1500\nfoo: bar\ndata: {}\n\n")
    assert got == [SSEEvent("{}", "message_start", "7", 1500)]
    got = events(b"retry: soon\nid: a\x00b\ndata: x\n\n")
    assert got == [SSEEvent("x")]


def test_field_without_colon_and_blank_event_without_data():
    # "data" alone is a data field with an empty value; an event with no data is not dispatched
    assert events(b"data\n\nevent: ping\n\n") == [SSEEvent("")]


def test_unterminated_last_event_is_flagged():
    got = events(b"data: a\n\ndata: b")
    assert got == [SSEEvent("a"), SSEEvent("b", unterminated=True)]
    got = events(b"data: a\n\ndata: b\n")
    assert got == [SSEEvent("a"), SSEEvent("b", unterminated=True)]
    assert events(b"data: a\n\n") == [SSEEvent("a")]


def test_trailing_cr_at_end_of_stream():
    assert events(b"data: a\r\r") == [SSEEvent("a")]


def test_long_line_in_many_reads_is_linear_and_exact():
    payload = "x" * 200_000
    body = f"data: {payload}\n\n"
    decoder = SSEDecoder()
    out = []
    for i in range(0, len(body), 7):
        out.extend(decoder.feed(body[i : i + 7]))
    out.extend(decoder.finish())
    assert out == [SSEEvent(payload)]


def test_u2028_inside_data_is_not_a_line_end():
    assert events('data: {"a": "x\u2028y\u0085z"}\n\n'.encode()) == [
        SSEEvent('{"a": "x\u2028y\u0085z"}')
    ]


# -- the chunking property over every recording and corpus capture ------------------------------


def _bodies() -> list:
    params = []
    for path in sorted(RECORDINGS.glob("*.jsonl")) + corpus_files("*/*.sse"):
        params.append(pytest.param(path, id=f"{path.parent.name}/{path.name}"))
    return params


def _body_bytes(path) -> bytes:
    source = Source(path)
    parts = [c.data if isinstance(c.data, bytes) else c.data.encode() for c in source.chunks()]
    return b"".join(parts)


def _recorded_reads(path) -> list[bytes]:
    return [c.data if isinstance(c.data, bytes) else c.data.encode() for c in Source(path).chunks()]


def _framed(reads: list[bytes]) -> list:
    """Decoded with the decoder the body's framing calls for (SSE, a JSON array, NDJSON)."""
    decoder = open_decoder(reads[0] if reads else b"")
    return [item for read in reads for item in decoder.feed(read)] + decoder.finish()


@pytest.mark.parametrize("path", _bodies())
def test_decoded_events_identical_for_every_chunking(path):
    body = _body_bytes(path)
    whole = _framed([body])
    if Source(path).header.response.get("status", 200) < 400:
        assert whole, "every stream body holds events"
    assert _framed(_recorded_reads(path)) == whole
    assert _framed([body[i : i + 1] for i in range(len(body))]) == whole
    rng = random.Random(len(body))
    for _ in range(5):
        cuts = sorted(rng.sample(range(1, len(body)), k=min(len(body) - 1, rng.randint(1, 40))))
        pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
        assert _framed(pieces) == whole


_SSE_LINES = st.lists(
    st.one_of(
        st.just(""),
        st.text(alphabet="ab:é🙏 \u2028{}", max_size=8).map(lambda s: "data:" + s),
        st.text(alphabet="abc", max_size=4).map(lambda s: ": " + s),
        st.sampled_from(["event: x", "id: 1", "retry: 5", "data", "foo: bar"]),
    ),
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(lines=_SSE_LINES, ending=st.sampled_from(["\n", "\r", "\r\n"]), data=st.data())
def test_random_streams_decode_the_same_however_cut(lines, ending, data):
    body = ending.join(lines).encode()
    whole = decode_all([body])
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(body) - 1)), max_size=10)))
    cuts = [c for c in cuts if 0 < c < len(body)]
    pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    assert decode_all(pieces) == whole
    assert decode_all([body[i : i + 1] for i in range(len(body))]) == whole


# -- the decoder against the rules read line by line -------------------------------------------


def rules(text: str) -> list:
    """The event-stream rules applied to a whole text, one line at a time (the reference the
    decoder's regex paths must agree with)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    rest = lines.pop()
    out: list = []
    data: list[str] = []
    fields: dict = {"event": None, "id": None, "retry": None}
    for line in [*lines, *([rest] if rest else [])]:
        if not line:
            if data:
                out.append(
                    SSEEvent("\n".join(data), fields["event"], fields["id"], fields["retry"])
                )
            data = []
            fields = {"event": None, "id": None, "retry": None}
            continue
        name, colon, value = line.partition(":")
        if colon and not name:
            out.append(SSEComment(value[1:] if value.startswith(" ") else value))
            continue
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "event":
            fields["event"] = value
        elif name == "id" and "\0" not in value:
            fields["id"] = value
        elif name == "retry" and value.isascii() and value.isdigit():
            fields["retry"] = int(value)
    if data:
        out.append(SSEEvent("\n".join(data), fields["event"], fields["id"], fields["retry"], True))
    return out


_VALUE = st.text(alphabet='ab {}":é\u2028', max_size=6)
_BLOCKS = st.lists(
    st.one_of(
        # the common shapes, often
        _VALUE.map(lambda v: f"data: {v}\n\n"),
        _VALUE.map(lambda v: f"event: message_delta\ndata: {v}\n\n"),
        _VALUE.map(lambda v: f"data:{v}\n\n"),
        # everything else
        _VALUE.map(lambda v: f": {v}\n"),
        _VALUE.map(lambda v: f"data: {v}\ndata: {v}\n\n"),
        _VALUE.map(lambda v: f"id: {v}\ndata: x\n\n"),
        st.sampled_from(["retry: 10\n", "\n", "data\n", "foo: bar\n", "event: e\n", "data: a\n"]),
        _VALUE.map(lambda v: f"event: x\n\ndata: {v}\n\n"),
    ),
    max_size=25,
)


@settings(max_examples=300, deadline=None)
@given(blocks=_BLOCKS, data=st.data())
def test_text_reads_decode_as_the_rules_say(blocks: list[str], data) -> None:
    body = "".join(blocks)
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(body) - 1)), max_size=12)))
    cuts = [c for c in cuts if 0 < c < len(body)]
    reads = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    expected = rules(body)
    assert decode_all(reads) == expected
    assert decode_all([body]) == expected
    if data.draw(st.booleans()):
        crlf = body.replace("\n", "\r\n")
        assert decode_all([crlf[i : i + 7] for i in range(0, len(crlf), 7)]) == expected


# -- linear work, whatever the events hold -------------------------------------------------------
# the shapes the decoder's benchmark times, and two more
_UNITS = {
    **SHAPES,
    "data, comment per 10": 'data: {"a":1}\n\n' * 9 + ": keepalive\n\n",
    "alternating": 'data: {"a":1}\n\nevent: ping\n\n',
}


@pytest.mark.parametrize("unit", _UNITS.values(), ids=_UNITS.keys())
def test_the_run_finder_reads_a_body_at_most_twice(unit):
    """Counting work, not time: the characters the decoder's run finder reads (``scanned``)
    stay within twice the body, at 2,000 and at 20,000 events, in one read or in many; a
    finder that looked again after every event without data read the rest each time."""
    for n in (2_000, 20_000):
        body = unit * (n // unit.count("\n\n"))
        for reads in ([body], [body[i : i + 65536] for i in range(0, len(body), 65536)]):
            decoder = SSEDecoder()
            out = [item for read in reads for item in decoder.feed(read)] + decoder.finish()
            assert decoder.scanned <= 2 * len(body), (n, decoder.scanned / len(body))
            assert out == rules(body)


_WITH_AND_WITHOUT_DATA = st.lists(
    st.one_of(
        _VALUE.map(lambda v: f"data: {v}\n\n"),
        _VALUE.map(lambda v: f"event: e\ndata: {v}\n\n"),
        st.sampled_from(["event: ping\n\n", "id: 1\n\n", "retry: 5\n\n", ": c\n\n", "\n"]),
    ),
    min_size=1,
    max_size=300,
)


@settings(max_examples=200, deadline=None)
@given(blocks=_WITH_AND_WITHOUT_DATA, data=st.data())
def test_long_runs_of_events_with_and_without_data_decode_as_the_rules_say(blocks, data):
    body = "".join(blocks)
    assert decode_all([body]) == rules(body)
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(body) - 1)), max_size=6)))
    cuts = [c for c in cuts if 0 < c < len(body)]
    reads = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    assert decode_all(reads) == rules(body)
