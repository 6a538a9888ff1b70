"""A plugin adds a whole wire API through the ``streamtool.apis`` entry point.

The package is the one docs/plugins.md shows (each file a code block titled by its path), taken
from the page as it is, installed into a fresh virtual environment (which sees this streamtool
and its dependencies through a ``.pth`` line, so nothing is downloaded) and used as a user who
installed it would: detection and ``replay``, ``serve`` answering its route, the proxy routing
and recording it, ``replay --emit``, ``mutate`` and ``conform``, each a real process, on real
sockets on 127.0.0.1.
"""

from __future__ import annotations

import json
import re
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import RECORDINGS, ROOT
from .helpers import pip_install_into, venv_seeing_our_packages
from .serve_helpers import start_listening

PAGE = ROOT / "docs" / "plugins.md"
PARTS = ("__init__", "decoder", "detect", "request", "encoder", "errors", "mutations")

# a Lines stream: text, then two tool calls, the second one's arguments over two lines
LINES = [
    {"kind": "text", "text": "Let me "},
    {"kind": "text", "text": "check."},
    {"kind": "call", "id": "c1", "name": "get_time", "args": '{"tz": "CET"}'},
    {"kind": "call", "id": "c2", "name": "get_weather", "args": '{"city":'},
    {"kind": "call", "id": "c2", "args": ' "Paris"}'},
    {"kind": "end", "finish": "tool_calls", "usage": {"in": 12, "out": 9}},
]
BODY = "".join(json.dumps(line) + "\n" for line in LINES).encode()
REQUEST = {
    "model": "lines-1",
    "messages": [{"role": "user", "content": "Time and weather in Paris?"}],
    "tools": [
        {"name": "get_time", "description": "", "parameters": {"type": "object"}},
        {"name": "get_weather", "description": "", "parameters": {"type": "object"}},
    ],
    "stream": True,
}
# what a replay of it means
MEANING = {
    "converter": "lines",
    "text": "Let me check.",
    "reasoning": "",
    "invocations": [
        {"id": "c1", "name": "get_time", "arguments": {"tz": "CET"}},
        {"id": "c2", "name": "get_weather", "arguments": {"city": "Paris"}},
    ],
    "finish_reason": "tool_calls",
    "finish_class": "tool_calls",
    "usage": {"input_tokens": 12, "output_tokens": 9},
    "errors": [],
    "quirks": [],
}


def _page_files() -> dict[str, str]:
    """The package's files as the page shows them: path -> text."""
    text = PAGE.read_text(encoding="utf-8")
    return dict(re.findall(r'```\w+ title="([^"]+)"\n(.*?)```', text, re.S))


def _page_client() -> str:
    found = re.search(r"```python\n(# lines_client\.py\n.*?)```", PAGE.read_text("utf-8"), re.S)
    assert found, "the plugin page lost its conform client"
    return found.group(1)


def test_the_page_shows_the_whole_package() -> None:
    files = _page_files()
    assert set(files) == {"pyproject.toml", *(f"streamtool_lines/{p}.py" for p in PARTS)}
    project = files["pyproject.toml"]
    assert '[project.entry-points."streamtool.apis"]\nlines = "streamtool_lines:API"' in project
    assert 'lines = "streamtool_lines.decoder:LinesConverter"' in project


@pytest.fixture(scope="module")
def python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv that sees this streamtool, with the page's package installed."""
    base = tmp_path_factory.mktemp("lines-plugin")
    src = base / "src"
    for name, text in _page_files().items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text, encoding="utf-8")
    env_dir = base / "venv"
    python = venv_seeing_our_packages(env_dir)
    # beside it, a broken package: an API registered whose module does not exist (every
    # command here must go on working, the broken one left out)
    broken = base / "broken"
    broken.mkdir()
    (broken / "pyproject.toml").write_text(BROKEN_PROJECT, encoding="utf-8")
    for package in (src, broken):
        pip_install_into(python, package)
    return python


BROKEN_PROJECT = """\
[build-system]
requires = ["setuptools>=77"]
build-backend = "setuptools.build_meta"

[project]
name = "streamtool-broken-api"
version = "0.1.0"

[project.entry-points."streamtool.apis"]
broken = "streamtool_no_such_module:API"

[tool.setuptools]
py-modules = []
"""


def _recording(path: Path, body: bytes = BODY, *, header: bool = True) -> Path:
    """A recording of the Lines API, one line per read; a raw body (no header) when asked."""
    if not header:
        path.write_bytes(body)
        return path
    records: list[dict[str, Any]] = [
        {
            "type": "header",
            "format": "streamtool-recording",
            "version": 1,
            "provider": "lines",
            "api": "lines",
            "recorded_at": "2026-01-01T00:00:00Z",
            "request": {
                "method": "POST",
                "url": "https://api.lines.example/v1/lines",
                "headers": {"content-type": "application/json"},
                "body": REQUEST,
            },
            "response": {"status": 200, "headers": {"content-type": "application/x-ndjson"}},
        }
    ]
    t = 0.0
    for line in body.decode().splitlines(keepends=True):
        t += 0.01
        records.append({"type": "chunk", "t": round(t, 3), "text": line})
    records.append({"type": "end", "t": round(t + 0.01, 3), "reason": "complete", "error": None})
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    box = tmp_path_factory.mktemp("lines-work")
    _recording(box / "lines.jsonl")
    return box


def streamtool(python: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(python), "-m", "streamtool.cli", *args], cwd=cwd, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done


def summary(python: Path, path: Path) -> dict[str, Any]:
    """``replay --format json`` of a recording, no --converter given."""
    done = streamtool(python, "replay", str(path), "--format", "json", cwd=path.parent)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def meaning(result: dict[str, Any]) -> dict[str, Any]:
    return {key: result[key] for key in MEANING}


@pytest.fixture(scope="module")
def served(python: Path, work: Path) -> Iterator[str]:
    """``serve`` of the Lines recording: its origin."""
    command = [str(python), "-m", "streamtool.cli", "serve", str(work / "lines.jsonl")]
    proc, _, origin = start_listening([*command, "--port", "0", "--speed", "max"])
    yield origin
    proc.terminate()
    proc.wait(timeout=10)


def post(url: str) -> tuple[str, bytes]:
    """POST the Lines request: the answer's content type and body."""
    request = urllib.request.Request(
        url, data=json.dumps(REQUEST).encode(), headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.headers["content-type"], response.read()


def test_detection_and_replay(python: Path, work: Path) -> None:
    # the recording's header names the API; a raw body is known by its first line
    assert meaning(summary(python, work / "lines.jsonl")) == MEANING
    raw = _recording(work / "capture.ndjson", header=False)
    assert meaning(summary(python, raw)) == MEANING


def test_serve_answers_the_route_byte_for_byte(served: str) -> None:
    content_type, body = post(served + "/v1/lines")
    assert content_type == "application/x-ndjson"
    assert body == BODY


def test_the_proxy_routes_and_records_the_api(python: Path, work: Path, served: str) -> None:
    tape = work / "captures"
    command = [str(python), "-m", "streamtool.cli", "proxy", "--view", "none", "-o", str(tape)]
    proc, _, origin = start_listening([*command, "--port", "0", "--upstream", f"lines={served}"])
    try:
        assert post(origin + "/v1/lines") == ("application/x-ndjson", BODY)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    [recorded] = [p for p in tape.glob("*.jsonl") if p.name != "index.jsonl"]
    header = json.loads(recorded.read_text(encoding="utf-8").splitlines()[0])
    assert (header["api"], header["provider"]) == ("lines", "lines")
    assert header["request"]["url"] == served + "/v1/lines"
    assert meaning(summary(python, recorded)) == MEANING


def test_emit_writes_any_recording_as_the_api(python: Path, work: Path) -> None:
    original = RECORDINGS / "openai-parallel-tool-calls.jsonl"
    done = streamtool(python, "replay", str(original), "--emit", "lines", cwd=work)
    emitted = work / "emitted.ndjson"
    emitted.write_text(done.stdout, encoding="utf-8")
    kinds = {json.loads(line)["kind"] for line in done.stdout.splitlines()}
    assert kinds == {"call", "end"}
    before, after = summary(python, original), summary(python, emitted)
    assert after["converter"] == "lines" and before["converter"] == "openai-chat"
    for key in ("text", "reasoning", "invocations", "finish_class", "errors"):
        assert after[key] == before[key], key
    assert after["quirks"] == []  # an encoder writes clean streams (the original's quirks stay)
    assert before["invocations"] and before["finish_class"] == "tool_calls"
    counts = ("input_tokens", "output_tokens")
    assert after["usage"] == {k: before["usage"][k] for k in counts}


def test_mutate_applies_a_fault_by_the_api_rules(python: Path, work: Path) -> None:
    listed = streamtool(python, "mutate", str(work / "lines.jsonl"), "--list", cwd=work).stdout
    applicable = listed.split("not applicable")[0]
    for quirk in ("provider_error", "model_tool_not_offered", "model_stream_cut_mid_call"):
        assert quirk in applicable, listed
    out = work / "fault.jsonl"
    streamtool(python, "mutate", str(work / "lines.jsonl"), "-q", "model_tool_not_offered",
               "-o", str(out), cwd=work)  # fmt: skip
    result = summary(python, out)
    assert [q["id"] for q in result["quirks"]] == ["model_tool_not_offered"]
    assert [i["name"] for i in result["invocations"]] == ["get_time_v2", "get_weather"]
    assert result["text"] == MEANING["text"]


def test_conform_checks_a_client_of_the_api(python: Path, work: Path) -> None:
    client = work / "lines_client.py"
    client.write_text(_page_client(), encoding="utf-8")
    done = streamtool(python, "conform", "-r", str(work / "lines.jsonl"), "--", str(python),
                      str(client), cwd=work)  # fmt: skip
    assert "5 passed, 0 failed, 0 not applicable" in done.stdout, done.stdout


def test_a_broken_plugin_is_left_out_and_named(python: Path, work: Path) -> None:
    # every other test of this file runs with it installed; converters names what was left out
    done = streamtool(python, "converters", cwd=work)
    assert done.returncode == 0, done.stderr
    assert "APIs that could not be loaded (left out):" in done.stdout
    line = next(x for x in done.stdout.splitlines() if x.strip().startswith("broken "))
    assert "ModuleNotFoundError" in line and "streamtool_no_such_module" in line


def test_serve_refuses_in_the_api_error_shape(served: str) -> None:
    # a request for no stream: refused in the shape the plugin's errors part gives
    request = urllib.request.Request(
        served + "/v1/lines",
        data=json.dumps({**REQUEST, "stream": False}).encode(),
        headers={"content-type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=30)
    body = json.loads(info.value.read())
    assert info.value.code >= 400 and body["kind"] == "error" and body["message"]


def test_record_builds_the_api_request(python: Path, work: Path, served: str) -> None:
    # the plugin's request part builds what record sends; the answer replays to the meaning
    out = work / "recorded.jsonl"
    done = streamtool(
        python,
        "record",
        "-p",
        "lines",
        "--base-url",
        served,
        "--model",
        "m",
        "--prompt",
        "hi",
        "-o",
        str(out),
        "--view",
        "none",
        cwd=work,
    )
    assert done.returncode == 0, done.stderr
    header = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert header["api"] == "lines" and header["request"]["url"] == served + "/v1/lines"
    assert header["request"]["body"]["stream"] is True
    assert meaning(summary(python, out)) == MEANING
