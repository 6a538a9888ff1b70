"""The pytest plugin's volatile request fields (``--stream-tape-match-ignore``, the marker's
``match_ignore``) and recording from a server on this machine without an API key.

A sample project whose requests carry a fresh id (and a time) on every run is recorded once from
a local upstream, with no key in the environment, by a real pytest run in a subprocess; then
replayed with and without the fields ignored.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from streamtool.core.exchange.playback import Playback
from streamtool.core.net.server import serving

from .serve_helpers import body_of, recording
from .tape_helpers import CHILD_PYTEST

SAMPLE = """
import os
import time
import uuid

import pytest
from openai import OpenAI


def ask(extra):
    client = OpenAI(max_retries=0)  # OPENAI_BASE_URL and the key come from the environment
    messages = [{"role": "user", "content": "hi"}]
    with client.chat.completions.stream(
        model="gpt-4o-mini", messages=messages, extra_body=extra
    ) as stream:
        return stream.get_final_completion().choices[0].message.content


def test_request_id(stream_tape):
    assert ask({"request_id": uuid.uuid4().hex})


@pytest.mark.stream_tape(match_ignore=["trace.id", "trace.at"])
def test_marker(stream_tape):
    trace = {"id": uuid.uuid4().hex, "at": time.time(), "kept": os.environ.get("KEPT", "same")}
    assert ask({"trace": trace})
    assert len(stream_tape.exchanges) == 1
"""

# no key of any provider in the environment of the runs (nor a base URL)
KEYS = re.compile(r"(API_KEY|_KEY|_TOKEN)$|^(AWS_|OPENAI_|ANTHROPIC_|GOOGLE_|GEMINI_|PYTEST_)")


def run_pytest(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not KEYS.search(k)}
    return subprocess.run(
        [*CHILD_PYTEST, "-q", *args],
        cwd=project,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=180,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "test_sample.py").write_text(SAMPLE, encoding="utf-8")
    return root


def test_volatile_fields_are_ignored_by_option_or_marker_and_no_key_is_needed(
    project: Path,
) -> None:
    tapes = project / "tapes" / "test_sample"
    rec = recording("openai-text-usage-chunk-utf8-split")
    with serving([rec], Playback(speed=None)) as upstream:
        # recorded from a server on this machine: no key in the environment
        proc = run_pytest(
            project, "--stream-tape-mode=once", f"--stream-tape-upstream={upstream.url}"
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in ("test_request_id", "test_marker"):
        (recorded,) = (tapes / name).glob("0001-*.jsonl")
        assert body_of(recorded) == body_of(rec)  # the upstream's stream
        body = json.loads(recorded.read_text().splitlines()[0])["request"]["body"]
        assert "request_id" in body or "trace" in body  # the fields are recorded as sent

    # replayed: the fresh request id matches nothing; the marker's fields are ignored
    proc = run_pytest(project)
    assert proc.returncode == 1
    assert "1 failed, 1 passed" in proc.stdout, proc.stdout
    assert "FAILED test_sample.py::test_request_id" in proc.stdout
    assert "request_id" in proc.stdout  # the tape's miss names the field that differs

    # the option ignores it for every tape
    proc = run_pytest(project, "--stream-tape-match-ignore=request_id")
    assert proc.returncode == 0 and "2 passed" in proc.stdout, proc.stdout + proc.stderr

    # only the named fields: a change of another one of the marker's test still fails it
    proc = run_pytest(project, "--stream-tape-match-ignore=request_id", KEPT="changed")
    assert proc.returncode == 1 and "FAILED test_sample.py::test_marker" in proc.stdout
    assert "trace.kept" in proc.stdout


def test_a_bad_field_path_is_a_usage_error_or_fails_the_test(project: Path) -> None:
    proc = run_pytest(project, "--stream-tape-match-ignore=messages..content")
    assert proc.returncode == 4
    assert "--stream-tape-match-ignore: 'messages..content' is not a field path" in proc.stderr
    source = project / "test_sample.py"
    source.write_text(source.read_text().replace('"trace.at"]', '"trace[x]"]'))
    proc = run_pytest(project, "-k", "marker")
    assert proc.returncode == 1
    assert "stream_tape: stream_tape(match_ignore=...): 'trace[x]' is not a field path" in (
        proc.stdout
    )
    proc = run_pytest(project, "--help")
    assert "--stream-tape-match-ignore=PATH" in proc.stdout


def test_a_remote_upstream_still_needs_the_key(project: Path) -> None:
    """Only a server on this machine gets the placeholder key: an SDK recording from anywhere
    else asks for the user's own (and nothing is sent)."""
    proc = run_pytest(
        project, "-k", "request_id", "--stream-tape-mode=once",
        "--stream-tape-upstream=http://192.0.2.1:9",
    )  # fmt: skip
    assert proc.returncode == 1
    assert "OPENAI_API_KEY" in proc.stdout  # the SDK's own refusal: no credentials
    assert not (project / "tapes" / "test_sample" / "test_request_id").exists()
