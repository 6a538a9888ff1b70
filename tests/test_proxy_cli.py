"""``streamtool proxy`` as a command: port 0, the journal off a terminal, Ctrl-C and kill -9
leave finished / readable recordings, bad options are one line and exit 2."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import httpx
import openai

from streamtool.core.exchange.playback import Playback
from streamtool.core.net.listen import ServerThread
from streamtool.core.net.server import serving

from .proxy_helpers import Upstream
from .serve_helpers import STREAMTOOL, chunks_of, read_all, recording, start_listening


def start(args: list[str]) -> tuple[subprocess.Popen[str], str]:
    proc, _, origin = start_listening(
        [*STREAMTOOL, "proxy", "--port", "0", *args], env={"COLUMNS": "200"}
    )
    return proc, origin


def test_port_zero_journal_and_ctrl_c(tmp_path: Path) -> None:
    rec = recording("openai-parallel-tool-calls")
    out = tmp_path / "caps"
    with serving([rec], Playback(speed=None)) as up:
        proc, origin = start(["--upstream", up.url, "--out", str(out), "--view", "journal"])
        try:
            client = openai.OpenAI(base_url=origin + "/v1", api_key="sk-x", max_retries=0)
            chunks = list(
                client.chat.completions.create(model="gpt-test", messages=[], stream=True)
            )
            time.sleep(0.6)  # the journal prints an exchange's line once it ended
        finally:
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=20)
    assert chunks
    assert proc.returncode == 130, err  # Ctrl-C, as every command
    [f] = sorted(out.glob("0*.jsonl"))
    assert b"".join(chunks_of(f)) == b"".join(chunks_of(rec))  # cut as the reads came
    row = next(line for line in err.splitlines() if f.name in line)
    assert "status=200" in row and "end=ok" in row and "tools=2" in row, row
    assert "model=gpt-test" in row and "API=chat " in row
    assert "1 exchange recorded" in err
    assert "Traceback" not in err


def test_kill_9_loses_nothing_received(tmp_path: Path) -> None:
    upstream = Upstream()
    out = tmp_path / "caps"
    with ServerThread(upstream.app) as up:
        proc, origin = start(
            ["--upstream", f"{up.url}/endless", "--out", str(out), "--view", "none"]
        )
        received = bytearray()
        try:
            with (
                httpx.Client(timeout=10) as client,
                client.stream(
                    "POST", origin + "/v1/chat/completions", json={"model": "m", "stream": True}
                ) as resp,
            ):
                for data in resp.iter_raw():
                    received += data
                    if len(received) > 500:
                        proc.send_signal(signal.SIGKILL)  # mid-stream, the client still reading
                        proc.wait(10)
                        break
        finally:
            proc.kill()
            proc.wait(10)
    [f] = sorted(out.glob("0*.jsonl"))
    header, chunks, end = read_all(f)
    assert end is None  # cut off: no end record, and readable
    assert header.request["body"] == {"model": "m", "stream": True}
    assert b"".join(chunks).startswith(bytes(received))


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*STREAMTOOL, "proxy", *args], capture_output=True, text=True, timeout=30)


def test_bad_options_are_one_line_and_exit_2(tmp_path: Path) -> None:
    a_file = tmp_path / "taken"
    a_file.write_text("mine\n")
    for args, words in (
        (["--upstream", "nowhere"], "not an http(s) or ws(s) URL"),
        (["--upstream", "bogus=http://127.0.0.1:1"], "unknown API"),
        (["--view", "fancy"], "--view"),
        (["--transform", "magic"], "--transform"),
        (["--out", str(a_file)], str(a_file)),
    ):
        run = run_cli("--port", "0", *args)
        assert run.returncode == 2, (args, run.stderr)
        lines = run.stderr.strip().splitlines()
        assert len(lines) == 1 and words in lines[0], (args, run.stderr)
        assert "Traceback" not in run.stderr
    assert a_file.read_text() == "mine\n"


def test_a_failing_live_view_says_so_once_and_the_proxy_goes_on(capsys) -> None:
    """A view that cannot draw stops with one line on stderr; it never raises into the proxy."""
    import io
    import threading

    from rich.console import Console

    from streamtool.cli import journal as journal_mod
    from streamtool.core.net.forward import Exchange

    drawn = threading.Event()

    class Broken(journal_mod.Journal):
        def _print_ended(self) -> None:
            drawn.set()
            raise ValueError("cannot draw this row")

    view = Broken(console=Console(file=io.StringIO()), live=False)
    with view:
        view.observer.started(Exchange(method="POST", path="/v1/chat/completions"))
        assert drawn.wait(5)
        assert view._thread is not None
        view._thread.join(5)
        assert not view._thread.is_alive()  # the refresh thread ended instead of spinning
    err = capsys.readouterr().err
    assert err.count("the live view stopped") == 1
    assert "ValueError: cannot draw this row" in err
    assert view.failed == "ValueError: cannot draw this row"


def test_the_banner_points_each_sdk_and_proxied_preset_at_the_proxy() -> None:
    """What the proxy prints at start comes from the API rows (an SDK's base-URL variable and
    its official base path) and the presets the proxy routes."""
    from streamtool.cli.proxy import _pointers

    assert _pointers("http://127.0.0.1:9") == [
        ("OpenAI SDK / Codex", "OPENAI_BASE_URL=http://127.0.0.1:9/v1"),
        ("Anthropic / Claude", "ANTHROPIC_BASE_URL=http://127.0.0.1:9"),
        ("Gemini", "GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:9"),
        ("OpenRouter", "http://127.0.0.1:9/api/v1"),
    ]
