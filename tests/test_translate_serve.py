"""``serve --translate``: an OpenAI Chat tool loop, recorded, served to an Anthropic agent and to
an OpenAI Responses agent (real SDKs, a real server); matching on the conversation's meaning
across APIs (a property: any conversation written as any API's request reads back the same)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamtool.core.drive.conversation import (
    APIS,
    ASSISTANT,
    SYSTEM,
    TOOL,
    USER,
    Call,
    Message,
    Result,
    read_conversation,
    request_body,
)
from streamtool.core.net.emitting import serving_translated

from .serve_helpers import STREAMTOOL, replayed_body, start_listening
from .tape_helpers import (
    ANTHROPIC_TOOLS,
    OPENAI_CALLS,
    OPENAI_QUESTION,
    OPENAI_TOOLS,
    body_bytes,
    openai_tape,
    run_openai_loop,
    weather,
)

ANSWER = 'Sure! In Japanese, "thank you" is ありがとう (arigatou) 🙏.'
RECORDED_CALLS = [("get_weather", json.loads(c["function"]["arguments"])) for c in OPENAI_CALLS]


def anthropic_agent(base: str, temperature: str = "21°C") -> dict[str, Any]:
    from anthropic import Anthropic

    client = Anthropic(base_url=base, api_key="sk-ant-test-local", max_retries=0)
    messages: list[Any] = [{"role": "user", "content": OPENAI_QUESTION}]
    with client.messages.stream(
        model="claude-sonnet-4-6", max_tokens=1024, messages=messages, tools=ANTHROPIC_TOOLS
    ) as stream:
        first = stream.get_final_message()
    uses = [b for b in first.content if b.type == "tool_use"]
    messages.append({"role": "assistant", "content": [b.model_dump() for b in first.content]})
    messages.append(
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": b.id,
                    "content": weather(b.input, temperature),
                }
                for b in uses
            ],
        }
    )
    with client.messages.stream(
        model="claude-sonnet-4-6", max_tokens=1024, messages=messages, tools=ANTHROPIC_TOOLS
    ) as stream:
        second = stream.get_final_message()
    return {
        "calls": [(b.name, b.input) for b in uses],
        "ids": [b.id for b in uses],
        "stop": (first.stop_reason, second.stop_reason),
        "text": "".join(b.text for b in second.content if b.type == "text"),
    }


def responses_agent(base: str) -> dict[str, Any]:
    from openai import OpenAI

    client = OpenAI(base_url=base + "/v1", api_key="sk-test-local", max_retries=0)
    tools = [{"type": "function", **t["function"]} for t in OPENAI_TOOLS]
    items: list[Any] = [{"role": "user", "content": OPENAI_QUESTION}]
    with client.responses.stream(model="gpt-5", input=items, tools=tools) as stream:
        first = stream.get_final_response()
    calls = [o for o in first.output if o.type == "function_call"]
    items += [o.model_dump(exclude_none=True) for o in first.output]
    items += [
        {
            "type": "function_call_output",
            "call_id": c.call_id,
            "output": weather(json.loads(c.arguments)),
        }
        for c in calls
    ]
    with client.responses.stream(model="gpt-5", input=items, tools=tools) as stream:
        second = stream.get_final_response()
    return {
        "calls": [(c.name, json.loads(c.arguments)) for c in calls],
        "status": (first.status, second.status),
        "text": second.output_text,
    }


def test_an_openai_chat_loop_serves_an_anthropic_agent_and_a_responses_agent(
    tmp_path: Path,
) -> None:
    files = openai_tape(tmp_path / "tape")
    with serving_translated(tmp_path / "tape") as server:
        claude = anthropic_agent(server.url)
        responses = responses_agent(server.url)
        chat = run_openai_loop(
            __import__("openai").OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)
        )
        # the recording's own API: the recorded bytes, exactly
        turn1 = json.loads(files[0].read_text().splitlines()[0])["request"]["body"]
        raw = httpx.post(server.url + "/v1/chat/completions", json=turn1).content
        served = server.served
    assert claude["calls"] == RECORDED_CALLS and claude["text"] == ANSWER
    assert claude["stop"] == ("tool_use", "end_turn")
    assert all(i.startswith("toolu_") for i in claude["ids"])
    assert responses["calls"] == RECORDED_CALLS and responses["text"] == ANSWER
    assert responses["status"] == ("completed", "completed")
    assert chat["calls"] == OPENAI_CALLS and chat["text"] == ANSWER
    assert raw == body_bytes(files[0])
    a, b = files[0].stem, files[1].stem
    assert served == [
        f"{a}.anthropic",
        f"{b}.anthropic",
        f"{a}.openai-responses",
        f"{b}.openai-responses",
        a,
        b,
        a,
    ]


def test_translate_on_the_command_line_a_miss_and_quirks(tmp_path: Path) -> None:
    openai_tape(tmp_path / "tape")
    proc, first, origin = start_listening(
        [*STREAMTOOL, "serve", str(tmp_path / "tape"), "--translate", "--port", "0",
         "--speed", "max", "--mutate", "anthropic_tool_input_in_start"]
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        listing = [proc.stderr.readline() for _ in range(5)]  # written before it serves
        claude = anthropic_agent(origin)
        import anthropic

        with pytest.raises(anthropic.NotFoundError) as missed:
            anthropic_agent(origin, temperature="19°C")
        turn1 = request_body(read_conversation("openai-chat", {"messages": [
            {"role": "user", "content": OPENAI_QUESTION}]}), "anthropic")  # fmt: skip
        raw = httpx.post(origin + "/v1/messages", json=turn1).content
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert "serving 2 recordings in any API" in first
    assert claude["calls"] == RECORDED_CALLS and claude["text"] == ANSWER
    message = missed.value.body["error"]["message"]  # type: ignore[index]
    assert "no recorded exchange has this conversation on /v1/messages" in message
    assert "closest is 0002-openai-chat-gpt-4o" in message
    assert 'messages[2].results[0].text differs: "...' in message and "19°C" in message
    # the translated stream carries the quirk asked for: its replay reports it
    summary = replayed_body(tmp_path, raw)
    assert "anthropic_tool_input_in_start" in {q["id"] for q in summary["quirks"]}
    assert [(i["name"], i["arguments"]) for i in summary["invocations"]] == RECORDED_CALLS
    assert listing[0] == "  0001-openai-chat-gpt-4o: recorded on chat.completions\n"
    assert "made with the quirks of --mutate anthropic_tool_input_in_start" in listing[-1]
    assert "POST /v1/messages -> 0001-openai-chat-gpt-4o.anthropic (200)" in err


def test_translate_refuses_tape_only_options_and_a_folder_without_requests(tmp_path: Path) -> None:
    openai_tape(tmp_path / "tape")
    proc = subprocess.run(
        [*STREAMTOOL, "serve", str(tmp_path / "tape"), "--translate", "--match-ignore", "tools"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2 and "--match-ignore is for tapes" in proc.stderr
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "a.sse").write_bytes(body_bytes(tmp_path / "tape" / "0001-openai-chat-gpt-4o.jsonl"))
    proc = subprocess.run(
        [*STREAMTOOL, "serve", str(raw), "--translate", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2
    assert "no recording holds a request to translate; a: holds no request" in proc.stderr


# -- one recording: every request ---------------------------------------------------------------
def test_one_recording_translated_answers_any_request_as_serve_one_does(tmp_path: Path) -> None:
    """``serve ONE --translate`` answers whatever conversation a request holds (in its route's
    API), as ``serve ONE`` does in the recording's own; a raw body without a request too."""
    from anthropic import Anthropic

    files = openai_tape(tmp_path / "tape")
    second = files[1]  # the turn that answers with text
    other = {"model": "x", "stream": True, "messages": [{"role": "user", "content": "other"}]}
    raw = tmp_path / "answer.sse"
    raw.write_bytes(body_bytes(second))
    for source in (second, raw):
        with serving_translated(source) as server:
            got = httpx.post(server.url + "/v1/chat/completions", json=other, timeout=30)
            assert got.status_code == 200 and got.content == body_bytes(second)  # as recorded
            client = Anthropic(base_url=server.url, api_key="k", max_retries=0)
            with client.messages.stream(
                model="claude-sonnet-4-6", max_tokens=64,
                messages=[{"role": "user", "content": "anything at all"}],
            ) as stream:  # fmt: skip
                message = stream.get_final_message()
            assert "".join(b.text for b in message.content if b.type == "text") == ANSWER
    # several recordings still answer by conversation: this one matches none of them
    with serving_translated([files[0], second]) as server:
        got = httpx.post(server.url + "/v1/chat/completions", json=other, timeout=30)
        assert got.status_code == 404
    proc, first, origin = start_listening(
        [*STREAMTOOL, "serve", str(raw), "--translate", "--port", "0", "--speed", "max"]
    )
    try:
        got = httpx.post(origin + "/v1/chat/completions", json=other, timeout=30)
        assert got.status_code == 200 and got.content == body_bytes(second)
    finally:
        proc.terminate()
        assert proc.stderr is not None
        banner = first + proc.stderr.read()
        proc.wait(timeout=30)
    assert "every request gets it,\n  in the API of its route" in banner


# -- the neutral conversation ---------------------------------------------------------------------
_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)
text = _text.map(str.strip).filter(bool)
arguments = st.dictionaries(
    st.sampled_from(["city", "unit", "n", "path"]),
    st.one_of(st.integers(-5, 99), text, st.booleans(), st.lists(st.integers(0, 9), max_size=3)),
    max_size=3,
)


@st.composite
def conversations(draw: st.DrawFn) -> tuple[Message, ...]:
    """A conversation as agents hold them: maybe a system message, a user message, then turns
    of the assistant (text, calls) each followed by the results of its calls, or by the user."""
    out: list[Message] = []
    if draw(st.booleans()):
        out.append(Message(SYSTEM, draw(text)))
    out.append(Message(USER, draw(text)))
    made = 0
    for _ in range(draw(st.integers(0, 3))):
        n = draw(st.integers(0, 3))
        said = draw(text) if n == 0 or draw(st.booleans()) else ""
        names = [draw(st.sampled_from(["get_weather", "read_file", "ls"])) for _ in range(n)]
        calls = tuple(Call(name, json.dumps(draw(arguments), sort_keys=True,
                                            ensure_ascii=False, separators=(",", ":")))
                      for name in names)  # fmt: skip
        out.append(Message(ASSISTANT, said, calls))
        if n:
            order = draw(st.permutations(range(made, made + n)))
            out.append(Message(TOOL, results=tuple(Result(i, draw(text)) for i in order)))
        else:
            out.append(Message(USER, draw(text)))
        made += n
    return tuple(out)


@settings(max_examples=60, deadline=None)
@given(conversations(), st.sampled_from(APIS))
def test_a_conversation_written_as_any_apis_request_reads_back_the_same(conversation, api):
    body = request_body(conversation, api)
    assert read_conversation(api, json.loads(json.dumps(body))) == conversation


def test_sdk_shaped_requests_of_one_conversation_read_the_same() -> None:
    """One turn-2 request as each API's client sends it (ids, reasoning, empty text blocks and
    all): one conversation."""
    chat = {
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "call_A",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
            {"role": "tool", "tool_call_id": "call_A", "content": "sunny"},
        ]
    }  # fmt: skip
    anthropic = {
        "system": [{"type": "text", "text": "Be brief."}],
        "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hm", "signature": "x"},
                {"type": "tool_use", "id": "toolu_B", "name": "get_weather",
                 "input": {"city": "Paris"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_B",
                                          "content": [{"type": "text", "text": "sunny"}]}]},
        ],
    }  # fmt: skip
    responses = {
        "instructions": "Be brief.",
        "input": [
            {"role": "user", "content": "Weather in Paris?"},
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call", "id": "fc_1", "call_id": "call_C", "name": "get_weather",
             "arguments": '{"city":"Paris"}', "status": "completed"},
            {"type": "function_call_output", "call_id": "call_C", "output": "sunny"},
        ],
    }  # fmt: skip
    gemini = {
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "contents": [
            {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
            {"role": "model", "parts": [{"text": "thinking...", "thought": True},
                                        {"functionCall": {"name": "get_weather",
                                                          "args": {"city": "Paris"}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "get_weather",
                                                             "response": {"result": "sunny"}}}]},
        ],
    }  # fmt: skip
    read = [
        read_conversation(api, body)
        for api, body in zip(APIS, (chat, responses, anthropic, gemini), strict=True)
    ]
    assert read[0] == (
        Message(SYSTEM, "Be brief."),
        Message(USER, "Weather in Paris?"),
        Message(ASSISTANT, "", (Call("get_weather", '{"city":"Paris"}'),)),
        Message(TOOL, results=(Result(0, "sunny"),)),
    )
    assert read[1:] == [read[0]] * 3
    # the text of a tool result differs: the conversations differ
    changed = json.loads(json.dumps(chat))
    changed["messages"][3]["content"] = "rainy"
    assert read_conversation("openai-chat", changed) != read[0]


def test_a_misspelt_serving_option_is_refused_as_a_parameter_would_be(tmp_path: Path) -> None:
    from streamtool.core.net.emitting import serving_script

    with pytest.raises(TypeError, match="'sped'"):
        serving_translated(str(tmp_path), sped=1.0)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="'ports'"):
        serving_script(str(tmp_path / "loop.yaml"), ports=0)  # type: ignore[call-arg]
