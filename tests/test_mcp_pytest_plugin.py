"""The pytest plugin with an MCP server: ``stream_tape.base_url`` + the server's path is the MCP
server in every mode. A real pytest run of a project whose test drives the ``mcp`` SDK's
client records the session once from a real MCP server (``--stream-tape-upstream``), then
replays it offline, cut at random points, with a session's fault applied; a request the
session did not make fails the test with the tape's message.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from streamtool.core.recording.tape_index import read_index

from .mcp_app import mcp_server
from .tape_helpers import notes_of, run_child_pytest

CLIENT = Path(__file__).parent / "clients" / "mcp_client.py"
SAMPLE = """
import asyncio
import importlib.util
import json
import os

spec = importlib.util.spec_from_file_location("mcp_client", {client!r})
client = importlib.util.module_from_spec(spec)
spec.loader.exec_module(client)


def test_weather_desk(stream_tape):
    answer = asyncio.run(client.run_session(stream_tape.base_url + "/mcp"))
    with open(os.environ["SAMPLE_NOTES"], "a") as notes:
        note = {{"answer": answer, "exchanges": stream_tape.exchanges,
                 "recording": stream_tape.recording, "mutated": stream_tape.mutated}}
        notes.write(json.dumps(note) + "\\n")
    assert answer["tool_calls"][0]["name"] == "add"
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "test_desk.py").write_text(SAMPLE.format(client=str(CLIENT)), encoding="utf-8")
    return root


def run_pytest(
    project: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], list[dict]]:
    notes = project / "notes.jsonl"
    notes.unlink(missing_ok=True)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    environ.update(SAMPLE_NOTES=str(notes), **(env or {}))
    args = ["-W", "ignore:The logging capability is deprecated", *args]
    return run_child_pytest(project, args, environ), notes_of(notes)


def test_record_an_mcp_session_once_then_replay_it_offline(project: Path) -> None:
    tape = project / "tapes" / "test_desk" / "test_weather_desk"
    with mcp_server() as upstream:
        proc, notes = run_pytest(
            project, "--stream-tape-mode=once", f"--stream-tape-upstream={upstream.url}"
        )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [recorded] = notes
    assert recorded["recording"] is True
    entries = read_index(tape)  # in the order the exchanges ended (the GET stream's is late)
    methods = [(e.method, e.model) for e in entries]
    assert methods[0] == ("POST", "initialize") and len(entries) == 12
    assert ("GET", "stream") in methods and ("DELETE", "delete") in methods
    text = recorded["answer"]["text"]

    # the server is gone: replayed, the answer is the same
    proc, notes = run_pytest(project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [replayed] = notes
    assert replayed["recording"] is False and replayed["answer"]["text"] == text
    assert replayed["exchanges"][0] == entries[0].file.removesuffix(".jsonl")

    # cut at random points, and with a session's fault: the client resumes the dropped stream
    proc, notes = run_pytest(
        project,
        "--stream-tape-rechunk=3",
        "--stream-tape-mutate=mcp_stream_dropped_after_priming",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [faulty] = notes
    assert faulty["answer"]["text"] == text
    assert list(faulty["mutated"].values()) == [["mcp_stream_dropped_after_priming"]]

    # a request the recorded session did not make fails the test with the tape's message
    source = project / "test_desk.py"
    changed = CLIENT.read_text().replace('{"a": 2, "b": 3}', '{"a": 2, "b": 4}')
    other = project / "changed_client.py"
    other.write_text(changed, encoding="utf-8")
    source.write_text(source.read_text().replace(str(CLIENT), str(other)))
    proc, _ = run_pytest(project)
    assert proc.returncode == 1
    assert "stream_tape: a request matched no recorded exchange" in proc.stdout
    assert "params.arguments.b differs: 4 vs 3" in proc.stdout
