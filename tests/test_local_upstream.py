"""Recording through a server on this machine needs no API key: ``record``, the proxy and
``serve --record-missing`` run with no key of any provider in their environment, against an
upstream on 127.0.0.1 or ``localhost``, and the request they send carries no credential.
(The pytest plugin's ``--stream-tape-upstream``: tests/test_pytest_plugin_options.py.)"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path

import httpx
import pytest

from streamtool.core.exchange.playback import Playback
from streamtool.core.net.server import serving

from .serve_helpers import STREAMTOOL, body_of, record_args, recording, start_listening

OPENAI = recording("openai-text-usage-chunk-utf8-split")
ANTHROPIC = recording("anthropic-text-then-tool-use")
KEYS = re.compile(r"(API_KEY|_KEY|_TOKEN)$|^(AWS_|OPENAI_|ANTHROPIC_|GOOGLE_|GEMINI_|CO_)")


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if KEYS.search(name):
            monkeypatch.delenv(name)


def sent_headers(recorded: Path) -> dict[str, str]:
    header = json.loads(recorded.read_text(encoding="utf-8").splitlines()[0])
    return {k.lower(): v for k, v in header["request"]["headers"].items()}


def test_record_from_localhost_and_127_0_0_1_without_a_key(tmp_path: Path) -> None:
    with serving([OPENAI, ANTHROPIC], Playback(speed=None)) as upstream:
        port = upstream.url.rsplit(":", 1)[1]
        for provider, base, rec in (
            ("openai-chat", f"http://127.0.0.1:{port}/v1", OPENAI),
            ("anthropic", f"http://localhost:{port}", ANTHROPIC),
        ):
            out = tmp_path / f"{provider}.jsonl"
            done = subprocess.run(
                [*STREAMTOOL, "record", *record_args(base, provider=provider), "-o", str(out),
                 "--view", "none"],
                capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            assert body_of(out) == body_of(rec)
            assert not {"authorization", "x-api-key"} & set(sent_headers(out))
    # a remote host still asks for the key, naming the variable
    done = subprocess.run(
        [*STREAMTOOL, "record", *record_args("http://192.0.2.1:9/v1"), "-o",
         str(tmp_path / "remote.jsonl")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and "no API key: set OPENAI_API_KEY" in done.stderr


@pytest.mark.parametrize("command", ["proxy", "serve"])
def test_proxy_and_serve_record_missing_record_from_a_local_upstream_without_a_key(
    tmp_path: Path, command: str
) -> None:
    tape = tmp_path / "tape"
    with serving([OPENAI], Playback(speed=None)) as upstream:
        local = upstream.url.replace("127.0.0.1", "localhost")
        args = (
            ["proxy", "--view", "none", "--upstream", local, "-o", str(tape)]
            if command == "proxy"
            else ["serve", str(tape), "--record-missing", "--upstream", local]
        )
        proc, _, origin = start_listening([*STREAMTOOL, *args, "--port", "0"])
        try:
            body = {
                "model": "gpt-4o",
                "stream": True,
                "messages": [{"role": "user", "content": "a"}],
            }
            reply = httpx.post(origin + "/v1/chat/completions", json=body, timeout=20)
            assert reply.status_code == 200 and reply.content == body_of(OPENAI)
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)
    (recorded,) = tape.glob("0001-*.jsonl")
    assert body_of(recorded) == body_of(OPENAI)
