"""``serve`` under abuse, on a real server on 127.0.0.1: bodies over ``--max-body`` (413),
bodies nested too deeply (400, not 500), and a client that goes away mid-body."""

from __future__ import annotations

import json
import socket

import httpx
import pytest
from typer.testing import CliRunner

from benchmarks.generators import OPENAI_CHAT_URL, recording_header
from streamtool.cli.main import app
from streamtool.core.exchange.playback import Playback
from streamtool.core.net.library import Library
from streamtool.core.net.listen import ServerThread
from streamtool.core.net.server import create_app, parse_size

from .conftest import RECORDINGS

REC = RECORDINGS / "openai-parallel-tool-calls.jsonl"
LIMIT = 4096


@pytest.fixture(scope="module")
def server():
    application = create_app(Library.from_paths([REC]), Playback(speed=None), max_body=LIMIT)
    with ServerThread(application) as s:
        yield s


def post(server, content, headers=None) -> httpx.Response:
    return httpx.post(
        server.url + "/v1/chat/completions",
        content=content,
        headers={"content-type": "application/json", **(headers or {})},
        timeout=10,
    )


def ok_body() -> bytes:
    return json.dumps({"model": "m", "stream": True, "messages": []}).encode()


def test_a_body_over_the_limit_is_413(server):
    big = json.dumps({"model": "m", "stream": True, "pad": "x" * LIMIT}).encode()
    r = post(server, big)
    assert r.status_code == 413
    assert f"larger than {LIMIT} bytes" in r.json()["error"]["message"]
    # without a Content-Length (chunked), the count stops the read as well
    r = post(server, iter([big[:1000], big[1000:3000], big[3000:]]))
    assert r.status_code == 413
    assert post(server, ok_body()).status_code == 200


def test_a_body_nested_too_deeply_is_400(server):
    deep = ("[" * 5000 + "]" * 5000).encode()
    limited = create_app(Library.from_paths([REC]), Playback(speed=None))
    with ServerThread(limited) as s:
        r = post(s, deep)
    assert r.status_code == 400
    assert "not JSON" in r.json()["error"]["message"]


def test_a_client_that_goes_away_mid_body_does_not_hurt(server):
    host, port = server.url.removeprefix("http://").split(":")
    for _ in range(5):
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                b'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"model"'
            )
    r = post(server, ok_body())
    assert r.status_code == 200 and b"[DONE]" in r.content


def test_max_body_option():
    assert parse_size("10MB") == 10 * 1024 * 1024
    assert parse_size("512k") == 512 * 1024
    assert parse_size("1048576") == 1048576
    for bad in ("lots", "0", "-5"):
        with pytest.raises(ValueError, match="--max-body"):
            parse_size(bad)
    result = CliRunner().invoke(app, ["serve", str(REC), "--max-body", "lots"])
    assert result.exit_code == 2
    assert "--max-body 'lots'" in result.stderr


def _recording(path, status=200, headers=None):
    request = {"url": OPENAI_CHAT_URL, "body": {"model": "m"}}
    header = recording_header(
        request=request, status=status, response_headers=headers or {}, recorded_at=None
    )
    body = REC.read_text().splitlines()[1:]
    path.write_text("\n".join([json.dumps(header), *body]) + "\n")
    return path


def test_unservable_recordings_are_refused_or_skipped_at_load_time(tmp_path, caplog):
    bad_headers = {
        "content-type": "text/event-stream",
        "x-note": "caf\u00e9 \u2603",  # not latin-1
        "x-split": "a\r\nx-injected: 1",
        "bad name": "v",
    }
    rec = _recording(tmp_path / "headers.jsonl", headers=bad_headers)
    with caplog.at_level("WARNING", logger="streamtool.serve"):
        library = Library.from_paths([rec])
    assert [k for k, _ in library.recordings[0].headers] == ["content-type"]
    assert "x-split" in caplog.text and "bad name" in caplog.text
    with ServerThread(create_app(library, Playback(speed=None))) as s:
        r = post(s, ok_body())
    assert r.status_code == 200 and "x-injected" not in r.headers and b"[DONE]" in r.content
    switching = _recording(tmp_path / "switch.jsonl", status=101)
    result = CliRunner().invoke(app, ["serve", str(switching), "--port", "0"])
    assert result.exit_code == 2
    assert "switch.jsonl: recorded status 101 cannot be served" in result.stderr
    # in a folder, one that cannot be read or served is skipped with a warning
    (tmp_path / "broken.jsonl").write_text("not a recording\n")
    with caplog.at_level("WARNING", logger="streamtool.serve"):
        library = Library.from_paths([tmp_path])
    assert library.names() == ["headers"]
    assert "broken.jsonl" in caplog.text and "switch.jsonl" in caplog.text
