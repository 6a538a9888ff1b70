"""``streamtool import`` of WebSocket sessions and of mitmproxy's flow files: a HAR a real
browser recorded while it spoke to ``serve`` (its ``_webSocketMessages``), a HAR in Chrome's
own dialect, and flows written by mitmproxy's own ``mitmdump`` in front of ``serve`` (an SDK's
stream and a WebSocket session through it). Every message comes back as it was sent, the
imported tape serves the session again, and no key reaches it."""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from streamtool.core.drive.imports import mitmdump
from streamtool.core.model.records import Message
from streamtool.core.recording.reader import Source
from streamtool.core.recording.tape_index import read_index

from .conftest import RECORDINGS
from .serve_helpers import STREAMTOOL, start_listening
from .test_import import KEY, REC, assert_no_key, body_of, cli, recording_page, sdk_stream, serving

SESSION = RECORDINGS / "realtime" / "0001-openai-realtime-gpt-realtime.jsonl"


def steps_of(path: Path) -> list[tuple[str, str | bytes]]:
    """A session's messages in order: (who sent it, what)."""
    source = Source(path)
    return [(r.direction, r.data) for r in source.session_records() if type(r) is Message]


def play(origin: str, steps: list[tuple[str, str | bytes]]) -> list[str | bytes]:
    """The client's side of ``steps`` played against ``origin``; what the server sent."""
    from websockets.sync.client import connect

    got = []
    url = origin.replace("http://", "ws://") + "/v1/realtime?model=gpt-realtime"
    with connect(url, open_timeout=20) as ws:
        for direction, data in steps:
            if direction == "client":
                ws.send(data)
            else:
                got.append(ws.recv(timeout=20))
    return got


def session_of(tape: Path) -> Path:
    (entry,) = [e for e in read_index(tape) if e.status == 101]
    return tape / entry.file


def test_a_websocket_session_in_a_browsers_har_imports_whole_and_serves_again(
    tmp_path: Path,
) -> None:
    steps = steps_of(SESSION)
    har = tmp_path / "page.har"
    with serving(SESSION) as origin, recording_page(origin, har) as page:
        url = origin.replace("http://", "ws://") + f"/v1/realtime?model=gpt-realtime&api_key={KEY}"
        seen = page.evaluate(
            """async ([url, steps]) => {
                const ws = new WebSocket(url);
                const inbox = [];
                let wake = null;
                ws.onmessage = (e) => { inbox.push(e.data); if (wake) { wake(); wake = null; } };
                await new Promise((ok, bad) => { ws.onopen = ok; ws.onerror = bad; });
                const seen = [];
                for (const [who, data] of steps) {
                    if (who === 'client') { ws.send(data); continue; }
                    while (!inbox.length) await new Promise((ok) => { wake = ok; });
                    seen.push(inbox.shift());
                }
                ws.close(1000);
                return seen;
            }""",
            [url, steps],
        )
    assert seen == [data for who, data in steps if who == "server"]  # the browser's session
    assert KEY in har.read_text()  # the archive kept the key: the import must not

    out = tmp_path / "tape"
    done = cli("import", str(har), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "query parameter api_key" in done.stderr
    assert "1 WebSocket session timed by the archive" in done.stderr
    imported = session_of(out)
    assert steps_of(imported) == steps  # every message, both ways, as sent
    source = Source(imported)
    assert source.header.api == "realtime" and source.header.extra["transport"] == "websocket"
    assert source.header.extra["imported"]["timing"] == "archive"
    times = [r.t for r in source.session_records() if type(r) is Message]
    assert all(t is not None and t >= 0 for t in times) and times == sorted(times)
    assert_no_key(out)
    with serving(out) as origin:
        assert play(origin, steps) == [data for who, data in steps if who == "server"]


def test_chromes_dialect_seconds_binary_frames_and_a_key_in_a_message(tmp_path: Path) -> None:
    """Chrome's DevTools write message times in seconds since the epoch (Playwright in
    milliseconds), binary frames in base64 (opcode 2), and control frames beside the
    messages; a key in a message is removed and counted."""
    started = 1_790_000_000.0
    binary = bytes(range(256))
    entry = {
        "startedDateTime": "2026-09-21T14:13:20.000Z",  # ``started`` as an ISO date
        "request": {"method": "GET", "url": "wss://api.openai.com/v1/realtime?model=m",
                    "headers": [{"name": "Sec-WebSocket-Key", "value": "dGhlIHNhbXBsZQ=="}]},
        "response": {"status": 101, "headers": [], "content": {"size": 0}},
        "_resourceType": "websocket",
        "_webSocketMessages": [
            {"type": "receive", "time": started + 0.25, "opcode": 1, "data": '{"type":"a"}'},
            {"type": "send", "time": started + 0.5, "opcode": 1,
             "data": json.dumps({"type": "b", "note": f"my key is {KEY}"})},
            {"type": "receive", "time": started + 0.75, "opcode": 9, "data": ""},
            {"type": "receive", "time": started + 1.0, "opcode": 2,
             "data": base64.b64encode(binary).decode()},
        ],
    }  # fmt: skip
    har = tmp_path / "chrome.har"
    har.write_text(json.dumps({"log": {"version": "1.2", "entries": [entry]}}))
    out = tmp_path / "tape"
    done = cli("import", str(har), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "1 secret removed: a key in a WebSocket message (client) (entry 1)" in done.stderr
    imported = session_of(out)
    records = [r for r in Source(imported).session_records() if type(r) is Message]
    assert [(r.t, r.direction) for r in records] == [
        (0.25, "server"), (0.5, "client"), (1.0, "server"),
    ]  # fmt: skip
    assert records[0].data == '{"type":"a"}' and records[2].data == binary
    assert KEY not in str(records[1].data) and '"type": "b"' in str(records[1].data)
    assert "sec-websocket-key" not in Source(imported).header.request["headers"]
    assert_no_key(out)


# -- mitmproxy's own flow files ------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def flows(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, tuple[object, ...]]:
    """A flow file ``mitmdump`` writes as a reverse proxy in front of ``serve``: the openai
    SDK's stream and a WebSocket session through it (and what the SDK read)."""
    exe = mitmdump()
    if exe is None:
        pytest.skip("mitmproxy's mitmdump is not installed (STREAMTOOL_MITMDUMP names one)")
    folder = tmp_path_factory.mktemp("mitm")
    path = folder / "flows.mitm"
    proc, _, origin = start_listening([*STREAMTOOL, "serve", str(REC), str(SESSION), "--port", "0"])
    port = _free_port()
    mitm = subprocess.Popen(
        [exe, "-q", "--mode", f"reverse:{origin}", "--listen-host", "127.0.0.1",
         "--listen-port", str(port), "-w", str(path), "--set", f"confdir={folder / 'conf'}"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:  # mitmproxy takes a few seconds to start
            try:
                socket.create_connection(("127.0.0.1", port), timeout=5).close()
                break
            except OSError:
                assert mitm.poll() is None, mitm.stderr.read() if mitm.stderr else ""
                assert time.monotonic() < deadline, "mitmdump did not start listening"
                time.sleep(0.1)
        through = f"http://127.0.0.1:{port}"
        seen = sdk_stream(through)
        heard = play(through, steps_of(SESSION))
    finally:
        mitm.send_signal(signal.SIGINT)  # mitmdump ends its flow file and exits
        mitm.wait(timeout=60)
        proc.terminate()
        proc.wait(timeout=10)
    assert heard == [data for who, data in steps_of(SESSION) if who == "server"]
    return path, seen


def test_mitmproxys_flows_import_through_its_own_reader(
    flows: tuple[Path, tuple[object, ...]], tmp_path: Path
) -> None:
    path, seen = flows
    assert KEY.encode() in path.read_bytes()  # mitmproxy kept the key: the import must not
    out = tmp_path / "tape"
    done = cli("import", str(path), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "authorization header (flow 1)" in done.stderr
    stream = next(e for e in read_index(out) if e.path == "/v1/chat/completions")
    assert body_of(out / stream.file) == body_of(REC)
    header = Source(out / stream.file).header
    assert header.extra["imported"]["from"] == "mitmproxy"
    assert header.extra["imported"]["timing"] == "unknown"
    assert steps_of(session_of(out)) == steps_of(SESSION)
    assert_no_key(out)
    with serving(out) as origin:
        assert sdk_stream(origin) == seen
        assert play(origin, steps_of(SESSION)) == [d for w, d in steps_of(SESSION) if w == "server"]


def test_a_flow_file_mitmproxy_cannot_read_is_one_line(tmp_path: Path) -> None:
    if mitmdump() is None:
        pytest.skip("mitmproxy's mitmdump is not installed (STREAMTOOL_MITMDUMP names one)")
    path = tmp_path / "old.flow"
    path.write_bytes(b"12:not a flow,")
    out = tmp_path / "tape"
    done = cli("import", str(path), "--out", str(out))
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "not a flow file this mitmproxy reads" in done.stderr and str(path) in done.stderr
    assert "Traceback" not in done.stderr and not out.exists()


def test_a_mitmdump_that_cannot_run_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "some.flow"
    path.write_bytes(b"12:not a flow,")
    env = {**os.environ, "STREAMTOOL_MITMDUMP": str(tmp_path / "no-such-mitmdump")}
    done = subprocess.run(
        [*STREAMTOOL, "import", str(path), "--out", str(tmp_path / "tape")],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "cannot run" in done.stderr and str(path) in done.stderr
