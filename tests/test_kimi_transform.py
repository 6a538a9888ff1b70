"""``--transform kimi-k2``: Kimi special-token tool calls become standard ``tool_calls`` in the
stream the client receives, whatever the chunking; streams without them pass byte for byte."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from streamtool.core.apis.openai_chat.kimi_transform import KimiTransform, complete_events_end
from streamtool.core.engine.replay import ReplayEngine
from streamtool.core.model.records import Chunk, End, Header

from .kimi_streams import text_stream
from .serve_helpers import body_of, recording

SECTION = (
    "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
    '<|tool_call_argument_begin|>{"city": "Paris", "unit": "c"}<|tool_call_end|>'
    "<|tool_call_begin|>functions.write_file:1<|tool_call_argument_begin|>"
    '{"path": "a.py", "content": "print(\\"hi\\")\\n"}<|tool_call_end|>'
    "<|tool_calls_section_end|>"
)
KIMI = "".join(
    text_stream(["Let me check. ", SECTION[:40], SECTION[40:95], SECTION[95:]], finish="stop")
).encode()
PLAIN = "".join(text_stream(["Hello", " <|not a marker", " world"])).encode()
REASONING = "".join(
    text_stream(["Thinking... " + SECTION], field="reasoning_content", finish="stop")
).encode()


def run(body: bytes, cuts: list[int]) -> bytes:
    t = KimiTransform()
    out = bytearray()
    last = 0
    for cut in [*sorted(set(cuts)), len(body)]:
        if cut <= last:
            continue
        out += t.feed(body[last:cut])
        last = cut
    out += t.finish()
    return bytes(out)


def as_client_sees(stream: bytes) -> dict:
    """The stream read as a plain OpenAI Chat Completions stream (no Kimi reading)."""
    engine = ReplayEngine(Header(api="chat.completions"), converter="openai-chat")
    engine.feed_chunk(Chunk(0.0, stream))
    engine.finish(End(None, "complete", None))
    s = engine.summary()
    return {k: s[k] for k in ("text", "reasoning", "invocations", "finish_reason", "errors")}


def test_section_becomes_tool_calls() -> None:
    out = run(KIMI, [])
    seen = as_client_sees(out)
    assert "<|" not in out.decode()
    assert seen["text"] == "Let me check. "
    assert [(i["id"], i["name"], i["arguments"]) for i in seen["invocations"]] == [
        ("functions.get_weather:0", "get_weather", {"city": "Paris", "unit": "c"}),
        ("functions.write_file:1", "write_file", {"path": "a.py", "content": 'print("hi")\n'}),
    ]
    assert seen["finish_reason"] == "tool_calls"
    assert seen["errors"] == []
    events = [json.loads(line[6:]) for line in out.decode().splitlines() if line[6:7] == "{"]
    assert {e["id"] for e in events} == {"chatcmpl-0a1b2c3d4e5f"}
    assert out.endswith(b"data: [DONE]\n\n")


def test_section_in_reasoning() -> None:
    seen = as_client_sees(run(REASONING, []))
    assert seen["reasoning"] == "Thinking... "
    assert [i["name"] for i in seen["invocations"]] == ["get_weather", "write_file"]
    assert seen["finish_reason"] == "tool_calls"


def test_plain_stream_is_byte_identical() -> None:
    assert run(PLAIN, []) == PLAIN
    body = body_of(recording("openai-parallel-tool-calls"))
    assert run(body, []) == body


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=len(KIMI) - 1), max_size=12))
def test_any_chunking_gives_the_same_calls(cuts: list[int]) -> None:
    assert as_client_sees(run(KIMI, cuts)) == as_client_sees(run(KIMI, []))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=len(PLAIN) - 1), max_size=12))
def test_any_chunking_of_a_plain_stream_passes_byte_for_byte(cuts: list[int]) -> None:
    assert run(PLAIN, cuts) == PLAIN


def test_event_ends() -> None:
    assert complete_events_end(b"data: a\n\ndata: b") == 9
    assert complete_events_end(b"data: a\r\n\r\ndata: b\r\n") == 11
    assert complete_events_end(b"data: a\r\nb") == 0
    assert complete_events_end(b"data: a\n\r") == 0  # the CR may start a CRLF
    assert complete_events_end(b"data: a\r\rx") == 9
