"""Recording format v1: writer, reader, raw bodies, and one-line errors for unusable input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from streamtool.core.model.records import Chunk, End, Header, RecordingError
from streamtool.core.recording.reader import Source
from streamtool.core.recording.writer import RecordingWriter

from .conftest import RECORDINGS


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "streamtool.cli", *args],
        capture_output=True,
        text=True,
        env=env,
    )


def header() -> Header:
    return Header(
        provider="openai",
        api="chat.completions",
        recorded_at="2026-11-21T00:00:00Z",
        request={
            "method": "POST",
            "url": "https://api.example.test/v1/chat/completions?key=AIzaSyA-1234567890abcdefghijkl",
            "headers": {"Authorization": "Bearer sk-proj-abcdefghijklmnop1234", "x-trace": "1"},
            "body": {"model": "m", "stream": True},
        },
        response={"status": 200, "headers": {"content-type": "text/event-stream"}},
    )


def test_writer_and_reader_round_trip_text_b64_and_timings(tmp_path):
    path = tmp_path / "rec.jsonl"
    reads = [b'data: {"a": 1}\n\n', 'data: "é'.encode()[:-1], b'\xa9"\n\n']
    with RecordingWriter(path, header()) as writer:
        for i, read in enumerate(reads):
            writer.write_read(0.1 * (i + 1), read)
        writer.close(0.5)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["type"] for r in lines] == ["header", "chunk", "chunk", "chunk", "end"]
    assert "text" in lines[1] and "b64" in lines[2] and "b64" in lines[3]
    source = Source(path)
    chunks = list(source.chunks())
    assert [c.t for c in chunks] == [0.1, 0.2, 0.3]
    got = [c.data if isinstance(c.data, bytes) else c.data.encode() for c in chunks]
    assert got == reads
    assert source.end == End(0.5, "complete", None)
    assert source.header.provider == "openai"


def test_writer_removes_secrets_and_never_overwrites(tmp_path):
    path = tmp_path / "rec.jsonl"
    writer = RecordingWriter(path, header())
    writer.close(0.0)
    text = path.read_text()
    assert "sk-proj" not in text and "AIzaSy" not in text
    assert "[redacted]" in text and '"x-trace": "1"' in text.replace('":"', '": "')
    before = path.read_bytes()
    with pytest.raises(RecordingError, match="exists"):
        RecordingWriter(path, header())
    assert path.read_bytes() == before
    RecordingWriter(path, header(), force=True).close(0.0)


# an integer beyond 64 bits, or a lone surrogate: the header's text is looked through as the
# standard library writes it (orjson refuses them), else as orjson writes it
@pytest.mark.parametrize("extra", [{}, {"seed": 2**70}, {"odd": "\ud800"}])
def test_writer_refuses_a_header_that_still_holds_a_key(tmp_path, extra):
    h = header()
    h.request["body"] = {"model": "m", "note": "sk-ant-api03-abcdefghijklmnop", **extra}
    with pytest.raises(RecordingError, match="Anthropic key"):
        RecordingWriter(tmp_path / "rec.jsonl", h)
    assert not (tmp_path / "rec.jsonl").exists()


def test_raw_sse_body_is_accepted(tmp_path):
    path = tmp_path / "body.sse"
    path.write_bytes(b'data: {"choices": []}\n\n' * 3)
    source = Source(path)
    assert source.raw and source.header.raw_body
    data = b"".join(c.data for c in source.chunks())  # type: ignore[misc]
    assert data == path.read_bytes()
    assert source.end is not None and source.end.reason == "complete"


def test_unknown_suffix_is_sniffed(tmp_path):
    raw = tmp_path / "capture.log"
    raw.write_text("data: {}\n\n")
    assert Source(raw).raw
    rec = tmp_path / "capture.rec"
    rec.write_text((RECORDINGS / "openai-parallel-tool-calls.jsonl").read_text())
    assert not Source(rec).raw


BAD = {
    "not-json.jsonl": ('{"type": "header"', 1, "not JSON"),
    "no-header.jsonl": ('{"type": "chunk", "t": 0, "text": "x"}\n', 1, "no header"),
    "version.jsonl": (
        '{"type": "header", "format": "streamtool-recording", "version": 9}\n',
        1,
        "unsupported recording version 9",
    ),
    "garbage.jsonl": (None, 3, "not JSON"),
    "bad-chunk.jsonl": (None, 2, "needs a 'text' or 'b64'"),
    "empty.jsonl": ("", 1, "empty file"),
}


def _bad_file(tmp_path, name):
    content, line, message = BAD[name]
    head = json.dumps(header().to_record())
    if name == "garbage.jsonl":
        content = head + '\n{"type": "chunk", "t": 0, "text": "data: {}\\n\\n"}\nthis is garbage\n'
    elif name == "bad-chunk.jsonl":
        content = head + '\n{"type": "chunk", "t": 0}\n'
    path = tmp_path / name
    path.write_text(content)
    return path, line, message


@pytest.mark.parametrize("name", sorted(BAD))
def test_unusable_input_is_one_line_with_file_and_line_exit_2(tmp_path, name):
    path, line, message = _bad_file(tmp_path, name)
    before = path.read_bytes()
    proc = run_cli("replay", str(path), "--format", "json")
    assert proc.returncode == 2
    assert proc.stdout == ""
    err = proc.stderr.strip()
    assert "\n" not in err and "Traceback" not in err
    assert f"{path}:{line}: " in err and message in err
    assert path.read_bytes() == before


def test_missing_file_and_folder_are_one_line_errors(tmp_path):
    proc = run_cli("replay", str(tmp_path / "nope.jsonl"))
    assert proc.returncode == 2 and "nope.jsonl" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_cli("replay", str(tmp_path))
    assert proc.returncode == 2 and "folder" in proc.stderr


def test_recording_without_end_record_replays_with_a_warning(tmp_path):
    lines = (RECORDINGS / "openai-parallel-tool-calls.jsonl").read_text().splitlines()
    assert json.loads(lines[-1])["type"] == "end"
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:-3]) + "\n")
    proc = run_cli("replay", str(cut), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert "warning" in proc.stderr and "no end record" in proc.stderr
    summary = json.loads(proc.stdout)
    kinds = [e["kind"] for e in summary["errors"]]
    assert "recording_cut_off" in kinds
    # what the cut recording holds is still replayed: the first call is complete
    assert summary["invocations"][0]["arguments"] == {"city": "Paris", "unit": "celsius"}


def test_end_reason_other_than_complete_is_an_error(tmp_path):
    lines = (RECORDINGS / "openai-parallel-tool-calls.jsonl").read_text().splitlines()
    end = {"type": "end", "t": 9.0, "reason": "timeout", "error": "read timeout after 60 s"}
    path = tmp_path / "timeout.jsonl"
    path.write_text("\n".join([*lines[:-1], json.dumps(end)]) + "\n")
    proc = run_cli("replay", str(path), "--format", "json")
    assert proc.returncode == 0
    errors = json.loads(proc.stdout)["errors"]
    assert errors[-1]["kind"] == "recording_timeout" and "read timeout" in errors[-1]["message"]


def test_chunk_record_objects():
    assert Chunk(0.1, "é").nbytes == 2
    assert Chunk(0.1, b"\xff").to_record()["b64"] == "/w=="
