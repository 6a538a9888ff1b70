"""The hot paths of the Kimi K2 and Responses replays give what the general paths give.

- ``KimiTokenScanner.feed_plain`` takes the commonest read (no ``<``, nothing held back) without
  a piece: fed through it first, a scanner gives the same pieces, read after read, as one whose
  every read goes through ``feed``'s marker loop, for texts full of markers, marker fragments and
  ``<``, cut anywhere, with sections that overflow the limit.
- The ``kimi-k2`` converter's ``hot_struct`` reads such text in place, and keeps plain argument
  reads for the content scanner (given joined before anything else): a batched replay keeps
  every piece of text, reasoning and every call of a replay read by read whose scanners take no
  plain read, sections past the limit included.
- The ``openai-responses`` converter's ``hot_struct`` keeps the call its argument deltas go to
  until another event is read: it reads what the dict path (every check made each time) reads,
  for streams whose calls open, close and interleave, with sequence numbers missing or skipped.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from streamtool.core.apis.openai_chat.kimi_tokens import (
    ARGUMENT_BEGIN,
    CALL_BEGIN,
    CALL_END,
    MARKERS,
    SECTION_BEGIN,
    SECTION_END,
    SECTION_LIMIT,
    KimiTokenScanner,
    Piece,
    Text,
)
from streamtool.core.converters import make_converter
from streamtool.core.engine.replay import ReplayEngine
from streamtool.core.model.records import Chunk, End
from streamtool.core.wire.sse import SSEEvent

from .helpers import feed_many_replay
from .kimi_streams import chat_event, tools_header

SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class GeneralScanner(KimiTokenScanner):
    """The reference: every read goes through ``feed``'s marker loop (no plain read)."""

    def feed_plain(self, text: str) -> str | None:
        return None

    def plain_room(self) -> int:
        return -1


class CountingScanner(KimiTokenScanner):
    """The scanner as it is, counting the reads that reach ``feed`` (not taken as plain)."""

    loop_reads = 0

    def feed(self, text: str) -> list[Piece]:
        self.loop_reads += 1
        return super().feed(text)


def cut(text: str, points: list[int]) -> list[str]:
    bounds = sorted({min(p, len(text)) for p in points} | {0, len(text)})
    return [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


# texts of a Kimi stream: markers, their fragments, "<" that is no marker, calls' parts
ATOMS = st.sampled_from(
    [
        *MARKERS,
        *MARKERS,
        "<|tool_calls_sec",
        "tion_begin|>",
        "<|tool_call",
        "<|",
        "<",
        "|>",
        "a < b",
        "x<|y",
        "Hello ",
        "  ",
        "\n",
        "functions.write_file:0",
        " functions.get:1 ",
        "0",
        '{"path": "a.py", "content": "',
        "def f(x):\\n    return x\\n",
        '"}',
        '"{\\"a\\": 1}"',
        "é✓",
    ]
)


# -- the scanner ---------------------------------------------------------------------------------
def scan_reads(scanner: KimiTokenScanner, reads: list[str], plain_first: bool) -> list[Any]:
    """What each read gives (and the scanner's state after it), then what finish gives."""
    out: list[Any] = []
    for read in reads:
        pieces: list[Piece] | None = None
        if plain_first:
            plain = scanner.feed_plain(read)
            if plain is not None:
                pieces = [Text(plain)] if plain else []
        if pieces is None:
            pieces = scanner.feed(read)
        out.append((pieces, scanner.tail, scanner.in_section, scanner.sections, scanner.calls))
    out.append(scanner.finish())
    return out


@SETTINGS
@given(
    atoms=st.lists(ATOMS, max_size=24),
    points=st.lists(st.integers(0, 600), max_size=30),
    limit=st.sampled_from([1, 30, 90, 250, SECTION_LIMIT]),
)
@example(
    atoms=["a", SECTION_BEGIN, CALL_BEGIN, "functions.f:0", ARGUMENT_BEGIN, '{"a": 1}', CALL_END],
    points=list(range(120)),
    limit=SECTION_LIMIT,
)
@example(  # the arguments reach the limit exactly, then pass it
    atoms=[CALL_BEGIN, "f:0", ARGUMENT_BEGIN, "0123456789", "0123456789"],
    points=[10, 20, 22, 50, 55, 60, 65],
    limit=60,
)
def test_plain_reads_give_what_the_marker_loop_gives(
    atoms: list[str], points: list[int], limit: int
) -> None:
    reads = cut("".join(atoms), points)
    fast = scan_reads(CountingScanner(limit), reads, plain_first=True)
    general = scan_reads(GeneralScanner(limit), reads, plain_first=False)
    assert fast == general
    # feed itself takes the plain reads first: the same again
    assert scan_reads(KimiTokenScanner(limit), reads, plain_first=False) == general


def test_plain_read_takes_only_the_commonest_reads() -> None:
    scanner = KimiTokenScanner(limit=100)  # the markers below take 78 of it
    assert scanner.feed_plain("Hello") == "Hello"  # outside any section: the text itself
    assert scanner.feed_plain("a < b") is None  # a "<": the marker loop reads it
    assert scanner.feed(f"{SECTION_BEGIN}{CALL_BEGIN}f:0{ARGUMENT_BEGIN}") == []
    assert scanner.feed_plain('{"a": ') == ""  # inside a call's arguments: held
    assert scanner.feed_plain("1" * 30) is None  # past the limit: the loop gives it back
    assert scanner.feed(CALL_END[:5]) == []  # a marker prefix held back ...
    assert scanner.tail == CALL_END[:5]
    assert scanner.feed_plain("x") is None  # ... so the next read is no plain read


# -- the kimi-k2 converter -----------------------------------------------------------------------
@st.composite
def kimi_stream(draw: st.DrawFn) -> list[str]:
    """SSE events of a Kimi K2 stream: its text (content, sometimes reasoning) cut anywhere,
    sometimes a structured tool call between, a finish and [DONE]."""
    text = "".join(draw(st.lists(ATOMS, min_size=1, max_size=30)))
    reads = cut(text, draw(st.lists(st.integers(0, 900), max_size=40)))
    events = [chat_event({"role": "assistant", "content": ""})]
    if draw(st.booleans()):
        events.append(chat_event({"content": "Sure. "}))  # the text begun: reads are hot
    structured = 0
    for read in reads:
        field = draw(st.sampled_from(["content"] * 6 + ["reasoning_content"]))
        events.append(chat_event({field: read}))
        if draw(st.integers(0, 15)) == 0:
            call = {
                "index": structured,
                "id": f"call_{structured}",
                "type": "function",
                "function": {"name": "get", "arguments": '{"q": 1}'},
            }
            events.append(chat_event({"tool_calls": [call]}))
            structured += 1
    events.append(chat_event({}, draw(st.sampled_from(["stop", "tool_calls"]))))
    events.append("data: [DONE]\n\n")
    return events


def kimi_replay(
    events: list[str], scanner: type[KimiTokenScanner], batched: bool, limit: int = SECTION_LIMIT
) -> Any:
    engine = ReplayEngine(tools_header(), converter="kimi-k2")
    converter: Any = engine.converter
    converter.content_scanner = scanner(limit)
    converter.reasoning_scanner = scanner(limit)
    chunks = [Chunk(round(0.01 * (i + 1), 3), raw) for i, raw in enumerate(events)]
    if batched:
        engine.feed_chunks(chunks)  # feed_many: the Struct path, the plain reads
    else:
        for chunk in chunks:
            engine.feed_chunk(chunk)  # feed: one event at a time, the scanners' feed
    engine.finish(End(round(0.01 * (len(events) + 1), 3)))
    summary = engine.summary()
    keys = ("text", "reasoning", "invocations", "finish_reason", "usage", "errors", "quirks")
    return {key: summary[key] for key in keys}, converter


@SETTINGS
@given(events=kimi_stream(), limit=st.sampled_from([40, 120, 300, SECTION_LIMIT]))
def test_kimi_batched_replay_keeps_what_the_general_path_keeps(
    events: list[str], limit: int
) -> None:
    """Sections past the limit too: the reads kept for the scanner never pass it."""
    fast, _ = kimi_replay(events, CountingScanner, batched=True, limit=limit)
    general, _ = kimi_replay(events, GeneralScanner, batched=False, limit=limit)
    assert fast == general


def test_kimi_marker_prefix_held_in_the_reasoning_is_text_once_content_comes() -> None:
    """The reasoning ends in what may become a marker; plain content comes next: the prefix was
    reasoning text (the marker it would complete in the next reasoning read is no marker)."""
    reads = [("content", "Hi. "), ("reasoning_content", "Think <|tool_call")]
    reads += [("content", "Hello"), ("reasoning_content", "_begin|>functions.f:0")]
    reads += [("content", " there")]
    events = [chat_event({"role": "assistant", "content": ""})]
    events += [chat_event({field: text}) for field, text in reads]
    events += [chat_event({}, "stop"), "data: [DONE]\n\n"]
    fast, _ = kimi_replay(events, CountingScanner, batched=True)
    general, _ = kimi_replay(events, GeneralScanner, batched=False)
    assert fast == general
    assert fast["reasoning"] == "Think <|tool_call_begin|>functions.f:0"
    assert fast["text"] == "Hi. Hello there" and fast["invocations"] == []


OPEN_CALL = [SECTION_BEGIN, CALL_BEGIN, "functions.f:0", ARGUMENT_BEGIN, '{"a": "']


@pytest.mark.parametrize(
    "reads",
    [
        # a read with "<" inside the arguments, then the call's end: the text after is text
        [*OPEN_CALL, "x < y", CALL_END + SECTION_END, " Bye", " now."],
        [*OPEN_CALL, "1", "x < y", "2", "3", CALL_END, SECTION_END, " Bye"],
        # a chunk that also holds reasoning continues the arguments after the kept reads
        [*OPEN_CALL, "1", "2", ("reasoning_content", "hmm", "3"), "4", '"}', CALL_END, " Bye"],
        [*OPEN_CALL, "1", ("reasoning_content", "<|tool_call", "2"), "3", CALL_END, " Bye"],
        [*OPEN_CALL, ("reasoning_content", "hmm", "1"), "x < y", CALL_END, " Bye", " now."],
        # a chunk the Struct path refuses and the dict path takes (an empty refusal)
        [*OPEN_CALL, "1", "2", {"content": "3", "refusal": ""}, "4", '"}', CALL_END, " Bye"],
        # the stream ends inside the arguments: the kept reads are given back too
        [*OPEN_CALL, "1", "2", "3"],
    ],
)
def test_kimi_kept_reads_reach_the_scanner_before_anything_else(reads: list[Any]) -> None:
    events = [chat_event({"role": "assistant", "content": ""}), chat_event({"content": "Hi. "})]
    for read in reads:
        if isinstance(read, tuple):
            field, reasoning, content = read
            events.append(chat_event({field: reasoning, "content": content}))
        elif isinstance(read, dict):
            events.append(chat_event(read))
        else:
            events.append(chat_event({"content": read}))
    events += [chat_event({}, "stop"), "data: [DONE]\n\n"]
    fast, _ = kimi_replay(events, CountingScanner, batched=True)
    general, _ = kimi_replay(events, GeneralScanner, batched=False)
    assert fast == general
    assert fast["text"].startswith("Hi. ")


@pytest.mark.parametrize("limit", [120, 151, 152, 153, 200, 257, 400])
def test_kimi_arguments_read_plainly_past_the_limit_are_given_back_at_the_same_read(
    limit: int,
) -> None:
    """The arguments stream in plain reads (kept by the converter) until the section passes
    the limit: the read that passes it, and no other, gives the section back."""
    pieces = ["Hi. ", SECTION_BEGIN + CALL_BEGIN, "functions.f:0", ARGUMENT_BEGIN]
    pieces += ["0123456789"] * 30 + [CALL_END + SECTION_END, " Bye."]
    events = [chat_event({"role": "assistant", "content": ""})]
    events += [chat_event({"content": p}) for p in pieces]
    events += [chat_event({}, "stop"), "data: [DONE]\n\n"]
    fast, converter = kimi_replay(events, CountingScanner, batched=True, limit=limit)
    general, _ = kimi_replay(events, GeneralScanner, batched=False, limit=limit)
    assert fast == general
    assert [e["kind"] for e in fast["errors"]] == ["kimi_section_too_large"]
    assert fast["invocations"] == []
    assert fast["text"] == "".join(pieces)  # every character given back, in order
    assert converter.content_scanner.loop_reads < 10  # the plain reads were kept, not fed


def test_kimi_batched_replay_takes_the_plain_reads() -> None:
    """A stream of plain text and of arguments without "<": nearly every read is plain."""
    pieces = ["I will ", "write it. ", SECTION_BEGIN, CALL_BEGIN, " functions.write_file:0 "]
    pieces += [ARGUMENT_BEGIN, '{"path": "a.py", "content": "']
    pieces += [f"line {i}\\n" for i in range(200)] + ['"}', CALL_END, SECTION_END, "Done."]
    events = [chat_event({"role": "assistant", "content": ""})]
    events += [chat_event({"content": p}) for p in pieces]
    events += [chat_event({}, "tool_calls"), "data: [DONE]\n\n"]
    fast, converter = kimi_replay(events, CountingScanner, batched=True)
    general, _ = kimi_replay(events, GeneralScanner, batched=False)
    assert fast == general
    # the 5 markers, the call id, the first text (the text not yet begun): not the 200 lines
    assert converter.content_scanner.loop_reads == 7
    assert fast["text"] == "I will write it. Done."
    [invocation] = fast["invocations"]
    assert invocation["id"] == "functions.write_file:0"
    assert invocation["arguments"]["content"] == "".join(f"line {i}\n" for i in range(200))


# -- the openai-responses converter --------------------------------------------------------------
ITEMS = ["fc_1", "fc_2", "fc_3"]


@st.composite
def responses_events(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Events of a Responses stream whose function calls open, stream (interleaved or not),
    finish and reopen in any order, with text between; sequence numbers in order, skipped,
    repeated or missing."""
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"model": "m", "output": []}},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"type": "message", "id": "msg_1", "content": []},
        },
    ]
    for _ in range(draw(st.integers(1, 40))):
        what = draw(st.sampled_from(["delta"] * 8 + ["text"] * 2 + ["added", "done", "args done"]))
        item = draw(st.sampled_from(ITEMS))
        index = ITEMS.index(item) + 1
        if what == "delta":
            fragment = draw(st.sampled_from(['{"a": ', "1", ', "b": "x"', "}", "", "é"]))
            events.append(
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": item,
                    "output_index": index,
                    "delta": fragment,
                }
            )
        elif what == "text":
            events.append(
                {
                    "type": "response.output_text.delta",
                    "item_id": "msg_1",
                    "output_index": 0,
                    "content_index": 0,
                    "delta": draw(st.sampled_from(["Hi ", "there", "."])),
                }
            )
        elif what == "added":
            call = {"type": "function_call", "id": item, "call_id": f"call_{item}", "name": "f"}
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**call, "arguments": ""},
                }
            )
        elif what == "done":
            call = {"type": "function_call", "id": item, "call_id": f"call_{item}", "name": "f"}
            events.append(
                {"type": "response.output_item.done", "output_index": index, "item": call}
            )
        else:
            events.append(
                {
                    "type": "response.function_call_arguments.done",
                    "item_id": item,
                    "output_index": index,
                    "arguments": draw(st.sampled_from(['{"a": 1}', "{}"])),
                }
            )
    events.append({"type": "response.completed", "response": {"status": "completed"}})
    seq = 0
    for event in events:
        how = draw(st.sampled_from(["next"] * 12 + ["skip", "repeat", "none"]))
        if how == "none":
            continue
        seq += {"next": 1, "skip": 3, "repeat": 0}[how]
        event["sequence_number"] = seq
    return events


def responses_replay(events: list[dict[str, Any]], struct_path: bool) -> list[str]:
    items = [SSEEvent(json.dumps(e), e["type"]) for e in events]
    return feed_many_replay("openai-responses", items, struct_path, batch=7)


@SETTINGS
@given(events=responses_events())
def test_responses_struct_path_reads_what_the_dict_path_reads(
    events: list[dict[str, Any]],
) -> None:
    assert responses_replay(events, struct_path=True) == responses_replay(events, struct_path=False)


def test_responses_hot_call_follows_the_calls() -> None:
    """Deltas for one call, another call opened, deltas for the first again (interleaved: a
    quirk, read by the general path), then for the second: each lands in its own call."""

    def added(item: str, index: int) -> dict[str, Any]:
        call = {"type": "function_call", "id": item, "call_id": f"c_{item}", "name": "f"}
        return {"type": "response.output_item.added", "output_index": index, "item": call}

    def delta(item: str, text: str) -> dict[str, Any]:
        return {"type": "response.function_call_arguments.delta", "item_id": item, "delta": text}

    events = [added("fc_1", 0), delta("fc_1", '{"a"'), delta("fc_1", ": 1")]
    events += [added("fc_2", 1), delta("fc_1", "}"), delta("fc_2", '{"b": '), delta("fc_2", "2}")]
    for i, event in enumerate(events):
        event["sequence_number"] = i
    conv = make_converter("openai-responses")
    out = conv.feed_many([SSEEvent(json.dumps(e)) for e in events]) + conv.finish()
    arguments: dict[int, str] = {}
    quirks = []
    for cr in out:
        for tc in cr.tool_calls or []:
            arguments[tc.index] = arguments.get(tc.index, "") + (tc.arguments_delta or "")
        quirks += [q.id for q in cr.quirks or []]
    assert arguments == {0: '{"a": 1}', 1: '{"b": 2}'}
    assert "responses_parallel_interleaved" in quirks
    assert responses_replay(events, struct_path=True) == responses_replay(events, struct_path=False)
