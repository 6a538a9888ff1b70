"""``proxy --transform kimi-k2`` keeps every character: through a real proxy in front of a paced
upstream, the openai SDK's text, reasoning and tool calls equal ``replay --converter kimi-k2``'s
for every bundled Kimi recording, as recorded and cut at points hypothesis chooses; many more
cuts go through the transform itself, in-process."""

from __future__ import annotations

import itertools
import json
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.kimi_fidelity import summary, transformed
from benchmarks.procs import proxy_args
from streamtool.core.exchange.playback import Playback
from streamtool.core.net.library import Library
from streamtool.core.net.listen import ServerThread
from streamtool.core.net.server import create_app

from .conftest import RECORDINGS
from .serve_helpers import STREAMTOOL, chunks_of, start_listening, write_recording

KIMI_RECORDINGS = sorted(p.stem for p in RECORDINGS.glob("*kimi*.jsonl"))


@cache
def replayed(path: Path) -> dict[str, Any]:
    """``replay --converter kimi-k2 --format json``: text, reasoning and calls."""
    run = subprocess.run(
        [*STREAMTOOL, "replay", str(path), "--converter", "kimi-k2", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    out = json.loads(run.stdout)
    calls = [(i["id"], i["name"], i["arguments"]) for i in out["invocations"]]
    return {"text": out["text"], "reasoning": out["reasoning"], "calls": calls}


def sdk_reads(base_url: str, name: str | None = None) -> dict[str, Any]:
    """One streamed request through the openai SDK; what it accumulates."""
    client = openai.OpenAI(base_url=base_url + "/v1", api_key="sk-test", max_retries=0)
    headers = {"x-streamtool-recording": name} if name else {}
    text, reasoning = [], []
    calls: dict[int, dict[str, str]] = {}
    stream = client.chat.completions.create(
        model="kimi-k2", messages=[], stream=True, extra_headers=headers, timeout=30
    )
    for chunk in stream:
        for choice in chunk.choices:
            delta = choice.delta
            text.append(delta.content or "")
            extra = delta.model_extra or {}
            # reasoning_content as the transform writes it, reasoning (OpenRouter's) as events
            # passed on unchanged before the first Kimi token carry it
            reasoning.append(extra.get("reasoning_content") or extra.get("reasoning") or "")
            for tc in delta.tool_calls or []:
                call = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                call["id"] += tc.id or ""
                if tc.function is not None:
                    call["name"] += tc.function.name or ""
                    call["arguments"] += tc.function.arguments or ""
    return {
        "text": "".join(text),
        "reasoning": "".join(reasoning),
        "calls": [
            (c["id"], c["name"], json.loads(c["arguments"])) for _, c in sorted(calls.items())
        ],
    }


def stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=20)
    return err


def start_proxy(upstream: str, out: Path) -> tuple[subprocess.Popen[str], str]:
    out.mkdir(exist_ok=True)
    args = proxy_args(out, "--transform", "kimi-k2", upstream=upstream)
    proc, _, origin = start_listening([*STREAMTOOL, *args])
    return proc, origin


def test_bundled_kimi_recordings_through_proxy_and_paced_serve(tmp_path: Path) -> None:
    assert len(KIMI_RECORDINGS) >= 3
    serve, _, up = start_listening(
        [*STREAMTOOL, "serve", str(RECORDINGS), "--port", "0", "--speed", "2"]
    )
    try:
        proxy, origin = start_proxy(up, tmp_path / "caps")
        try:
            seen = {name: sdk_reads(origin, name) for name in KIMI_RECORDINGS}
        finally:
            err = stop(proxy)
    finally:
        stop(serve)
    for name in KIMI_RECORDINGS:
        assert seen[name] == replayed(RECORDINGS / f"{name}.jsonl"), name
        assert "<|" not in seen[name]["text"] + seen[name]["reasoning"]
    assert "Traceback" not in err


class Switch:
    """An ASGI app that passes each request to the app set last (one upstream port)."""

    def __init__(self) -> None:
        self.app: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            message = await receive()
            await send({"type": message["type"] + ".complete"})
            message = await receive()
            await send({"type": message["type"] + ".complete"})
            return
        await self.app(scope, receive, send)


@pytest.fixture(scope="module")
def proxied() -> Iterator[tuple[Switch, str]]:
    switch = Switch()
    with ServerThread(switch) as up, tempfile.TemporaryDirectory() as tmp:
        proxy, origin = start_proxy(up.url, Path(tmp) / "caps")
        try:
            yield switch, origin
        finally:
            stop(proxy)


def recut(path: Path, cuts: list[int], out: Path) -> Path:
    """The recording with its body cut at ``cuts`` instead, one read every 4 ms."""
    body = b"".join(chunks_of(path))
    points = [0, *sorted({c % len(body) for c in cuts} - {0}), len(body)]
    reads = [(0.004 * i, body[a:b]) for i, (a, b) in enumerate(itertools.pairwise(points))]
    header = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    request_body = header["request"]["body"]
    return write_recording(
        out, reads, provider=header["provider"], model=request_body.get("model", "kimi-k2")
    )


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    name=st.sampled_from(KIMI_RECORDINGS),
    cuts=st.lists(st.integers(min_value=1, max_value=1 << 20), min_size=1, max_size=40),
)
def test_chosen_cuts_through_the_proxy(
    proxied: tuple[Switch, str], name: str, cuts: list[int]
) -> None:
    switch, origin = proxied
    source = RECORDINGS / f"{name}.jsonl"
    with tempfile.TemporaryDirectory() as tmp:
        cut = recut(source, cuts, Path(tmp) / f"{name}.jsonl")
        switch.app = create_app(Library.from_paths([cut]), Playback(speed=1.0))
        assert sdk_reads(origin) == replayed(source)


# -- in-process: many more cuts against the transform itself ------------------------------------
def client_reads(stream: bytes) -> dict[str, Any]:
    """What a plain OpenAI Chat Completions reader takes from the transformed stream."""
    s = summary(stream, "openai-chat")
    calls = [(i["id"], i["name"], i["arguments"]) for i in s["invocations"]]
    return {"text": s["text"], "reasoning": s["reasoning"], "calls": calls}


@pytest.mark.parametrize("name", KIMI_RECORDINGS)
@settings(max_examples=120, deadline=None)
@given(cuts=st.lists(st.integers(min_value=1, max_value=1 << 20), max_size=60))
def test_any_cuts_keep_every_character(name: str, cuts: list[int]) -> None:
    source = RECORDINGS / f"{name}.jsonl"
    body = b"".join(chunks_of(source))
    points = sorted({c % len(body) for c in cuts})
    assert client_reads(transformed(body, points)) == replayed(source)


@pytest.mark.parametrize("name", KIMI_RECORDINGS)
def test_recorded_reads_keep_every_character(name: str) -> None:
    source = RECORDINGS / f"{name}.jsonl"
    points, at = [], 0
    for chunk in chunks_of(source):
        at += len(chunk)
        points.append(at)
    body = b"".join(chunks_of(source))
    assert client_reads(transformed(body, points)) == replayed(source)
