"""The pytest plugin, used the way a user's project uses it.

A sample project is written to a temporary folder; its test runs a two-turn tool loop through
the real openai SDK. pytest runs it in a subprocess (the plugin is found through its entry
point): recorded with ``--stream-tape-mode=once`` from a local upstream (a tape served over real
HTTP), replayed with the upstream gone, replayed cut at random points on two xdist workers, and
failing with the tape's mismatch message once its prompt changes.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from streamtool.core.net.tape import serving_tape

from .tape_helpers import (
    OPENAI_MODEL,
    OPENAI_QUESTION,
    OPENAI_TOOLS,
    notes_of,
    openai_tape,
    run_child_pytest,
)

FAKE_KEY = (
    "sk-proj-" + "Zq4vN8sK2xW7bR1tY6uH3mJ9cL5dF0gA"
)  # looks like a key: must never be written

SAMPLE = """
import json
import os

import pytest
from openai import OpenAI

MODEL = {model!r}
QUESTION = {question!r}
TOOLS = json.loads({tools!r})


def weather(arguments):
    return f"Weather in {{arguments['city']}}: sunny, result: 21°C"


def run_loop():
    client = OpenAI(max_retries=0)  # the base URL comes from OPENAI_BASE_URL
    messages = [{{"role": "user", "content": QUESTION}}]
    with client.chat.completions.stream(model=MODEL, messages=messages, tools=TOOLS) as stream:
        first = stream.get_final_completion().choices[0].message
    calls = [
        {{
            "id": c.id,
            "type": "function",
            "function": {{"name": c.function.name, "arguments": c.function.arguments}},
        }}
        for c in first.tool_calls or []
    ]
    messages.append({{"role": "assistant", "content": None, "tool_calls": calls}})
    for call in calls:
        result = weather(json.loads(call["function"]["arguments"]))
        messages.append({{"role": "tool", "tool_call_id": call["id"], "content": result}})
    with client.chat.completions.stream(model=MODEL, messages=messages, tools=TOOLS) as stream:
        second = stream.get_final_completion().choices[0].message
    return calls, second.content


def note(stream_tape):
    with open(os.environ["SAMPLE_NOTES"], "a") as fh:
        fh.write(json.dumps({{
            "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
            "base_url": stream_tape.base_url,
            "openai": os.environ["OPENAI_BASE_URL"],
            "recording": stream_tape.recording,
            "exchanges": stream_tape.exchanges,
            "recorded": stream_tape.recorded,
            "folder": str(stream_tape.folder),
        }}) + "\\n")


def test_weather_loop(stream_tape):
    calls, text = run_loop()
    assert [json.loads(c["function"]["arguments"])["city"] for c in calls] == ["Paris", "Tokyo"]
    assert "ありがとう" in text
    note(stream_tape)


@pytest.mark.stream_tape(path="tapes/test_agent/test_weather_loop")
def test_same_tape_shared(stream_tape):
    calls, text = run_loop()
    assert len(calls) == 2 and text
    note(stream_tape)


def test_without_the_fixture_nothing_changes():
    assert os.environ["OPENAI_BASE_URL"] == "http://untouched.invalid/v1"
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    source = SAMPLE.format(
        model=OPENAI_MODEL, question=OPENAI_QUESTION, tools=json.dumps(OPENAI_TOOLS)
    )
    (root / "test_agent.py").write_text(source, encoding="utf-8")
    return root


def contents(tape: Path) -> dict[str, bytes]:
    """A tape's recordings and index (its hidden lock and notes aside)."""
    return {p.name: p.read_bytes() for p in tape.iterdir() if not p.name.startswith(".")}


def run_pytest(
    project: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], list[dict]]:
    notes = project / "notes.jsonl"
    notes.unlink(missing_ok=True)
    extra_env = env
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "OPENAI_"))}
    env.pop("CI", None)  # in CI a tape is only replayed: these runs record
    env.update(
        SAMPLE_NOTES=str(notes),
        OPENAI_BASE_URL="http://untouched.invalid/v1",
        OPENAI_API_KEY=FAKE_KEY,
    )
    env.update(extra_env or {})
    return run_child_pytest(project, list(args), env), notes_of(notes)


def test_record_once_then_replay_offline_rechunked_and_a_changed_prompt_fails(
    project: Path, tmp_path: Path
) -> None:
    tape = project / "tapes" / "test_agent" / "test_weather_loop"
    upstream_tape = tmp_path / "upstream"
    openai_tape(upstream_tape)

    # without a tape, replay-only mode fails and says how to record one
    proc, _ = run_pytest(project, "-k", "weather_loop")
    assert proc.returncode == 1
    assert f"no tape at {tape}; record it with --stream-tape-mode=once" in proc.stdout

    # record once, from a local upstream (a tape served over real HTTP)
    with serving_tape(upstream_tape) as upstream:
        proc, notes = run_pytest(
            project, "--stream-tape-mode=once", f"--stream-tape-upstream={upstream.url}"
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        # the first test recorded both turns; the second found them in the tape (which this
        # run created, so it could have added to it) and replayed them
        assert len(upstream.served) == 2
    first, shared = notes
    assert first["recording"] is True and shared["recording"] is True
    assert first["folder"] == str(tape) and shared["recorded"] == []
    assert shared["exchanges"] == [p.stem for p in sorted(tape.glob("0*.jsonl"))]
    assert first["openai"] == first["base_url"] + "/v1"
    written = sorted(p.name for p in tape.iterdir() if not p.name.startswith("."))
    assert written[-1] == "index.jsonl" and len(written) == 3
    for path in tape.iterdir():
        assert FAKE_KEY not in path.read_text(encoding="utf-8")
    assert not any(p.name.startswith(".") for p in tape.parent.iterdir())  # no staging left
    recorded = contents(tape)

    # the upstream is gone: replay only
    proc, notes = run_pytest(project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [n["recording"] for n in notes] == [False, False]
    assert notes[0]["exchanges"] == [Path(n).stem for n in sorted(recorded) if n != "index.jsonl"]

    # replayed cut at random points, one server per xdist worker; the tape is never rewritten
    proc, notes = run_pytest(project, "--stream-tape-rechunk=7", "-n", "2", "--dist=each")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert {n["worker"] for n in notes} == {"gw0", "gw1"}
    urls = {n["worker"]: n["base_url"] for n in notes}
    assert urls["gw0"] != urls["gw1"]
    assert contents(tape) == recorded

    # a changed prompt matches nothing: the test fails with the tape's message
    source = project / "test_agent.py"
    source.write_text(source.read_text().replace("in Paris and", "in Lyon and"))
    proc, _ = run_pytest(project, "-k", "weather_loop")
    assert proc.returncode == 1
    assert "stream_tape: a request matched no recorded exchange" in proc.stdout
    assert "messages[0].content" in proc.stdout
    assert contents(tape) == recorded

    # mode new: the exchanges of the changed prompt are recorded and added; the others stay
    lyon = tmp_path / "upstream-lyon"
    for path in openai_tape(lyon):
        path.write_text(path.read_text().replace("in Paris and", "in Lyon and"))
    with serving_tape(lyon) as upstream:
        proc, notes = run_pytest(
            project, "-k", "weather_loop", "--stream-tape-mode=new",
            f"--stream-tape-upstream={upstream.url}",
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert len(upstream.served) == 2
    now = contents(tape)
    assert len(now) == 5 and all(
        now[name] == data for name, data in recorded.items() if name != "index.jsonl"
    )
    assert now["index.jsonl"].startswith(recorded["index.jsonl"])


def test_options_are_checked_and_listed(project: Path) -> None:
    proc, _ = run_pytest(project, "--stream-tape-speed=fast")
    assert proc.returncode == 4
    assert "--stream-tape-speed must be a number > 0 or 'max', not 'fast'" in proc.stderr
    proc, _ = run_pytest(project, "--help")
    for option in ("--stream-tape-mode", "--stream-tape-upstream", "--stream-tape-rechunk"):
        assert option in proc.stdout


# -- many writers, one tape: xdist workers, failing tests, the exchanges list -------------------
SHARED = """
import os

import httpx
import pytest


def ask(prompt):
    url = os.environ["OPENAI_BASE_URL"] + "/chat/completions"
    body = {{"model": "gpt-4o-mini", "stream": True,
            "messages": [{{"role": "user", "content": prompt}}]}}
    key = {{"authorization": "Bearer " + os.environ["OPENAI_API_KEY"]}}
    with httpx.stream("POST", url, json=body, headers=key, timeout=20) as response:
        assert response.status_code == 200, response.read()
        return b"".join(response.iter_raw())


@pytest.mark.stream_tape("shared")
@pytest.mark.parametrize("i", range({n}))
def test_turn(stream_tape, i):
    with open(os.environ["EXPECTED_BODY"], "rb") as fh:
        assert ask(f"question {{i}}") == fh.read()
    assert len(stream_tape.exchanges) == 1
    assert os.environ.get("FAIL_AT") != str(i), "this test fails on purpose"
"""


def prompts_in(tape: Path) -> dict[str, str]:
    """Each recording of the tape named by its index -> the prompt it recorded."""
    out = {}
    for entry in (tape / "index.jsonl").read_text().splitlines():
        file = json.loads(entry)["file"]
        header = json.loads((tape / file).read_text().splitlines()[0])
        out[file] = header["request"]["body"]["messages"][0]["content"]
    return out


def check_tape(tape: Path) -> list[dict]:
    """The tape's index: one entry per recording, no number or file twice, every file there."""
    entries = [json.loads(line) for line in (tape / "index.jsonl").read_text().splitlines()]
    seqs = [e["seq"] for e in entries]
    files = [e["file"] for e in entries]
    assert len(set(seqs)) == len(seqs) and len(set(files)) == len(files)
    assert all(f.startswith(f"{s:04d}-") for s, f in zip(seqs, files, strict=True))
    assert set(files) == {p.name for p in tape.glob("*.jsonl") if p.name != "index.jsonl"}
    return entries


def test_xdist_workers_record_into_one_shared_tape_and_a_failing_test_adds_nothing(
    project: Path,
) -> None:
    from streamtool.core.exchange.playback import Playback
    from streamtool.core.net.server import serving

    from .serve_helpers import body_of, recording

    rec = recording("openai-text-usage-chunk-utf8-split")
    expected = project / "expected.bin"
    expected.write_bytes(body_of(rec))
    source = project / "test_agent.py"
    tape = project / "tapes" / "test_agent" / "shared"
    env = {"EXPECTED_BODY": str(expected)}
    with serving([rec], Playback(speed=None)) as upstream:
        up = f"--stream-tape-upstream={upstream.url}"
        # 12 tests, 2 workers, one tape, nothing recorded yet
        source.write_text(SHARED.format(n=12))
        proc, _ = run_pytest(project, "-n", "2", "-vv", "--stream-tape-mode=new", up, env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "12 passed" in proc.stdout
        assert "[gw0] " in proc.stdout and "[gw1] " in proc.stdout  # both workers recorded
        entries = check_tape(tape)
        assert len(entries) == 12
        assert sorted(prompts_in(tape).values()) == sorted(f"question {i}" for i in range(12))
        before = contents(tape)

        # 4 more tests on the same tape, one of them failing: its exchange is not added, the
        # other three are, and the 12 recorded before are untouched
        source.write_text(SHARED.format(n=16))
        proc, _ = run_pytest(
            project, "-n", "2", "--stream-tape-mode=new", up, env={**env, "FAIL_AT": "13"}
        )
        assert proc.returncode == 1 and "1 failed, 15 passed" in proc.stdout, proc.stdout
    entries = check_tape(tape)
    assert len(entries) == 15
    assert sorted(prompts_in(tape).values()) == sorted(
        f"question {i}" for i in range(16) if i != 13
    )
    after = contents(tape)
    assert all(after[name] == data for name, data in before.items() if name != "index.jsonl")
    assert after["index.jsonl"].startswith(before["index.jsonl"])
    assert not [p.name for p in tape.parent.iterdir() if p.name.startswith(".shared.")]

    # the upstream is gone: the 12 first tests replay on two workers
    source.write_text(SHARED.format(n=12))
    proc, _ = run_pytest(project, "-n", "2", env=env)
    assert proc.returncode == 0 and "12 passed" in proc.stdout, proc.stdout


README_EXAMPLE = """
import pytest
from openai import OpenAI


def my_agent(client, run):
    for turn in range(2):
        messages = [{"role": "user", "content": f"run {run}, turn {turn}"}]
        with client.chat.completions.stream(model="gpt-4o-mini", messages=messages) as s:
            s.get_final_completion()


@pytest.mark.parametrize("run", range(20))
def test_weather_agent(stream_tape, run):
    client = OpenAI(max_retries=0)  # OPENAI_BASE_URL points at the tape while the test runs
    my_agent(client, run)
    assert len(stream_tape.exchanges) == 2  # two requests were answered from the tape
    assert len(stream_tape.recorded) == (2 if stream_tape.recording else 0)
"""


@pytest.mark.parametrize("mode", ["once", "all"])
def test_exchanges_are_complete_when_the_clients_call_returns(project: Path, mode: str) -> None:
    from streamtool.core.exchange.playback import Playback
    from streamtool.core.net.server import serving

    from .serve_helpers import recording

    (project / "test_agent.py").write_text(README_EXAMPLE)
    rec = recording("openai-text-usage-chunk-utf8-split")
    with serving([rec], Playback(speed=None)) as upstream:
        up = f"--stream-tape-upstream={upstream.url}"
        proc, _ = run_pytest(project, f"--stream-tape-mode={mode}", up)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "20 passed" in proc.stdout
    tapes = sorted((project / "tapes" / "test_agent").iterdir())
    assert len(tapes) == 20
    for tape in tapes:
        assert len(check_tape(tape)) == 2
    proc, _ = run_pytest(project)  # and replayed offline
    assert proc.returncode == 0 and "20 passed" in proc.stdout, proc.stdout
