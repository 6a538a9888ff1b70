"""Tapes written by hand: a script of turns built into real recordings (``tape build``) that
replay, and that the official SDKs read, as the script says; pacing as asked; one clear error
for a script that is not valid."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from streamtool.cli.main import app
from streamtool.core.drive.replay_file import replay_file
from streamtool.core.drive.script import ScriptError, load_script
from streamtool.core.outputs.emit import EMITTERS, emitter
from streamtool.core.recording.reader import Source
from streamtool.core.recording.tape_index import read_index

from .conftest import RECORDINGS
from .emit_clients import READERS, stream_server

LOOP = """\
model: test-model
turns:
  - match: {contains: weather}
    reply:
      text: Let me check the weather.
      tool_calls: [{name: get_weather, arguments: {city: Lisbon, unit: celsius}}]
    stream: {tokens_per_s: 20, ttft: 0.5}
  - reply: {text: It is 21 °C in Lisbon., usage: {input_tokens: 40, output_tokens: 9}}
"""


@pytest.mark.parametrize("api", sorted(EMITTERS))
def test_tape_build_writes_real_recordings_the_sdks_read(tmp_path, api):
    script = tmp_path / "loop.yaml"
    script.write_text(LOOP, encoding="utf-8")
    tape = tmp_path / "tape"
    result = CliRunner().invoke(app, ["tape", "build", str(script), "--api", api, "-o", str(tape)])
    assert result.exit_code == 0, result.output
    entries = read_index(tape)
    assert [e.seq for e in entries] == [1, 2]
    first, second = (replay_file(tape / e.file).summary() for e in entries)
    assert first["text"] == "Let me check the weather."
    assert [(i["name"], i["arguments"]) for i in first["invocations"]] == [
        ("get_weather", {"city": "Lisbon", "unit": "celsius"})
    ]
    assert first["finish_class"] == "tool_calls"
    assert second["text"] == "It is 21 °C in Lisbon." and second["finish_class"] == "stop"
    assert second["usage"]["input_tokens"] == 40
    # the official SDK reads the built recording as its provider's stream
    with stream_server() as (base, bodies):
        reads = [c.data.encode() for c in Source(tape / entries[0].file).chunks()]
        bodies["turn"] = (200, "text/event-stream", reads)
        got = READERS[api](f"{base}/turn")
    assert got.text == "Let me check the weather."
    assert got.calls == [("get_weather", {"city": "Lisbon", "unit": "celsius"})]
    assert got.finish == "tool_calls"


def test_pacing_by_rate_ttft_like_and_whole(tmp_path):
    like = RECORDINGS / "anthropic-text-then-tool-use.jsonl"
    text = "one two three four five six seven eight nine ten"
    script = tmp_path / "s.yaml"
    script.write_text(
        "turns:\n"
        f"  - reply: {{text: {text}}}\n    stream: {{tokens_per_s: 10, ttft: 1.5}}\n"
        f"  - reply: {{text: {text}}}\n    stream: {{like: {like}}}\n"
        f"  - reply: {{text: {text}}}\n    stream: whole\n",
        encoding="utf-8",
    )
    rate, borrowed, whole = (t.reply for t in load_script(script).turns)
    chat = emitter("openai-chat")
    # tokens/s: the first token at the ttft, then one every 0.1 s
    times = [
        t for t, body in chat(rate).reads if '"content":"' in body and '"content":""' not in body
    ]
    assert times[0] == pytest.approx(1.5)
    assert times[1] - times[0] == pytest.approx(0.1)
    assert times[-1] == pytest.approx(1.5 + 0.1 * (len(times) - 1))
    # like: the recording's delta sizes (12, 22, 14... characters) and its gaps
    events = [e for e in chat(borrowed).body.split("\n\n") if e.startswith("data: {")]
    pieces = [json.loads(e[6:])["choices"][0]["delta"].get("content") for e in events]
    pieces = [p for p in pieces if p]
    assert [len(p) for p in pieces] == [12, 22, 14]  # 48 characters
    assert "".join(pieces) == text
    # whole: one piece
    pieces = [b for _, b in chat(whole).reads if '"content":"one' in b]
    assert len(pieces) == 1 and text in pieces[0]


@pytest.mark.parametrize(
    ("body", "line", "where"),
    [
        ("turns:\n  - reply:\n      txt: hi\n", 3, "turns[0].reply.txt"),
        ("turns:\n  - reply: {text: hi}\n    match: {startswith: x}\n", 3, "turns[0].match"),
        ("turns:\n  - reply: {text: hi}\n    match: {matches: '('}\n", 3, "turns[0].match.matches"),
        (
            "turns:\n  - reply:\n      tool_calls:\n        - arguments: {}\n",
            4,
            "turns[0].reply.tool_calls[0].name",
        ),
        ("api: nope\nturns: []\n", 1, "api"),
        (
            "turns:\n  - reply: {text: hi}\n    stream: {tokens_per_s: 0}\n",
            3,
            "turns[0].stream.tokens_per_s",
        ),
        ("turns:\n  - reply: {text: hi, finish: done}\n", 2, "turns[0].reply.finish"),
        ("turns: [\n", 2, ""),
    ],
)
def test_an_invalid_script_is_one_line_naming_file_line_and_field(tmp_path, body, line, where):
    script = tmp_path / "bad.yaml"
    script.write_text(body, encoding="utf-8")
    with pytest.raises(ScriptError) as raised:
        load_script(script)
    assert str(raised.value).startswith(f"{script}:{line}: {where}")
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, ["tape", "build", str(script), "--api", "anthropic", "-o", str(out)]
    )
    assert result.exit_code == 2
    assert "Traceback" not in result.output and f"{script}:{line}" in result.stderr
    assert not (out / "index.jsonl").exists()


def test_tape_build_never_writes_into_a_folder_that_holds_something(tmp_path):
    script = tmp_path / "loop.yaml"
    script.write_text(LOOP, encoding="utf-8")
    tape = tmp_path / "tape"
    tape.mkdir()
    (tape / "keep.txt").write_text("mine")
    result = CliRunner().invoke(
        app, ["tape", "build", str(script), "--api", "gemini", "-o", str(tape)]
    )
    assert result.exit_code == 2
    assert sorted(p.name for p in tape.iterdir()) == ["keep.txt"]


def test_a_built_tape_is_served_as_its_script_byte_for_byte(tmp_path):
    from streamtool.core.net.tape import serving_tape

    from .serve_helpers import body_of
    from .test_serve_script import anthropic_loop

    script = tmp_path / "loop.yaml"
    script.write_text(LOOP, encoding="utf-8")
    tape = tmp_path / "tape"
    result = CliRunner().invoke(
        app, ["tape", "build", str(script), "--api", "anthropic", "-o", str(tape)]
    )
    assert result.exit_code == 0, result.output
    files = [tape / e.file for e in read_index(tape)]
    with serving_tape(tape) as server:
        text, calls, answer = anthropic_loop(server.url)  # turn 1 by its match, then turn 2
        assert server.served == [files[0].stem, files[1].stem]
        import httpx

        body = {"model": "m", "max_tokens": 9, "stream": True, "messages": [
            {"role": "user", "content": "the weather, again"}]}  # fmt: skip
        raw = httpx.post(server.url + "/v1/messages", json=body).content
    assert (text, calls, answer) == (
        "Let me check the weather.",
        [("get_weather", {"city": "Lisbon", "unit": "celsius"})],
        "It is 21 °C in Lisbon.",
    )
    assert raw == body_of(files[0])  # the recording, byte for byte
