"""Decoders for every framing (SSE, a streamed JSON array, NDJSON) and the choice between them.

The central property: the same bytes cut at any points decode to the same events.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from streamtool.core.wire.framing import PendingDecoder, make_decoder, open_decoder, sniff
from streamtool.core.wire.jsonstream import JSONArrayDecoder, NDJSONDecoder
from streamtool.core.wire.sse import SSEComment, SSEDecoder, SSEEvent

# -- helpers ---------------------------------------------------------------------------------


def decode(kind: str, reads: list[bytes] | list[str]) -> list:
    decoder = make_decoder(kind)
    out: list = []
    for read in reads:
        out.extend(decoder.feed(read))
    out.extend(decoder.finish())
    return out


def cut(data: bytes, points: list[int]) -> list[bytes]:
    points = sorted({p for p in points if 0 < p < len(data)})
    pieces, prev = [], 0
    for p in [*points, len(data)]:
        pieces.append(data[prev:p])
        prev = p
    return pieces


def bytewise(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


GEMINI_ARRAY = (
    "[{\n"
    '  "candidates": [\n'
    "    {\n"
    '      "content": {\n'
    '        "parts": [\n'
    '          {\n            "text": "a [bracket], a {brace}, a \\"quote\\" and a \\\\ back\\\\"\n'
    "          }\n"
    "        ],\n"
    '        "role": "model"\n'
    "      }\n"
    "    }\n"
    "  ],\n"
    '  "modelVersion": "gemini-2.0-flash"\n'
    "}\r\n,\r\n"
    '{"candidates": [{"content": {"parts": [{"text": "caf\\u00e9 \u00e9t\u00e9 \U0001f30a"}]}}]}'
    "\r\n,\r\n"
    '{"usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 9}}\r\n]'
)


def array_elements(text: str) -> list:
    return json.loads(text)


# -- JSON array ------------------------------------------------------------------------------


def test_json_array_elements_are_events_with_the_element_text() -> None:
    events = decode("json-array", [GEMINI_ARRAY])
    assert all(type(e) is SSEEvent and not e.unterminated for e in events)
    assert [json.loads(e.data) for e in events] == array_elements(GEMINI_ARRAY)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=len(GEMINI_ARRAY.encode()) - 1), max_size=40))
def test_json_array_any_chunking_gives_the_same_events(points: list[int]) -> None:
    data = GEMINI_ARRAY.encode("utf-8")
    assert decode("json-array", cut(data, points)) == decode("json-array", [data])


def test_json_array_one_byte_at_a_time_and_text_reads() -> None:
    data = GEMINI_ARRAY.encode("utf-8")
    whole = decode("json-array", [data])
    assert decode("json-array", bytewise(data)) == whole
    assert decode("json-array", list(GEMINI_ARRAY)) == whole  # str reads, one char each


def test_json_array_backslash_at_the_end_of_a_read() -> None:
    body = '[{"text": "a\\\\"}, {"text": "\\"]"}]'
    i = body.index("\\")
    reads = [body[: i + 1], body[i + 1 :]]  # the read ends on the escaping backslash
    events = decode("json-array", reads)
    assert [json.loads(e.data) for e in events] == [{"text": "a\\"}, {"text": '"]'}]


def test_json_array_cut_off_last_element_is_unterminated() -> None:
    body = '[{"a": 1},\n{"b": "unfinished'
    decoder = JSONArrayDecoder()
    events = decoder.feed(body) + decoder.finish()
    assert events[0] == SSEEvent('{"a": 1}')
    assert events[1] == SSEEvent('{"b": "unfinished', unterminated=True)
    assert not decoder.closed


def test_json_array_closed_and_garbage_is_passed_on() -> None:
    decoder = JSONArrayDecoder()
    events = decoder.feed('[{"a": 1}, oops, {"b": 2}]') + decoder.finish()
    assert [e.data for e in events] == ['{"a": 1}', "oops", '{"b": 2}']
    assert decoder.closed


def test_json_array_empty_and_scalar_elements() -> None:
    assert decode("json-array", ["[ ]"]) == []
    events = decode("json-array", ['[1, "two", [3], null]'])
    assert [e.data for e in events] == ["1", '"two"', "[3]", "null"]


def test_json_array_utf8_split_and_bom() -> None:
    data = '\ufeff[{"t": "\u00e9\U0001f30a"}]'.encode()
    assert [json.loads(e.data) for e in decode("json-array", bytewise(data))] == [
        {"t": "\u00e9\U0001f30a"}
    ]


# -- NDJSON ----------------------------------------------------------------------------------

NDJSON = (
    '{"model":"llama3","message":{"content":"He"},"done":false}\n'
    '{"model":"llama3","message":{"content":"llo \u00e9"},"done":false}\r\n'
    "\n"
    '{"model":"llama3","done":true,"eval_count":7}\n'
)


def test_ndjson_one_event_per_line() -> None:
    decoder = NDJSONDecoder()
    events = decoder.feed(NDJSON) + decoder.finish()
    assert [json.loads(e.data) for e in events] == [
        json.loads(line) for line in NDJSON.splitlines() if line.strip()
    ]
    assert decoder.saw_cr


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=len(NDJSON.encode()) - 1), max_size=30))
def test_ndjson_any_chunking_gives_the_same_events(points: list[int]) -> None:
    data = NDJSON.encode("utf-8")
    assert decode("ndjson", cut(data, points)) == decode("ndjson", [data])
    assert decode("ndjson", bytewise(data)) == decode("ndjson", [data])


def test_ndjson_value_cut_off_at_the_end_is_unterminated() -> None:
    events = decode("ndjson", ['{"a": 1}\n{"b": ', "2}", '\n{"c": [1, '])
    assert events == [
        SSEEvent('{"a": 1}'),
        SSEEvent('{"b": 2}'),
        SSEEvent('{"c": [1, ', unterminated=True),
    ]


def test_a_pretty_printed_json_body_is_one_event() -> None:
    """An HTTP error body (or a non-streamed answer) is one JSON object over many lines."""
    body = json.dumps({"error": {"message": "Rate limit", "code": 429}}, indent=4) + "\n"
    events = decode("ndjson", [body[:9], body[9:]])
    assert [json.loads(e.data) for e in events] == [
        {"error": {"message": "Rate limit", "code": 429}}
    ]


# -- choosing the decoder --------------------------------------------------------------------


def test_sniff_by_first_non_whitespace_character() -> None:
    assert sniff(b"[{") == "json-array"
    assert sniff(" \r\n\t[") == "json-array"
    assert sniff(b'{"a":1}\n') == "ndjson"
    assert sniff(b"\xef\xbb\xbf{") == "ndjson"
    assert sniff(b"data: {}\n\n") == "sse"
    assert sniff(b"event: message_start\n") == "sse"
    assert sniff(b": OPENROUTER PROCESSING\n\n") == "sse"
    assert sniff(b"\n\n  ") is None
    assert sniff(b"") is None
    assert sniff(b"\xef\xbb") is None  # a BOM cut by the read


def test_open_decoder_picks_the_decoder() -> None:
    assert isinstance(open_decoder(b"[{"), JSONArrayDecoder)
    assert isinstance(open_decoder("{"), NDJSONDecoder)
    assert isinstance(open_decoder(b"data: x\n\n"), SSEDecoder)
    assert isinstance(open_decoder(b"\r\n"), PendingDecoder)


def test_a_blank_first_read_waits_for_the_first_sign() -> None:
    reads = ["\n", "  \r\n", "[", '{"a": 1}', "]"]
    decoder = open_decoder(reads[0])
    out: list = []
    for read in reads:
        out.extend(decoder.feed(read))
    out.extend(decoder.finish())
    assert out == [SSEEvent('{"a": 1}')]
    assert isinstance(decoder, PendingDecoder) and isinstance(decoder.inner, JSONArrayDecoder)


def test_a_bom_split_across_reads_is_still_recognised() -> None:
    reads = [b"\xef", b"\xbb\xbf", b"\n", b'{"a": 1}\n']
    decoder = open_decoder(reads[0])
    out = [e for r in reads for e in decoder.feed(r)] + decoder.finish()
    assert out == [SSEEvent('{"a": 1}')]


def test_a_blank_body_ends_as_an_empty_sse_stream() -> None:
    decoder = open_decoder(b"   ")
    assert decoder.feed(b"   ") == []
    assert decoder.finish() == []
    assert decoder.saw_cr is False


def test_pending_decoder_then_sse() -> None:
    decoder = open_decoder(b"\r\n")
    out = decoder.feed(b"\r\n") + decoder.feed(b"data: hi\r\n\r\n") + decoder.finish()
    assert out == [SSEEvent("hi")]
    assert decoder.saw_cr is True


# -- SSE: the whole-event fast path and the line rules agree ---------------------------------

_names = st.sampled_from(["message_start", "content_block_delta", "", "a:b", " spaced"])
_values = st.text(
    alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=12
)
_field_lines = st.one_of(
    st.tuples(st.just("data"), _values),
    st.tuples(st.just("event"), _names),
    st.tuples(st.just("id"), _values),
    st.tuples(st.just("retry"), st.sampled_from(["10", "x1"])),
    st.tuples(st.just(""), _values),  # a comment
)
_events = st.lists(_field_lines, min_size=1, max_size=4)


def _render(events: list[list[tuple[str, str]]], eol: str, space: bool) -> str:
    out = []
    for fields in events:
        for name, value in fields:
            sep = ": " if space else ":"
            out.append(f"{name}{sep}{value}{eol}" if name else f":{value}{eol}")
        out.append(eol)
    return "".join(out)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(_events, min_size=1, max_size=6),
    st.sampled_from(["\n", "\r\n", "\r"]),
    st.booleans(),
    st.lists(st.integers(min_value=1, max_value=400), max_size=12),
)
def test_sse_same_events_for_every_chunking(
    events: list, eol: str, space: bool, points: list[int]
) -> None:
    data = _render(events, eol, space).encode("utf-8")
    whole = sse_lines([data])
    assert sse_lines(bytewise(data)) == whole
    assert sse_lines(cut(data, points)) == whole
    # one read per event, the shape the fast path takes whole
    per_event = [_render([fields], eol, space).encode("utf-8") for fields in events]
    assert sse_lines(per_event) == whole


def sse_lines(reads: list[bytes]) -> tuple[list, int]:
    """The events and the count of complete lines."""
    decoder = SSEDecoder()
    out = [item for read in reads for item in decoder.feed(read)] + decoder.finish()
    return out, decoder.lines


def test_sse_fast_path_events() -> None:
    decoder = SSEDecoder()
    text = (
        "event: ping\ndata: {}\n\ndata:x\n\n"
        "event:named\ndata:  two spaces\n\n"
        "id: 7\ndata: with id\n\n: comment\n\ndata: tail"
    )
    out = decoder.feed(text) + decoder.finish()
    assert out == [
        SSEEvent("{}", "ping"),
        SSEEvent("x"),
        SSEEvent(" two spaces", "named"),
        SSEEvent("with id", None, "7"),
        SSEComment("comment"),
        SSEEvent("tail", unterminated=True),
    ]
    assert decoder.lines == 13  # complete lines; the unterminated last one is not counted


def test_sse_retry_line_before_a_whole_event_keeps_its_value() -> None:
    decoder = SSEDecoder()
    out = decoder.feed("retry: 3000\n") + decoder.feed("data: x\n\n")
    assert out == [SSEEvent("x", None, None, 3000)]


def test_the_head_kept_while_undecided_is_an_event_stream_prelude() -> None:
    # framing keeps its own copy of the prelude's length (so that a text body never imports
    # the binary framing's module): the two must not drift apart
    from streamtool.core.wire import eventstream, framing

    assert framing._HEAD == eventstream.PRELUDE
