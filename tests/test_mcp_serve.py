"""Serving a recorded MCP session: the ``mcp`` SDK's clients run their session against
``serve TAPE`` offline, in both protocol generations, and the transport's rules hold (a fresh
session id, checked; the client's own ids and progress tokens; SSE event ids and resumption as
recorded; a request nothing recorded answers named with the closest).
"""

from __future__ import annotations

import json
import shutil
import signal
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from streamtool.core.apis.mcp.player import expected
from streamtool.core.net.sessions import exchanges_of
from streamtool.core.net.tape import load_tape, serving_tape
from streamtool.core.recording.reader import Source
from streamtool.core.wire.sse import SSEEvent, decode_all

from .conftest import RECORDINGS
from .mcp_app import V2, run_client
from .serve_helpers import STREAMTOOL, start_listening

LEGACY = RECORDINGS / "mcp-weather-2025-11-25"
MODERN = RECORDINGS / "mcp-weather-2026-07-28"
RESUMED = RECORDINGS / "mcp-weather-resumed-stream"
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
V2ONLY = pytest.mark.skipif(not V2, reason="the 2.x line of the mcp SDK (Client, 2026-07-28)")


def understood(tape: Path) -> dict[str, Any]:
    """What a client of the recorded session understands (conform's expected answer)."""
    want = expected(exchanges_of(load_tape(tape).recordings))
    return {"text": want.text, "tool_calls": want.tool_calls}


def recorded(tape: Path, name: str) -> Source:
    return Source(next(tape.glob(f"*-{name}.jsonl")))


def body_of(source: Source) -> bytes:
    return b"".join(
        c.data.encode("utf-8") if isinstance(c.data, str) else c.data for c in source.chunks()
    )


def events(data: bytes) -> list[SSEEvent]:
    return [i for i in decode_all([data]) if isinstance(i, SSEEvent)]


def initialize(http: httpx.Client, url: str) -> str:
    body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}
    answer = http.post(url, json=body, headers=ACCEPT)
    assert answer.status_code == 200
    return answer.headers["mcp-session-id"]


# -- the SDK's clients, offline -------------------------------------------------------------------
CASES = [
    pytest.param(LEGACY, "session", "auto", False, id="2025-ClientSession"),
    pytest.param(RESUMED, "session", "auto", True, id="2025-ClientSession-resumed"),
    pytest.param(LEGACY, "client", "legacy", False, id="2025-Client-legacy", marks=V2ONLY),
    pytest.param(LEGACY, "client", "auto", False, id="2025-Client-auto", marks=V2ONLY),
    pytest.param(MODERN, "client", "auto", False, id="2026-Client-auto", marks=V2ONLY),
]


@pytest.mark.parametrize(("tape", "client", "mode", "resume"), CASES)
def test_the_sdk_client_runs_the_recorded_session_offline(
    tape: Path, client: str, mode: str, resume: bool
) -> None:
    log: list[str] = []
    with serving_tape(tape, log=log.append) as server:
        answer = run_client(server.url + "/mcp", client, mode, resume)
        served = server.served
    assert {k: answer[k] for k in ("text", "tool_calls")} == understood(tape)
    # the progress the server reported during forecast, as recorded
    assert answer["progress"] == [[1.0, 2.0, "day 1"], [2.0, 2.0, "day 2"]]
    assert len(served) == len(set(served))  # each exchange played once
    if tape is RESUMED:  # the call's stream closed after its priming event: the GET resumed it
        assert (
            served.index("0010-mcp-mcp-stream")
            == served.index("0009-mcp-mcp-tools-call-patient") + 1
        )
    if tape is MODERN:
        assert all(not n.endswith("-stream") for n in served)


@V2ONLY
def test_a_client_of_the_2026_generation_meets_a_2025_tape_and_falls_back() -> None:
    log: list[str] = []
    with serving_tape(LEGACY, log=log.append) as server:
        answer = run_client(server.url + "/mcp", "client", "auto")
    assert answer["text"] == understood(LEGACY)["text"]
    # it asked server/discover first, which a 2025 server does not know; then the handshake
    assert "the tape holds no server/discover request of the 2026-07-28 generation" in log[0]
    assert "request initialize" in log[1]


# -- sessions ---------------------------------------------------------------------------------
def test_session_ids_are_issued_fresh_and_checked() -> None:
    recorded_id = recorded(LEGACY, "initialize").header.response["headers"]["mcp-session-id"]
    tools = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    with serving_tape(LEGACY) as server, httpx.Client(timeout=10) as http:
        url = server.url + "/mcp"
        first, second = initialize(http, url), initialize(http, url)
        assert len({first, second, recorded_id}) == 3
        assert http.post(url, json=tools, headers=ACCEPT).status_code == 400  # none
        unknown = {**ACCEPT, "mcp-session-id": recorded_id}
        assert http.post(url, json=tools, headers=unknown).status_code == 404
        mine = {**ACCEPT, "mcp-session-id": first}
        answer = http.post(url, json=tools, headers=mine)
        assert answer.status_code == 200 and answer.headers["mcp-session-id"] == first
        assert http.delete(url, headers=mine).status_code == 200
        assert http.post(url, json=tools, headers=mine).status_code == 404  # ended
        other = {**ACCEPT, "mcp-session-id": second}  # the other session lives on
        assert http.post(url, json=tools, headers=other).status_code == 200
        ended = http.get(url, headers={"accept": "text/event-stream", "mcp-session-id": first})
        assert ended.status_code == 404


def test_the_answer_has_the_client_s_ids_and_progress_token_and_the_recorded_event_ids() -> None:
    source = recorded(LEGACY, "tools-call-forecast")
    recorded_events = events(body_of(source))
    call = {
        "jsonrpc": "2.0",
        "id": "mine-9",
        "method": "tools/call",
        "params": {
            "name": "forecast",
            "arguments": {"city": "Oslo", "days": 2},
            "_meta": {"progressToken": "token-x"},
        },
    }
    with serving_tape(LEGACY) as server, httpx.Client(timeout=10) as http:
        url = server.url + "/mcp"
        session = initialize(http, url)
        answer = http.post(url, json=call, headers={**ACCEPT, "mcp-session-id": session})
    assert answer.headers["content-type"] == "text/event-stream"
    served = events(answer.content)
    assert [e.id for e in served] == [e.id for e in recorded_events]  # as recorded
    messages = [json.loads(e.data) for e in served if e.data.strip()]
    progress = [m for m in messages if m.get("method") == "notifications/progress"]
    assert [m["params"]["progressToken"] for m in progress] == ["token-x", "token-x"]
    assert messages[-1]["id"] == "mine-9"
    assert messages[-1]["result"] == json.loads(recorded_events[-1].data)["result"]


def test_with_the_recorded_ids_the_body_is_the_recording_byte_for_byte() -> None:
    source = recorded(LEGACY, "tools-call-forecast")
    call = source.header.request["body"]
    with serving_tape(LEGACY) as server, httpx.Client(timeout=10) as http:
        url = server.url + "/mcp"
        session = initialize(http, url)
        answer = http.post(url, json=call, headers={**ACCEPT, "mcp-session-id": session})
    assert answer.content == body_of(source)


def test_a_resumed_stream_is_served_as_recorded() -> None:
    post = recorded(RESUMED, "tools-call-patient")
    get = sorted(RESUMED.glob("*-stream.jsonl"))[-1]
    resumed = Source(get)
    last = resumed.header.request["headers"]["last-event-id"]
    with serving_tape(RESUMED) as server, httpx.Client(timeout=10) as http:
        url = server.url + "/mcp"
        session = initialize(http, url)
        mine = {**ACCEPT, "mcp-session-id": session}
        first = http.post(url, json=post.header.request["body"], headers=mine)
        assert first.content == body_of(post)  # the priming event only, then the end
        assert events(first.content)[-1].id == last
        rest = http.get(url, headers={**mine, "last-event-id": last})
    assert rest.status_code == 200 and rest.content == body_of(resumed)


def test_a_request_nothing_recorded_answers_names_the_closest() -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 2, "b": 4}},
    }
    with serving_tape(LEGACY) as server, httpx.Client(timeout=10) as http:
        url = server.url + "/mcp"
        session = initialize(http, url)
        answer = http.post(url, json=call, headers={**ACCEPT, "mcp-session-id": session})
    error = answer.json()
    assert error["id"] == 5 and error["error"]["code"] == -32603
    assert "params.arguments.b differs: 4 vs 3" in error["error"]["message"]
    assert "tools-call-add" in error["error"]["message"]


def test_the_2026_generation_is_stateless() -> None:
    modern = {**ACCEPT, "mcp-protocol-version": "2026-07-28"}
    with serving_tape(MODERN) as server, httpx.Client(timeout=10) as http:
        url = server.url + "/mcp"
        assert http.get(url, headers=modern).status_code == 405
        assert http.delete(url, headers=modern).status_code == 405
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}
        refused = http.post(url, json=init, headers=ACCEPT)
        assert refused.status_code == 400 and refused.json()["error"]["code"] == -32022
        tools = {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}}
        listed = http.post(url, json=tools, headers={**modern, "mcp-session-id": "anything"})
        assert listed.status_code == 200 and "mcp-session-id" not in listed.headers
        assert [t["name"] for t in listed.json()["result"]["tools"]][:2] == ["add", "forecast"]


def test_a_tape_with_an_mcp_session_and_llm_streams_serves_both(tmp_path: Path) -> None:
    tape = tmp_path / "agent"
    shutil.copytree(LEGACY, tape)
    chat = RECORDINGS / "openai-parallel-tool-calls.jsonl"
    shutil.copy(chat, tape / "0100-openai-chat.completions-gpt-4o.jsonl")
    (tape / "index.jsonl").unlink()  # a folder of recordings: matched by request, else the rules
    with serving_tape(tape) as server, httpx.Client(timeout=10) as http:
        chat_body = Source(chat).header.request["body"]
        streamed = http.post(server.url + "/v1/chat/completions", json=chat_body)
        assert streamed.status_code == 200 and b"[DONE]" in streamed.content
        assert initialize(http, server.url + "/mcp")


# -- the command -------------------------------------------------------------------------------
def test_streamtool_serve_is_the_mcp_server_of_the_tape(tmp_path: Path) -> None:
    proc, first, origin = start_listening([*STREAMTOOL, "serve", str(LEGACY), "--port", "0"])
    try:
        answer = run_client(origin + "/mcp")
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=15)
    assert {k: answer[k] for k in ("text", "tool_calls")} == understood(LEGACY)
    assert "Traceback" not in err, err
    assert "tools/call add" in err  # one log line per request
    assert sys.executable  # the client ran in this process, the server in its own
