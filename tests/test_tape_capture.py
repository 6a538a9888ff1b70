"""A session captured through the proxy from a local upstream, then replayed from the tape with no
header and no upstream; and record on miss (``--record-missing``) filling a tape once."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from streamtool.core.net.proxy import ProxyConfig, ProxyThread, parse_upstreams
from streamtool.core.net.tape import serving_tape
from streamtool.core.recording.tape_index import list_exchanges, read_index

from .serve_helpers import STREAMTOOL, start_listening
from .tape_helpers import (
    ANTHROPIC_ANSWER,
    OPENAI_CALLS,
    anthropic_tape,
    body_bytes,
    openai_tape,
    run_anthropic_loop,
    run_openai_loop,
)
from .test_tape_serve import LISBON_TEXT, anthropic_client, lisbon_calls, openai_client

OPENAI_TEXT = 'Sure! In Japanese, "thank you" is ありがとう (arigatou) 🙏.'


def request_body(path: Path) -> object:
    return json.loads(path.read_text().splitlines()[0])["request"]["body"]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def capture(upstream_tape: Path, out: Path, loop, client) -> dict:
    """Run ``loop`` through the proxy (recording into ``out``) against a served upstream tape."""
    with serving_tape(upstream_tape) as upstream:
        config = ProxyConfig(out=out, upstreams=parse_upstreams([upstream.url]))
        with ProxyThread(config) as proxy:
            got = loop(client(proxy.url))
        assert len(upstream.served) == 2
    return got


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_session_captured_through_the_proxy_replays_offline(tmp_path: Path, provider: str):
    if provider == "openai":
        upstream_files = openai_tape(tmp_path / "upstream")
        loop, client, endpoint = run_openai_loop, openai_client, "/v1/chat/completions"
    else:
        upstream_files = anthropic_tape(tmp_path / "upstream", LISBON_TEXT, lisbon_calls())
        loop, client, endpoint = run_anthropic_loop, anthropic_client, "/v1/messages"
    live = capture(tmp_path / "upstream", tmp_path / "tape", loop, client)

    entries = read_index(tmp_path / "tape")
    assert [e.seq for e in entries] == [1, 2]
    assert all(e.status == 200 and e.end == "complete" for e in entries)
    captured = list_exchanges(tmp_path / "tape")
    assert [p.name for p in captured] == [e.file for e in entries]
    before = snapshot(tmp_path / "tape")

    # offline: no header, no upstream; the same tool calls and text
    with serving_tape(tmp_path / "tape") as server:
        replayed = loop(client(server.url))
        assert server.served == [p.stem for p in captured]
        # byte-exact: each turn's stream is the upstream's, read for read
        for file, upstream_file in zip(captured, upstream_files, strict=True):
            with (
                httpx.Client(timeout=10) as http,
                http.stream("POST", server.url + endpoint, json=request_body(file)) as resp,
            ):
                reads = list(resp.iter_raw())
            assert resp.status_code == 200
            assert b"".join(reads) == body_bytes(file) == body_bytes(upstream_file)
    assert replayed == live
    if provider == "openai":
        assert replayed == {"calls": OPENAI_CALLS, "text": OPENAI_TEXT}
    else:
        assert replayed["calls"] == lisbon_calls() and replayed["text"] == ANTHROPIC_ANSWER
    assert snapshot(tmp_path / "tape") == before  # serving never writes to a tape


def test_a_changed_tool_result_against_a_captured_tape_names_the_difference(tmp_path: Path):
    import openai

    openai_tape(tmp_path / "upstream")
    capture(tmp_path / "upstream", tmp_path / "tape", run_openai_loop, openai_client)
    with (
        serving_tape(tmp_path / "tape") as server,
        pytest.raises(openai.NotFoundError) as info,
    ):
        run_openai_loop(openai_client(server.url), temperature="19°C")
    message = str(info.value)
    assert "closest is 0002-openai-chat-completions-gpt-4o-2024-08-06" in message
    assert "messages[2].content differs:" in message
    assert 'result: 19°C" vs "' in message


def test_record_missing_fills_the_tape_once_and_later_runs_replay_offline(tmp_path: Path):
    upstream_files = openai_tape(tmp_path / "upstream")
    tape = tmp_path / "new-tape"
    lines: list[str] = []
    with serving_tape(tmp_path / "upstream") as upstream:
        with serving_tape(
            tape, record_missing=True, upstream=upstream.url, log=lines.append
        ) as server:
            first = run_openai_loop(openai_client(server.url))
        recorded = server.recorded  # once the server stopped: every exchange has ended
        assert len(upstream.served) == 2
        assert len(recorded) == 2
        # a second run with --record-missing finds everything on the tape: nothing is added
        with serving_tape(tape, record_missing=True, upstream=upstream.url) as server:
            again = run_openai_loop(openai_client(server.url))
        assert server.recorded == []
        assert len(upstream.served) == 2
    assert first == again == {"calls": OPENAI_CALLS, "text": OPENAI_TEXT}
    entries = read_index(tape)
    assert [e.file for e in entries] == [f"{name}.jsonl" for name in recorded]
    assert [p.name for p in list_exchanges(tape)] == [e.file for e in entries]
    for file, upstream_file in zip(list_exchanges(tape), upstream_files, strict=True):
        assert body_bytes(file) == body_bytes(upstream_file)
    assert any("no match: forwarded, recording 0001-" in line for line in lines)
    before = snapshot(tape)

    # offline, no upstream at all
    with serving_tape(tape) as server:
        assert run_openai_loop(openai_client(server.url)) == first
        assert server.served == recorded
    assert snapshot(tape) == before


def test_without_record_missing_a_miss_never_writes(tmp_path: Path):
    import openai

    openai_tape(tmp_path / "tape")
    before = snapshot(tmp_path / "tape")
    with serving_tape(tmp_path / "tape") as server, pytest.raises(openai.NotFoundError):
        run_openai_loop(openai_client(server.url), temperature="5°C")
    assert snapshot(tmp_path / "tape") == before


def test_a_header_naming_no_recording_of_the_tape_is_forwarded_untouched(tmp_path: Path):
    files = openai_tape(tmp_path / "upstream")
    with (
        serving_tape(tmp_path / "upstream") as upstream,
        serving_tape(tmp_path / "tape", record_missing=True, upstream=upstream.url) as server,
    ):
        # the upstream tape holds the named recording; the tape being filled does not
        resp = httpx.post(
            server.url + "/v1/chat/completions",
            json={"model": "any", "stream": True},
            headers={"X-Streamtool-Recording": files[1].name},
        )
        assert resp.status_code == 200
        assert resp.content == body_bytes(files[1])
    [entry] = read_index(tmp_path / "tape")
    header = json.loads((tmp_path / "tape" / entry.file).read_text().splitlines()[0])
    assert header["request"]["headers"]["x-streamtool-recording"] == files[1].name


def test_record_missing_needs_an_upstream(tmp_path: Path):
    with pytest.raises(ValueError, match="upstream"):
        serving_tape(tmp_path, record_missing=True)


def _start_serve(args: list[str]):
    proc, first, url = start_listening(
        [*STREAMTOOL, "serve", *args, "--port", "0", "--speed", "max"]
    )
    assert first.startswith("streamtool: serving "), first
    return proc, url


def _stop(proc) -> str:
    proc.terminate()
    _, rest = proc.communicate(timeout=15)
    return rest


def test_the_serve_command_records_missing_exchanges_then_serves_them(tmp_path: Path):
    openai_tape(tmp_path / "upstream")
    tape = tmp_path / "tape"
    with serving_tape(tmp_path / "upstream") as upstream:
        proc, url = _start_serve([str(tape), "--record-missing", "--upstream", upstream.url])
        try:
            first = run_openai_loop(openai_client(url))
        finally:
            log = _stop(proc)
    assert first == {"calls": OPENAI_CALLS, "text": OPENAI_TEXT}
    names = [e.file for e in read_index(tape)]
    assert len(names) == 2 and names[0].startswith("0001-openai-chat-completions-")
    assert f"recorded {names[1]} (200, complete)" in log
    proc, url = _start_serve([str(tape)])
    try:
        assert run_openai_loop(openai_client(url)) == first
    finally:
        log = _stop(proc)
    assert f"-> {Path(names[1]).stem} (200)" in log


@pytest.mark.parametrize(
    "args, message",
    [
        (["--record-missing"], "--record-missing needs --upstream URL"),
        (["--upstream", "http://127.0.0.1:9"], "--upstream is only used with --record-missing"),
        (["--record-missing", "--upstream", "ftp://x"], "not an http(s) or ws(s) URL"),
    ],
)
def test_record_missing_options_are_checked(tmp_path: Path, args: list[str], message: str):
    from typer.testing import CliRunner

    from streamtool.cli.main import app

    result = CliRunner().invoke(app, ["serve", str(tmp_path / "tape"), *args])
    assert result.exit_code == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "tape").exists()


def test_a_failed_upstream_answer_is_passed_on_but_not_kept(tmp_path: Path):
    import openai

    from streamtool.core.exchange.playback import Playback
    from streamtool.core.net.server import serving

    from .serve_helpers import recording

    limited = recording("openai-http-429-rate-limit")
    lines: list[str] = []
    with (
        serving([limited], Playback(speed=None)) as upstream,
        serving_tape(
            tmp_path / "tape", record_missing=True, upstream=upstream.url, log=lines.append
        ) as server,
    ):
        for _ in range(2):  # the retry goes upstream again: the failure was not pinned
            with pytest.raises(openai.RateLimitError):
                run_openai_loop(openai_client(server.url))
    assert server.recorded == []
    # nothing kept; at most the tape's hidden lock, counter and .gitignore: no reservation left
    hidden = (".lock", ".seq", ".gitignore")
    assert [p.name for p in (tmp_path / "tape").iterdir() if p.name not in hidden] == []
    assert sum("no match: forwarded, recording 000" in line for line in lines) == 2
    assert sum("not kept on the tape" in line and "HTTP 429" in line for line in lines) == 2
