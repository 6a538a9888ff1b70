"""``streamtool conform``: clients run against recordings served over real HTTP, cut many ways.

The clients are real programs in ``tests/clients``: a small stdlib chat client (correct, naive
about tool calls without ``index``, or parsing each network read on its own) and the openai and
anthropic SDKs' own stream accumulators.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamtool.core.drive.replay_file import replay_file
from streamtool.core.exchange.playback import Playback, Write, random_cuts, schedule
from streamtool.core.outputs.conformance import ClientRun, Expected, judge, parse_answer, suspects

from .conftest import RECORDINGS
from .helpers import run_captured
from .serve_helpers import write_recording

CLIENTS = Path(__file__).parent / "clients"
STREAMTOOL = [sys.executable, "-c", "from streamtool.cli.main import main; main()"]


def conform(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    # off a terminal without COLUMNS: a paragraph of what differs is one line
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return run_captured([*STREAMTOOL, "conform", *args], timeout=timeout, env=env)


def _chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    obj = {
        "id": "5c1f9e0a2b7d4c68",
        "object": "chat.completion.chunk",
        "created": 1763726400,
        "model": "mistral-small-latest",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(obj, ensure_ascii=False)}\n\n"


def no_index_recording(path: Path) -> Path:
    """Two parallel tool calls sent whole and without ``index`` (as Mistral does), after text
    with a character outside ASCII so that cuts land inside it."""
    reads = [
        (0.2, _chunk({"role": "assistant", "content": "Je regarde la météo "})),
        (0.25, _chunk({"content": "à Paris et Lyon."})),
        (
            0.9,
            _chunk(
                {
                    "tool_calls": [
                        {
                            "id": "D681PevKs",
                            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                        },
                        {
                            "id": "Kq2mZ7xYw",
                            "function": {"name": "get_weather", "arguments": '{"city": "Lyon"}'},
                        },
                    ]
                },
                "tool_calls",
            )
            + "data: [DONE]\n\n",
        ),
    ]
    return write_recording(
        path, reads, provider="mistral", model="mistral-small-latest", api="chat.completions"
    )


@pytest.fixture(scope="module")
def recs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder: the no-index recording, a bundled indexed one, and an Anthropic one."""
    folder = tmp_path_factory.mktemp("recs")
    no_index_recording(folder / "mistral-no-index.jsonl")
    for name in ("openai-parallel-tool-calls", "anthropic-parallel-tool-calls"):
        (folder / f"{name}.jsonl").write_bytes((RECORDINGS / f"{name}.jsonl").read_bytes())
    return folder


def by_run(doc: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["recording"], r["chunking"]): r for r in doc["results"]}


# -- the random cuts (sans-IO) -------------------------------------------------------------------
_reads = st.lists(
    st.tuples(st.floats(0, 5, allow_nan=False), st.binary(min_size=0, max_size=60)),
    max_size=10,
)


@settings(max_examples=60, deadline=None)
@given(reads=_reads, seed=st.integers(0, 2**32))
def test_random_rechunk_keeps_bytes_order_and_times(reads, seed):
    body = b"".join(d for _, d in reads)
    writes = list(schedule(reads, Playback(speed=1.0, rechunk_seed=seed), len(body)))
    assert all(isinstance(w, Write) and w.data for w in writes)
    assert b"".join(w.data for w in writes) == body
    assert [w.at for w in writes] == sorted(w.at for w in writes)
    # the same seed cuts the same way; every piece is sent once the read holding its end came
    again = list(schedule(reads, Playback(speed=1.0, rechunk_seed=seed), len(body)))
    assert again == writes
    ends, offset = [], 0  # (offset past each read as written without cuts, its time)
    for w in schedule(reads, Playback(speed=1.0), len(body)):
        assert isinstance(w, Write)
        offset += len(w.data)
        ends.append((offset, w.at))
    offset = 0
    for w in writes:
        offset += len(w.data)
        assert w.at == next(t for end, t in ends if end >= offset)


def test_random_cuts_split_characters_and_crlf():
    body = ('data: {"content": "ありがとう — ça va"}\r\n\r\n' * 20).encode()
    mid_char = mid_crlf = 0
    for seed in range(5):
        cuts = random_cuts(body, seed)
        assert cuts == sorted(set(cuts)) and all(0 < c < len(body) for c in cuts)
        assert all(b - a <= 48 for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True))
        mid_char += sum(0x80 <= body[c] <= 0xBF for c in cuts)
        mid_crlf += sum(body[c - 1 : c + 1] == b"\r\n" for c in cuts)
    assert mid_char >= 20 and mid_crlf >= 20
    assert random_cuts(body, 1) != random_cuts(body, 2)


# -- judging an answer (sans-IO) -----------------------------------------------------------------
EXPECTED = Expected(
    text="Héllo",
    tool_calls=[{"name": "get_weather", "arguments": {"city": "Paris"}}],
    finish_reason="tool_calls",
    quirks=["usage_only_chunk", "oai_tool_index_missing", "finish_stop_with_tools"],
)


def answer(**kw: Any) -> ClientRun:
    doc = {
        "text": "Héllo",
        "tool_calls": [{"name": "get_weather", "arguments": '{"city":"Paris"}'}],
        "finish_reason": "tool_calls",
    }
    doc.update(kw)
    return ClientRun(0, "log line\n" + json.dumps(doc) + "\n")


def test_judge_accepts_arguments_as_text_or_object_and_names_the_right_quirks():
    assert judge(EXPECTED, answer()).passed
    obj_args = [{"name": "get_weather", "arguments": {"city": "Paris"}}]
    assert judge(EXPECTED, answer(tool_calls=obj_args)).passed
    assert judge(EXPECTED, answer(finish_reason=None)).passed  # finish_reason is optional

    dropped = judge(EXPECTED, answer(tool_calls=[]))
    assert [d.field for d in dropped.differences] == ["tool_calls"]
    assert "0 tool calls instead of 1" in dropped.summary()
    assert dropped.quirks == ["oai_tool_index_missing"]

    text = judge(EXPECTED, answer(text="Hello"))
    assert "text differs at character 1" in text.summary()
    assert text.quirks == []

    finish = judge(EXPECTED, answer(finish_reason="stop"))
    assert finish.summary() == 'finish_reason "stop", expected "tool_calls"'
    assert finish.quirks == ["finish_stop_with_tools"]

    args = judge(EXPECTED, answer(tool_calls=[{"name": "get_weather", "arguments": '{"city"'}]))
    assert "arguments (not JSON)" in args.summary()


def test_judge_crashes_and_failed_streams():
    crash = judge(EXPECTED, ClientRun(1, "", "Traceback...\nRuntimeError: boom\n"))
    assert crash.summary() == "the client exited 1: RuntimeError: boom"
    assert crash.quirks == EXPECTED.quirks  # a crash may come from any of them
    assert judge(EXPECTED, ClientRun(0, "not json")).summary() == (
        "the client exited 0 without printing a JSON object (its last line: not json)"
    )
    silent_client = judge(EXPECTED, ClientRun(0, ""))
    assert silent_client.differences[0].field == "output"  # not a crash: it exited 0
    assert silent_client.quirks == []  # nothing the stream did explains a missing answer
    hung = judge(EXPECTED, ClientRun(None, "", timed_out=True, timeout=3))
    assert hung.summary() == "the client did not finish within 3 s"

    failed = Expected("Hi", [], None, failure="provider_error: overloaded")
    assert judge(failed, ClientRun(1, "", "APIError")).passed
    assert judge(failed, ClientRun(0, '{"error": "overloaded", "text": "Hi"}')).passed
    silent = judge(failed, ClientRun(0, '{"text": "Hi"}'))
    assert "did not complete (provider_error: overloaded) but the client reported success" in (
        silent.summary()
    )


def test_parse_answer_and_suspects():
    assert parse_answer('{"text": "a"}') == {"text": "a"}
    assert parse_answer('starting\n{"text": "a"}\n') == {"text": "a"}
    assert parse_answer("[1, 2]") is None and parse_answer("") is None
    assert suspects(["kimi_tokens_in_content", "usage_only_chunk"], ["text"]) == [
        "kimi_tokens_in_content"
    ]
    assert suspects(["a_new_quirk"], ["tool_calls"]) == ["a_new_quirk"]  # unknown: any field


def test_expected_is_the_wire_meaning_not_the_file_view():
    from streamtool.core.outputs.conformance import expected_from

    engine = replay_file(RECORDINGS / "openai-patch-file-markers.jsonl", handler_options={})
    assert engine.invocations()[0].arguments["patch"].startswith("--- a/")  # markers stripped
    from streamtool.core.net.conform import load_cases

    (case,) = load_cases([RECORDINGS / "openai-patch-file-markers.jsonl"])
    assert case.expected.tool_calls[0]["arguments"]["patch"].startswith("__START_PATCH__")
    assert expected_from(engine).tool_calls[0]["name"] == "patch_file"


# -- whole runs ----------------------------------------------------------------------------------
def test_naive_client_fails_on_the_calls_without_index_and_a_correct_one_passes(recs: Path):
    naive = conform(
        "-r", str(recs), "--chunkings", "3", "--format", "json", "--",
        sys.executable, str(CLIENTS / "chat_client.py"), "naive",
    )  # fmt: skip
    assert naive.returncode == 1, naive.stderr
    doc = json.loads(naive.stdout)
    assert doc["chunkings"] == ["whole", "1 byte", "seed 1"]
    runs = by_run(doc)
    for cut in doc["chunkings"]:
        bad = runs[("mistral-no-index", cut)]
        assert bad["status"] == "fail"
        assert bad["differences"][0]["message"].startswith("0 tool calls instead of 2")
        assert [q["id"] for q in bad["quirks"]] == ["oai_tool_index_missing"]
        assert bad["quirks"][0]["severity"] == "error" and bad["quirks"][0]["explanation"]
        assert runs[("openai-parallel-tool-calls", cut)]["status"] == "pass"
        na = runs[("anthropic-parallel-tool-calls", cut)]
        assert na["status"] == "not applicable"
        assert "POST /v1/chat/completions" in na["note"]
    assert doc["summary"] == {"passed": 3, "failed": 3, "not_applicable": 3}

    correct = conform(
        "-r", str(recs), "--chunkings", "3", "--jobs", "2", "--",
        sys.executable, str(CLIENTS / "chat_client.py"), "correct",
    )  # fmt: skip
    assert correct.returncode == 0, correct.stdout + correct.stderr
    assert "6 passed, 0 failed, 3 not applicable" in correct.stdout
    row = next(line for line in correct.stdout.splitlines() if "mistral-no-index" in line)
    assert row.split() == ["mistral-no-index", "pass", "pass", "pass"]


def test_a_client_that_depends_on_read_boundaries_is_caught(recs: Path):
    run = conform(
        "-r", str(recs / "openai-parallel-tool-calls.jsonl"), "--chunkings", "3", "--",
        sys.executable, str(CLIENTS / "chat_client.py"), "per-read",
    )  # fmt: skip
    assert run.returncode == 1
    row = next(line for line in run.stdout.splitlines() if "openai-parallel" in line)
    assert row.split()[:2] == ["openai-parallel-tool-calls", "pass"]
    assert "text" not in row.split()[1]
    assert "the client depends on how the stream is cut" in run.stdout
    assert "[1 byte, seed 1]" in run.stdout
    # each read is parsed on its own: no quirk of the stream explains that
    assert "quirk " not in run.stdout


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    run = conform("-r", str(bad), "--", sys.executable, "-c", "pass")
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and str(bad) in run.stderr
    missing = conform("-r", str(RECORDINGS), "--", "no-such-client-program")
    assert missing.returncode == 2
    assert (
        missing.stderr
        == "streamtool: error: cannot run 'no-such-client-program': no such program\n"
    )
    assert conform("--chunkings", "0", "--", sys.executable).returncode == 2


def test_an_option_conform_does_not_have_is_refused_not_run_as_the_client(tmp_path: Path):
    # options conform does not know stay in COMMAND for the client's own (after its program);
    # before the program, one is a misspelt option of conform's, not a program to start
    ran = tmp_path / "ran"
    client = [sys.executable, "-c", f"open({str(ran)!r}, 'w')"]
    for args, said in [
        (["--chunking", "1"], "no such option: --chunking (did you mean '--chunkings'?)"),
        (["--format=json", "--jbos", "2"], "no such option: --jbos (did you mean '--jobs'?)"),
    ]:
        run = conform(*args, "-r", str(RECORDINGS), "--", *client)
        assert run.returncode == 2, run.stderr
        assert run.stderr.splitlines()[-1] == (
            f"Error: Invalid value for COMMAND: {said}; the client's command goes after --"
        )
        assert "Traceback" not in run.stderr and not ran.exists()
    # the client's own options, after its program, are its own
    echo = tmp_path / "echo.py"
    echo.write_text("import sys; open(sys.argv[1], 'w')\n")
    run = conform("-r", str(RECORDINGS / "openai-parallel-tool-calls.jsonl"), "--chunkings", "1",
                  "--", sys.executable, str(echo), str(ran), "--chunking", "1")  # fmt: skip
    assert ran.exists(), run.stderr


# -- the SDKs' own accumulators ------------------------------------------------------------------
def test_openai_sdk_accumulator(recs: Path):
    """The openai SDK's ChatCompletionStream: right on indexed calls at any cut; raises on a
    tool call without ``index`` it crashes (it cannot read what Mistral sends)."""
    run = conform(
        "-r", str(recs / "mistral-no-index.jsonl"),
        "-r", str(recs / "openai-parallel-tool-calls.jsonl"),
        "--chunkings", "2", "--jobs", "2", "--format", "json", "--",
        sys.executable, str(CLIENTS / "openai_sdk_client.py"),
    )  # fmt: skip
    assert run.returncode == 1, run.stderr
    runs = by_run(json.loads(run.stdout))
    for cut in ("whole", "1 byte"):
        assert runs[("openai-parallel-tool-calls", cut)]["status"] == "pass"
        bad = runs[("mistral-no-index", cut)]
        assert bad["status"] == "fail"
        # the SDK's accumulator indexes its list of calls with the missing index
        message = bad["differences"][0]["message"]
        assert message.startswith("the client exited 1: TypeError: list indices"), message
        assert [q["id"] for q in bad["quirks"]] == ["oai_tool_index_missing"]


def test_anthropic_sdk_accumulator():
    run = conform(
        "-r", str(RECORDINGS / "anthropic-parallel-tool-calls.jsonl"),
        "--chunkings", "2", "--jobs", "2", "--",
        sys.executable, str(CLIENTS / "anthropic_sdk_client.py"),
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 passed, 0 failed, 0 not applicable" in run.stdout
