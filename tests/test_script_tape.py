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
from .helpers import WEATHER_SCRIPT as LOOP


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


# -- limits: what a script may hold, what a tape may grow to ---------------------------------------
def test_aliases_that_repeat_a_reply_are_read_as_written(tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text(
        "model: m\nanswer: &a {text: same answer, usage: {output_tokens: 2}}\n"
        "turns:\n" + "  - reply: *a\n" * 30,
        encoding="utf-8",
    )
    with pytest.raises(ScriptError, match=r"s\.yaml:2: answer: unknown field"):
        load_script(script)  # the anchor's own key is not a field of a script
    script.write_text(
        "model: m\nturns:\n  - reply: &a {text: same answer, usage: {output_tokens: 2}}\n"
        + "  - reply: *a\n" * 30,
        encoding="utf-8",
    )
    turns = load_script(script).turns
    assert len(turns) == 31
    assert {t.reply.parts[0].text for t in turns} == {"same answer"}


def test_the_alias_limit_counts_what_aliases_repeat(tmp_path):
    from streamtool.core.drive.script import MAX_ALIAS_VALUES

    # a list of n values repeated k times: n * k values added by the aliases
    n = 1000
    k = MAX_ALIAS_VALUES // (n + 1)  # each repeat adds the list itself and its n values
    items = ", ".join(["x"] * n)
    head = f"turns:\n  - reply: {{text: hi, tool_calls: [{{name: f, arguments: {{a: &l [{items}]"
    script = tmp_path / "s.yaml"
    script.write_text(head + ", b: [" + ", ".join(["*l"] * k) + "]}}]}\n", encoding="utf-8")
    assert len(load_script(script).turns) == 1  # at the limit: read
    script.write_text(head + ", b: [" + ", ".join(["*l"] * (k + 1)) + "]}}]}\n", encoding="utf-8")
    with pytest.raises(ScriptError, match=r"s\.yaml:2: aliases expand to more than 100,000"):
        load_script(script)


def _tape_size(folder) -> int:
    return sum(p.stat().st_size for p in folder.iterdir())


def test_a_tape_stays_within_its_stated_multiple_of_the_script(tmp_path):
    from streamtool.core.drive.script import TAPE_MULTIPLE, tape_limit

    script = tmp_path / "s.yaml"
    # a long model name is repeated in every event of a Chat stream: 2,000 words of text would
    # build a tape of about 3,000 times the script
    script.write_text(
        f"model: {'m' * 3000}\nturns:\n  - reply: {{text: {' word' * 2000}}}\n", encoding="utf-8"
    )
    out = tmp_path / "tape"
    result = CliRunner().invoke(
        app, ["tape", "build", str(script), "--api", "openai-chat", "-o", str(out)]
    )
    assert result.exit_code == 2
    limit = tape_limit(load_script(script))
    assert result.stderr.strip() == (
        f"streamtool: error: {script}:3: turns[0]: the tape would be more than {TAPE_MULTIPLE} "
        f"times the size of the script, plus 1 MiB ({limit:,} bytes): stream it in larger pieces "
        "(stream: whole, or {like: RECORDING})"
    )
    # nothing is left: neither the tape nor the folder it was built in
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"]
    # the same script streamed whole fits
    script.write_text(
        f"model: {'m' * 3000}\nturns:\n  - reply: {{text: {' word' * 2000}}}\n    stream: whole\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(
        app, ["tape", "build", str(script), "--api", "openai-chat", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert _tape_size(out) <= tape_limit(load_script(script))


@pytest.mark.parametrize("api", sorted(EMITTERS))
def test_prose_and_code_build_within_the_bound(tmp_path, api):
    from streamtool.core.drive.script import TAPE_MULTIPLE

    code = (RECORDINGS.parent / "core" / "drive" / "script.py").read_text(encoding="utf-8")
    prose = " ".join(["the quick brown fox jumps over the lazy dog"] * 600)
    script = tmp_path / "s.yaml"
    import yaml

    script.write_text(
        yaml.safe_dump(
            {
                "model": "gpt-4o-2024-08-06",
                "turns": [
                    {"reply": {"text": prose}},
                    {"reply": {"tool_calls": [{"name": "w", "arguments": {"content": code}}]}},
                ],
            }
        ),
        encoding="utf-8",
    )
    out = tmp_path / "tape"
    result = CliRunner().invoke(app, ["tape", "build", str(script), "--api", api, "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert _tape_size(out) < TAPE_MULTIPLE * script.stat().st_size


@pytest.mark.parametrize("api", sorted(EMITTERS))
def test_a_reply_emitted_into_a_sink_is_the_same_reads_kept_nowhere(api):
    import dataclasses

    reply = load_script_text(LOOP).turns[0].reply
    kept = emitter(api)(reply)
    got: list = []
    streamed = emitter(api)(dataclasses.replace(reply, sink=lambda t, text: got.append((t, text))))
    assert got == kept.reads and len(got) >= 2
    assert streamed.reads == [] and streamed.t_end == kept.t_end


def load_script_text(text: str):
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.yaml"
        path.write_text(text, encoding="utf-8")
        return load_script(path)


def _start_build(script, out, api="openai-chat"):
    import subprocess

    from .serve_helpers import STREAMTOOL

    return subprocess.Popen(
        [*STREAMTOOL, "tape", "build", str(script), "--api", api, "-o", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_two_builds_into_one_folder_leave_one_whole_tape(tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text("turns:\n" + f"  - reply: {{text: {' word' * 3000}}}\n" * 3, encoding="utf-8")
    out = tmp_path / "tape"
    procs = [_start_build(script, out) for _ in range(2)]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    assert sorted(code for code, _ in results) == [0, 2], results
    refused = next(err for code, err in results if code == 2)
    assert refused.strip().endswith(
        f"{out}: exists and is not empty (a tape is built into a new folder)"
    )
    entries = read_index(out)
    assert [e.seq for e in entries] == [1, 2, 3]
    assert {p.name for p in out.iterdir() if p.suffix == ".jsonl"} == {
        *(e.file for e in entries),
        "index.jsonl",
    }
    for e in entries:
        assert replay_file(out / e.file).summary()["text"] == ("word " * 3000).strip()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml", "tape"]  # nothing left


def test_a_build_killed_midway_leaves_no_tape(tmp_path):
    import os
    import signal
    import time

    script = tmp_path / "s.yaml"
    script.write_text(f"turns:\n  - reply: {{text: {' word' * 200_000}}}\n", encoding="utf-8")
    out = tmp_path / "tape"
    proc = _start_build(script, out)
    deadline = time.monotonic() + 60
    recording = None
    while recording is None and time.monotonic() < deadline and proc.poll() is None:
        building = [p for p in tmp_path.iterdir() if p.name.endswith(".building")]
        found = [r for b in building for r in b.glob("*.jsonl") if r.stat().st_size > 100_000]
        recording = found[0] if found else None
        time.sleep(0.02)
    assert recording is not None, "the build wrote nothing where it builds"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()
    proc.stderr.close()
    assert not out.exists()  # a half-built tape never takes the folder's name
    # the hidden folder it was building in is all that is left, beside the script
    assert [p.name for p in tmp_path.iterdir() if p.name != "s.yaml"] == [recording.parent.name]
    assert recording.parent.name.startswith(".tape.")


def test_a_build_that_fills_the_disk_is_one_line_and_leaves_nothing(tmp_path):
    import subprocess

    from .serve_helpers import STREAMTOOL
    from .test_input_hardening import _limit_file_size

    script = tmp_path / "s.yaml"
    script.write_text(f"turns:\n  - reply: {{text: {' word' * 5000}}}\n", encoding="utf-8")
    out = tmp_path / "tape"
    # a write past 20 KB fails (EFBIG), as on a full disk
    run = subprocess.run(
        [*STREAMTOOL, "tape", "build", str(script), "--api", "anthropic", "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=_limit_file_size(20_000),
    )
    assert run.returncode == 2, run.stderr
    assert run.stderr.startswith(f"streamtool: error: {out}: ") and run.stderr.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"]
