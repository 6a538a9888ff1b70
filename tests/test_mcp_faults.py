"""The faults of an MCP session (``mcp_session_expired`` ...): applied to the recorded sessions,
served to the ``mcp`` SDK's client, checked by ``streamtool conform --mutate``, written as a
new tape by ``streamtool mutate TAPE``.

Each fault is a tape edit the player serves as it serves any tape; what the client gets in the
end (every result) is what the recorded session got, so a client that handles the fault passes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from streamtool.core import mutations as M
from streamtool.core.apis.mcp import session_faults as F
from streamtool.core.apis.mcp.player import Player, expected
from streamtool.core.model.quirks import CATALOGUE
from streamtool.core.net.sessions import exchanges_of
from streamtool.core.net.tape import load_tape, serving_tape
from streamtool.core.recording.tape_index import read_index

from .conftest import RECORDINGS
from .mcp_app import V2, run_client
from .serve_helpers import STREAMTOOL

LEGACY = RECORDINGS / "mcp-weather-2025-11-25"
MODERN = RECORDINGS / "mcp-weather-2026-07-28"
CLIENT = Path(__file__).parent / "clients" / "mcp_client.py"
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}
ADD_CALL = {
    "jsonrpc": "2.0",
    "id": 3,
    "method": "tools/call",
    "params": {"name": "add", "arguments": {"a": 2, "b": 3}},
}
V2ONLY = pytest.mark.skipif(not V2, reason="the 2.x line of the mcp SDK (Client, 2026-07-28)")


def session(tape: Path) -> list[Any]:
    return exchanges_of(load_tape(tape).recordings)


def understood(exchanges: list[Any]) -> dict[str, Any]:
    want = expected(exchanges)
    return {"text": want.text, "tool_calls": want.tool_calls}


# -- the catalogue ---------------------------------------------------------------------------
def test_every_fault_is_a_generatable_session_quirk_of_the_catalogue() -> None:
    ids = {str(q) for q in F.FAULTS}
    assert ids == {
        "mcp_session_expired",
        "mcp_stream_dropped_after_priming",
        "mcp_messages_before_response",
        "mcp_json_instead_of_sse",
        "mcp_stateless_server",
        "mcp_input_required",
    }
    for qid in ids:
        info = CATALOGUE[qid]
        assert info.kind == "session" and M.not_generatable(qid) is None
        assert M.is_session_fault(qid)
        assert M.mutation_of(qid).apis == ("mcp",)
    assert set(F.FAULTS) <= set(M.registered())


def test_the_other_generation_s_faults_do_not_apply_and_say_why() -> None:
    legacy, modern = session(LEGACY), session(MODERN)
    assert F.applicable(legacy) == [
        "mcp_session_expired",
        "mcp_stream_dropped_after_priming",
        "mcp_messages_before_response",
        "mcp_json_instead_of_sse",
        "mcp_stateless_server",
    ]
    assert F.applicable(modern) == ["mcp_json_instead_of_sse", "mcp_input_required"]
    why = F.not_applicable(modern, "mcp_session_expired")
    assert why == "a fault of the 2025 generation; the session speaks 2026-07-28"
    with pytest.raises(F.NotApplicable):
        F.apply(legacy, "mcp_input_required")


@pytest.mark.parametrize("qid", sorted(F.FAULTS))
def test_a_fault_keeps_what_the_client_understands(qid: str) -> None:
    for tape in (LEGACY, MODERN):
        exchanges = session(tape)
        if F.not_applicable(exchanges, qid) is None:
            assert understood(F.apply(exchanges, qid)) == understood(exchanges), tape.name


# -- the faults, served to the SDK's client -----------------------------------------------------
SURVIVED = [
    pytest.param(LEGACY, "session", "auto", "mcp_stream_dropped_after_priming", id="dropped"),
    pytest.param(LEGACY, "session", "auto", "mcp_messages_before_response", id="messages"),
    pytest.param(LEGACY, "session", "auto", "mcp_json_instead_of_sse", id="json-2025"),
    pytest.param(LEGACY, "client", "auto", "mcp_stateless_server", id="stateless", marks=V2ONLY),
    pytest.param(MODERN, "client", "auto", "mcp_input_required", id="input", marks=V2ONLY),
    pytest.param(MODERN, "client", "auto", "mcp_json_instead_of_sse", id="json-2026", marks=V2ONLY),
]


@pytest.mark.parametrize(("tape", "client", "mode", "qid"), SURVIVED)
def test_the_sdk_client_gets_every_result_through_the_fault(
    tape: Path, client: str, mode: str, qid: str
) -> None:
    log: list[str] = []
    with serving_tape(tape, faults=[qid], log=log.append) as server:
        answer = run_client(server.url + "/mcp", client, mode)
        served = server.served
    assert {k: answer[k] for k in ("text", "tool_calls")} == understood(session(tape))
    marks = {
        "mcp_stream_dropped_after_priming": "+resumed",  # the GET with Last-Event-ID came
        "mcp_messages_before_response": "+messages",
        "mcp_json_instead_of_sse": "+reframed",
        "mcp_stateless_server": "+discover",
        "mcp_input_required": "+retried",  # the call sent again, with the answer
    }
    assert any(marks[qid] in name for name in served), served
    if qid == "mcp_messages_before_response":  # the client answered the server's ping
        assert sum("202 accepted" in line for line in log) >= 3


def test_a_session_ended_mid_run_is_a_404_then_a_new_handshake() -> None:
    with serving_tape(LEGACY, faults=["mcp_session_expired"]) as server:
        url = server.url + "/mcp"
        with httpx.Client(timeout=10) as http:
            first = http.post(url, json=INITIALIZE, headers=ACCEPT).headers["mcp-session-id"]
            gone = http.post(url, json=ADD_CALL, headers={**ACCEPT, "mcp-session-id": first})
            assert (
                gone.status_code == 404 and gone.json()["error"]["message"] == "Session not found"
            )
            tools = {"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {}}
            ended = http.post(url, json=tools, headers={**ACCEPT, "mcp-session-id": first})
            assert ended.status_code == 404  # the whole session is gone
            second = http.post(url, json=INITIALIZE, headers=ACCEPT).headers["mcp-session-id"]
            again = http.post(url, json=ADD_CALL, headers={**ACCEPT, "mcp-session-id": second})
        assert second != first and again.status_code == 200
        assert b'"text":"5"' in again.content


def test_an_unanswered_server_request_is_waited_for_then_named() -> None:
    from streamtool.core.net.sessions import session_app

    exchanges = F.apply(session(LEGACY), "mcp_messages_before_response")
    edge = session_app("mcp", exchanges)
    edge.wait_timeout = 0.3
    from streamtool.core.net.listen import ServerThread

    with ServerThread(edge) as server, httpx.Client(timeout=10) as http:
        url = server.url + "/mcp"
        sid = http.post(url, json=INITIALIZE, headers=ACCEPT).headers["mcp-session-id"]
        started = time.monotonic()
        answer = http.post(url, json=ADD_CALL, headers={**ACCEPT, "mcp-session-id": sid})
        waited = time.monotonic() - started
    assert b'"method":"ping"' in answer.content and b'"text":"5"' in answer.content
    assert waited >= 0.3
    assert edge.problems == [
        f"the client did not answer the server's request {F.PING_ID} within 0.3 s"
    ]


def test_the_player_answers_an_answered_ping_at_once() -> None:
    exchanges = F.apply(session(LEGACY), "mcp_messages_before_response")
    player = Player(exchanges)
    sid = dict(player.handle("POST", "/mcp", {}, INITIALIZE).headers)["mcp-session-id"]
    reply = player.handle("POST", "/mcp", {"mcp-session-id": sid}, ADD_CALL)
    assert [part.wait for part in reply.parts] == [None, f"{sid}:{F.PING_ID}"]
    pong = {"jsonrpc": "2.0", "id": F.PING_ID, "result": {}}
    accepted = player.handle("POST", "/mcp", {"mcp-session-id": sid}, pong)
    assert accepted.status == 202 and accepted.answered == [f"{sid}:{F.PING_ID}"]


# -- conform -------------------------------------------------------------------------------
def conform(tape: Path, env: dict[str, str], mutate: str) -> dict[str, Any]:
    done = subprocess.run(
        [
            *STREAMTOOL,
            "conform",
            "--api",
            "mcp",
            "-r",
            str(tape),
            "--mutate",
            mutate,
            "--chunkings",
            "1",
            "--jobs",
            "2",
            "--format",
            "json",
            "--",
            sys.executable,
            str(CLIENT),
        ],  # fmt: skip
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def test_conform_names_the_fault_that_broke_the_client() -> None:
    faults = "mcp_stream_dropped_after_priming,mcp_stateless_server,mcp_input_required"
    doc = conform(LEGACY, {"MCP_CLIENT": "session"}, faults)
    status = {r["recording"]: r["status"] for r in doc["results"]}
    base = LEGACY.name
    assert status[base] == "pass"
    assert status[f"{base} +mcp_stream_dropped_after_priming"] == "pass"
    # the 2025 client cannot speak to a server of 2026-07-28 only
    assert status[f"{base} +mcp_stateless_server"] == "fail"
    assert status[f"{base} +mcp_input_required"] == "not applicable"
    stateless = next(r for r in doc["results"] if r["recording"].endswith("stateless_server"))
    assert stateless["differences"][0]["field"] == "crash"  # (how it says so: its SDK's own)
    assert stateless["differences"][0]["message"].startswith("the client exited 1")
    assert doc["quirks"]["mcp_stateless_server"]["failed"] == 1
    assert doc["quirks"]["mcp_stream_dropped_after_priming"]["passed"] == 1
    assert "mcp_input_required" not in doc["quirks"]  # not applicable: not judged
    na = next(r for r in doc["results"] if r["recording"].endswith("input_required"))
    assert na["note"] == "a fault of the 2026-07-28 generation; the session speaks 2025"


@V2ONLY
def test_conform_runs_the_2026_session_with_its_faults() -> None:
    doc = conform(MODERN, {"MCP_CLIENT": "client", "MCP_MODE": "auto"}, "all")
    status = {r["recording"].rpartition(" +")[2]: r["status"] for r in doc["results"]}
    assert status[MODERN.name] == "pass"
    assert status["mcp_input_required"] == "pass"
    assert status["mcp_json_instead_of_sse"] == "pass"
    for qid in ("mcp_session_expired", "mcp_stateless_server", "mcp_messages_before_response"):
        assert status[qid] == "not applicable"


# -- mutate TAPE -----------------------------------------------------------------------------
def mutate(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*STREAMTOOL, "mutate", *args], capture_output=True, text=True, timeout=60, cwd=cwd
    )


def test_mutate_writes_the_session_with_its_fault_as_a_new_tape(tmp_path: Path) -> None:
    out = tmp_path / "expired"
    done = mutate(str(LEGACY), "-q", "mcp_session_expired", "-o", str(out))
    assert done.returncode == 0, done.stderr
    names = [e.file for e in read_index(out)]
    assert names[4:8] == [
        "0005-mcp-mcp-tools-call-add-404.jsonl",
        "0006-mcp-mcp-initialize-again.jsonl",
        "0007-mcp-mcp-notifications-initialized-again.jsonl",
        "0008-mcp-mcp-stream-again.jsonl",
    ]
    assert understood(session(out)) == understood(session(LEGACY))
    listed = mutate(str(LEGACY), "--list").stdout
    can, cannot = listed.split("not applicable to this session:")
    assert "mcp_session_expired" in can and "mcp_input_required" in cannot
    refused = mutate(str(MODERN), "-q", "mcp_session_expired", "-o", str(tmp_path / "x"))
    assert refused.returncode == 2 and "the session speaks 2026-07-28" in refused.stderr
    assert not (tmp_path / "x").exists()
    again = mutate(str(LEGACY), "-q", "mcp_session_expired", "-o", str(out))
    assert again.returncode == 2 and "exists" in again.stderr


def test_two_writers_of_one_tape_never_mix_and_a_killed_one_leaves_nothing(tmp_path: Path) -> None:
    out = tmp_path / "faulty"
    command = [*STREAMTOOL, "mutate", str(LEGACY), "-q", "mcp_json_instead_of_sse", "-o", str(out)]
    both = [subprocess.Popen(command, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    codes = sorted(p.wait(timeout=60) for p in both)
    assert codes == [0, 2]  # one wrote the tape, the other was refused: it exists
    files = sorted(p.name for p in out.iterdir())
    assert files == sorted([e.file for e in read_index(out)] + ["index.jsonl"])
    assert len(files) == 13
    # a writer killed mid-way leaves the destination as it was, and no tape there
    other = tmp_path / "killed"
    proc = subprocess.Popen([*command[:-1], str(other)], stderr=subprocess.PIPE, text=True)
    started = time.monotonic()
    while proc.poll() is None and time.monotonic() - started < 30:
        if any(p.name.startswith(".killed.") for p in tmp_path.iterdir()):
            break  # writing: now
        time.sleep(0.002)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert not other.exists() or len(read_index(other)) == 12
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".killed.")]
    assert all(p.endswith(".tmp") for p in leftovers)
