"""WebSocket sessions over real connections (127.0.0.1): the proxy relays and records the openai
SDK's realtime and ``responses.connect()`` clients talking to a ``websockets`` upstream
(tests/ws_upstream.py), ``serve`` plays recorded sessions back to the same clients offline, and
``conform`` runs a client against the Realtime faults."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import openai
import pytest
import websockets
from websockets.sync.client import connect as ws_connect

from streamtool.core.exchange.playback import Playback
from streamtool.core.model.records import Control, Message
from streamtool.core.net.library import Library
from streamtool.core.net.listen import ServerThread
from streamtool.core.net.proxy import ProxyConfig, ProxyThread, parse_upstreams
from streamtool.core.net.server import create_app
from streamtool.core.net.tape import load_tape
from streamtool.core.recording.reader import Source
from streamtool.core.recording.tape_index import read_index

from .conftest import ROOT
from .serve_helpers import STREAMTOOL, start_listening
from .test_ws_sessions import AUDIO, RESPONSES, TAPE, TEXT
from .ws_upstream import ANSWER, Upstream

KEY = "sk-proj-abcdefghijklmnop0123456789"
CLIENTS = ROOT / "tests" / "clients"


def _client_module(name: str) -> Any:
    """A client script of tests/clients, imported (its session function called in process),
    its folder on the path while it loads, as when it runs as a script."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, CLIENTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(CLIENTS))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(CLIENTS))
    return module


REALTIME_CLIENT = _client_module("realtime_client")
RESPONSES_CLIENT = _client_module("responses_ws_client")


def weather_session(conn: Any, modality: str = "audio") -> dict[str, Any]:
    """tests/clients/realtime_client.py's session (the one the bundled recordings hold): the
    weather asked for, the call answered; what the SDK's client read."""
    answer = REALTIME_CLIENT.converse(conn, modality)
    return {
        "text": "".join(answer.text),
        "calls": [(c["name"], c["arguments"]) for c in answer.calls],
        "types": answer.types,
    }


def sdk(origin: str, key: str = KEY) -> openai.OpenAI:
    return openai.OpenAI(api_key=key, base_url=origin + "/v1", max_retries=0)


def tape_text(folder: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in sorted(folder.iterdir()) if p.is_file())


# -- the proxy -------------------------------------------------------------------------------------
def test_the_proxy_records_a_realtime_session_of_the_sdk(tmp_path: Path) -> None:
    out = tmp_path / "tape"
    with Upstream() as up, ProxyThread(ProxyConfig(out, parse_upstreams([up.url]))) as proxy:
        with sdk(proxy.url).realtime.connect(model="gpt-realtime") as conn:
            seen = weather_session(conn)
        deadline = time.monotonic() + 5
        while not (out / "index.jsonl").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        upstream_saw = up.seen
    assert seen["text"] == ANSWER and seen["calls"] == [
        ("get_weather", {"city": "Paris", "unit": "c"})
    ]
    [entry] = read_index(out)
    assert (entry.method, entry.path, entry.api, entry.status, entry.end) == (
        "GET",
        "/v1/realtime",
        "realtime",
        101,
        "complete",
    )
    path = out / entry.file
    source = Source(path)
    assert source.websocket and source.header.api == "realtime"
    assert source.header.request["url"].startswith(up.url + "/v1/realtime?model=gpt-realtime")
    assert source.header.request["headers"]["authorization"] == "[redacted]"
    records = list(source.session_records())
    messages = [r for r in records if type(r) is Message]
    # every message as sent, both ways, in order and timed
    server = [json.loads(m.data)["type"] for m in messages if m.direction == "server"]
    assert server == seen["types"][: len(server)] or server[: len(seen["types"])] == seen["types"]
    sent = [json.loads(m.data) for m in messages if m.direction == "client"]
    assert sent == upstream_saw.client_events
    times = [r.t for r in records]
    assert times == sorted(times) and all(t is not None and t >= 0 for t in times)
    closes = [r for r in records if type(r) is Control]
    assert [(c.direction, c.kind, c.code) for c in closes] == [("client", "close", 1000)]
    assert KEY not in tape_text(out)
    replayed = subprocess.run(
        [*STREAMTOOL, "replay", str(path), "--format", "json"], capture_output=True, text=True
    )
    doc = json.loads(replayed.stdout)
    assert doc["text"] == seen["text"] and doc["invocations"][0]["call_id"] == "call_009"


def test_credentials_are_forwarded_upstream_and_never_written(tmp_path: Path) -> None:
    """Authorization, an api-key query parameter, a key in a subprotocol and an ephemeral client
    secret in a message: each reaches the upstream, none reaches the tape."""
    out = tmp_path / "tape"
    ephemeral = "ek_68af0123456789abcdef0123456789ab"
    azure = "azurekey0123456789abcdef"
    subprotocol_key = "sk-subprotocol-0123456789abcdefgh"
    with Upstream() as up, ProxyThread(ProxyConfig(out, parse_upstreams([up.url]))) as proxy:
        url = proxy.url.replace("http://", "ws://") + f"/v1/realtime?model=m&api-key={azure}"
        with ws_connect(
            url,
            additional_headers={"Authorization": f"Bearer {ephemeral}"},
            subprotocols=["realtime", f"openai-insecure-api-key.{subprotocol_key}"],
        ) as ws:
            assert ws.subprotocol == "realtime"
            assert json.loads(ws.recv())["type"] == "session.created"
            update = {"type": "session.update", "session": {"instructions": f"use {ephemeral}"}}
            ws.send(json.dumps(update))
            assert ephemeral in ws.recv()  # session.updated echoes the instructions
        deadline = time.monotonic() + 5
        while not (out / "index.jsonl").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        seen = up.seen
    assert seen.headers[0]["authorization"] == f"Bearer {ephemeral}"
    assert f"api-key={azure}" in seen.paths[0]
    assert f"openai-insecure-api-key.{subprotocol_key}" in seen.subprotocols[0]
    assert ephemeral in json.dumps(seen.client_events)
    written = tape_text(out)
    for secret in (ephemeral, azure, subprotocol_key):
        assert secret not in written
    [f] = sorted(out.glob("0*.jsonl"))
    header = Source(f).header
    assert header.request["headers"]["sec-websocket-protocol"] == (
        "realtime, openai-insecure-api-key.[redacted]"
    )
    assert header.response["subprotocol"] == "realtime"
    assert "[redacted]" in header.request["url"]


def test_a_close_code_and_reason_reach_the_client_and_the_recording(tmp_path: Path) -> None:
    out = tmp_path / "tape"
    with Upstream() as up, ProxyThread(ProxyConfig(out, parse_upstreams([up.url]))) as proxy:
        manager = sdk(proxy.url).realtime.connect(
            model="gpt-realtime", extra_headers={"OpenAI-Beta": "realtime=v1"}
        )
        with pytest.raises(websockets.ConnectionClosedError) as raised, manager as conn:
            assert next(iter(conn)).type == "error"
            next(iter(conn))
        deadline = time.monotonic() + 5
        while not (out / "index.jsonl").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
    assert raised.value.rcvd is not None and raised.value.rcvd.code == 4000
    assert raised.value.rcvd.reason == "invalid_request_error.beta_api_shape_disabled"
    [f] = sorted(out.glob("0*.jsonl"))
    records = list(Source(f).session_records())
    assert records[-1].kind == "close" and records[-1].direction == "server"  # type: ignore[union-attr]
    assert (records[-1].code, records[-1].reason) == (  # type: ignore[union-attr]
        4000,
        "invalid_request_error.beta_api_shape_disabled",
    )


def test_responses_connect_through_the_proxy(tmp_path: Path) -> None:
    out = tmp_path / "tape"
    with Upstream() as up, ProxyThread(ProxyConfig(out, parse_upstreams([up.url]))) as proxy:
        with sdk(proxy.url).responses.connect() as conn:
            answer = RESPONSES_CLIENT.converse(conn)
        deadline = time.monotonic() + 5
        while not (out / "index.jsonl").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
    [entry] = read_index(out)
    assert entry.api == "responses" and entry.path == "/v1/responses"
    doc = json.loads(
        subprocess.run(
            [*STREAMTOOL, "replay", str(out / entry.file), "--format", "json"],
            capture_output=True,
            text=True,
        ).stdout
    )
    assert doc["converter"] == "openai-responses" and doc["text"] == answer["text"] == ANSWER
    assert [i["name"] for i in doc["invocations"]] == ["get_weather"]


def test_an_upstream_refusal_reaches_the_client_as_it_was(tmp_path: Path) -> None:
    out = tmp_path / "tape"
    with Upstream() as up, ProxyThread(ProxyConfig(out, parse_upstreams([up.url]))) as proxy:
        url = proxy.url.replace("http://", "ws://") + "/v1/forbidden"
        with pytest.raises(websockets.InvalidStatus) as refused:
            ws_connect(url).close()
        deadline = time.monotonic() + 5
        while not (out / "index.jsonl").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
    assert refused.value.response.status_code == 403
    assert b"forbidden here" in refused.value.response.body
    [entry] = read_index(out)
    assert entry.status == 403 and entry.end == "error"
    source = Source(out / entry.file)
    assert source.header.response["status"] == 403
    assert list(source.session_records()) == [] and "forbidden here" in source.end.error  # type: ignore[union-attr]


def test_two_sessions_at_once_into_one_tape(tmp_path: Path) -> None:
    out = tmp_path / "tape"
    answers: list[dict[str, Any]] = []
    with (
        Upstream(delay=0.01) as up,
        ProxyThread(ProxyConfig(out, parse_upstreams([up.url]))) as proxy,
    ):

        def one() -> None:
            with sdk(proxy.url).realtime.connect(model="gpt-realtime") as conn:
                answers.append(weather_session(conn, "text"))

        threads = [threading.Thread(target=one) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        deadline = time.monotonic() + 5
        while len(read_index(out) if (out / "index.jsonl").exists() else []) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.02)
    assert [a["text"] for a in answers] == [ANSWER, ANSWER]
    entries = read_index(out)
    assert sorted(e.seq for e in entries) == [1, 2] and {e.end for e in entries} == {"complete"}
    for entry in entries:
        messages = [r for r in Source(out / entry.file).session_records() if type(r) is Message]
        assert sum(m.direction == "client" for m in messages) == 5


def test_a_proxy_killed_mid_session_leaves_a_readable_recording(tmp_path: Path) -> None:
    out = tmp_path / "tape"
    with Upstream(delay=0.2) as up:
        proc, _, origin = start_listening(
            [*STREAMTOOL, "proxy", "--port", "0", "--upstream", up.url, "--out", str(out)],
            env={"COLUMNS": "200"},
        )
        got = []
        try:
            # the connection's own close, on exit, may find it gone already: that is the point
            with (
                contextlib.suppress(websockets.ConnectionClosed),
                ws_connect(origin.replace("http://", "ws://") + "/v1/realtime?model=m") as ws,
            ):
                got.append(json.loads(ws.recv())["type"])
                item = {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "hi"}],
                }
                ws.send(json.dumps({"type": "conversation.item.create", "item": item}))
                ws.send(json.dumps({"type": "response.create"}))
                while "response.output_audio_transcript.delta" not in got:
                    got.append(json.loads(ws.recv())["type"])
                proc.send_signal(signal.SIGKILL)  # mid-response, the client still reading
                proc.wait(10)
                with pytest.raises(websockets.ConnectionClosed):
                    while True:  # what was on its way, then the connection's end
                        ws.recv(timeout=10)
        finally:
            proc.kill()
            proc.wait(10)
    [f] = sorted(out.glob("0*.jsonl"))
    source = Source(f)
    records = list(source.session_records())
    assert source.end is None  # cut off, and readable
    server = [
        json.loads(r.data)["type"]
        for r in records
        if type(r) is Message and r.direction == "server"
    ]
    # killed, the proxy may have relayed a message it had not written yet, or written one the
    # client had not read: what it kept is the session's messages in order, up to the kill
    n = min(len(server), len(got))
    assert n >= 1 and server[:n] == got[:n], (server, got)
    run = subprocess.run(
        [*STREAMTOOL, "replay", str(f), "--format", "json"], capture_output=True, text=True
    )
    assert run.returncode == 0 and "cut off" in run.stderr
    assert "recording_cut_off" in {e["kind"] for e in json.loads(run.stdout)["errors"]}
    library = load_tape(out)
    assert library.recordings == [] and "cut off" in library.skipped[0][1]


def test_the_connection_guard_lets_a_session_go_when_it_ends(tmp_path: Path) -> None:
    from streamtool.core.net.guard import ConnectionLimits
    from streamtool.core.net.proxy import ProxyApp, uvicorn_config

    app = ProxyApp(ProxyConfig(tmp_path / "tape"))
    with Upstream() as up:
        app.config.upstreams = parse_upstreams([up.url])

        def settings(a: Any) -> Any:
            return uvicorn_config(a, limits=ConnectionLimits(1, 5.0))

        with ServerThread(app, settings=settings) as proxy:
            url = proxy.url.replace("http://", "ws://") + "/v1/realtime?model=m"
            for _ in range(3):  # one connection at a time: each ended session frees it
                deadline = time.monotonic() + 5
                while True:
                    try:
                        ws = ws_connect(url, open_timeout=5)
                        break
                    except (
                        websockets.InvalidStatus,
                        websockets.ConnectionClosedError,
                        AssertionError,
                    ) as busy:
                        # the last one still ending: the 503 (read, or cut by the close; the
                        # client library's own safety net raises AssertionError when the
                        # busy answer's close meets its handshake still being sent)
                        if isinstance(busy, websockets.InvalidStatus):
                            assert busy.response.status_code == 503
                        assert time.monotonic() < deadline, "an ended session kept its place"
                        time.sleep(0.05)
                with ws:
                    assert json.loads(ws.recv())["type"] == "session.created"


def test_parse_upstreams_takes_websocket_origins() -> None:
    ups = parse_upstreams(["ws://127.0.0.1:9000", "realtime=wss://example.test/base"])
    assert ups.default == "http://127.0.0.1:9000"
    assert ups.rules == {"realtime": "https://example.test/base"}


# -- serve -----------------------------------------------------------------------------------------
def serve(*paths: Path, speed: float | None = None) -> ServerThread:
    library = Library.from_paths(paths) if len(paths) > 1 or paths[0].is_file() else None
    if library is None:
        library = load_tape(paths[0])
    return ServerThread(create_app(library, Playback(speed=speed)))


def test_serve_plays_a_realtime_session_to_the_sdk_offline() -> None:
    with serve(AUDIO) as server, sdk(server.url, "x").realtime.connect(model="gpt-realtime") as c:
        seen = weather_session(c)
    assert seen["text"] == ANSWER
    assert seen["calls"] == [("get_weather", {"city": "Paris", "unit": "c"})]
    recorded = [
        json.loads(r.data)["type"]
        for r in Source(AUDIO).session_records()
        if type(r) is Message and r.direction == "server"
    ]
    assert seen["types"] == recorded[: len(seen["types"])]


def test_serve_plays_a_responses_session_to_the_sdk() -> None:
    with serve(RESPONSES) as server, sdk(server.url, "x").responses.connect() as conn:
        answer = RESPONSES_CLIENT.converse(conn)
    assert answer == {
        "text": ANSWER,
        "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}],
        "finish_reason": "completed",
    }


def test_a_client_event_that_matches_nothing_gets_an_error_then_a_close() -> None:
    with (
        serve(AUDIO) as server,
        sdk(server.url, "x").realtime.connect(model="gpt-realtime") as conn,
    ):
        conn.session.update(session={"type": "realtime", "instructions": "Be loud."})
        events = []
        with pytest.raises(websockets.ConnectionClosedError) as closed:
            for event in conn:
                events.append(event)
    error = next(e for e in events if e.type == "error")
    assert error.error.code == "streamtool_unmatched_event"
    assert "client event 1 (session.update)" in error.error.message
    assert "session.instructions: expected 'Answer briefly.', got 'Be loud.'" in (
        error.error.message
    )
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4000
    assert closed.value.rcvd.reason == "invalid_request_error.streamtool_unmatched_event"


def test_serve_keeps_the_recorded_pace_unless_told_not_to() -> None:
    from streamtool.core.exchange.session_play import delays, script

    steps = script(Source(TEXT).session_records())
    waited = sum(delays(steps, 1.0, None))  # the server's own pauses, as recorded
    assert waited > 0.1 and sum(delays(steps, None, None)) == 0

    def run(speed: float | None) -> float:
        with serve(TEXT, speed=speed) as server:
            start = time.monotonic()
            with sdk(server.url, "x").realtime.connect(model="gpt-realtime") as conn:
                assert weather_session(conn, "text")["text"] == ANSWER
            return time.monotonic() - start

    assert run(1.0) >= waited  # at the recorded pace (a lower bound only)
    assert run(None) > 0  # and at once: the same session, no pause kept


def test_serve_refuses_an_upgrade_from_a_web_page() -> None:
    with serve(AUDIO) as server:
        url = server.url.replace("http://", "ws://") + "/v1/realtime?model=gpt-realtime"
        with pytest.raises(websockets.InvalidStatus) as refused:
            ws_connect(url, origin="https://evil.example").close()
        assert refused.value.response.status_code == 403
        with ws_connect(url, origin="http://127.0.0.1:3000") as ws:  # a local page may
            assert json.loads(ws.recv())["type"] == "session.created"


def test_http_and_upgrades_at_one_route_get_their_own_recordings() -> None:
    sse = ROOT / "recordings" / "openai-responses-text-then-function-call.jsonl"
    with serve(sse, RESPONSES) as server:
        client = sdk(server.url, "x")
        stream = client.responses.create(model="gpt-5", input="hi", stream=True)
        kinds = [e.type for e in stream]
        assert kinds[-1] == "response.completed"
        url = server.url.replace("http://", "ws://") + "/v1/responses"
        with ws_connect(url) as ws:
            ws.send(json.dumps({"type": "response.create", "model": "gpt-5", "input": "other"}))
            error = json.loads(ws.recv())
        assert error["type"] == "error" and "matches nothing recorded" in error["error"]["message"]
        post = client.with_options(max_retries=0)
        with pytest.raises(openai.NotFoundError):
            post.post("/realtime", cast_to=object, body={"model": "x", "stream": True})


def test_serve_a_tape_answers_its_sessions_in_order() -> None:
    """A session over several connections: each upgrade gets the tape's next session."""
    with serve(TAPE) as server:
        client = sdk(server.url, "x")
        with client.realtime.connect(model="gpt-realtime") as conn:
            first = weather_session(conn, "audio")
        with client.realtime.connect(model="gpt-realtime") as conn:
            second = weather_session(conn, "text")
    assert first["text"] == second["text"] == ANSWER
    assert "response.output_audio_transcript.delta" in first["types"]
    assert "response.output_text.delta" in second["types"]


def test_a_dropped_session_is_served_as_a_drop(tmp_path: Path) -> None:
    dropped = tmp_path / "dropped.jsonl"
    subprocess.run(
        [*STREAMTOOL, "mutate", str(AUDIO), "-q", "ws_dropped_mid_response", "-o", str(dropped)],
        check=True,
        capture_output=True,
    )
    with (
        serve(dropped) as server,
        sdk(server.url, "x").realtime.connect(model="gpt-realtime") as conn,
        pytest.raises(websockets.ConnectionClosedError) as closed,
    ):
        weather_session(conn)
    assert closed.value.rcvd is None  # no close frame: the connection went


# -- conform ---------------------------------------------------------------------------------------
def test_conform_names_each_fault_and_which_broke_the_client() -> None:
    """The SDK's client, written to treat an error event as the end: the non-fatal error breaks
    it, the beta names leave it without text, the drop is a failure it reports (exit 1), as it
    should."""
    import os

    faults = "realtime_error_not_fatal,realtime_beta_event_names,ws_dropped_mid_response"
    env = {**os.environ, "REALTIME_CLIENT_ERRORS": "fatal"}
    run = subprocess.run(
        [
            *STREAMTOOL,
            "conform",
            "--api",
            "openai-realtime",
            "-r",
            str(AUDIO),
            "--mutate",
            faults,
            "--format",
            "json",
            "--",
            sys.executable,
            str(CLIENTS / "realtime_client.py"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert run.returncode == 1, run.stderr
    doc = json.loads(run.stdout)
    quirks = doc["quirks"]
    assert set(quirks) == set(faults.split(","))
    assert quirks["realtime_error_not_fatal"]["failed"] == 1
    assert quirks["realtime_beta_event_names"]["differs"] == ["text"]
    assert quirks["ws_dropped_mid_response"]["passed"] == 1
    whole = [r for r in doc["results"] if r["chunking"] == "whole"]
    assert [r["status"] for r in whole][0] == "pass"  # the recording as it was
    one_byte = {r["status"] for r in doc["results"] if r["chunking"] != "whole"}
    assert one_byte == {"not applicable"}  # a session is played message by message


def test_a_long_pause_is_served_with_the_server_s_pings(tmp_path: Path) -> None:
    """The mutated session's pause is kept even at full speed, and the server pings through it
    (the client's library answers: the session lives on)."""
    import logging

    from streamtool.core.apis.openai_realtime.mutations import PAUSE
    from streamtool.core.net.listen import session_settings

    paused = tmp_path / "paused.jsonl"
    subprocess.run(
        [*STREAMTOOL, "mutate", str(TEXT), "-q", "ws_long_pause_pings", "-o", str(paused)],
        check=True,
        capture_output=True,
    )
    pings: list[str] = []

    class Frames(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "< PING" in record.getMessage():
                pings.append(record.getMessage())

    logger = logging.getLogger("websockets.client")
    handler = Frames(logging.DEBUG)
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        app = create_app(Library.from_paths([paused]), Playback(speed=None))
        with ServerThread(app, settings=session_settings(1.0)) as server:
            start = time.monotonic()
            with sdk(server.url, "x").realtime.connect(model="gpt-realtime") as conn:
                assert weather_session(conn, "text")["text"] == ANSWER
            took = time.monotonic() - start
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert took >= PAUSE  # kept at --speed max: the pause is the fault
    assert len(pings) >= PAUSE - 2  # one a second (session_settings(1.0)), through the pause


def test_an_https_origin_s_upgrades_are_relayed_over_tls(tmp_path: Path) -> None:
    """``--upstream https://...``: the upgrade goes on as wss, the certificate verified."""
    import ssl

    import trustme

    ca = trustme.CA()
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server)
    trusted = ssl.create_default_context()
    ca.configure_trust(trusted)
    with Upstream(ssl=server) as up:
        origin = up.url.replace("wss://", "https://")
        untrusted = ProxyConfig(tmp_path / "untrusted", parse_upstreams([origin]))
        with ProxyThread(untrusted) as proxy:
            url = proxy.url.replace("http://", "ws://") + "/v1/realtime?model=m"
            with pytest.raises(websockets.InvalidStatus) as refused:
                ws_connect(url).close()
        assert refused.value.response.status_code == 502
        assert b"CERTIFICATE_VERIFY_FAILED" in refused.value.response.body
        assert not list((tmp_path / "untrusted").glob("0*.jsonl"))  # nothing was recorded
        config = ProxyConfig(tmp_path / "tape", parse_upstreams([origin]), verify=trusted)
        with ProxyThread(config) as proxy, sdk(proxy.url).realtime.connect(model="m") as conn:
            assert weather_session(conn, "text")["text"] == ANSWER
    [f] = sorted((tmp_path / "tape").glob("0*.jsonl"))
    assert Source(f).header.request["url"].startswith("wss://127.0.0.1:")


def test_a_session_past_the_recording_limit_ends_there(tmp_path: Path) -> None:
    """--max-recording-bytes: the recording ends with reason limit, and so does the session
    (closed 1009 to the agent), as a stream is cut at it."""
    out = tmp_path / "tape"
    config = ProxyConfig(out, parse_upstreams([]), max_recording_bytes=3000)
    with Upstream() as up:
        config.upstreams = parse_upstreams([up.url])
        with (
            ProxyThread(config) as proxy,
            sdk(proxy.url).realtime.connect(model="m") as conn,
            pytest.raises(websockets.ConnectionClosedError) as closed,
        ):
            weather_session(conn)
        deadline = time.monotonic() + 5
        while not (out / "index.jsonl").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    [entry] = read_index(out)
    assert entry.end == "limit"
    source = Source(out / entry.file)
    records = list(source.session_records())
    written = sum(len(r.data) for r in records if type(r) is Message)
    assert 0 < written <= 3000
    assert source.end is not None and source.end.reason == "limit"
