"""Serving a tape over real HTTP to the real SDKs: request matching, order, misses, pacing,
and serve's statuses, errors and log lines."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest

from streamtool.core.exchange.playback import Playback, Write, schedule
from streamtool.core.net.tape import serving_tape

from .serve_helpers import STREAMTOOL, recording, start_listening
from .tape_helpers import (
    ANTHROPIC_ANSWER,
    OPENAI_CALLS,
    OPENAI_TURN2,
    anthropic_tape,
    body_bytes,
    openai_tape,
    openai_turn2_messages,
    recorded_reads,
    run_anthropic_loop,
    run_openai_loop,
    write_exchange,
)

CHAT_URL = "https://api.openai.com/v1/chat/completions"


def openai_client(url: str, retries: int = 0):
    import openai

    return openai.OpenAI(base_url=url + "/v1", api_key="sk-test-local", max_retries=retries)


def anthropic_client(url: str):
    import anthropic

    return anthropic.Anthropic(base_url=url, api_key="sk-ant-test-local", max_retries=0)


def post_raw(url: str, body: object, headers: dict | None = None) -> tuple[int, bytes, dict]:
    with (
        httpx.Client(timeout=10) as client,
        client.stream("POST", url, json=body, headers=headers) as resp,
    ):
        data = b"".join(resp.iter_raw())
        return resp.status_code, data, dict(resp.headers)


def lisbon_calls() -> list[dict]:
    return [
        {
            "id": "toolu_01Q8sZx4NdF7kTgR2wYbM9pA",
            "name": "get_weather",
            "input": {"city": "Lisbon", "unit": "celsius"},
        }
    ]


LISBON_TEXT = "I'll look up the weather in Lisbon and report it in Celsius."


# -- the loops -----------------------------------------------------------------------------------
def test_openai_tool_loop_replays_from_a_tape_byte_exact(tmp_path: Path) -> None:
    files = openai_tape(tmp_path / "tape")
    with serving_tape(tmp_path / "tape") as server:
        got = run_openai_loop(openai_client(server.url))
        assert server.served == [files[0].stem, files[1].stem]
        # the same requests, sent raw: the recorded bytes come back exactly
        turn1 = json.loads(files[0].read_text().splitlines()[0])["request"]["body"]
        turn2 = json.loads(files[1].read_text().splitlines()[0])["request"]["body"]
        for body, file in ((turn1, files[0]), (turn2, files[1])):
            status, data, headers = post_raw(server.url + "/v1/chat/completions", body)
            assert status == 200
            assert data == body_bytes(file)
            assert headers["x-streamtool-recording"] == file.stem
    assert got["calls"] == OPENAI_CALLS
    assert got["text"] == 'Sure! In Japanese, "thank you" is ありがとう (arigatou) 🙏.'


def test_anthropic_tool_loop_replays_from_a_tape(tmp_path: Path) -> None:
    files = anthropic_tape(tmp_path / "tape", LISBON_TEXT, lisbon_calls())
    with serving_tape(tmp_path / "tape") as server:
        got = run_anthropic_loop(anthropic_client(server.url))
        assert server.served == [files[0].stem, files[1].stem]
        body = json.loads(files[1].read_text().splitlines()[0])["request"]["body"]
        status, data, _ = post_raw(server.url + "/v1/messages", body)
        assert status == 200 and data == body_bytes(files[1])
    assert got["calls"] == lisbon_calls()
    assert got["first_text"] == LISBON_TEXT
    assert got["text"] == ANTHROPIC_ANSWER


def test_a_changed_tool_result_is_a_404_naming_the_difference(tmp_path: Path) -> None:
    import openai

    openai_tape(tmp_path / "tape")
    lines: list[str] = []
    with (
        serving_tape(tmp_path / "tape", log=lines.append) as server,
        pytest.raises(openai.NotFoundError) as info,
    ):
        run_openai_loop(openai_client(server.url, retries=2), temperature="19°C")
    message = info.value.body["message"]  # type: ignore[index]
    assert info.value.status_code == 404
    assert "closest is 0002-openai-chat-gpt-4o" in message
    assert 'messages[2].content differs: "...' in message
    assert 'result: 19°C" vs "...' in message and 'result: 21°C"; record it with' in message
    # one request each (404 is not retried) and the log says the same as the error
    assert len(lines) == 2
    assert lines[0] == "POST /v1/chat/completions -> 0001-openai-chat-gpt-4o (200)"
    assert lines[1] == f"POST /v1/chat/completions -> 404: {message}"


def test_an_anthropic_miss_has_anthropics_error_shape(tmp_path: Path) -> None:
    import anthropic

    anthropic_tape(tmp_path / "tape", LISBON_TEXT, lisbon_calls())
    with serving_tape(tmp_path / "tape") as server:
        with pytest.raises(anthropic.NotFoundError) as info:
            run_anthropic_loop(anthropic_client(server.url), temperature="19°C")
        resp = httpx.post(server.url + "/v1/messages", json={"model": "x", "stream": True})
    assert "messages[2].content[0].content differs" in str(info.value)
    body = resp.json()
    assert resp.status_code == 404 and body["type"] == "error"
    assert body["error"]["type"] == "not_found_error"
    assert "closest is 0001-anthropic-messages-claude" in body["error"]["message"]


def test_a_gemini_miss_has_geminis_error_shape(tmp_path: Path) -> None:
    url = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash"
    write_exchange(
        tmp_path,
        "0001-gemini.jsonl",
        url=url + ":streamGenerateContent?alt=sse",
        body={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
        reads=recorded_reads("gemini-text-then-function-call"),
        provider="gemini",
        api="gemini",
        index=1,
    )
    with serving_tape(tmp_path) as server:
        path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        hit = httpx.post(
            server.url + path, json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
        )
        miss = httpx.post(server.url + path, json={"contents": []})
        other_model = httpx.post(
            server.url + path.replace("2.5-flash", "2.5-pro"),
            json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
        )
    assert hit.status_code == 200
    assert hit.content == body_bytes(tmp_path / "0001-gemini.jsonl")
    assert miss.status_code == 404
    err = miss.json()["error"]
    assert err["code"] == 404 and err["status"] == "NOT_FOUND"
    assert "contents has 0 items vs 1" in err["message"]
    assert other_model.status_code == 404  # the model in the path is part of the request


# -- order and the old rules ---------------------------------------------------------------------
def test_a_retried_turn_is_served_in_index_order(tmp_path: Path) -> None:
    body = {"model": "gpt-4o", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    # the index lists the later file name first: index order wins over names
    write_exchange(
        tmp_path, "b.jsonl", url=CHAT_URL, body=body, reads=recorded_reads(OPENAI_TURN2), index=1
    )
    write_exchange(
        tmp_path,
        "a.jsonl",
        url=CHAT_URL,
        body=body,
        reads=recorded_reads("openai-write-file"),
        index=2,
    )
    with serving_tape(tmp_path) as server:
        url = server.url + "/v1/chat/completions"
        got = [post_raw(url, body)[2]["x-streamtool-recording"] for _ in range(3)]
        # ignored fields and key order do not count
        shuffled = {
            "stream_options": {"include_usage": True},
            "user": "u1",
            **dict(reversed(body.items())),
        }
        again = post_raw(url, shuffled)[2]["x-streamtool-recording"]
    assert got == ["b", "a", "b"]
    assert again == "a"


def test_a_folder_without_an_index_is_a_tape_in_name_order(tmp_path: Path) -> None:
    openai_tape(tmp_path, index=False)
    assert not (tmp_path / "index.jsonl").exists()
    with serving_tape(tmp_path) as server:
        got = run_openai_loop(openai_client(server.url))
    assert got["calls"] == OPENAI_CALLS


def test_the_header_picks_a_recording_of_the_tape_and_a_stranger_is_a_miss(tmp_path: Path) -> None:
    files = openai_tape(tmp_path)
    with serving_tape(tmp_path) as server:
        url = server.url + "/v1/chat/completions"
        body = {"model": "anything", "stream": True}
        named = post_raw(url, body, {"X-Streamtool-Recording": files[1].name})
        stranger = httpx.post(url, json=body, headers={"X-Streamtool-Recording": "other.jsonl"})
    assert named[0] == 200 and named[1] == body_bytes(files[1])
    assert stranger.status_code == 404
    message = stranger.json()["error"]["message"]
    assert "the tape holds no recording named 'other.jsonl'" in message
    assert "closest is" in message


def test_raw_sse_bodies_in_a_tape_keep_the_model_rules(tmp_path: Path) -> None:
    openai_tape(tmp_path)
    raw = tmp_path / "9999-raw.sse"
    raw.write_bytes(body_bytes(recording("anthropic-text-then-tool-use")))
    with serving_tape(tmp_path) as server:
        status, data, headers = post_raw(
            server.url + "/v1/messages", {"model": "claude-sonnet-4-6", "stream": True}
        )
        chat = httpx.post(server.url + "/v1/chat/completions", json={"model": "x", "stream": True})
    assert status == 200 and headers["x-streamtool-recording"] == "9999-raw"
    assert data == raw.read_bytes()
    assert chat.status_code == 404  # the raw body speaks another API: chat requests still miss


# -- pacing --------------------------------------------------------------------------------------
def test_max_gap_caps_every_pause_of_the_schedule() -> None:
    reads = [(0.1, b"a"), (5.0, b"b"), (1e308, b"c"), (1e308, b"d")]
    writes = list(schedule(reads, Playback(speed=1.0, max_gap=0.5), 4))
    assert [w.at for w in writes if isinstance(w, Write)] == [0.1, 0.6, 1.1, 1.1]
    half = list(schedule(reads[:2], Playback(speed=2.0, max_gap=10), 2))
    assert [w.at for w in half if isinstance(w, Write)] == [0.05, 2.5]
    with pytest.raises(ValueError, match="--max-gap"):
        Playback(max_gap=-1)


def test_speed_one_keeps_the_recorded_gaps_and_max_gap_caps_them(tmp_path: Path) -> None:
    body = {"model": "gpt-4o", "stream": True}
    reads = recorded_reads(OPENAI_TURN2)
    paced: list[tuple[float | None, str | bytes]] = [(0.0, reads[0][1]), (0.4, reads[1][1])]
    paced += [(0.4, d) for _, d in reads[2:-1]] + [(30.0, reads[-1][1])]
    write_exchange(tmp_path, "0001.jsonl", url=CHAT_URL, body=body, reads=paced, index=1)
    with serving_tape(tmp_path, speed=1.0, max_gap=0.2) as server:
        start = time.monotonic()
        status, data, _ = post_raw(server.url + "/v1/chat/completions", body)
        took = time.monotonic() - start
    assert status == 200 and data == body_bytes(tmp_path / "0001.jsonl")
    assert 0.35 <= took < 5  # two capped pauses of 0.2 s, not 30 s


# -- serve's statuses, errors and log (issue 19, item 7) -----------------------------------------
def test_unknown_routes_and_non_json_bodies_get_provider_style_errors(tmp_path: Path) -> None:
    openai_tape(tmp_path)
    with serving_tape(tmp_path) as server:
        models = httpx.get(server.url + "/v1/models")
        embeddings = httpx.post(server.url + "/v1/embeddings", json={})
        count = httpx.post(server.url + "/v1/messages/count_tokens", json={})
        not_json = httpx.post(server.url + "/v1/chat/completions", content=b"{not json")
        not_json_anthropic = httpx.post(server.url + "/v1/messages", content=b"\xff\xfe")
    for resp in (models, embeddings):
        assert resp.status_code == 404
        assert resp.headers["content-type"] == "application/json"
        assert "/chat/completions" in resp.json()["error"]["message"]
    assert count.status_code == 404 and count.json()["type"] == "error"
    assert not_json.status_code == 400
    assert not_json.json()["error"]["message"] == "the request body is not JSON"
    assert not_json_anthropic.status_code == 400
    assert not_json_anthropic.json()["error"]["type"] == "invalid_request_error"


def test_an_ambiguous_request_is_not_retried_by_the_sdk() -> None:
    import openai

    from streamtool.core.net.library import Library
    from streamtool.core.net.listen import ServerThread
    from streamtool.core.net.server import create_app

    lines: list[str] = []
    paths = [recording("openai-parallel-tool-calls"), recording("openai-write-file")]
    app = create_app(Library.from_paths(paths), Playback(speed=None), lines.append)
    with ServerThread(app) as server:
        client = openai_client(server.url, retries=3)
        start = time.monotonic()
        with pytest.raises(openai.BadRequestError) as info:
            client.chat.completions.create(model="gpt-5", messages=[], stream=True)
        took = time.monotonic() - start
    assert info.value.status_code == 400
    assert "openai-parallel-tool-calls" in str(info.value) and "openai-write-file" in str(
        info.value
    )
    assert len(lines) == 1 and lines[0].startswith("POST /v1/chat/completions -> 400: ")
    assert took < 1.0


def test_get_root_names_apis_not_converters(tmp_path: Path) -> None:
    from streamtool.core.net.server import serving

    paths = [
        recording(n) for n in ("openai-write-file", "anthropic-write-file", "gemini-write-file")
    ]
    paths.append(recording("openai-responses-write-file"))
    with serving(paths) as server:
        listing = httpx.get(server.url + "/").json()["recordings"]
    got = {(r["api"], r["endpoint"]) for r in listing}
    assert got == {
        ("chat.completions", "/chat/completions"),
        ("messages", "/messages"),
        ("streamGenerateContent", ":streamGenerateContent"),
        ("responses", "/responses"),
    }
    assert not {"openai-chat", "anthropic", "gemini", "openai-responses"} & {
        r["api"] for r in listing
    }


@pytest.mark.parametrize("port", ["65536", "-1", "99999999"])
def test_a_port_outside_the_range_is_a_clean_error(port: str) -> None:
    from typer.testing import CliRunner

    from streamtool.cli.main import app

    result = CliRunner().invoke(app, ["serve", str(recording("openai-write-file")), "--port", port])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert result.stderr.strip().splitlines() == [
        f"streamtool: error: --port must be a number from 0 to 65535 (0: any free port), not {port}"
    ]


def test_the_serve_command_logs_the_recording_served(tmp_path: Path) -> None:
    files = openai_tape(tmp_path / "tape")
    proc, first, url = start_listening(
        [*STREAMTOOL, "serve", str(tmp_path / "tape"), "--port", "0", "--speed", "max"]
    )
    try:
        assert first.startswith(f"streamtool: serving the tape {tmp_path / 'tape'} (2 exchanges)")
        body = json.loads(files[1].read_text().splitlines()[0])["request"]["body"]
        status, data, _ = post_raw(url + "/v1/chat/completions", body)
        assert status == 200 and data == body_bytes(files[1])
        changed = dict(body, messages=openai_turn2_messages(OPENAI_CALLS, "19°C"))
        assert httpx.post(url + "/v1/chat/completions", json=changed).status_code == 404
        proc.terminate()
        _, rest = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    log = first + rest
    assert f"POST /v1/chat/completions -> {files[1].stem} (200)" in log
    assert "POST /v1/chat/completions -> 404: no recorded exchange matches" in log
    assert 'result: 19°C" vs "' in log


def test_serve_caps_pauses_by_default_and_inf_keeps_them(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from streamtool.cli.main import app
    from streamtool.cli.serve import SERVE_MAX_GAP

    help_text = CliRunner().invoke(app, ["serve", "--help"], env={"COLUMNS": "200"}).output
    assert f"default {SERVE_MAX_GAP:g}" in " ".join(help_text.split())
    assert 0 < SERVE_MAX_GAP < 1e6
    reads = [(0.0, b"a"), (1e308, b"b")]
    capped = list(schedule(reads, Playback(speed=1.0, max_gap=SERVE_MAX_GAP), 2))
    assert [w.at for w in capped if isinstance(w, Write)] == [0.0, SERVE_MAX_GAP]
    kept = list(schedule(reads, Playback(speed=1.0, max_gap=float("inf")), 2))
    assert [w.at for w in kept if isinstance(w, Write)] == [0.0, 1e308]
