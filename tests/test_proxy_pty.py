"""``streamtool proxy --view tree|journal`` in a real pseudo-terminal: the journal's row for an
exchange, the live tree of the newest stream while it streams, Ctrl-C leaving the journal."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from streamtool.core.exchange.playback import Playback
from streamtool.core.net.listen import bind
from streamtool.core.net.server import serving

from .serve_helpers import recording
from .test_tree_pty import run_in_pty


def free_port() -> int:
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    sock.close()
    return port


def client_when_up(port: int, done: dict) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with (
                httpx.Client(timeout=20) as client,
                client.stream(
                    "POST",
                    f"http://127.0.0.1:{port}/v1/chat/completions",
                    json={"model": "gpt-test", "stream": True, "messages": []},
                ) as resp,
            ):
                done["body"] = b"".join(resp.iter_raw())
                return
        except httpx.ConnectError:
            time.sleep(0.1)


@pytest.mark.parametrize("view", ["tree", "journal"])
def test_live_view_in_a_terminal(tmp_path, view: str) -> None:
    rec = recording("openrouter-keepalive-comments-tool-call")  # 2.48 s recorded
    out = tmp_path / "caps"
    port = free_port()
    done: dict = {}
    with serving([rec], Playback(speed=2.0)) as up:
        thread = threading.Thread(target=client_when_up, args=(port, done))
        thread.start()
        run = run_in_pty(
            ["proxy", "--port", str(port), "--upstream", up.url, "--out", str(out), "--view", view],
            cols=160,
            # Ctrl-C once the client has its answer (Ctrl-C cuts a stream in progress)
            interrupt_when=lambda: "body" in done,
            interrupt_after=20.0,
            timeout=40,
        )
        thread.join(20)
    assert done.get("body"), "the client got no answer through the proxy"
    assert run.code == 130, run.raw[-600:]  # Ctrl-C, as every command
    assert b"Traceback" not in run.raw
    [f] = sorted(out.glob("0*.jsonl"))
    screen = "\n".join(run.screen)
    # the final journal: one row with the exchange's figures
    row = next(line for line in run.screen if f.name in line)
    assert " chat " in row and "gpt-test" in row and " 200 " in row and " ok " in row
    assert "1 exchange recorded" in screen
    frames = ["\n".join(lines) for lines, _ in run.frames()]
    streaming = [frame for frame in frames if "streaming" in frame]
    assert streaming, "no frame showed the exchange while it streamed"
    if view == "tree":
        assert any("tool_call list_files" in frame for frame in frames)
    else:
        assert not any("tool_call list_files" in frame for frame in frames)
