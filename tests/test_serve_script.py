"""A script of turns served as it is (``serve SCRIPT``, :func:`serving_script`, the plugin's
``stream_tape(path="loop.yaml")``): each request gets its turn by the turn's match or in
order, emitted in the API of the route it came on, streamed as the turn says; misses, bad
scripts and quirks on demand."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamtool.core.drive.script import load_script
from streamtool.core.net.emitting import serving_script
from streamtool.core.outputs.emit import emitter
from streamtool.core.wire.sse import SSEDecoder, SSEEvent

from .conftest import RECORDINGS, ROOT
from .helpers import weather_script
from .serve_helpers import STREAMTOOL, replayed_body, start_listening
from .tape_helpers import ANTHROPIC_TOOLS, CHILD_PYTEST, OPENAI_TOOLS

LOOP = weather_script("{tokens_per_s: 200, ttft: 0.05}")
QUESTION = "What's the weather in Lisbon?"
ANSWER = "It is 21 °C in Lisbon."
CALL = ("get_weather", {"city": "Lisbon", "unit": "celsius"})


@pytest.fixture
def loop(tmp_path: Path) -> Path:
    path = tmp_path / "loop.yaml"
    path.write_text(LOOP, encoding="utf-8")
    return path


def result_of(args: dict) -> str:
    return f"Weather in {args['city']}: sunny, 21°C"


# -- the four SDKs, each a two-turn tool loop --------------------------------------------------
def chat_loop(base: str) -> tuple[str, list, str]:
    from openai import OpenAI

    client = OpenAI(base_url=base + "/v1", api_key="test-key", max_retries=0)
    messages: list = [{"role": "user", "content": QUESTION}]
    with client.chat.completions.stream(
        model="gpt-4o", messages=messages, tools=OPENAI_TOOLS
    ) as stream:
        first = stream.get_final_completion().choices[0].message
    calls = [(c.function.name, json.loads(c.function.arguments)) for c in first.tool_calls or []]
    messages.append(first.model_dump(exclude_none=True))
    for c in first.tool_calls or []:
        content = result_of(json.loads(c.function.arguments))
        messages.append({"role": "tool", "tool_call_id": c.id, "content": content})
    with client.chat.completions.stream(
        model="gpt-4o", messages=messages, tools=OPENAI_TOOLS
    ) as stream:
        second = stream.get_final_completion().choices[0].message
    return first.content or "", calls, second.content or ""


def responses_loop(base: str) -> tuple[str, list, str]:
    from openai import OpenAI

    client = OpenAI(base_url=base + "/v1", api_key="test-key", max_retries=0)
    tools = [{"type": "function", **t["function"]} for t in OPENAI_TOOLS]
    items: list = [{"role": "user", "content": QUESTION}]
    with client.responses.stream(model="gpt-5", input=items, tools=tools) as stream:
        first = stream.get_final_response()
    calls = [(o.name, json.loads(o.arguments)) for o in first.output if o.type == "function_call"]
    items += [o.model_dump(exclude_none=True) for o in first.output]
    for o in first.output:
        if o.type == "function_call":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": o.call_id,
                    "output": result_of(json.loads(o.arguments)),
                }
            )
    with client.responses.stream(model="gpt-5", input=items, tools=tools) as stream:
        second = stream.get_final_response()
    return first.output_text, calls, second.output_text


def anthropic_loop(base: str) -> tuple[str, list, str]:
    from anthropic import Anthropic

    client = Anthropic(base_url=base, api_key="test-key", max_retries=0)
    messages: list = [{"role": "user", "content": QUESTION}]
    with client.messages.stream(
        model="claude-sonnet-4-6", max_tokens=512, messages=messages, tools=ANTHROPIC_TOOLS
    ) as stream:
        first = stream.get_final_message()
    calls = [(b.name, b.input) for b in first.content if b.type == "tool_use"]
    messages.append({"role": "assistant", "content": [b.model_dump() for b in first.content]})
    messages.append(
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": b.id, "content": result_of(b.input)}
                for b in first.content
                if b.type == "tool_use"
            ],
        }
    )
    with client.messages.stream(
        model="claude-sonnet-4-6", max_tokens=512, messages=messages, tools=ANTHROPIC_TOOLS
    ) as stream:
        second = stream.get_final_message()
    text = "".join(b.text for b in first.content if b.type == "text")
    return text, calls, "".join(b.text for b in second.content if b.type == "text")


def gemini_loop(base: str) -> tuple[str, list, str]:
    from google import genai
    from google.genai import types

    client = genai.Client(api_key="test-key", http_options=types.HttpOptions(base_url=base))
    contents: list = [types.Content(role="user", parts=[types.Part(text=QUESTION)])]
    text, calls, parts = "", [], []
    for chunk in client.models.generate_content_stream(model="gemini-2.5-flash", contents=contents):
        for part in chunk.candidates[0].content.parts or []:
            parts.append(part)
            if part.function_call is not None:
                calls.append((part.function_call.name, part.function_call.args))
            elif part.text:
                text += part.text
    contents.append(types.Content(role="model", parts=parts))
    contents.append(
        types.Content(
            role="user",
            parts=[
                types.Part.from_function_response(name=name, response={"output": result_of(args)})
                for name, args in calls
            ],
        )
    )
    answer = ""
    for chunk in client.models.generate_content_stream(model="gemini-2.5-flash", contents=contents):
        answer += chunk.text or ""
    return text, calls, answer


LOOPS = {
    "openai-chat": chat_loop,
    "openai-responses": responses_loop,
    "anthropic": anthropic_loop,
    "gemini": gemini_loop,
}


@pytest.mark.parametrize("api", sorted(LOOPS))
def test_a_script_serves_a_tool_loop_to_every_sdk(loop: Path, api: str) -> None:
    with serving_script(loop) as server:
        text, calls, answer = LOOPS[api](server.url)
        assert server.served == ["turn-1", "turn-2"]
    assert text == "Let me check the weather."
    assert calls == [CALL]
    assert answer == ANSWER


def test_serve_script_on_the_command_line(loop: Path) -> None:
    proc, first, origin = start_listening([*STREAMTOOL, "serve", str(loop), "--port", "0"])
    try:
        text, calls, answer = chat_loop(origin)
        _, calls2, answer2 = anthropic_loop(origin)  # the script starts over
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert f"serving the script {loop} (2 turns)" in first
    assert (calls, answer, calls2, answer2) == ([CALL], ANSWER, [CALL], ANSWER)
    assert "POST /v1/chat/completions -> turn-1 (200)" in err
    assert "POST /v1/messages -> turn-2 (200)" in err


# -- which turn answers ------------------------------------------------------------------------
def post(url: str, text: str, *, role: str = "user") -> httpx.Response:
    body = {"model": "m", "stream": True, "messages": [{"role": role, "content": text}]}
    if role == "tool":
        body["messages"].insert(0, {"role": "user", "content": "go"})
        body["messages"][-1]["tool_call_id"] = "call_1"
    return httpx.post(url + "/v1/chat/completions", json=body, timeout=10)


def text_of(response: httpx.Response) -> str:
    decoder = SSEDecoder()
    events = [e for e in [*decoder.feed(response.content), *decoder.finish()]]
    out = ""
    for e in events:
        if isinstance(e, SSEEvent) and e.data.startswith("{"):
            for choice in json.loads(e.data).get("choices", []):
                out += choice["delta"].get("content") or ""
    return out


def test_contains_equals_matches_in_order_and_starting_over(tmp_path: Path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text(
        "turns:\n"
        "  - {match: {equals: hello}, reply: {text: one}}\n"
        "  - {match: {matches: 'result: \\d+'}, reply: {text: two}}\n"
        "  - {reply: {text: three}}\n"
        "  - {match: {contains: bye}, reply: {text: four}}\n",
        encoding="utf-8",
    )
    with serving_script(script) as server:
        url = server.url
        assert text_of(post(url, "  hello \n")) == "one"  # equals: surrounding space aside
        assert text_of(post(url, "result: 42", role="tool")) == "two"  # a tool result
        assert text_of(post(url, "anything")) == "three"  # no match: the next in order
        assert text_of(post(url, "ok, bye")) == "four"
        assert text_of(post(url, "hello")) == "one"  # after the last turn: the first again
        # turn 2 does not take it, turn 3 takes any request: it comes first
        assert text_of(post(url, "bye now")) == "three"
        assert text_of(post(url, "result: 7", role="tool")) == "two"  # back to turn 2: wrap
        assert text_of(post(url, "bye")) == "three"
        assert server.served == [f"turn-{n}" for n in (1, 2, 3, 4, 1, 3, 2, 3)]


def test_a_request_no_turn_takes_is_a_404_in_the_apis_shape_with_keys_masked(
    tmp_path: Path,
) -> None:
    script = tmp_path / "s.yaml"
    script.write_text("turns:\n  - {match: {contains: weather}, reply: {text: hi}}\n")
    key = "sk-proj-" + "Zq4vN8sK2xW7bR1tY6uH3mJ9cL5dF0gA"
    with serving_script(script) as server:
        chat = post(server.url, f"my key is {key}")
        anthropic = httpx.post(
            server.url + "/v1/messages",
            json={"model": "m", "max_tokens": 9, "stream": True, "messages": [
                {"role": "user", "content": "no"}]},
        )  # fmt: skip
    assert chat.status_code == 404
    message = chat.json()["error"]["message"]
    assert key not in chat.text and "(its last message: 'my key is [redacted]')" in message
    assert "no turn of the script s.yaml accepts this request" in message
    assert "1: contains 'weather'" in message
    assert anthropic.status_code == 404
    assert anthropic.json()["type"] == "error"
    assert anthropic.json()["error"]["type"] == "not_found_error"


def test_a_non_streaming_request_and_an_api_without_an_emitter(loop: Path) -> None:
    with serving_script(loop) as server:
        body = {"model": "m", "messages": [{"role": "user", "content": "weather"}]}
        plain = httpx.post(server.url + "/v1/chat/completions", json=body)
        cohere = httpx.post(server.url + "/v2/chat", json={**body, "stream": True})
        after = text_of(post(server.url, "weather?"))  # the refused request took no turn
        assert server.served == ["turn-1"]
    assert plain.status_code == 400 and "send stream: true" in plain.json()["error"]["message"]
    assert cohere.status_code == 404 and "not /v2/chat" in cohere.json()["message"]
    assert after == "Let me check the weather."


# -- streamed as the turn says -------------------------------------------------------------------
def test_the_served_stream_is_the_emitted_one_paced_as_the_turn_says(tmp_path: Path) -> None:
    like = RECORDINGS / "anthropic-text-then-tool-use.jsonl"
    text = "one two three four five six seven eight nine ten"
    script = tmp_path / "s.yaml"
    script.write_text(
        f"model: m\nturns:\n  - reply: {{text: {text}}}\n    stream: {{like: {like}}}\n"
        f"  - reply: {{text: {text}}}\n    stream: whole\n",
        encoding="utf-8",
    )
    turns = load_script(script).turns
    with serving_script(script) as server:
        borrowed, whole = (post(server.url, "x").content for _ in range(2))
    assert borrowed == emitter("openai-chat")(turns[0].reply).body.encode()
    assert whole == emitter("openai-chat")(turns[1].reply).body.encode()
    pieces = [
        json.loads(e[6:])["choices"][0]["delta"].get("content")
        for e in borrowed.decode().split("\n\n")
        if e.startswith("data: {")
    ]
    assert [len(p) for p in pieces if p] == [12, 22, 14]  # the recording's delta sizes
    assert whole.count(text.encode()) == 1


def test_serve_paces_a_turn_at_its_rate(tmp_path: Path) -> None:
    from streamtool.core.exchange.playback import Playback, Write, schedule
    from streamtool.core.net.emitting import ScriptLibrary
    from streamtool.core.net.library import Incoming

    script = tmp_path / "s.yaml"
    script.write_text(
        "turns:\n  - reply: {text: a b c d e f}\n    stream: {tokens_per_s: 10, ttft: 2}\n"
    )
    library = ScriptLibrary.from_file(script)
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": True}
    rec = library.choose(
        Incoming("/v1/chat/completions", "/chat/completions", ("openai-chat",), "m", None, body)
    )
    writes = [w for w in schedule(rec.chunks, Playback(speed=1.0), rec.size)]
    content = [w.at for w in writes if isinstance(w, Write) and b'"content":"' in w.data]
    content = [t for t in content if t > 0]
    assert content[0] == pytest.approx(2.0)
    assert content[1] - content[0] == pytest.approx(0.1)


# -- bad scripts -------------------------------------------------------------------------------
def test_a_bad_script_given_to_serve_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("turns:\n  - reply:\n      tool_calls: [{arguments: {}}]\n")
    proc = subprocess.run(
        [*STREAMTOOL, "serve", str(bad), "--port", "0"], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr
    assert f"{bad}:3: turns[0].reply.tool_calls[0].name: missing" in proc.stderr
    proc = subprocess.run(
        [*STREAMTOOL, "serve", str(bad), "--tape"], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 2 and "--tape is for tapes" in proc.stderr


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        (
            "bad.yaml",
            "model: m\nturns: &t\n  - reply: {text: hi}\n  - *t\n",
            ":2: an alias refers to",
        ),
        (
            "bad.yaml",
            "model: m\nturns:\n  - reply: {text: hi}\n  - reply: " + "[" * 2000 + "]" * 2000 + "\n",
            ":4: nested too deeply",
        ),
        (
            "bad.json",
            '{\n  "model": "m",\n  "turns": ' + "[" * 2000 + "]" * 2000 + "\n}",
            ":3: nested too deeply",
        ),
        (
            # 318 bytes that expand to 9**9 values: refused at the alias that passes the limit
            "bomb.yaml",
            "a: &a [x,x,x,x,x,x,x,x,x]\n"
            + "".join(
                f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]\n"
                for i in range(8)
            )
            + "turns: [*i]\n",
            ":6: aliases expand to more than 100,000 values",
        ),
        (
            "big-int.yaml",
            "turns:\n  - reply:\n      text: hi\n      usage: {input_tokens: " + "9" * 5000 + "}\n",
            ":4: an integer longer than 1,000 digits",
        ),
        (
            "big-value.yaml",
            "turns:\n  - reply: {text: hi}\n  - reply: {text: " + "x" * (1024 * 1024 + 1) + "}\n",
            ":3: a value longer than 1,048,576 characters",
        ),
        (
            "bad-date.yaml",
            "turns:\n  - reply: {text: hi, usage: {input_tokens: 2001-13-45}}\n",
            ":2: '2001-13-45' is not a valid timestamp",
        ),
    ],
    ids=["alias-in-itself", "deep-yaml", "deep-json", "alias-bomb", "big-int", "big-value", "date"],
)
def test_a_script_that_cannot_be_read_is_one_line_and_exit_2(
    tmp_path: Path, name: str, text: str, said: str
) -> None:
    bad = tmp_path / name
    bad.write_text(text)
    proc = subprocess.run(
        [*STREAMTOOL, "serve", str(bad), "--port", "0"], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr
    assert f"{bad}{said}" in proc.stderr


# -- with quirks ---------------------------------------------------------------------------------
def test_a_script_served_with_mutate_streams_the_quirk(loop: Path, tmp_path: Path) -> None:
    proc, _, origin = start_listening(
        [*STREAMTOOL, "serve", str(loop), "--port", "0", "--speed", "max", "--mutate",
         "oai_tool_index_missing"]
    )  # fmt: skip
    try:
        text, calls, answer = anthropic_loop(origin)  # no quirk of Anthropic's asked for
        served = post(origin, QUESTION).content  # turn 1 again, in Chat
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
    summary = replayed_body(tmp_path, served)
    assert "oai_tool_index_missing" in {q["id"] for q in summary["quirks"]}
    assert [(i["name"], i["arguments"]) for i in summary["invocations"]] == [CALL]
    assert summary["text"] == "Let me check the weather."
    assert (text, calls, answer) == ("Let me check the weather.", [CALL], ANSWER)


# -- the pytest plugin ---------------------------------------------------------------------------
PLUGIN_SAMPLE = """
import json
import os

import pytest
from anthropic import Anthropic
from openai import OpenAI


@pytest.mark.stream_tape(path="loop.yaml")
def test_openai(stream_tape):
    client = OpenAI(max_retries=0)
    with client.chat.completions.stream(
        model="m", messages=[{"role": "user", "content": "weather in Lisbon?"}]
    ) as stream:
        message = stream.get_final_completion().choices[0].message
    call = message.tool_calls[0]
    assert (call.function.name, json.loads(call.function.arguments)) == (
        "get_weather", {"city": "Lisbon", "unit": "celsius"})
    with open(os.environ["SAMPLE_NOTES"], "a") as fh:
        fh.write(json.dumps({"exchanges": stream_tape.exchanges,
                             "mutated": stream_tape.mutated}) + "\\n")


@pytest.mark.stream_tape(path="loop.yaml")
def test_anthropic(stream_tape):
    client = Anthropic(max_retries=0)
    with client.messages.stream(
        model="m", max_tokens=99, messages=[{"role": "user", "content": "hello"}]
    ) as stream:
        message = stream.get_final_message()
    assert message.content[0].text == "It is 21 °C in Lisbon."


@pytest.mark.stream_tape(path="only-weather.yaml")
def test_a_miss_fails_the_test(stream_tape):
    client = OpenAI(max_retries=0)
    try:  # the code under test swallows the 404: the test fails all the same
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True
        )
    except Exception:
        pass
"""


def test_the_plugin_serves_a_script(loop: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "loop.yaml").write_text(LOOP, encoding="utf-8")
    (project / "only-weather.yaml").write_text(LOOP.split("  - reply")[0], encoding="utf-8")
    (project / "test_sample.py").write_text(PLUGIN_SAMPLE, encoding="utf-8")
    notes = project / "notes.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "OPENAI_"))}
    env.pop("ANTHROPIC_API_KEY", None)
    env["SAMPLE_NOTES"] = str(notes)
    proc = subprocess.run(
        [*CHILD_PYTEST, "-q", "-n0",
         "-p", "no:randomly", "--stream-tape-mutate", "oai_empty_id"],
        cwd=project, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert "1 failed, 2 passed" in proc.stdout, proc.stdout + proc.stderr
    assert "test_a_miss_fails_the_test" in proc.stdout
    assert "stream_tape: a request matched no turn of" in proc.stdout
    assert (
        "no turn of the script only-weather.yaml accepts this request (its last message: 'hi')"
        in (proc.stdout)
    )
    note = json.loads(notes.read_text().splitlines()[0])
    assert note == {"exchanges": ["turn-1"], "mutated": {"turn-1": ["oai_empty_id"]}}
    assert not any(p.name.startswith(".") or p.is_dir() for p in project.iterdir() if
                   p.name not in ("__pycache__",))  # fmt: skip


# -- the README's script -----------------------------------------------------------------------
def test_the_readmes_script_runs_with_both_sdks(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Mock a provider, replay a session", 1)[1].split("\n## ", 1)[0]
    script = re.search(r"```yaml\n(.*?)```", section, re.S)
    snippet = re.search(r"```python\n(.*?)```", section, re.S)
    assert script and snippet, "the README's tapes section lost its script"
    assert len(script.group(1).splitlines()) <= 12
    (tmp_path / "loop.yaml").write_text(script.group(1), encoding="utf-8")
    (tmp_path / "snippet.py").write_text(snippet.group(1), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    proc = subprocess.run(
        [sys.executable, "snippet.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    # the openai SDK's loop, then the anthropic SDK's: each got the tool call, then the answer
    assert proc.stdout.splitlines() == ["It is 21 °C in Lisbon."] * 2


# -- the turn picker, for every script and every sequence of requests ---------------------------
_WORDS = ["weather", "result", "hello", "bye", "Weather", "42"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.none(),
            st.tuples(st.sampled_from(["contains", "equals", "matches"]), st.sampled_from(_WORDS)),
        ),
        min_size=1,
        max_size=6,
    ),
    st.lists(st.lists(st.sampled_from(_WORDS), max_size=3).map(" ".join), max_size=12),
)
def test_the_picker_answers_with_a_turn_that_accepts_in_order(matches, subjects) -> None:
    from streamtool.core.drive.script import Turn, TurnPicker
    from streamtool.core.outputs.emit import Reply

    turns = [Turn(Reply(), m) for m in matches]
    picker = TurnPicker(turns)
    last = -1
    for subject in subjects:
        n = picker.pick(subject)
        accepting = [i for i, t in enumerate(turns) if t.accepts(subject)]
        if n is None:  # a miss only when no turn takes it
            assert accepting == []
            continue
        assert n in accepting
        # the first accepting turn after the last served, else (starting over) the first one
        after = [i for i in accepting if i > last]
        assert n == (after[0] if after else accepting[0])
        last = n
    assert len(picker.served) == sum(any(t.accepts(s) for t in turns) for s in subjects)
