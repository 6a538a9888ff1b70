"""A batched replay (``replay_file(..., batched=True)``, what ``replay --format json`` and
``check`` run) means exactly what a replay read by read means.

The batched replay feeds many reads at once and lets the converters take the commonest events
on their hot path (``Converter.hot_event``), a run of them becoming one chunk. The reference
here is the plainest replay there is: every event in a read of its own, and every event fed to
the converter by ``Converter.feed`` (one event at a time: a converter with a hot path reads it
there too, each run one event long). Summaries (statistics included) and
transcripts must be equal, for the bundled recordings, the corpus captures, and random streams
of each wire API that mix the hot shapes with everything that must leave the hot path.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamtool.core.drive.replay_file import replay_file
from streamtool.core.engine.replay import ReplayEngine
from streamtool.core.model.records import Chunk, End, Header
from streamtool.core.outputs.transcript import build_transcript
from streamtool.core.recording.reader import Source

from .conftest import corpus_api, corpus_files

RECORDINGS = Path(__file__).resolve().parents[1] / "recordings"


def reference(header: Header, converter: str, reads: list[str]) -> ReplayEngine:
    """Every read by itself, every event through ``Converter.feed``."""
    engine = ReplayEngine(header, converter=converter, transcript=True)
    assert engine.converter is not None
    plain = engine.converter
    plain.feed_many = lambda items: [cr for item in items for cr in plain.feed(item)]  # type: ignore[method-assign]
    for i, read in enumerate(reads):
        engine.feed_chunk(Chunk(round(0.1 + i / 1000, 6), read))
    engine.finish(End(9.0))
    return engine


def batched(header: Header, converter: str, reads: list[str], batch_chars: int) -> ReplayEngine:
    engine = ReplayEngine(header, converter=converter, transcript=True)
    engine.feed_chunks(
        (Chunk(round(0.1 + i / 1000, 6), read) for i, read in enumerate(reads)), batch_chars
    )
    engine.finish(End(9.0))
    return engine


def assert_same(a: ReplayEngine, b: ReplayEngine) -> None:
    assert a.summary() == b.summary()
    assert build_transcript(a) == build_transcript(b)


# -- recordings and corpus captures ------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(RECORDINGS.glob("*.jsonl")), ids=lambda p: p.name)
def test_bundled_recordings_replay_the_same_batched(path: Path) -> None:
    one_by_one = replay_file(path, transcript=True)
    assert_same(one_by_one, replay_file(path, batched=True, transcript=True))
    # and with the plain reference, the reads cut into tiny batches
    source = Source(path)
    reads = [c.data for c in source.chunks()]
    if all(isinstance(r, str) for r in reads):
        converter = one_by_one.converter_name
        assert converter is not None
        texts = [str(r) for r in reads]
        ref = reference(source.header, converter, texts)
        assert ref.summary()["text"] == one_by_one.summary()["text"]
        for size in (1, 300):
            assert_same(ref, batched(source.header, converter, texts, size))


@pytest.mark.parametrize("parser", ["passthrough", "xml", "json", "sentinel"])
@pytest.mark.parametrize("path", sorted(RECORDINGS.glob("*.jsonl")), ids=lambda p: p.name)
def test_bundled_recordings_replay_the_same_batched_with_every_parser(
    path: Path, parser: str
) -> None:
    # a quirk the handler notes (API tool calls that a text parser does not read) keeps its place
    # among the errors and quirks after it, wherever the reads were cut
    one_by_one = replay_file(path, parser=parser, transcript=True)
    assert_same(one_by_one, replay_file(path, parser=parser, batched=True, transcript=True))


@pytest.mark.parametrize("path", corpus_files("*/*.sse"), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_corpus_captures_replay_the_same_batched(path: Path) -> None:
    body = path.read_bytes().decode("utf-8", errors="replace")
    header = Header(api=corpus_api(path) or None, raw_body=True)
    whole = ReplayEngine(header)
    whole.feed_chunk(Chunk(0.1, body))
    whole.finish(End(9.0))
    name = whole.converter_name
    assert name is not None
    # reads of about one event each, as a provider sends them
    reads = [e + "\n\n" for e in body.split("\n\n") if e]
    if not reads:
        pytest.skip("empty capture")
    for size in (1, 4096):
        assert_same(reference(header, name, reads), batched(header, name, reads, size))


# -- random streams --------------------------------------------------------------------------

TEXT = st.text(alphabet='ab {}"\\:é🙏\n', min_size=0, max_size=6)
NONEMPTY = st.text(alphabet='ab {}"\\:é\n', min_size=1, max_size=6)
KIMI = st.sampled_from(
    [
        "<|tool_calls_section_begin|>",
        "<|tool_call_begin|>functions.f:0",
        "<|tool_call_begin|> functions.g:1 ",
        "<|tool_call_argument_begin|>",
        '{"a": 1}',
        "<|tool_call_end|>",
        "<|tool_calls_section_end|>",
        "<|tool_c",
        "all_begin|>",
        "<think>",
    ]
)


def sse(obj: Any, name: str | None = None) -> str:
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {json.dumps(obj, ensure_ascii=False)}\n\n"


def chat(delta: Any, finish: Any = None, choices: Any = None, **top: Any) -> str:
    obj: dict[str, Any] = {"id": "c", "object": "chat.completion.chunk", "model": "m"}
    obj.update(top)
    if obj["model"] is None:
        del obj["model"]
    obj["choices"] = (
        choices
        if choices is not None
        else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
    )
    return sse(obj)


def fragment(index: Any, args: Any, **extra: Any) -> str:
    return chat({"tool_calls": [{"index": index, "function": {"arguments": args}, **extra}]})


CHAT_EVENTS = st.one_of(
    # the hot shapes, often
    TEXT.map(lambda s: chat({"content": s})),
    TEXT.map(lambda s: chat({"role": "assistant", "content": s, "reasoning_content": None})),
    st.tuples(st.sampled_from([0, 0, 0, 1]), TEXT).map(lambda a: fragment(*a)),
    st.tuples(st.sampled_from([0, 1]), NONEMPTY).map(lambda a: fragment(*a)),
    KIMI.map(lambda s: chat({"content": s})),
    # what must leave the hot path
    st.tuples(st.sampled_from([0, 1]), st.sampled_from(["call_a", "call_b", ""])).map(
        lambda a: chat(
            {
                "tool_calls": [
                    {
                        "index": a[0],
                        "id": a[1],
                        "type": "function",
                        "function": {"name": "write_file", "arguments": ""},
                    }
                ]
            }
        )
    ),
    st.tuples(st.sampled_from([0, 1]), TEXT).map(lambda a: fragment(a[0], a[1], id="call_a")),
    st.sampled_from([0, 1]).map(lambda i: fragment(i, "{}")),
    st.sampled_from([0, 1]).map(lambda i: fragment(i, {"x": 1})),
    st.sampled_from([0]).map(lambda i: fragment(None, "z")),
    TEXT.map(lambda s: chat({"content": s}, model="other")),
    TEXT.map(lambda s: chat({"content": s}, usage={"prompt_tokens": 1, "completion_tokens": 2})),
    TEXT.map(lambda s: chat({"reasoning_content": s})),
    TEXT.map(lambda s: chat({"reasoning": s, "content": "x"})),
    TEXT.map(lambda s: chat({"refusal": s})),
    TEXT.map(lambda s: chat({"content": [{"type": "text", "text": s}]})),
    TEXT.map(lambda s: chat({"content": s}, choices=[{"index": 1, "delta": {"content": s}}])),
    TEXT.map(lambda s: chat({"content": s}, finish="stop")),
    st.sampled_from(["tool_calls", "stop", ""]).map(lambda f: chat({}, finish=f)),
    st.just(chat({}, choices=[])),
    st.just(sse({"error": {"message": "overloaded"}})),
    st.just("data: [DONE]\n\n"),
    st.just(": keep-alive\n\n"),
    st.just("data: {not json\n\n"),
    st.just("data: null\n\n"),
    st.just('data: {"choices": [{"delta": {"content": "a"}}]}\ndata: {"choices": []}\n\n'),
)


def anthropic_delta(index: Any, delta: dict[str, Any]) -> str:
    return sse({"type": "content_block_delta", "index": index, "delta": delta})


ANTHROPIC_EVENTS = st.one_of(
    st.tuples(st.sampled_from([0, 1, 2]), TEXT).map(
        lambda a: anthropic_delta(a[0], {"type": "input_json_delta", "partial_json": a[1]})
    ),
    st.tuples(st.sampled_from([0, 1, 2]), TEXT).map(
        lambda a: anthropic_delta(a[0], {"type": "text_delta", "text": a[1]})
    ),
    st.tuples(st.sampled_from([0, 1, 2]), TEXT).map(
        lambda a: anthropic_delta(a[0], {"type": "thinking_delta", "thinking": a[1]})
    ),
    st.sampled_from([0, 1, 2]).map(
        lambda i: anthropic_delta(i, {"type": "signature_delta", "signature": "sig"})
    ),
    st.sampled_from([0, 1, 2]).map(lambda i: anthropic_delta(i, {"type": "other_delta"})),
    st.tuples(st.sampled_from([0, 1, 2]), st.sampled_from(["text", "thinking", "tool_use"])).map(
        lambda a: sse(
            {
                "type": "content_block_start",
                "index": a[0],
                "content_block": {"type": a[1], "id": f"toolu_{a[0]}", "name": "write_file"}
                if a[1] == "tool_use"
                else {"type": a[1]},
            },
            "content_block_start",
        )
    ),
    st.sampled_from([0, 1, 2]).map(
        lambda i: sse({"type": "content_block_stop", "index": i}, "content_block_stop")
    ),
    st.just(sse({"type": "message_start", "message": {"model": "claude", "usage": {}}})),
    st.just(
        sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 3},
            }
        )
    ),
    st.just(sse({"type": "message_stop"})),
    st.just(sse({"type": "ping"}, "ping")),
    st.just(sse({"type": "error", "error": {"type": "overloaded_error", "message": "x"}})),
    st.just(": comment\n\n"),
    st.just("data: {oops\n\n"),
)


@st.composite
def responses_events(draw: st.DrawFn) -> list[str]:
    """A Responses stream: sequence numbers in order, with some gaps and some left out."""
    kinds = draw(
        st.lists(
            st.sampled_from(
                [
                    "args",
                    "args",
                    "args",
                    "text",
                    "text",
                    "summary",
                    "reasoning",
                    "add_call",
                    "add_call2",
                    "add_message",
                    "add_reasoning",
                    "args_done",
                    "item_done",
                    "completed",
                    "comment",
                    "unknown",
                ]
            ),
            max_size=40,
        )
    )
    seq = 0
    out = []
    for kind in kinds:
        step = draw(st.sampled_from([1, 1, 1, 1, 2, 0, None]))
        if step is not None:
            seq += step
        obj: dict[str, Any] = {"sequence_number": seq} if step is not None else {}
        item = draw(st.sampled_from(["fc_1", "fc_1", "fc_2", "msg_1", "rs_1", "nope"]))
        text = draw(TEXT)
        if kind == "args":
            obj.update(type="response.function_call_arguments.delta", item_id=item, delta=text)
            obj["output_index"] = 1
        elif kind in ("text", "summary", "reasoning"):
            name = {
                "text": "response.output_text.delta",
                "summary": "response.reasoning_summary_text.delta",
                "reasoning": "response.reasoning_text.delta",
            }[kind]
            obj.update(type=name, item_id=item, output_index=0, delta=text)
            obj["summary_index" if kind == "summary" else "content_index"] = draw(
                st.sampled_from([0, 1])
            )
        elif kind in ("add_call", "add_call2"):
            fc = "fc_1" if kind == "add_call" else "fc_2"
            obj.update(
                type="response.output_item.added",
                output_index=1 if kind == "add_call" else 2,
                item={
                    "id": fc,
                    "type": "function_call",
                    "call_id": f"call_{fc}",
                    "name": "write_file",
                    "arguments": "",
                },
            )
        elif kind == "add_message":
            obj.update(
                type="response.output_item.added",
                output_index=0,
                item={"id": "msg_1", "type": "message", "content": []},
            )
        elif kind == "add_reasoning":
            obj.update(
                type="response.output_item.added",
                output_index=0,
                item={"id": "rs_1", "type": "reasoning", "summary": []},
            )
        elif kind == "args_done":
            obj.update(
                type="response.function_call_arguments.done",
                item_id=item,
                output_index=1,
                arguments=text,
            )
        elif kind == "item_done":
            obj.update(
                type="response.output_item.done",
                output_index=1,
                item={"id": item, "type": "function_call", "call_id": f"call_{item}"},
            )
        elif kind == "completed":
            obj.update(type="response.completed", response={"status": "completed", "output": []})
        elif kind == "comment":
            out.append(": keep-alive\n\n")
            continue
        else:
            obj.update(type="response.something_new")
        out.append(sse(obj, str(obj["type"])))
    return out


CASES = {
    "openai-chat": (st.lists(CHAT_EVENTS, max_size=40), "chat.completions"),
    "kimi-k2": (st.lists(CHAT_EVENTS, max_size=40), "chat.completions"),
    "anthropic": (st.lists(ANTHROPIC_EVENTS, max_size=40), "messages"),
    "openai-responses": (responses_events(), "responses"),
}


@pytest.mark.parametrize("converter", list(CASES))
@settings(max_examples=300, deadline=None)
@given(data=st.data(), batch_chars=st.integers(1, 2000))
def test_random_streams_replay_the_same_batched(
    converter: str, data: st.DataObject, batch_chars: int
) -> None:
    strategy, api = CASES[converter]
    events = data.draw(strategy)
    header = Header(api=api, raw_body=True)
    assert_same(
        reference(header, converter, events), batched(header, converter, events, batch_chars)
    )


# -- every reason to leave the hot path, one by one ------------------------------------------
#
# Each scenario is a stream that has hot events before and after one event (or a few) that the
# hot path must not take, or that changes what the next hot event means.

CHAT_HEAD = [
    chat({"role": "assistant", "content": ""}),
    chat({"content": "Hello"}),
    chat(
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "write_file", "arguments": ""},
                }
            ]
        }
    ),
    fragment(0, '{"path": "a.py", "content": "'),
    fragment(0, "x = 1\\n"),
]
CHAT_TAIL = [
    fragment(0, "y = 2"),
    fragment(0, '"}'),
    chat({}, finish="tool_calls"),
    "data: [DONE]\n\n",
]
CHAT_SCENARIOS: dict[str, list[str]] = {
    "model changes": [chat({"content": "a"}, model="other"), fragment(0, "b", model="m2")],
    "error object": [sse({**json.loads(fragment(0, "z")[6:]), "error": {"message": "x"}})],
    "usage": [chat({"content": "a"}, usage={"prompt_tokens": 1, "completion_tokens": 1})],
    "x_groq": [chat({"content": "a"}, x_groq={"id": "q"})],
    "citations": [chat({"content": "a"}, citations=["https://example.com"])],
    "search results": [
        chat({"content": "a"}, search_results=[{"url": "https://example.com", "title": "t"}])
    ],
    "two choices": [
        chat(
            {},
            choices=[
                {"index": 0, "delta": {"content": "a"}},
                {"index": 1, "delta": {"content": "b"}},
            ],
        )
    ],
    "choice 1 alone": [chat({}, choices=[{"index": 1, "delta": {"content": "b"}}])],
    "choice not an object": [chat({}, choices=["x"])],
    "finish reason": [chat({"content": "a"}, finish="stop"), fragment(0, "q")],
    "message instead of delta": [chat({}, choices=[{"index": 0, "message": {"content": "m"}}])],
    "refusal with text": [chat({"content": "a", "refusal": "no"})],
    "refusal with fragment": [
        chat(
            {"refusal": "no", "tool_calls": [{"index": 0, "function": {"arguments": "r"}}]},
        )
    ],
    "annotations": [
        chat({"content": "a", "annotations": [{"type": "url_citation", "url": "https://e.x"}]})
    ],
    "reasoning_content": [chat({"content": "a", "reasoning_content": "think"})],
    "reasoning": [chat({"content": "a", "reasoning": "think"})],
    "reasoning_details": [
        chat({"content": "a", "reasoning_details": [{"type": "reasoning.text", "text": "t"}]})
    ],
    "content array": [chat({"content": [{"type": "text", "text": "arr"}]})],
    "content and tool calls": [
        chat({"content": "a", "tool_calls": [{"index": 0, "function": {"arguments": "c"}}]})
    ],
    "content and function_call": [chat({"content": "a", "function_call": {"arguments": "f"}})],
    "content 0 with a fragment": [
        chat({"content": 0, "tool_calls": [{"index": 0, "function": {"arguments": "c"}}]})
    ],
    "empty content list with a fragment": [
        chat({"content": [], "tool_calls": [{"index": 0, "function": {"arguments": "c"}}]})
    ],
    "two tool calls in one delta": [
        chat(
            {
                "tool_calls": [
                    {"index": 0, "function": {"arguments": "p"}},
                    {"index": 0, "function": {"arguments": "q"}},
                ]
            }
        )
    ],
    "tool calls not a list": [chat({"tool_calls": {"index": 0, "function": {"arguments": "d"}}})],
    "id repeated": [fragment(0, "i", id="call_a")],
    "name repeated": [
        chat({"tool_calls": [{"index": 0, "function": {"name": "write_file", "arguments": "n"}}]})
    ],
    "function not an object": [chat({"tool_calls": [{"index": 0, "function": "x"}]})],
    "index missing": [fragment(None, "m")],
    "index in function (Ollama)": [
        chat({"tool_calls": [{"function": {"index": 0, "arguments": "o"}}]})
    ],
    "arguments as an object": [fragment(0, {"k": 1})],
    "unknown index": [fragment(5, "u")],
    "empty fragments": [fragment(0, ""), fragment(0, ""), fragment(0, "e")],
    "a second call, then the first again": [
        chat(
            {
                "tool_calls": [
                    {"index": 1, "id": "call_b", "function": {"name": "f", "arguments": "{"}}
                ]
            }
        ),
        fragment(1, '"k": 1}'),
        fragment(0, "back"),
    ],
    "fragments for an unannounced call": [
        fragment(2, "{"),
        fragment(2, '"a": 1'),
        fragment(2, ""),
        chat({"tool_calls": [{"index": 2, "function": {"name": "late", "arguments": "}"}}]}),
    ],
    "kimi tokens in content": [
        chat({"content": "<|tool_calls_section_begin|>"}),
        chat({"content": "<|tool_c"}),
        chat({"content": "all_begin|>functions.f:0<|tool_call_argument_begin|>{}"}),
        chat({"content": "<|tool_call_end|><|tool_calls_section_end|>"}),
        fragment(0, "k"),
    ],
    "a marker prefix held, then a fragment": [
        chat({"content": "<|tool_c"}),
        fragment(0, "t"),
        chat({"content": "all_begin|>functions.f:1<|tool_call_argument_begin|>{}"}),
        chat({"content": "<|tool_call_end|>"}),
    ],
    "after [DONE]": ["data: [DONE]\n\n", chat({"content": "late"}), fragment(0, "late")],
    "comments and blank data": [": keep-alive\n\n", "data: \n\n", "data:\n\n"],
    "not JSON": ["data: {oops\n\n", "data: null\n\n", "data: [1, 2]\n\n"],
    "two payloads in one event": ['data: {"choices": []}\ndata: {"choices": []}\n\n'],
}


def cumulative_chat() -> list[str]:
    """Arguments sent cumulatively, and a placeholder ``{}`` replaced by the real arguments."""
    head = CHAT_HEAD[:3]
    return [
        *head,
        fragment(0, '{"a": 1'),
        fragment(0, '{"a": 1, "b"'),
        fragment(0, '{"a": 1, "b": 2}'),
        chat(
            {
                "tool_calls": [
                    {"index": 1, "id": "call_b", "function": {"name": "g", "arguments": "{}"}}
                ]
            }
        ),
        fragment(1, '{"x": 1}'),
        fragment(1, "y"),
        *CHAT_TAIL,
    ]


def _same_for_every_batch(header: Header, converter: str, events: list[str]) -> None:
    ref = reference(header, converter, events)
    for size in (1, 64, 1 << 20):
        assert_same(ref, batched(header, converter, events, size))


@pytest.mark.parametrize("converter", ["openai-chat", "kimi-k2"])
@pytest.mark.parametrize("scenario", list(CHAT_SCENARIOS))
def test_chat_events_that_leave_the_hot_path(converter: str, scenario: str) -> None:
    events = [*CHAT_HEAD, *CHAT_SCENARIOS[scenario], *CHAT_TAIL]
    _same_for_every_batch(Header(api="chat.completions", raw_body=True), converter, events)


def test_chat_model_changes_for_good() -> None:
    events = [
        *CHAT_HEAD,
        chat({"content": "a"}, model="other"),
        chat({"tool_calls": [{"index": 0, "function": {"arguments": "b"}}]}, model=None),
        chat({"content": "c"}, model=None),
        chat({}, finish="stop", model=None),
    ]
    for converter in ("openai-chat", "kimi-k2"):
        _same_for_every_batch(Header(api="chat.completions", raw_body=True), converter, events)
    assert reference(Header(raw_body=True), "openai-chat", events).model == "other"


def test_chat_text_before_its_first_words() -> None:
    events = [
        chat({"role": "assistant", "content": ""}),
        chat({"content": " "}),
        chat({"content": "\n"}),
        chat({"content": "<think>"}),
        chat({"content": "hm</think>"}),
        chat({"content": "Answer"}),
        chat({}, finish="stop"),
    ]
    for converter in ("openai-chat", "kimi-k2"):
        _same_for_every_batch(Header(api="chat.completions", raw_body=True), converter, events)
    quirks = {q.id for q in reference(Header(raw_body=True), "openai-chat", events).quirks}
    assert "think_tags_in_content" in quirks


def test_chat_merge_rules_leave_the_hot_path() -> None:
    events = cumulative_chat()
    for converter in ("openai-chat", "kimi-k2"):
        _same_for_every_batch(Header(api="chat.completions", raw_body=True), converter, events)
    quirks = {q.id for q in reference(Header(raw_body=True), "openai-chat", events).quirks}
    assert {"oai_args_cumulative", "oai_args_placeholder_then_full"} <= quirks


def tool_block(index: int, block_id: str = "toolu_1") -> str:
    block = {"type": "tool_use", "id": block_id, "name": "write_file", "input": {}}
    return sse({"type": "content_block_start", "index": index, "content_block": block})


def json_delta(index: Any, text: Any) -> str:
    return anthropic_delta(index, {"type": "input_json_delta", "partial_json": text})


def block(index: int, kind: str) -> str:
    return sse({"type": "content_block_start", "index": index, "content_block": {"type": kind}})


def stop(index: int) -> str:
    return sse({"type": "content_block_stop", "index": index})


def thinking(index: int, text: str) -> str:
    return anthropic_delta(index, {"type": "thinking_delta", "thinking": text})


def signature(index: int, sig: str) -> str:
    return anthropic_delta(index, {"type": "signature_delta", "signature": sig})


def text_delta(index: int, text: str) -> str:
    return anthropic_delta(index, {"type": "text_delta", "text": text})


def cite(index: int, text: str) -> str:
    citation = {
        "type": "web_search_result_location",
        "url": f"https://example.com/{text}",
        "title": text,
        "cited_text": text,
    }
    return anthropic_delta(index, {"type": "citations_delta", "citation": citation})


ANTHROPIC_HEAD = [
    sse({"type": "message_start", "message": {"model": "claude", "usage": {"input_tokens": 3}}}),
    block(0, "thinking"),
    thinking(0, "hm"),
    thinking(0, "m"),
    signature(0, "s1"),
    stop(0),
    block(1, "text"),
    text_delta(1, "I will"),
    text_delta(1, " write"),
    stop(1),
    tool_block(2),
    json_delta(2, '{"path": "a.py", '),
    json_delta(2, '"content": "x'),
]
ANTHROPIC_TAIL = [
    json_delta(2, "y"),
    json_delta(2, '"}'),
    stop(2),
    sse({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {}}),
    sse({"type": "message_stop"}),
]
ANTHROPIC_SCENARIOS: dict[str, list[str]] = {
    "after the block stopped": [stop(2), json_delta(2, "late"), text_delta(1, "late")],
    "unknown block": [json_delta(7, "u"), text_delta(7, "u")],
    "index not a number": [json_delta("2", "s"), json_delta(None, "n")],
    "fragment not a string": [json_delta(2, 5), json_delta(2, ""), json_delta(2, None)],
    "text and thinking not strings": [
        anthropic_delta(1, {"type": "text_delta", "text": 1}),
        anthropic_delta(0, {"type": "thinking_delta"}),
        text_delta(1, ""),
    ],
    "delta not an object": [sse({"type": "content_block_delta", "index": 2, "delta": "x"})],
    "a second thinking block with its signature after text": [
        block(3, "thinking"),
        thinking(3, "again"),
        signature(3, "s2"),
        stop(3),
        block(4, "text"),
        text_delta(4, "then"),
        signature(4, "s3"),
        text_delta(4, " more"),
    ],
    "type left to the event line": [
        'event: content_block_delta\ndata: {"index": 2, "delta": '
        '{"type": "input_json_delta", "partial_json": "e"}}\n\n'
    ],
    "a second tool block interleaved": [
        tool_block(3, "toolu_2"),
        json_delta(3, "{}"),
        json_delta(2, "z"),
        stop(3),
    ],
    "citations around thinking": [
        block(3, "text"),
        text_delta(3, "a"),
        cite(3, "one"),
        stop(3),
        block(4, "thinking"),
        thinking(4, "t"),
        stop(4),
        block(5, "text"),
        text_delta(5, "b"),
        cite(5, "two"),
        stop(5),
    ],
    "ping, comment, error": [
        sse({"type": "ping"}),
        ": c\n\n",
        sse({"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}),
    ],
}


@pytest.mark.parametrize("scenario", list(ANTHROPIC_SCENARIOS))
def test_anthropic_events_that_leave_the_hot_path(scenario: str) -> None:
    events = [*ANTHROPIC_HEAD, *ANTHROPIC_SCENARIOS[scenario], *ANTHROPIC_TAIL]
    _same_for_every_batch(Header(api="messages", raw_body=True), "anthropic", events)


class Seq:
    """Responses events with their sequence numbers in order."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self, kind: str, seq: Any = "next", **fields: Any) -> str:
        obj: dict[str, Any] = {"type": kind}
        if seq == "next":
            obj["sequence_number"] = self.n
            self.n += 1
        elif seq is not None:
            obj["sequence_number"] = seq
        obj.update(fields)
        return sse(obj, kind)


def responses_stream(scenario: str) -> list[str]:
    ev = Seq()

    def args(text: str, item: Any = "fc_1", seq: Any = "next") -> str:
        return ev(
            "response.function_call_arguments.delta",
            seq,
            item_id=item,
            output_index=2,
            delta=text,
        )

    def out_text(text: str, item: Any = "msg_1", seq: Any = "next", part: Any = 0) -> str:
        return ev(
            "response.output_text.delta",
            seq,
            item_id=item,
            output_index=1,
            content_index=part,
            delta=text,
        )

    def summary(text: str, index: Any = 0) -> str:
        return ev(
            "response.reasoning_summary_text.delta",
            item_id="rs_1",
            output_index=0,
            summary_index=index,
            delta=text,
        )

    def done_text(text: str, part: int) -> str:
        return ev(
            "response.output_text.done",
            item_id="msg_1",
            output_index=1,
            content_index=part,
            text=text,
        )

    def annotation(title: str) -> str:
        return ev(
            "response.output_text.annotation.added",
            item_id="msg_1",
            output_index=1,
            content_index=0,
            annotation={"type": "url_citation", "url": f"https://e.x/{title}", "title": title},
        )

    def added(index: int, item: dict[str, Any]) -> str:
        return ev("response.output_item.added", output_index=index, item=item)

    def call(fc: str) -> dict[str, Any]:
        return {"id": fc, "type": "function_call", "call_id": f"call_{fc}", "name": "write_file"}

    head = [
        ev("response.created", response={"model": "gpt-5", "status": "in_progress"}),
        added(0, {"id": "rs_1", "type": "reasoning", "summary": []}),
        summary("Think"),
        summary("ing"),
        added(1, {"id": "msg_1", "type": "message", "content": []}),
        out_text("Hello"),
        out_text(" there"),
        added(2, call("fc_1")),
        args('{"path": "a.py", '),
        args('"content": "x'),
    ]
    body = {
        "sequence gap": lambda: [args("g", seq=99), args("h", seq=100), out_text("t", seq=140)],
        "sequence repeated": lambda: [args("r", seq=ev.n - 1)],
        "no sequence numbers": lambda: [args("n", seq=None), out_text("t", seq=None)],
        "sequence not a number": lambda: [args("s", seq="7"), out_text("t", seq=1.5)],
        "item id not a string": lambda: [args("i", item=None), out_text("t", item=3)],
        "unknown item": lambda: [args("u", item="fc_9"), out_text("t", item="msg_9")],
        "text again after a call opened": lambda: [out_text(" more"), args("q")],
        "second call interleaved": lambda: [
            added(3, call("fc_2")),
            args("{}", item="fc_2"),
            args("late", item="fc_1"),
        ],
        "deltas after the call is done": lambda: [
            ev("response.output_item.done", output_index=2, item=call("fc_1")),
            args("after"),
        ],
        "text in a second part": lambda: [out_text("p1", part=1), out_text("p2")],
        "summary part index as a list": lambda: [summary("x", index=[1])],
        "reasoning text": lambda: [
            ev(
                "response.reasoning_text.delta",
                item_id="rs_1",
                output_index=0,
                content_index=0,
                delta="deep",
            )
        ],
        "text done with more than was streamed": lambda: [
            ev(
                "response.output_text.done",
                item_id="msg_1",
                output_index=1,
                content_index=0,
                text="Hello there, and more",
            )
        ],
        "empty delta": lambda: [args(""), out_text("")],
        "two parts, each done": lambda: [
            out_text("A", part=1),
            done_text("Hello there", 0),
            done_text("A", 1),
        ],
        "annotations around a summary": lambda: [
            annotation("one"),
            summary("more"),
            out_text("again"),
            annotation("two"),
        ],
        "comments": lambda: [": keep-alive\n\n", "data: [DONE]\n\n"],
    }[scenario]()
    tail = [
        args('"}'),
        ev(
            "response.function_call_arguments.done",
            item_id="fc_1",
            output_index=2,
            arguments='{"path": "a.py", "content": "x"}',
        ),
        ev("response.completed", response={"model": "gpt-5", "status": "completed", "output": []}),
    ]
    return [*head, *body, *tail]


RESPONSES_SCENARIOS = [
    "sequence gap",
    "sequence repeated",
    "no sequence numbers",
    "sequence not a number",
    "item id not a string",
    "unknown item",
    "text again after a call opened",
    "second call interleaved",
    "deltas after the call is done",
    "text in a second part",
    "summary part index as a list",
    "reasoning text",
    "text done with more than was streamed",
    "empty delta",
    "two parts, each done",
    "annotations around a summary",
    "comments",
]


@pytest.mark.parametrize("scenario", RESPONSES_SCENARIOS)
def test_responses_events_that_leave_the_hot_path(scenario: str) -> None:
    events = responses_stream(scenario)
    _same_for_every_batch(Header(api="responses", raw_body=True), "openai-responses", events)
