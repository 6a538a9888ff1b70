"""The ``kimi-k2`` converter, its special-token scanner, and the ``openai-chat`` hint."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamtool.core.apis.openai_chat.kimi_tokens import (
    ARGUMENT_BEGIN,
    CALL_BEGIN,
    CALL_END,
    MARKERS,
    SECTION_BEGIN,
    SECTION_BEGIN_SINGULAR,
    SECTION_END,
    SECTION_END_SINGULAR,
    SECTION_LIMIT,
    Call,
    KimiTokenScanner,
    MarkerSniffer,
    Note,
    Text,
    decode_double_encoded,
    parse_call_id,
)
from streamtool.core.converters import detect_from_event, detect_from_header
from streamtool.core.model.records import Header
from streamtool.core.recording.reader import Source
from streamtool.core.wire.sse import SSEEvent

from .conftest import RECORDINGS
from .kimi_streams import (
    KIMI_MODEL,
    calls_of,
    chat_event,
    function_tool,
    kinds,
    replay_events,
    summary,
    text_stream,
    tools_header,
)

WEATHER = (
    "I'll check. "
    + SECTION_BEGIN
    + CALL_BEGIN
    + "functions.get_weather:0"
    + ARGUMENT_BEGIN
    + '{"city": "Paris"}'
    + CALL_END
    + CALL_BEGIN
    + "functions.get_time:1"
    + ARGUMENT_BEGIN
    + "{}"
    + CALL_END
    + SECTION_END
    + " Done."
)


def scan(pieces: list[str], limit: int = SECTION_LIMIT) -> list[Text | Call | Note]:
    scanner = KimiTokenScanner(limit)
    out = []
    for piece in pieces:
        out.extend(scanner.feed(piece))
    out.extend(scanner.finish())
    return out


def coalesce(pieces: list[Text | Call | Note]) -> list[object]:
    """Adjacent texts joined: the shape that must not depend on the chunking."""
    out: list[object] = []
    for p in pieces:
        if isinstance(p, Text) and out and isinstance(out[-1], Text):
            out[-1] = Text(out[-1].text + p.text)
        elif not (isinstance(p, Text) and not p.text):
            out.append(p)
    return out


def cut(text: str, points: list[int]) -> list[str]:
    bounds = sorted({min(p, len(text)) for p in points} | {0, len(text)})
    return [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


# -- the scanner ---------------------------------------------------------------------------------
def test_scanner_turns_a_section_into_calls_and_keeps_the_text_around_it():
    assert coalesce(scan([WEATHER])) == [
        Text("I'll check. "),
        Call(
            "functions.get_weather:0",
            '{"city": "Paris"}',
            CALL_BEGIN
            + "functions.get_weather:0"
            + ARGUMENT_BEGIN
            + '{"city": "Paris"}'
            + CALL_END,
        ),
        Call(
            "functions.get_time:1",
            "{}",
            CALL_BEGIN + "functions.get_time:1" + ARGUMENT_BEGIN + "{}" + CALL_END,
        ),
        Text(" Done."),
    ]


def test_scanner_result_is_the_same_for_every_single_cut():
    whole = coalesce(scan([WEATHER]))
    for i in range(len(WEATHER) + 1):
        assert coalesce(scan([WEATHER[:i], WEATHER[i:]])) == whole, i


def test_scanner_holds_back_only_a_possible_marker_prefix():
    scanner = KimiTokenScanner()
    assert scanner.feed("Let me look <|tool_calls_sec") == [Text("Let me look ")]
    assert scanner.tail == "<|tool_calls_sec"
    assert scanner.feed("ond thought") == [Text("<|tool_calls_second thought")]
    assert scanner.feed("a < b, c <") == [Text("a < b, c ")]
    assert scanner.tail == "<"
    assert scanner.feed("|im_end|>") == [Text("<|im_end|>")]
    assert scanner.finish() == []


def test_scanner_spaces_and_newlines_around_markers():
    text = (
        "Before. "
        + SECTION_BEGIN
        + " \n "
        + CALL_BEGIN
        + "\n functions.get_weather:0 \n"
        + ARGUMENT_BEGIN
        + ' {"city": "Beijing"} '
        + CALL_END
        + "\n"
        + SECTION_END
        + "\nAfter."
    )
    assert coalesce(scan([text])) == [
        Text("Before. "),
        Call(
            "functions.get_weather:0",
            '{"city": "Beijing"}',
            CALL_BEGIN
            + "\n functions.get_weather:0 \n"
            + ARGUMENT_BEGIN
            + ' {"city": "Beijing"} '
            + CALL_END,
        ),
        Text("\nAfter."),
    ]


def test_scanner_singular_section_markers_are_accepted_with_a_quirk():
    text = SECTION_BEGIN_SINGULAR + CALL_BEGIN + "functions.a:0" + ARGUMENT_BEGIN + "{}" + CALL_END
    text += SECTION_END_SINGULAR + "x"
    out = coalesce(scan([text]))
    assert [type(p).__name__ for p in out] == ["Note", "Call", "Text"]
    assert out[0] == Note(
        "kimi_singular_section_marker",
        "sections opened by <|tool_call_section_begin|> (singular)",
    )
    assert out[2] == Text("x")


def test_scanner_stray_text_inside_a_section_is_reported_not_content():
    text = (
        "Reasoning. "
        + SECTION_BEGIN
        + " spurious noise "
        + CALL_BEGIN
        + "functions.test:0 "
        + ARGUMENT_BEGIN
        + '{"k": "v"} '
        + CALL_END
        + SECTION_END
    )
    out = coalesce(scan([text]))
    assert [type(p).__name__ for p in out] == ["Text", "Note", "Call"]
    assert out[0] == Text("Reasoning. ")
    note = out[1]
    assert isinstance(note, Note) and note.error and note.kind == "kimi_stray_text"
    assert note.detail == " spurious noise "


def test_scanner_call_closed_by_the_section_end_or_the_next_call_still_counts():
    text = (
        SECTION_BEGIN
        + CALL_BEGIN
        + "functions.a:0"
        + ARGUMENT_BEGIN
        + '{"n": 1}'
        + CALL_BEGIN
        + "functions.b:1"
        + ARGUMENT_BEGIN
        + '{"n": 2}'
        + SECTION_END
    )
    out = coalesce(scan([text]))
    calls = [(p.call_id, p.arguments) for p in out if isinstance(p, Call)]
    assert calls == [("functions.a:0", '{"n": 1}'), ("functions.b:1", '{"n": 2}')]
    notes = [p.kind for p in out if isinstance(p, Note)]
    assert notes == ["kimi_call_end_missing", "kimi_call_end_missing"]


def test_scanner_call_without_argument_marker_is_given_back():
    bad = CALL_BEGIN + "functions.a:0 oops" + CALL_END
    text = SECTION_BEGIN + bad + CALL_BEGIN + "functions.b:1" + ARGUMENT_BEGIN + "{}" + CALL_END
    text += SECTION_END
    out = coalesce(scan([text]))
    assert isinstance(out[0], Note) and out[0].error
    assert out[0].kind == "kimi_call_without_arguments"
    assert out[1] == Text(bad)
    assert isinstance(out[2], Call) and out[2].call_id == "functions.b:1"


def test_scanner_call_outside_a_section_is_read_with_a_quirk():
    text = "Sure. " + CALL_BEGIN + "functions.ls:0" + ARGUMENT_BEGIN + "{}" + CALL_END + " ok"
    out = coalesce(scan([text]))
    assert out[0] == Text("Sure. ")
    assert isinstance(out[1], Note) and out[1].kind == "kimi_call_without_section"
    assert isinstance(out[2], Call) and out[2].call_id == "functions.ls:0"
    assert out[3] == Text(" ok")


def test_scanner_gives_back_a_section_open_at_the_end():
    section = SECTION_BEGIN + CALL_BEGIN + "functions.get_weather:0" + ARGUMENT_BEGIN
    section += '{"city": "Bei'
    out = coalesce(scan(["I'll check. ", section]))
    assert out[0] == Text("I'll check. ")
    assert isinstance(out[1], Note) and out[1].error and out[1].kind == "kimi_section_unterminated"
    assert out[2] == Text(section)
    assert len(out) == 3


def test_scanner_keeps_closed_calls_when_the_section_end_is_missing():
    text = SECTION_BEGIN + CALL_BEGIN + "functions.a:0" + ARGUMENT_BEGIN + "{}" + CALL_END + " "
    out = coalesce(scan([text]))
    assert isinstance(out[0], Call)
    assert out[1] == Note(
        "kimi_section_end_missing",
        "the stream ended inside a Kimi tool-call section after its last call "
        "(no <|tool_calls_section_end|>)",
    )
    assert len(out) == 2


def test_scanner_gives_back_a_section_past_the_limit_then_reads_text_again():
    big = SECTION_BEGIN + CALL_BEGIN + "functions.w:0" + ARGUMENT_BEGIN + '{"c": "' + "x" * 300
    rest = '"}' + CALL_END + SECTION_END + " tail"
    out = coalesce(scan([big[i : i + 7] for i in range(0, len(big), 7)] + [rest], limit=200))
    assert isinstance(out[0], Note) and out[0].kind == "kimi_section_too_large" and out[0].error
    assert out[1] == Text(big + rest)  # the rest is ordinary text once the section was given back
    assert len(out) == 2


def test_scanner_empty_section_gives_nothing():
    assert coalesce(scan(["Reasoning. ", SECTION_BEGIN, SECTION_END])) == [Text("Reasoning. ")]


@given(st.text(alphabet='<|>_tolcaseginbdmr: {}"x\n', max_size=80), st.lists(st.integers(0, 80)))
@settings(max_examples=100, deadline=None)
def test_scanner_arbitrary_text_never_depends_on_the_cuts(text, points):
    assert coalesce(scan(cut(text, points))) == coalesce(scan([text]))


_SOUP = st.lists(
    st.sampled_from(
        [
            *MARKERS,
            "a",
            "  ",
            "\n",
            '{"x": 1}',
            "functions.f:1",
            "<",
            "<|",
            "|>",
            "<|tool_call",
            "0",
        ]
    ),
    max_size=14,
)


@given(
    atoms=_SOUP,
    points=st.lists(st.integers(0, 400), max_size=8),
    limit=st.sampled_from([60, SECTION_LIMIT]),
)
@settings(max_examples=100, deadline=None)
def test_scanner_marker_soup_never_depends_on_the_cuts(atoms, points, limit):
    """Markers in any order (stray ends, nested begins, missing pieces), any cuts, any overflow."""
    text = "".join(atoms)
    assert coalesce(scan(cut(text, points), limit)) == coalesce(scan([text], limit))


def test_scanner_every_marker_is_found_when_cut_at_each_position():
    for marker in MARKERS:
        for i in range(1, len(marker)):
            scanner = KimiTokenScanner()
            first = scanner.feed("a" + marker[:i])
            assert first == [Text("a")]
            scanner.feed(marker[i:])
            if marker in (SECTION_BEGIN, SECTION_BEGIN_SINGULAR, CALL_BEGIN):
                assert scanner.in_section, marker
            else:
                assert not scanner.in_section


# -- property: generated model outputs against an oracle ----------------------------------------
@dataclass
class Expected:
    text: str
    calls: list[tuple[str, str, object]]
    errors: list[str]


_WS = st.sampled_from(["", " ", "\n", " \n ", "\n\n"])
_DECOYS = st.sampled_from(
    ["<", "<|", "<|tool", "<|tool_call", "<|im_end|>", "a < b", "<|tool_callx|>", "x<|y"]
)
_PROSE = st.text(alphabet="abc XYZ.,\n{}\"'é中", max_size=12)
_ARGS = st.dictionaries(
    st.sampled_from(["city", "path", "n", "html"]),
    st.one_of(st.integers(-5, 5), st.text(alphabet='ab <>|/"\\\n', max_size=6), st.booleans()),
    max_size=3,
)


@st.composite
def _text_block(draw):
    parts = draw(st.lists(st.one_of(_PROSE, _DECOYS), max_size=3))
    return "".join(parts)


@st.composite
def _call(draw, counter):
    name = draw(st.sampled_from(["get_weather", "read_file", "ls", "mcp.search"]))
    form = draw(st.sampled_from(["dot", "bare", "underscore"]))
    call_id = {
        "dot": f"functions.{name}:{counter}",
        "bare": f"{name}:{counter}",
        "underscore": f"functions_{name}_{counter}",
    }[form]
    args = draw(_ARGS)
    indent = draw(st.sampled_from([None, 2]))
    text = json.dumps(args, indent=indent, ensure_ascii=draw(st.booleans()))
    if draw(st.booleans()):
        text = json.dumps(text)  # double-encoded
    raw = (
        CALL_BEGIN
        + draw(_WS)
        + call_id
        + draw(_WS)
        + ARGUMENT_BEGIN
        + draw(_WS)
        + text
        + draw(_WS)
        + CALL_END
    )
    return raw, (call_id, name, args)


@st.composite
def model_outputs(draw):
    out: list[str] = []
    expected = Expected("", [], [])
    counter = draw(st.integers(0, 40))  # counters need not start at 0
    for _ in range(draw(st.integers(1, 3))):
        text = draw(_text_block())
        out.append(text)
        expected.text += text
        singular = draw(st.booleans())
        out.append(SECTION_BEGIN_SINGULAR if singular else SECTION_BEGIN)
        for _ in range(draw(st.integers(0, 3))):
            out.append(draw(_WS))
            raw, call = draw(_call(counter))
            counter += 1
            out.append(raw)
            expected.calls.append(call)
        out.append(draw(_WS))
        out.append(SECTION_END_SINGULAR if singular else SECTION_END)
    tail = draw(_text_block())
    out.append(tail)
    expected.text += tail
    if draw(st.booleans()):
        # the stream is cut inside a last section: all of it comes back as text, with an error
        open_section = SECTION_BEGIN + CALL_BEGIN + f"functions.ls:{counter}" + ARGUMENT_BEGIN
        open_section += draw(st.sampled_from(["", '{"pa', '{"path": "/"}']))
        out.append(open_section)
        expected.text += open_section
        expected.errors.append("kimi_section_unterminated")
    return "".join(out), expected


@pytest.mark.parametrize("field", ["content", "reasoning_content"])
@given(case=model_outputs(), points=st.lists(st.integers(0, 600), max_size=12))
@settings(max_examples=60, deadline=None)
def test_generated_outputs_give_their_calls_under_any_chunking(field, case, points):
    text, expected = case
    result = summary(text_stream(cut(text, points), field=field))
    produced = result["text"] if field == "content" else result["reasoning"]
    assert produced == expected.text
    assert calls_of(result) == expected.calls
    assert kinds(result["errors"]) == expected.errors


# -- the converter -------------------------------------------------------------------------------
def test_converter_content_tokens_become_calls_with_verbatim_ids():
    result = summary(text_stream([WEATHER[:30], WEATHER[30:77], WEATHER[77:]]))
    assert result["converter"] == "kimi-k2"
    assert result["text"] == "I'll check.  Done."
    assert calls_of(result) == [
        ("functions.get_weather:0", "get_weather", {"city": "Paris"}),
        ("functions.get_time:1", "get_time", {}),
    ]
    assert result["finish_reason"] == "stop"  # as sent: nothing invented
    assert kinds(result["quirks"], "id") == ["kimi_tokens_in_content", "finish_stop_with_tools"]
    assert result["errors"] == []


def test_converter_reasoning_tokens_become_calls_and_leave_the_reasoning_clean():
    pieces = ["The user wants the weather.", SECTION_BEGIN, CALL_BEGIN, "functions.get_weather:0"]
    pieces += [ARGUMENT_BEGIN, '{"city": ', '"Oslo"}', CALL_END, SECTION_END]
    result = summary(text_stream(pieces, field="reasoning_content"))
    assert result["reasoning"] == "The user wants the weather."
    assert result["text"] == ""
    assert calls_of(result) == [("functions.get_weather:0", "get_weather", {"city": "Oslo"})]
    assert "kimi_tokens_in_reasoning" in kinds(result["quirks"], "id")


def test_converter_keeps_structured_tool_calls_in_order_with_token_calls():
    token_call = SECTION_BEGIN + CALL_BEGIN + "functions.a:0" + ARGUMENT_BEGIN + '{"n": 1}'
    token_call += CALL_END + SECTION_END
    native = {
        "tool_calls": [
            {
                "index": 0,
                "id": "call_native1",
                "type": "function",
                "function": {"name": "b", "arguments": '{"n": 2}'},
            }
        ]
    }
    events = [
        chat_event({"role": "assistant", "content": ""}),
        chat_event({"content": "first "}),
        chat_event({"content": token_call}),
        chat_event({"content": "then <|tool_c"}),  # a marker prefix held back, then a real call
        chat_event(native),
        chat_event({"content": "after " + token_call.replace("functions.a:0", "functions.c:2")}),
        chat_event({}, "stop"),
        "data: [DONE]\n\n",
    ]
    engine = replay_events(events)
    result = engine.summary()
    assert calls_of(result) == [
        ("functions.a:0", "a", {"n": 1}),
        ("call_native1", "b", {"n": 2}),
        ("functions.c:2", "c", {"n": 1}),
    ]
    assert result["text"] == "first then <|tool_cafter "
    order = [
        (ev.segment_type.value, ev.segment_id)
        for ev in engine.handler.get_all_events()
        if ev.event_type.value == "SEGMENT_START" and ev.segment_type.value == "tool_call"
    ]
    assert [seg for _, seg in order] == ["functions.a:0", "call_native1", "functions.c:2"]


def test_converter_decodes_double_encoded_arguments_with_a_quirk():
    args = json.dumps(json.dumps({"city": "Paris", "unit": "celsius"}))
    text = SECTION_BEGIN + CALL_BEGIN + "functions.get_weather:0" + ARGUMENT_BEGIN + args
    text += CALL_END + SECTION_END
    engine = replay_events(text_stream([text]))
    result = engine.summary()
    assert calls_of(result) == [
        ("functions.get_weather:0", "get_weather", {"city": "Paris", "unit": "celsius"})
    ]
    assert "kimi_args_double_encoded" in kinds(result["quirks"], "id")
    contents = [
        ev.delta
        for ev in engine.handler.get_all_events()
        if ev.segment_id.startswith("functions.") and ev.event_type.value == "SEGMENT_CONTENT"
    ]
    assert "".join(contents) == '{"city": "Paris", "unit": "celsius"}'  # decoded, not re-encoded


def test_converter_non_json_arguments_keep_their_raw_text_with_an_error():
    text = SECTION_BEGIN + CALL_BEGIN + "functions.bad:0" + ARGUMENT_BEGIN + '{"city": "Beijing"'
    text += CALL_END + CALL_BEGIN + "functions.good:1" + ARGUMENT_BEGIN + '{"city": "Shanghai"}'
    text += CALL_END + SECTION_END
    result = summary(text_stream([text]))
    bad, good = result["invocations"]
    assert bad["name"] == "bad" and bad["arguments"] is None
    assert bad["raw_arguments"] == '{"city": "Beijing"'
    assert good["arguments"] == {"city": "Shanghai"}
    assert len(result["errors"]) == 1
    assert "functions.bad:0" in result["errors"][0]["message"]


def test_converter_unterminated_section_is_given_back_as_text_with_an_error():
    section = SECTION_BEGIN + CALL_BEGIN + "functions.get_weather:0 " + ARGUMENT_BEGIN
    section += '{"city": "Bei'
    result = summary(text_stream(["I'll check. ", section], finish="length"))
    assert result["invocations"] == []
    assert result["text"] == "I'll check. " + section  # nothing lost
    assert kinds(result["errors"]) == ["kimi_section_unterminated"]


def test_converter_section_past_one_mib_is_given_back_as_text_with_an_error():
    head = "Writing. " + SECTION_BEGIN + CALL_BEGIN + "functions.write_file:0" + ARGUMENT_BEGIN
    body = '{"path": "big.txt", "content": "' + "0123456789abcdef" * (SECTION_LIMIT // 16 + 64)
    pieces = [head] + [body[i : i + 65536] for i in range(0, len(body), 65536)]
    tail = '"}' + CALL_END + SECTION_END + " Done."
    result = summary(text_stream(pieces + [tail]))
    assert result["invocations"] == []
    assert result["text"] == head + body + tail
    assert kinds(result["errors"]) == ["kimi_section_too_large"]


def test_converter_section_just_under_the_limit_still_gives_its_call():
    content = "x" * (SECTION_LIMIT - 200)
    text = SECTION_BEGIN + CALL_BEGIN + "functions.write_file:0" + ARGUMENT_BEGIN
    text += json.dumps({"path": "a.txt", "content": content}) + CALL_END + SECTION_END
    result = summary(text_stream([text[i : i + 65536] for i in range(0, len(text), 65536)]))
    assert calls_of(result) == [
        ("functions.write_file:0", "write_file", {"path": "a.txt", "content": content})
    ]
    assert result["errors"] == []


@pytest.mark.parametrize(
    ("call_id", "name", "quirk"),
    [
        ("functions.get_weather:0", "get_weather", None),
        ("functions.get_weather:17", "get_weather", None),  # counters need not start at 0
        ("get_weather:0", "get_weather", None),
        ("functions_get_weather_3", "get_weather", "kimi_native_ids"),
        ("functions.mcp.search:2", "mcp.search", None),
        ("channel_reply:0", "channel_reply", None),
    ],
)
def test_converter_id_forms(call_id, name, quirk):
    text = SECTION_BEGIN + CALL_BEGIN + call_id + ARGUMENT_BEGIN + '{"q": 1}' + CALL_END
    result = summary(text_stream([text + SECTION_END]))
    assert calls_of(result) == [(call_id, name, {"q": 1})]
    if quirk:
        assert quirk in kinds(result["quirks"], "id")


def test_converter_bad_id_is_given_back_and_the_next_call_still_counts():
    bad = CALL_BEGIN + "functions.invalid.0 " + ARGUMENT_BEGIN + '{"city": "Beijing"}' + CALL_END
    good = CALL_BEGIN + "functions.valid:1 " + ARGUMENT_BEGIN + '{"city": "Shanghai"}' + CALL_END
    result = summary(text_stream(["Help. " + SECTION_BEGIN + bad + good + SECTION_END]))
    assert calls_of(result) == [("functions.valid:1", "valid", {"city": "Shanghai"})]
    assert result["text"] == "Help. " + bad
    assert kinds(result["errors"]) == ["kimi_bad_call_id"]


def test_converter_bare_counter_takes_its_name_from_the_offered_tools():
    call = CALL_BEGIN + "0 " + ARGUMENT_BEGIN + '{"city": "Tokyo", "unit": "celsius"}' + CALL_END
    text = SECTION_BEGIN + call + SECTION_END
    tools = [function_tool("read_file", ["path"]), function_tool("get_weather", ["city", "unit"])]
    result = summary(text_stream([text]), header=tools_header(tools))
    assert calls_of(result) == [("0", "get_weather", {"city": "Tokyo", "unit": "celsius"})]
    assert "kimi_bare_counter_id" in kinds(result["quirks"], "id")

    ambiguous = [function_tool("get_weather", ["city", "unit"]), function_tool("book", ["city"])]
    text = SECTION_BEGIN + call.replace(', "unit": "celsius"', "") + SECTION_END
    result = summary(text_stream([text]), header=tools_header(ambiguous))
    assert result["invocations"] == []
    assert kinds(result["errors"]) == ["kimi_bad_call_id"]
    assert result["text"] == call.replace(', "unit": "celsius"', "")


def test_converter_other_parsers_get_the_same_text():
    result = summary(text_stream([WEATHER]), parser="passthrough")
    assert result["text"] == "I'll check.  Done."
    assert result["invocations"] == []
    assert "tool_calls_ignored_by_parser" in kinds(result["quirks"], "id")


# -- the openai-chat hint ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("field", "quirk"),
    [("content", "kimi_tokens_in_content"), ("reasoning_content", "kimi_tokens_in_reasoning")],
)
def test_openai_chat_names_the_quirk_and_suggests_the_converter(field, quirk):
    pieces = ["Let me check. <|tool_ca", "lls_section_begin|><|tool_call_begin|>functions.a:0"]
    pieces += ["<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>"]
    result = summary(text_stream(pieces, field=field), converter="openai-chat")
    (found,) = [q for q in result["quirks"] if q["id"] == quirk]
    assert "--converter kimi-k2" in found["detail"]
    assert result["invocations"] == []  # read as plain text: nothing taken away
    produced = result["text"] if field == "content" else result["reasoning"]
    assert produced == "".join(pieces)


def test_openai_chat_finds_a_marker_cut_at_any_position():
    for i in range(1, len(SECTION_BEGIN)):
        pieces = ["ok ", "x" + SECTION_BEGIN[:i], SECTION_BEGIN[i:] + "y"]
        result = summary(text_stream(pieces), converter="openai-chat")
        assert "kimi_tokens_in_content" in kinds(result["quirks"], "id"), i


def test_openai_chat_no_hint_for_ordinary_text():
    pieces = ["a <| b", " <|im_end|> <", "|tool", " calls"]
    result = summary(text_stream(pieces), converter="openai-chat")
    assert not [q for q in result["quirks"] if q["id"].startswith("kimi")]


def test_marker_sniffer_reports_once():
    sniffer = MarkerSniffer()
    assert sniffer.feed("abc <|tool") is False
    assert sniffer.feed("_call_begin|>") is True
    assert sniffer.feed("<|tool_call_end|>") is False


# -- ids, arguments, detection ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("call_id", "expected"),
    [
        ("functions.get_weather:0", ("get_weather", "dot")),
        ("get_weather:12", ("get_weather", "dot")),
        ("functions_get_weather_0", ("get_weather", "underscore")),
        ("functions_read_file_12", ("read_file", "underscore")),
        ("7", (None, "counter")),
        ("functions.invalid_get_weather.0", (None, "invalid")),
        ("functions.get weather:0", (None, "invalid")),
        ("functions.:0", (None, "invalid")),
        ("", (None, "invalid")),
    ],
)
def test_parse_call_id(call_id, expected):
    assert parse_call_id(call_id) == expected


def test_decode_double_encoded():
    assert decode_double_encoded('"{\\"a\\": 1}"') == '{"a": 1}'
    assert decode_double_encoded('"[1, 2]"') == "[1, 2]"
    assert decode_double_encoded('"hello"') is None
    assert decode_double_encoded('"{not json}"') is None
    assert decode_double_encoded('{"a": 1}') is None


def test_detection_picks_kimi_k2_for_kimi_models_only():
    assert detect_from_header(tools_header(model=KIMI_MODEL)) == "kimi-k2"
    assert detect_from_header(tools_header(model="accounts/fireworks/models/kimi-k2p5")) == (
        "kimi-k2"
    )
    assert detect_from_header(tools_header(model="gpt-4o")) == "openai-chat"
    assert detect_from_header(Header(api="kimi-k2")) == "kimi-k2"
    anthropic = Header(
        provider="anthropic",
        request={"url": "https://api.anthropic.com/v1/messages", "body": {"model": "kimi-k2"}},
    )
    assert detect_from_header(anthropic) == "anthropic"  # another API: the model does not count
    assert detect_from_event(SSEEvent(data=chat_event({"content": "x"})[6:].strip())) == "kimi-k2"
    other = chat_event({"content": "x"}, model="gpt-4o")[6:].strip()
    assert detect_from_event(SSEEvent(data=other)) == "openai-chat"


def test_named_converter_wins_over_detection():
    result = summary(text_stream([WEATHER]), converter="openai-chat", header=tools_header())
    assert result["converter"] == "openai-chat"
    assert result["invocations"] == []


# -- bundled recordings ------------------------------------------------------------------------
def replay_recording(name: str, converter: str = "auto") -> dict:
    from streamtool.core.drive.replay_file import replay_file

    return replay_file(RECORDINGS / name, converter=converter).summary()


def test_recording_vllm_tokens_in_content():
    result = replay_recording("vllm-kimi-k2-tokens-in-content.jsonl")
    assert result["converter"] == "kimi-k2"
    assert result["text"] == "I'll check the weather in Paris and the local time there. "
    assert calls_of(result) == [
        ("functions.get_weather:0", "get_weather", {"city": "Paris", "unit": "celsius"}),
        ("functions.get_time:1", "get_time", {"city": "Paris"}),
    ]
    assert result["finish_reason"] == "stop"
    assert result["usage"] == {"input_tokens": 412, "output_tokens": 58, "total_tokens": 470}
    assert result["errors"] == []
    assert kinds(result["quirks"], "id") == [
        "kimi_tokens_in_content",
        "finish_stop_with_tools",
        "usage_only_chunk",
    ]


def test_recording_openrouter_tokens_in_reasoning():
    result = replay_recording("openrouter-kimi-k2-tokens-in-reasoning.jsonl")
    assert result["converter"] == "kimi-k2"
    assert result["reasoning"] == (
        "The user wants to know what is in the src folder. I should list it first, recursively."
    )
    assert result["text"] == ""
    assert calls_of(result) == [
        ("functions.list_files:0", "list_files", {"path": "src", "recursive": True})
    ]
    assert result["errors"] == []
    assert "kimi_tokens_in_reasoning" in kinds(result["quirks"], "id")
    assert "sse_comment_keepalive" in kinds(result["quirks"], "id")


def test_recording_fireworks_tokens_split_across_chunks():
    source = Source(RECORDINGS / "fireworks-kimi-k2-tokens-split-across-chunks.jsonl")
    reads = [c.data for c in source.chunks()]
    assert any(not str(r).endswith("\n\n") for r in reads)  # reads cut events mid-way
    result = replay_recording("fireworks-kimi-k2-tokens-split-across-chunks.jsonl")
    assert result["converter"] == "kimi-k2"
    assert result["text"] == (
        "Let me read both files before changing anything — first the README.\n\n"
    )
    assert calls_of(result) == [
        ("functions.read_file:3", "read_file", {"path": "README.md"}),
        ("functions.read_file:4", "read_file", {"path": "pyproject.toml"}),
    ]
    assert result["usage"] == {"input_tokens": 530, "output_tokens": 72, "total_tokens": 602}
    assert result["errors"] == []


@pytest.mark.parametrize(
    ("name", "quirk", "field"),
    [
        ("vllm-kimi-k2-tokens-in-content.jsonl", "kimi_tokens_in_content", "text"),
        ("openrouter-kimi-k2-tokens-in-reasoning.jsonl", "kimi_tokens_in_reasoning", "reasoning"),
        ("fireworks-kimi-k2-tokens-split-across-chunks.jsonl", "kimi_tokens_in_content", "text"),
    ],
)
def test_recordings_under_openai_chat_show_the_markup_and_the_hint(name, quirk, field):
    result = replay_recording(name, converter="openai-chat")
    assert result["invocations"] == []
    assert SECTION_BEGIN in result[field] and SECTION_END in result[field]
    (found,) = [q for q in result["quirks"] if q["id"] == quirk]
    assert "--converter kimi-k2" in found["detail"]


def test_structured_kimi_recording_is_unchanged_under_kimi_k2():
    name = "openrouter-keepalive-comments-tool-call.jsonl"
    auto = replay_recording(name)
    plain = replay_recording(name, converter="openai-chat")
    assert auto["converter"] == "kimi-k2"  # a Kimi model: picked from the header
    for key in ("text", "reasoning", "invocations", "finish_reason", "usage", "errors"):
        assert auto[key] == plain[key], key


@given(points=st.lists(st.integers(0, 3000), max_size=20))
@settings(max_examples=30, deadline=None)
def test_recording_summary_does_not_depend_on_network_reads(points):
    source = Source(RECORDINGS / "fireworks-kimi-k2-tokens-split-across-chunks.jsonl")
    body = "".join(c.data for c in source.chunks())  # type: ignore[misc]
    whole = summary([body], header=source.header)
    recut = summary(cut(body, points), header=source.header)
    for key in ("text", "reasoning", "invocations", "finish_reason", "usage", "errors", "quirks"):
        assert recut[key] == whole[key], key
