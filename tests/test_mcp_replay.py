"""Reading MCP exchanges: the ``mcp`` converter on the bundled sessions (recorded by the proxy
from the SDK's own server) and on exchanges written to show each of the transport's quirks.

A replay gives the JSON-RPC messages exactly as sent (the summary's ``messages``), each
``tools/call`` as an invocation with its ``result``, the tree of the exchange, and the quirks
of the catalogue, whatever the chunking.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from streamtool.cli.main import app
from streamtool.core.converters import detect_from_event
from streamtool.core.model.records import Header
from streamtool.core.recording.reader import Source
from streamtool.core.wire.sse import SSEEvent, decode_all

from .conftest import RECORDINGS
from .wire_helpers import assert_chunking_invariant, run

LEGACY = RECORDINGS / "mcp-weather-2025-11-25"
MODERN = RECORDINGS / "mcp-weather-2026-07-28"
RESUMED = RECORDINGS / "mcp-weather-resumed-stream"
TAPES = (LEGACY, MODERN, RESUMED)
URL = "http://127.0.0.1:8000/mcp"


def exchange(name: str, tape: Path = LEGACY) -> Path:
    return next(tape.glob(f"*-{name}.jsonl"))


def summary_of(path: Path) -> dict[str, Any]:
    done = CliRunner().invoke(app, ["replay", str(path), "--format", "json"])
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)


def sent_messages(path: Path) -> list[Any]:
    """What the client sent and the server answered, read from the recording by hand."""
    source = Source(path)
    body = source.header.request.get("body")
    out = [] if body is None else (body if isinstance(body, list) else [body])
    data = b"".join(
        c.data.encode("utf-8") if isinstance(c.data, str) else c.data for c in source.chunks()
    ).decode("utf-8")
    content = str(source.header.response.get("headers", {}).get("content-type", ""))
    if "event-stream" in content:
        for item in decode_all([data]):
            if isinstance(item, SSEEvent) and item.data.strip():
                out.append(json.loads(item.data))
    elif data.strip():
        out.append(json.loads(data))
    return out


# -- the bundled sessions --------------------------------------------------------------------
@pytest.mark.parametrize("tape", TAPES, ids=lambda p: p.name)
def test_every_message_of_every_exchange_is_given_as_sent(tape: Path) -> None:
    for path in sorted(tape.glob("0*.jsonl")):
        summary = summary_of(path)
        assert summary["converter"] == "mcp", path.name
        assert summary["messages"] == sent_messages(path), path.name
        for message in summary["messages"]:
            assert message["jsonrpc"] == "2.0"
            assert set(message) <= {"jsonrpc", "id", "method", "params", "result", "error"}
        assert summary["quirks"] == [], path.name  # a real SDK server, a real SDK client
        assert summary["errors"] == [], path.name


def test_a_tool_call_is_an_invocation_with_its_result_as_sent() -> None:
    summary = summary_of(exchange("tools-call-forecast"))
    [call] = summary["invocations"]
    assert call["name"] == "forecast" and call["arguments"] == {"city": "Oslo", "days": 2}
    answer = summary["messages"][-1]
    assert call["id"] == str(answer["id"]) and call["result"] == answer["result"]
    assert call["result"]["content"][0]["text"] == "Oslo: day 1: 19°C; day 2: 20°C"
    # the notifications came before it, in order: log, progress, log, progress
    methods = [m.get("method") for m in summary["messages"][1:-1]]
    assert methods == ["notifications/message", "notifications/progress"] * 2


def test_the_input_required_round_and_its_retry_are_two_invocations() -> None:
    first, retry = sorted(MODERN.glob("*-tools-call-book.jsonl"))
    asked = summary_of(first)["invocations"][0]
    assert asked["result"]["resultType"] == "input_required"
    assert list(asked["result"]["inputRequests"].values())[0]["method"] == "elicitation/create"
    done = summary_of(retry)
    sent = done["messages"][0]["params"]
    assert sent["requestState"] == asked["result"]["requestState"]
    assert done["invocations"][0]["result"]["content"][0]["text"] == "booked 2 seat(s) for Oslo"


def test_a_server_request_in_the_middle_of_a_call_is_a_message_of_its_stream() -> None:
    summary = summary_of(exchange("tools-call-book"))
    methods = [(m.get("method"), "id" in m) for m in summary["messages"]]
    assert methods == [("tools/call", True), ("elicitation/create", True), (None, True)]
    answer = summary_of(exchange("response"))
    assert answer["messages"] == [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {"action": "accept", "content": {"confirm": True, "seats": 2}},
        }
    ]
    assert answer["invocations"] == []


@pytest.mark.parametrize(
    "path",
    [
        exchange("tools-call-forecast"),
        exchange("tools-call-book"),
        sorted(RESUMED.glob("*-stream.jsonl"))[-1],  # the GET that resumes a call's stream
    ],
    ids=lambda p: p.name,
)
def test_chunking_never_changes_what_an_exchange_means(path: Path) -> None:
    assert assert_chunking_invariant(path)["converter"] == "mcp"


def test_the_tree_draws_the_exchange() -> None:
    path = exchange("tools-call-forecast")
    done = CliRunner(env={"COLUMNS": "160"}).invoke(app, ["replay", str(path), "--format", "text"])
    assert done.exit_code == 0, done.output
    lines = done.stdout.splitlines()
    assert "provider mcp · converter mcp · parser api_tool_call" in lines
    heads = [line for line in lines if "── message" in line or "── tool_call" in line]
    assert "tool_call forecast" in heads[0]
    assert "priming event (retry 200 ms)" in heads[1]
    assert "← notification notifications/message  info: day 1 of 2 for Oslo" in heads[2]
    assert "← notification notifications/progress  1/2 day 1" in heads[3]
    assert "← result #" in heads[-1] and "Oslo: day 1: 19°C" in heads[-1]
    assert "forecast(" in done.stdout  # the invocation


def test_a_raw_body_is_detected_and_the_converter_can_be_forced() -> None:
    event = SSEEvent('{"jsonrpc":"2.0","method":"notifications/progress","params":{}}')
    assert detect_from_event(event) == "mcp"
    body = 'event: message\ndata: {"jsonrpc":"2.0","id":3,"result":{"content":[]}}\n\n'
    assert run(body)[0]["converter"] == "mcp"
    assert run(body, converter="mcp")[0]["messages"][0]["id"] == 3


# -- the quirks: each exchange below departs from the transport's rules -------------------------
def header(
    body: Any = None,
    *,
    method: str = "POST",
    request: dict[str, str] | None = None,
    response: dict[str, str] | None = None,
    status: int = 200,
) -> Header:
    return Header(
        provider="mcp",
        api="mcp",
        request={"method": method, "url": URL, "headers": request or {}, "body": body},
        response={
            "status": status,
            "headers": {"content-type": "text/event-stream", **(response or {})},
        },
    )


CALL = {
    "jsonrpc": "2.0",
    "id": 7,
    "method": "tools/call",
    "params": {"name": "add", "arguments": {}},
}
RESULT = 'event: message\ndata: {"jsonrpc":"2.0","id":7,"result":{"content":[]}}\n\n'
LOG = (
    'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message",'
    '"params":{"level":"info","data":"x"}}\n\n'
)
S = {"mcp-session-id": "s-1", "mcp-protocol-version": "2025-11-25"}
V26 = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "add"}


def quirks_of(reads: str, head: Header) -> list[str]:
    summary, _ = run(reads, header=head, converter="mcp")
    return [q["id"] for q in summary["quirks"]]


QUIRKS = {
    "mcp_response_on_get_stream": (RESULT, header(method="GET", request=S, response=S)),
    "mcp_priming_event_without_id": ("data: \n\n" + RESULT, header(CALL, request=S, response=S)),
    "mcp_stream_ended_before_response": (LOG, header(CALL, request=S, response=S)),
    "mcp_response_id_unknown": (
        "id: 1\ndata: \n\n" + RESULT.replace('"id":7', '"id":8'),
        header(CALL, request=S, response=S),
    ),
    "mcp_header_body_mismatch": (
        RESULT,
        header(CALL, request={**V26, "mcp-name": "sub"}),
    ),
    "mcp_notification_after_response": (RESULT + LOG, header(CALL, request=S, response=S)),
    "mcp_session_id_missing": (
        RESULT,
        header(CALL, request={"mcp-protocol-version": "2025-11-25"}, response=S),
    ),
    "mcp_session_id_changed": (RESULT, header(CALL, request=S, response={"mcp-session-id": "s-2"})),
}


@pytest.mark.parametrize("quirk", sorted(QUIRKS))
def test_each_departure_from_the_transport_is_named_from_the_catalogue(quirk: str) -> None:
    reads, head = QUIRKS[quirk]
    assert quirks_of(reads, head) == [quirk]


def test_the_same_exchanges_done_right_show_no_quirk() -> None:
    primed = "id: 1\ndata: \nretry: 100\n\n"
    assert quirks_of(primed + RESULT, header(CALL, request=S, response=S)) == []
    # a stream cut after its priming event can be resumed: no quirk (the GET resumes it)
    assert quirks_of(primed + LOG, header(CALL, request=S, response=S)) == []
    # a response on a GET that resumes a stream (Last-Event-ID)
    resume = {**S, "last-event-id": "1"}
    assert quirks_of(RESULT, header(method="GET", request=resume, response=S)) == []
    # 2026-07-28: the headers say what the body says; no session at all
    assert quirks_of(RESULT, header(CALL, request=V26)) == []
    # a base64-encoded Mcp-Name is not read
    encoded = {**V26, "mcp-name": "=?base64?c3Vi?="}
    assert quirks_of(RESULT, header(CALL, request=encoded)) == []


def test_a_stream_that_ended_before_its_response_is_also_an_error() -> None:
    summary, _ = run(LOG, header=header(CALL, request=S, response=S), converter="mcp")
    assert [e["kind"] for e in summary["errors"]] == ["truncated"]
    assert summary["invocations"][0]["result"] is None


def test_a_json_rpc_error_answer_is_an_error_of_the_replay_and_of_the_invocation() -> None:
    error = '{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad arguments"}}'
    head = header(CALL, request=S, response={**S, "content-type": "application/json"})
    summary, _ = run(error, header=head, converter="mcp")
    assert summary["errors"][0]["message"] == "JSON-RPC error -32602: bad arguments"
    assert summary["invocations"][0]["error"] == {"code": -32602, "message": "bad arguments"}


@settings(max_examples=40, deadline=None)
@given(cuts=st.lists(st.integers(min_value=1, max_value=400), max_size=12))
def test_any_chunking_of_an_exchange_gives_the_same_messages(cuts: list[int]) -> None:
    body = "id: 1\ndata: \nretry: 100\n\n" + LOG + RESULT
    data = body.encode("utf-8")
    points = sorted({c for c in cuts if c < len(data)})
    pieces = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
    head = header(CALL, request=S, response=S)
    whole, _ = run(body, header=head, converter="mcp")
    again, _ = run(pieces, header=head, converter="mcp")
    assert again == whole
