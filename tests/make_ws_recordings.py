"""Records the bundled WebSocket sessions (``recordings/realtime/``, a tape) through the proxy.

Run from the project root: ``python -m tests.make_ws_recordings`` (then ``streamtool check
--update --create-missing recordings/realtime`` for their golden files). Each session is the
openai SDK's own client (``tests/clients/realtime_client.py``, ``responses_ws_client.py``, or the
SDK driven here) talking through ``streamtool proxy`` to a local ``websockets`` upstream that
speaks the documented GA events (``tests/ws_upstream.py``); the proxy writes the tape.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import openai

from streamtool.core.net.proxy import ProxyConfig, ProxyThread, parse_upstreams

from .ws_upstream import Upstream

ROOT = Path(__file__).resolve().parent.parent
TAPE = ROOT / "recordings" / "realtime"
CLIENTS = Path(__file__).resolve().parent / "clients"
KEY = "sk-streamtool-example-0123456789abcdef"


def run_client(script: str, proxy: str, **env: str) -> None:
    environ = {**os.environ, "OPENAI_BASE_URL": proxy + "/v1", "OPENAI_API_KEY": KEY, **env}
    subprocess.run([sys.executable, str(CLIENTS / script)], env=environ, check=True)


def refused_beta(proxy: str) -> None:
    """A client of the retired beta: its OpenAI-Beta header gets an error and a close 4000."""
    client = openai.OpenAI(api_key=KEY, base_url=proxy + "/v1", max_retries=0)
    manager = client.realtime.connect(
        model="gpt-realtime", extra_headers={"OpenAI-Beta": "realtime=v1"}
    )
    try:
        with manager as conn:
            for event in conn:
                print(event.type, file=sys.stderr)
    except Exception as exc:  # the close 4000, as the SDK raises it
        print(f"refused: {exc}", file=sys.stderr)


def main() -> None:
    shutil.rmtree(TAPE, ignore_errors=True)
    TAPE.mkdir(parents=True)
    with Upstream(delay=0.02) as audio, Upstream(delay=0.02, rate_limits_first=True) as text:
        for upstream, record in (
            (audio, lambda p: run_client("realtime_client.py", p)),
            (text, lambda p: run_client("realtime_client.py", p, REALTIME_CLIENT_MODALITY="text")),
            (audio, refused_beta),
            (audio, lambda p: run_client("responses_ws_client.py", p)),
        ):
            config = ProxyConfig(out=TAPE, upstreams=parse_upstreams([upstream.url]))
            with ProxyThread(config) as proxy:
                record(proxy.url)
    for hidden in TAPE.glob(".*"):
        hidden.unlink()
    print("\n".join(sorted(p.name for p in TAPE.iterdir())))


if __name__ == "__main__":
    main()
