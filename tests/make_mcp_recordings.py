"""Records the bundled MCP sessions: a real MCP server (the ``mcp`` SDK's own, ``tests/mcp_app.py``)
behind ``streamtool proxy``, driven by the ``mcp`` SDK's client (``tests/clients/mcp_client.py``).

Run from the project root with the 2.x line of ``mcp`` installed: ``python -m
tests.make_mcp_recordings`` (then ``streamtool check --update recordings/`` for their golden
files). Each session is a tape (a folder of recordings and its index) in ``recordings/``:

- ``mcp-weather-2025-11-25``: the handshake and a session, priming events and SSE event ids,
  progress and log notifications, an elicitation in the middle of a call, the GET stream, DELETE;
- ``mcp-weather-2026-07-28``: stateless (``server/discover``, ``Mcp-Method``/``Mcp-Name``
  headers, ``resultType``), the booking's ``input_required`` round trip;
- ``mcp-weather-resumed-stream``: a call whose stream the server closes after its priming event
  and the GET that resumes it with ``Last-Event-ID``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from streamtool.core.net.proxy import ProxyConfig, ProxyThread, parse_upstreams

from .mcp_app import mcp_server

ROOT = Path(__file__).resolve().parent.parent
CLIENT = ROOT / "tests" / "clients" / "mcp_client.py"
SESSIONS = {
    "mcp-weather-2025-11-25": {"MCP_CLIENT": "session"},
    "mcp-weather-2026-07-28": {"MCP_CLIENT": "client", "MCP_MODE": "auto"},
    "mcp-weather-resumed-stream": {"MCP_CLIENT": "session", "MCP_RESUME": "1"},
}


def record(name: str, env: dict[str, str]) -> None:
    tape = ROOT / "recordings" / name
    shutil.rmtree(tape, ignore_errors=True)
    tape.mkdir(parents=True)
    with mcp_server() as upstream:
        config = ProxyConfig(out=tape, upstreams=parse_upstreams([upstream.url]))
        with ProxyThread(config) as proxy:
            run = subprocess.run(
                [sys.executable, str(CLIENT)],
                env={**os.environ, **env, "STREAMTOOL_BASE_URL": proxy.url},
                capture_output=True,
                text=True,
                timeout=60,
            )
    if run.returncode != 0:
        raise SystemExit(f"{name}: the client failed: {run.stderr.strip()[-500:]}")
    print(f"{name}: {len(list(tape.glob('0*.jsonl')))} exchanges")


if __name__ == "__main__":
    for session_name, settings in SESSIONS.items():
        record(session_name, settings)
