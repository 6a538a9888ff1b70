"""Quirks on demand: the catalogue's generatable quirks applied to real recordings.

Every generatable quirk is applied to every bundled recording it applies to, and the replay of
the result must report that quirk and (where the quirk does not change meaning) give the original
transcript; random compositions of mutations must too. Then the command (``mutate``), and the
places a stream is served with ``--mutate``: conform (a real client), serve (a real server) and
the pytest plugin (a real pytest run of a project that uses the openai SDK).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamtool.core import mutations as M
from streamtool.core.exchange.playback import Playback
from streamtool.core.model.quirks import CATALOGUE
from streamtool.core.net.library import Library
from streamtool.core.net.listen import ServerThread
from streamtool.core.net.mutated_library import mutate_library, parse_mutate
from streamtool.core.net.server import create_app
from streamtool.core.outputs.transcript import build_transcript
from streamtool.core.recording.reader import Source

from .conftest import RECORDINGS
from .serve_helpers import STREAMTOOL
from .tape_helpers import CHILD_PYTEST, openai_tape

ROOT = RECORDINGS.parent
BUNDLED = sorted(RECORDINGS.glob("*.jsonl"))
# the bundled WebSocket sessions (a tape): their own faults, the Realtime ones
SESSIONS = sorted(p for p in (RECORDINGS / "realtime").glob("*.jsonl") if p.name != "index.jsonl")
# the ids the issue asks for by name (besides the reads, which every API gets)
ASKED = [
    "oai_tool_index_missing",
    "oai_parallel_same_index",
    "oai_id_every_chunk",
    "oai_name_every_chunk",
    "oai_args_cumulative",
    "oai_args_object",
    "oai_args_placeholder_then_full",
    "finish_stop_with_tools",
    "finish_empty_string",
    "usage_only_chunk",
    "eof_no_done",
    "data_after_done",
    "sse_comment_keepalive",
    "sse_single_newline_separator",
    "reasoning_field_reasoning_content",
    "reasoning_field_reasoning",
    "reasoning_field_reasoning_details",
    "think_tags_in_content",
    "kimi_tokens_in_content",
    "mistral_content_array",
    "anthropic_tool_input_in_start",
    "anthropic_content_in_message_start",
    "provider_error",
    "responses_item_id_rotation",
    "responses_args_done_only",
    "responses_text_done_only",
    "text_mismatch",
    "gemini_partial_args",
    "gemini_json_array",
    "model_args_invalid_json",
    "tool_id_reused",
    "model_tool_not_offered",
    "model_stream_cut_mid_call",
    "model_args_empty",
]
READS = ["reads_utf8_split", "reads_crlf_split", "reads_one_event_each", "reads_single"]


@cache
def original(path: Path) -> M.Original:
    source = Source(path)
    if source.websocket:
        return M.analyse_session(source.header, list(source.session_records()), source.end)
    return M.analyse(source.header, list(source.chunks()), source.end)


def replayed(original_: M.Original, ids: list[str]) -> tuple[set[str], dict]:
    if original_.records is not None:
        header, records, end = M.apply_session(original_, ids)
        engine = M.replay_records(header, records, end, transcript=True)
        return M.reported(engine), build_transcript(engine)
    header, chunks, end = M.apply(original_, ids)
    engine = M.replay(header, chunks, end, transcript=True)
    return M.reported(engine), build_transcript(engine)


# -- the catalogue ----------------------------------------------------------------------------
def test_every_generatable_id_is_a_mutations_declared_quirk() -> None:
    declared = M.registered()
    assert [info.id for info in M.generatable()] == [q for q in CATALOGUE if q in declared]
    assert set(declared) <= set(CATALOGUE)  # no mutation of a quirk the catalogue lacks
    for qid, mut in declared.items():
        assert mut.quirk is qid and callable(mut.func)
    assert len(M.generatable()) >= 35
    for qid in ASKED + READS:
        assert qid in declared, qid
        assert M.not_generatable(qid) is None
    for qid in READS:  # every API whose streams are reads (a WebSocket session has none)
        assert set(M.mutation_of(qid).apis) == set(M.WIRE_APIS) - {"openai-realtime"}
    kinds = {info.id: info.kind for info in CATALOGUE.values()}
    assert {q for q, k in kinds.items() if k == "model"} == {
        "model_args_invalid_json",
        "model_args_empty",
        "model_tool_not_offered",
        "model_stream_cut_mid_call",
        "tool_id_reused",
    }


def test_an_untouched_stream_gives_back_its_reads_byte_for_byte() -> None:
    for path in BUNDLED:
        orig = original(path)
        assert orig.stream().reads() == orig.reads, path.name


# -- the self-check: every generatable id x every bundled recording it applies to ---------------
def test_every_mutation_is_reported_and_keeps_what_it_promises() -> None:
    applied: dict[str, int] = {}
    for path in BUNDLED + SESSIONS:
        orig = original(path)
        base = build_transcript(orig.engine)
        for info in M.applicable(orig):
            found, transcript = replayed(orig, [info.id])
            assert info.id in found, f"{path.name} +{info.id}: not reported ({sorted(found)})"
            changes = M.mutation_of(info.id).changes
            assert M.meaning(transcript, changes) == M.meaning(base, changes), (
                f"{path.name} +{info.id}: the transcript changed"
            )
            applied[info.id] = applied.get(info.id, 0) + 1
    # every generatable id applies to some bundled recording (a session's faults apply to a
    # tape: tests/test_mcp_faults.py)
    missing = {i.id for i in M.generatable() if not M.is_session_fault(i.id)} - set(applied)
    assert missing == set()
    apis = {api for qid in applied for api in M.mutation_of(qid).apis}
    assert apis == set(M.WIRE_APIS)


def test_the_reads_keep_their_times_and_the_body_its_bytes() -> None:
    orig = original(RECORDINGS / "openai-parallel-tool-calls.jsonl")
    body = b"".join(d for _, d in orig.reads)
    for qid in ("reads_one_event_each", "reads_single", "reads_utf8_split"):
        if not M.applies(orig, qid):
            continue
        _, chunks, _ = M.apply(orig, [qid])
        got = b"".join(c.data.encode() if isinstance(c.data, str) else c.data for c in chunks)
        assert got == body, qid
        times = [c.t for c in chunks]
        assert times == sorted(times) and set(times) <= {t for t, _ in orig.reads}, qid
    _, single, _ = M.apply(orig, ["reads_single"])
    assert len(single) == 1 and single[0].t == orig.reads[-1][0]


# -- compositions ------------------------------------------------------------------------------
@cache
def _pairs() -> list[tuple[Path, str, list[str]]]:
    """(recording, an event-level quirk, the read-level quirks) that apply to it."""
    out = []
    for path in BUNDLED:
        orig = original(path)
        ids = [i.id for i in M.applicable(orig)]
        events = [q for q in ids if M.mutation_of(q).stage == 0]
        later = [q for q in ids if M.mutation_of(q).stage > 0]
        out.extend((path, q, later) for q in events)
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_compositions_report_every_quirk_and_keep_meaning(data: st.DataObject) -> None:
    path, first, later = data.draw(st.sampled_from(_pairs()))
    extra = data.draw(st.lists(st.sampled_from(later), max_size=2, unique=True)) if later else []
    ids = [first, *extra]
    # the order given does not matter: mutations apply events first, then framing, then reads
    ids = data.draw(st.permutations(ids))
    orig = original(path)
    try:
        found, transcript = replayed(orig, ids)
    except M.NotApplicable as exc:
        # a composition may take away what one of its mutations needs (a JSON array has no SSE
        # framing or CRLF line ends; a single read, one event per read, or a stream cut short
        # may leave no character or line end to split): the refusal names one of the quirks
        # asked for, each of which applies to the recording on its own
        assert exc.args[0] in ids
        assert all(M.applies(orig, qid) for qid in ids)
        return
    assert set(ids) <= found, (path.name, ids, sorted(found))
    changes = M.changes_of(ids)
    assert M.meaning(transcript, changes) == M.meaning(build_transcript(orig.engine), changes)


# -- the command -------------------------------------------------------------------------------
def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*STREAMTOOL, *args], capture_output=True, text=True, timeout=60, cwd=ROOT
    )


def test_mutate_writes_a_recording_that_replays_with_the_quirks(tmp_path: Path) -> None:
    out = tmp_path / "mutated.jsonl"
    rec = RECORDINGS / "openai-parallel-tool-calls.jsonl"
    proc = run(
        "mutate",
        str(rec),
        "-q",
        "oai_parallel_same_index",
        "--quirk",
        "oai_id_every_chunk,reads_one_event_each",
        "-o",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(run("replay", str(out), "--format", "json").stdout)
    quirks = {q["id"] for q in summary["quirks"]}
    assert {"oai_parallel_same_index", "oai_id_every_chunk"} <= quirks
    assert "reads_one_event_each" in summary["stats"]["wire_quirks"]
    before = json.loads(run("replay", str(rec), "--format", "json").stdout)
    assert summary["invocations"] == before["invocations"]
    assert summary["text"] == before["text"] and summary["usage"] == before["usage"]
    # the header (request, response) is the original's
    head = [json.loads(line) for line in out.read_text().splitlines()][0]
    assert head["request"] == json.loads(rec.read_text().splitlines()[0])["request"]


def test_mutate_refuses_bad_ids_and_quirks_that_do_not_apply(tmp_path: Path) -> None:
    out = tmp_path / "m.jsonl"
    rec = str(RECORDINGS / "openai-parallel-tool-calls.jsonl")
    proc = run("mutate", rec, "-q", "oai_paralel_same_index", "-o", str(out))
    assert proc.returncode == 2
    assert "did you mean oai_parallel_same_index" in proc.stderr
    assert "Traceback" not in proc.stderr and not out.exists()
    proc = run("mutate", rec, "-q", "n_choices_x", "-o", str(out))
    assert proc.returncode == 2 and "did you mean n_choices" in proc.stderr
    proc = run("mutate", rec, "-q", "anthropic_tool_input_in_start", "-o", str(out))
    assert proc.returncode == 2
    assert "does not apply" in proc.stderr and "openai-chat" in proc.stderr
    proc = run("mutate", rec, "-q", "usage_only_chunk", "-o", str(out))
    assert proc.returncode == 2 and "shows that quirk already" in proc.stderr
    assert not out.exists()
    out.write_text("mine\n")
    proc = run("mutate", rec, "-q", "eof_no_done", "-o", str(out))
    assert proc.returncode == 2 and "exists" in proc.stderr
    assert out.read_text() == "mine\n"  # nothing the user had is overwritten


def test_mutate_to_stdout_writes_the_same_recording_and_no_file(tmp_path: Path) -> None:
    rec = str(RECORDINGS / "openai-parallel-tool-calls.jsonl")
    out = tmp_path / "m.jsonl"
    assert run("mutate", rec, "-q", "oai_id_every_chunk", "-o", str(out)).returncode == 0
    proc = subprocess.run(
        [*STREAMTOOL, "mutate", rec, "-q", "oai_id_every_chunk", "-o", "-"],
        capture_output=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == out.read_bytes()  # byte for byte what -o FILE writes
    assert b"wrote stdout (oai_id_every_chunk;" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.jsonl"]  # nothing else written
    # and it is a recording: replay reads it from a pipe with the quirk
    replayed = subprocess.run(
        [*STREAMTOOL, "replay", "-", "--format", "json"],
        input=proc.stdout, capture_output=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert "oai_id_every_chunk" in {q["id"] for q in json.loads(replayed.stdout)["quirks"]}
    # a quirk that does not apply: exit 2, nothing on stdout
    proc = subprocess.run(
        [*STREAMTOOL, "mutate", rec, "-q", "usage_only_chunk", "-o", "-"],
        capture_output=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2 and proc.stdout == b""
    assert b"shows that quirk already" in proc.stderr


def test_mutate_to_stdout_two_at_once_and_killed_leave_nothing_behind(tmp_path: Path) -> None:
    """Two ``-o -`` writers at once each write the whole recording; one killed (kill -9) while
    its output waits on a full pipe leaves no file in the temporary folder."""
    rec = str(RECORDINGS / "openai-write-file-escapes-unicode.jsonl")  # > a pipe's 64 KB
    args = [*STREAMTOOL, "mutate", rec, "-q", "oai_args_cumulative", "-o"]
    expected = tmp_path / "expected.jsonl"
    assert subprocess.run([*args, str(expected)], capture_output=True, timeout=60).returncode == 0
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch)}
    both = [
        subprocess.Popen([*args, "-"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=60)[0] for p in both]
    assert [p.returncode for p in both] == [0, 0]
    assert outputs == [expected.read_bytes()] * 2
    # a reader that reads 1 KB and stops: the writer is copying its whole recording out (so it
    # was written) and blocks on the full pipe; then it is killed
    stuck = subprocess.Popen([*args, "-"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert stuck.stdout is not None
    assert stuck.stdout.read(1024) == expected.read_bytes()[:1024]
    assert len(expected.read_bytes()) > 2 * 65536  # more than a pipe holds
    stuck.send_signal(signal.SIGKILL)
    stuck.wait(timeout=30)
    assert list(scratch.iterdir()) == []  # no temporary file or folder left


def test_mutate_list_shows_what_applies_with_severity_and_explanation() -> None:
    proc = run("mutate", str(RECORDINGS / "anthropic-parallel-tool-calls.jsonl"), "--list")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    row = next(line for line in lines if line.strip().startswith("anthropic_tool_input_in_start"))
    assert "warn" in row and "input_json_delta" in row
    assert any(line.strip().startswith("tool_id_reused") and "model" in line for line in lines)
    assert any(
        line.startswith("for gemini recordings:") and "gemini_json_array" in line for line in lines
    )


def test_two_writers_of_one_output_never_mix(tmp_path: Path) -> None:
    out = tmp_path / "m.jsonl"
    rec = str(RECORDINGS / "anthropic-write-file.jsonl")
    args = ["mutate", rec, "-q", "reads_single", "-o", str(out)]
    procs = [
        subprocess.Popen([*STREAMTOOL, *args], stderr=subprocess.PIPE, text=True, cwd=ROOT)
        for _ in range(2)
    ]
    codes = sorted(p.wait(timeout=60) for p in procs)
    assert codes == [0, 2]
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert records[0]["type"] == "header" and records[-1]["type"] == "end"
    assert len([r for r in records if r["type"] == "chunk"]) == 1
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


# -- served with --mutate ----------------------------------------------------------------------
def test_parse_mutate() -> None:
    assert parse_mutate(None) is None
    assert parse_mutate("oai_empty_id, reads_single") == ["oai_empty_id", "reads_single"]
    assert parse_mutate("all") == [i.id for i in M.generatable()]
    with pytest.raises(ValueError, match="did you mean oai_empty_id"):
        parse_mutate("oai_empty_idd")
    with pytest.raises(ValueError, match="cannot generate"):
        parse_mutate("unknown_event,done_no_finish_reason")
    with pytest.raises(ValueError, match="not a quirk id; did you mean n_candidates"):
        parse_mutate("n_candidatez")


def test_a_server_serves_the_mutated_stream(tmp_path: Path) -> None:
    rec = RECORDINGS / "openai-parallel-tool-calls.jsonl"
    library = Library.from_paths([rec])
    applied = mutate_library(library, ["oai_tool_index_missing", "anthropic_tool_input_in_start"])
    assert applied == {}  # worked out at the recording's first request
    with ServerThread(create_app(library, Playback(speed=None))) as server:
        body = httpx.post(
            server.url + "/v1/chat/completions", json={"model": "gpt-4o", "stream": True}
        ).content
    assert applied == {library.recordings[0].name: ["oai_tool_index_missing"]}
    saved = tmp_path / "served.sse"
    saved.write_bytes(body)
    summary = json.loads(run("replay", str(saved), "--format", "json").stdout)
    assert "oai_tool_index_missing" in {q["id"] for q in summary["quirks"]}
    assert b'"index":0,"id"' not in body and b'"tool_calls":[{"id"' in body
    assert len(summary["invocations"]) == 2


def test_quirks_are_applied_once_per_recording_at_its_first_request() -> None:
    """A library of every bundled recording: nothing is mutated before a request; each
    recording asked for is mutated once, whatever the number of requests at the same time."""
    library = Library.from_paths([RECORDINGS])
    calls: list[str] = []

    def change(rec):  # the real mutation, counted
        calls.append(rec.name)
        return mutate_library_one(rec)

    applied = library.transform(change)
    assert calls == [] and applied == {}
    name = "openai-parallel-tool-calls"
    header = {"X-Streamtool-Recording": name}
    with ServerThread(create_app(library, Playback(speed=None))) as server:

        def ask() -> bytes:
            body = {"model": "gpt-4o", "stream": True}
            url = server.url + "/v1/chat/completions"
            return httpx.post(url, json=body, headers=header, timeout=60).content

        with ThreadPoolExecutor(4) as pool:
            bodies = list(pool.map(lambda _: ask(), range(4)))
        bodies.append(ask())
    assert calls == [name]  # once, for the one recording asked for
    assert len(set(bodies)) == 1 and b'"index":0,"id"' not in bodies[0]
    assert applied == {name: ["oai_tool_index_missing"]}


def mutate_library_one(rec):
    from streamtool.core.net.mutated_library import mutate_recording

    return mutate_recording(rec, ["oai_tool_index_missing"])


def test_serve_mutate_all_starts_at_once_and_logs_the_quirks_of_each_stream() -> None:
    from .serve_helpers import start_listening

    proc, _, origin = start_listening(
        [*STREAMTOOL, "serve", str(RECORDINGS), "--port", "0", "--speed", "max",
         "--mutate", "all"]
    )  # fmt: skip
    try:
        header = {"X-Streamtool-Recording": "openai-parallel-tool-calls"}
        body = {"model": "gpt-4o", "stream": True}
        reply = httpx.post(origin + "/v1/chat/completions", json=body, headers=header, timeout=60)
        assert reply.status_code == 200
    finally:
        proc.terminate()
        assert proc.stderr is not None
        err = proc.stderr.read()  # through the reader's buffer (communicate reads past it)
        proc.wait(timeout=30)
    assert "worked out at its first request" in err
    line = next(x for x in err.splitlines() if "-> openai-parallel-tool-calls (200)" in x)
    assert " with " in line and "oai_tool_index_missing" not in line.split(" with ")[0]
    assert "oai_" in line.split(" with ")[1]


def test_conform_mutate_names_per_quirk_pass_or_what_differs() -> None:
    client = str(ROOT / "tests" / "clients" / "chat_client.py")
    proc = run(
        "conform",
        "-r",
        str(RECORDINGS / "openai-parallel-tool-calls.jsonl"),
        "--chunkings",
        "1",
        "--mutate",
        "oai_tool_index_missing,sse_comment_keepalive",
        "--format",
        "json",
        "--",
        sys.executable,
        client,
        "naive",
    )
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    quirks = doc["quirks"]
    # the naive client drops calls without an index: that quirk breaks it, comments do not
    assert quirks["oai_tool_index_missing"]["failed"] == 1
    assert "tool_calls" in quirks["oai_tool_index_missing"]["differs"]
    assert quirks["sse_comment_keepalive"] == {
        "passed": 1,
        "failed": 0,
        "differs": [],
        "recordings": 1,
        "unmutated_fails": 0,
    }
    names = {r["recording"] for r in doc["results"]}
    assert names == {
        "openai-parallel-tool-calls",  # the baseline: the client passes it unmutated
        "openai-parallel-tool-calls +oai_tool_index_missing",
        "openai-parallel-tool-calls +sse_comment_keepalive",
    }
    proc = run("conform", "--mutate", "oai_tool_index_mising", "--", sys.executable, client)
    assert proc.returncode == 2 and "did you mean oai_tool_index_missing" in proc.stderr


SAMPLE = """
import json
import os

from openai import OpenAI


def test_loop(stream_tape):
    client = OpenAI(max_retries=0)
    with client.chat.completions.stream(
        model={model!r},
        messages=[{{"role": "user", "content": {question!r}}}],
        tools=json.loads({tools!r}),
    ) as stream:
        message = stream.get_final_completion().choices[0].message
    with open(os.environ["SAMPLE_NOTES"], "w") as fh:
        json.dump(stream_tape.mutated, fh)
    assert [json.loads(c.function.arguments)["city"] for c in message.tool_calls] == [
        "Paris", "Tokyo"
    ]
"""


def test_the_pytest_plugin_applies_the_quirks_to_every_stream(tmp_path: Path) -> None:
    from .tape_helpers import OPENAI_MODEL, OPENAI_QUESTION, OPENAI_TOOLS

    project = tmp_path / "project"
    openai_tape(project / "tapes" / "test_agent" / "test_loop")
    (project / "test_agent.py").write_text(
        SAMPLE.format(model=OPENAI_MODEL, question=OPENAI_QUESTION, tools=json.dumps(OPENAI_TOOLS))
    )
    notes = project / "notes.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "OPENAI_"))}
    env.update(SAMPLE_NOTES=str(notes), OPENAI_API_KEY="dummy")

    def pytest_run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*CHILD_PYTEST, "-q", "-n0", *args],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    # a quirk the SDK survives: the test passes, and the fixture says what it was served (the
    # tape's second turn, never asked for, was not mutated)
    proc = pytest_run("--stream-tape-mutate=oai_name_every_chunk,reads_single")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    served = json.loads(notes.read_text())
    assert served == {"0001-openai-chat-gpt-4o": ["oai_name_every_chunk", "reads_single"]}
    # a model fault the test does not survive: its arguments are cut mid-string
    proc = pytest_run("--stream-tape-mutate=model_args_invalid_json")
    assert proc.returncode == 1
    assert "JSONDecodeError" in proc.stdout
    proc = pytest_run("--stream-tape-mutate=model_args_invalid")
    assert proc.returncode == 4 and "did you mean model_args_invalid_json" in proc.stderr
