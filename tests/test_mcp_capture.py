"""Capturing MCP sessions: ``streamtool proxy --upstream URL`` in front of a real MCP server (the
``mcp`` SDK's own), driven by the SDK's own client, records every exchange of the session with
no extra flag: POSTs answered by SSE or JSON, the 202s, the GET stream, DELETE; every read as it
came, timed; credentials scrubbed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from streamtool.core.net.proxy import ProxyConfig, ProxyThread, parse_upstreams
from streamtool.core.recording.reader import Source
from streamtool.core.recording.tape_index import read_index

from .mcp_app import V2, mcp_server, run_client
from .serve_helpers import STREAMTOOL, start_listening

ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
SECRET = "mcp-oauth-token-5a1b2c3d4e"


def captured(folder: Path) -> list[tuple[str, Source]]:
    """The tape's recordings in the order their requests were sent (their numbers)."""
    entries = sorted(read_index(folder), key=lambda e: e.seq)
    return [(e.model or "", Source(folder / e.file)) for e in entries]


def body(source: Source) -> bytes:
    """A recording's body (read afresh: a source's reads are read once)."""
    return b"".join(
        c.data.encode("utf-8") if isinstance(c.data, str) else c.data
        for c in Source(source.path).chunks()
    )


def record(tmp_path: Path, client: str = "session", mode: str = "auto", **server: Any) -> Path:
    out = tmp_path / "tape"
    out.mkdir()
    with mcp_server(**server) as upstream:
        config = ProxyConfig(out=out, upstreams=parse_upstreams([upstream.url]))
        with ProxyThread(config) as proxy:
            answer = run_client(proxy.url + "/mcp", client, mode)
    assert answer["tool_calls"][0] == {"name": "add", "arguments": {"a": 2, "b": 3}}
    return out


def test_a_2025_session_is_recorded_whole_with_no_flag(tmp_path: Path) -> None:
    tape = record(tmp_path)
    got = captured(tape)
    what = [(s.header.request["method"], name, s.header.response["status"]) for name, s in got]
    assert what == [
        ("POST", "initialize", 200),
        ("POST", "notifications/initialized", 202),
        ("GET", "stream", 200),
        ("POST", "tools/list", 200),
        ("POST", "tools/call add", 200),
        ("POST", "tools/call forecast", 200),
        ("POST", "tools/call book", 200),
        ("POST", "response", 202),  # the client's answer to the server's elicitation
        ("POST", "resources/read", 200),
        ("POST", "resources/read", 200),
        ("POST", "prompts/get summarize", 200),
        ("DELETE", "delete", 200),
    ]
    for name, source in got:
        times = [c.t for c in source.chunks()]  # (the end record is read after the reads)
        assert source.header.api == "mcp" and source.end is not None, name
        if name == "delete" and source.end.reason == "interrupted":
            # the SDK sends its DELETE from its exit, where a cancellation may end the wait
            # for the answer: the client left, and the recording says so, and why
            assert "the client closed the connection" in str(source.end.error), source.end
        else:
            assert source.end.reason == "complete", name
        assert all(t is not None and t > 0 for t in times), name
        assert times == sorted(times), name
    # one session id throughout, as the server issued it
    sessions = {s.header.response["headers"].get("mcp-session-id") for _, s in got}
    assert len(sessions) == 1 and None not in sessions
    # SSE answers with the priming event first (2025-11-25), then the messages
    book = dict(got)["tools/call book"]
    assert book.header.response["headers"]["content-type"] == "text/event-stream"
    assert body(book).startswith(b"id: ") and b"elicitation/create" in body(book)


@pytest.mark.skipif(not V2, reason="the 2.x line of the mcp SDK (Client, 2026-07-28)")
def test_a_2026_session_is_recorded_with_its_routing_headers(tmp_path: Path) -> None:
    tape = record(tmp_path, "client", "auto")
    got = captured(tape)
    names = [name for name, _ in got]
    assert names[:3] == ["server/discover", "tools/list", "tools/call add"]
    assert names.count("tools/call book") == 2  # the input_required round and its retry
    for name, source in got:
        headers = source.header.request["headers"]
        assert headers["mcp-protocol-version"] == "2026-07-28", name
        assert headers["mcp-method"] == name.split(" ")[0], name
        assert "mcp-session-id" not in source.header.response["headers"], name
        assert source.header.request["method"] == "POST"


# the client's first request of a session
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


def test_json_answers_are_recorded_as_the_bytes_the_client_got(tmp_path: Path) -> None:
    out = tmp_path / "tape"
    out.mkdir()
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 20, "b": 22}},
    }
    with mcp_server(json_response=True, stateless=True, store=False) as upstream:
        config = ProxyConfig(out=out, upstreams=parse_upstreams([upstream.url]))
        with ProxyThread(config) as proxy, httpx.Client(timeout=10) as http:
            url = proxy.url + "/mcp"
            assert http.post(url, json=INITIALIZE, headers=ACCEPT).status_code == 200
            versioned = {**ACCEPT, "mcp-protocol-version": "2025-11-25"}
            answer = http.post(url, json=call, headers=versioned)
    got = dict(captured(out))
    recorded = got["tools/call add"]
    assert recorded.header.response["headers"]["content-type"] == "application/json"
    assert body(recorded) == answer.content  # byte for byte what the client read
    assert json.loads(answer.content)["result"]["structuredContent"] == {"result": 42}


def test_credentials_are_scrubbed_from_the_tape(tmp_path: Path) -> None:
    out = tmp_path / "tape"
    out.mkdir()
    with mcp_server() as upstream:
        config = ProxyConfig(out=out, upstreams=parse_upstreams([upstream.url]))
        with ProxyThread(config) as proxy, httpx.Client(timeout=10) as http:
            headers = {**ACCEPT, "authorization": f"Bearer {SECRET}", "x-api-key": SECRET}
            answer = http.post(
                proxy.url + f"/mcp?access_token={SECRET}", json=INITIALIZE, headers=headers
            )
            assert answer.status_code == 200
    files = list(out.iterdir())
    assert files
    for path in files:
        assert SECRET not in path.read_text(encoding="utf-8", errors="replace"), path.name
    [(_, source)] = captured(out)
    assert source.header.request["headers"]["authorization"] == "[redacted]"


def test_mcp_needs_an_upstream_and_the_proxy_says_so(tmp_path: Path) -> None:
    out = tmp_path / "tape"
    out.mkdir()
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    lines: list[str] = []
    with ProxyThread(ProxyConfig(out=out, log=lines.append)) as proxy:
        answer = httpx.post(proxy.url + "/mcp", json=call, headers=ACCEPT, timeout=10)
    assert answer.status_code == 502
    error = answer.json()
    assert error["jsonrpc"] == "2.0" and "--upstream" in error["error"]["message"]
    assert any("--upstream" in line for line in lines)


def test_streamtool_proxy_records_the_sdk_client_s_session(tmp_path: Path) -> None:
    out = tmp_path / "captures"
    with mcp_server() as upstream:
        command = [*STREAMTOOL, "proxy", "--upstream", upstream.url, "--out", str(out)]
        proc, _, origin = start_listening([*command, "--port", "0", "--view", "none"])
        try:
            answer = run_client(origin + "/mcp")
        finally:
            proc.terminate()
            proc.communicate(timeout=15)
    assert answer["text"].startswith("5\n")
    names = [name for name, _ in captured(out)]
    assert names[0] == "initialize" and names[-1] == "delete"
    assert proc.returncode is not None
