"""Helpers shared by the HTTP tests (record, serve, capture): reading recordings back, starting
a listening command."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.generators import recording_header
from streamtool.core.recording.reader import Source
from streamtool.core.wire.sse import SSEDecoder, SSEEvent

from .conftest import RECORDINGS
from .helpers import recording_summary, run_captured

STREAMTOOL = [sys.executable, "-c", "from streamtool.cli.main import main; main()"]


def start_listening(
    command: list[str],
    *,
    env: dict[str, str] | None = None,
    timeout: float = 20.0,
    cwd: Path | None = None,
) -> tuple[subprocess.Popen[str], str, str]:
    """Run a command that listens (``serve`` or ``proxy`` with ``--port 0``) and wait until it
    answers; returns the process, the first line it wrote (which names its origin) and the
    origin."""
    proc = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
        cwd=cwd,
    )
    assert proc.stderr is not None
    first = proc.stderr.readline()
    found = re.search(r"http://127\.0\.0\.1:(\d+)", first)
    assert found, first
    deadline = time.monotonic() + timeout
    while True:  # the port is bound before the line is written; wait until it answers
        try:
            socket.create_connection(("127.0.0.1", int(found.group(1))), timeout=5).close()
            return proc, first, found.group(0)
        except OSError:
            assert time.monotonic() < deadline, "the command did not start listening"
            time.sleep(0.05)


def recording(name: str) -> Path:
    return RECORDINGS / f"{name}.jsonl"


def chunks_of(path: Path) -> list[bytes]:
    """Every recorded read, as bytes."""
    return [c.data if isinstance(c.data, bytes) else c.data.encode() for c in Source(path).chunks()]


def body_of(path: Path) -> bytes:
    return b"".join(chunks_of(path))


def replayed(path: Path, keys: tuple[str, ...]) -> dict[str, Any]:
    """The ``keys`` of the summary of a recording replayed read by read, ended complete."""
    result = recording_summary(path)
    return {k: result[k] for k in keys}


def read_all(path: Path) -> tuple[Any, list[bytes], Any]:
    """(header, chunks, end) of a recording."""
    source = Source(path)
    chunks = [c.data if isinstance(c.data, bytes) else c.data.encode() for c in source.chunks()]
    return source.header, chunks, source.end


def payloads(path: Path) -> list[tuple[str | None, Any]]:
    """(event name, parsed JSON data) of every SSE event in a recording ([DONE] skipped)."""
    decoder = SSEDecoder()
    out: list[tuple[str | None, Any]] = []
    items = []
    for data in chunks_of(path):
        items.extend(decoder.feed(data))
    items.extend(decoder.finish())
    for item in items:
        if isinstance(item, SSEEvent) and item.data.strip() not in ("", "[DONE]"):
            out.append((item.event, json.loads(item.data)))
    return out


def write_recording(
    path: Path,
    reads: list[tuple[float, bytes | str]],
    *,
    status: int = 200,
    api: str = "chat.completions",
    provider: str = "openai",
    model: str = "gpt-4o-mini",
    content_type: str = "text/event-stream",
) -> Path:
    """A small recording written by a test (timings and reads as given)."""
    from streamtool.core.model.records import Chunk, End

    header = recording_header(
        provider,
        api,
        body={"model": model, "stream": True},
        status=status,
        response_headers={"content-type": content_type},
        recorded_at="2026-11-21T12:00:00Z",
    )
    lines = [json.dumps(header)]
    for t, data in reads:
        lines.append(json.dumps(Chunk(t, data).to_record()))
    last = reads[-1][0] if reads else 0.0
    lines.append(json.dumps(End(last, "complete", None).to_record()))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def chat_chunk(text: str, i: int = 0, finish: str | None = None) -> str:
    """One OpenAI chat completion chunk as an SSE event."""
    obj = {
        "id": "chatcmpl-Cj2Yw8tLq0nR5bX3eH7mK9sVdA1F",
        "object": "chat.completion.chunk",
        "created": 1763726400,
        "model": "gpt-4o-mini-2024-07-18",
        "system_fingerprint": "fp_560af6e559",
        "choices": [
            {
                "index": 0,
                "delta": {"content": text} if text else {},
                "logprobs": None,
                "finish_reason": finish,
            }
        ],
    }
    return f"data: {json.dumps(obj, separators=(',', ':'), ensure_ascii=False)}\n\n"


def anthropic_status_error(client: Any, **options: Any) -> Any:
    """The APIStatusError the anthropic SDK's ``client`` raises on a streamed "hi" to
    claude-sonnet-4-6 (``options``: more of ``messages.create``'s); fails if it raises none."""
    import anthropic
    import pytest

    with pytest.raises(anthropic.APIStatusError) as caught:
        client.messages.create(
            model="claude-sonnet-4-6",
            max_tokens=8,
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            **options,
        )
    return caught.value


def run_streamtool(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``streamtool ARGS`` as a process (``env``: variables added to ours), output captured."""
    return run_captured(
        [*STREAMTOOL, *args], timeout=timeout, env={**os.environ, **(env or {})}, cwd=cwd
    )


def replayed_body(folder: Path, body: bytes) -> dict[str, Any]:
    """``streamtool replay --format json``'s summary of a raw ``body`` (saved in ``folder``)."""
    saved = folder / "served.sse"
    saved.write_bytes(body)
    return json.loads(run_streamtool("replay", str(saved), "--format", "json").stdout)


def record_args(base_url: str, model: str = "m", provider: str = "openai-chat") -> list[str]:
    """The options of a ``streamtool record`` of one "hi" to ``base_url``."""
    return ["-p", provider, "-m", model, "--prompt", "hi", "--base-url", base_url]
