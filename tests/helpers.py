"""Small helpers for tests: build SSE bodies and replay them in memory."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path
from typing import Any

from streamtool.core.engine.replay import ReplayEngine
from streamtool.core.model.records import Chunk, End, Header
from streamtool.core.recording.reader import Source


def weather_script(stream: str = "{tokens_per_s: 20, ttft: 0.5}", model: str | None = None) -> str:
    """A script of two turns: a tool call when asked about the weather (its reply streamed as
    ``stream`` says), then the answer; of ``model`` when given."""
    return (f"model: {model}\n" if model else "") + (
        "turns:\n"
        "  - match: {contains: weather}\n"
        "    reply:\n"
        "      text: Let me check the weather.\n"
        "      tool_calls: [{name: get_weather, arguments: {city: Lisbon, unit: celsius}}]\n"
        f"    stream: {stream}\n"
        "  - reply: {text: It is 21 °C in Lisbon., usage: {input_tokens: 40, output_tokens: 9}}\n"
    )


WEATHER_SCRIPT = weather_script(model="test-model")


def run_captured(command: list[Any], **options: Any) -> subprocess.CompletedProcess[str]:
    """``command`` run to its end, its output captured as text (``options``: subprocess.run's)."""
    return subprocess.run(command, capture_output=True, text=True, **options)


def stdin_and_file_json(run: Any, command: str, path: Path) -> tuple[Any, Any]:
    """``streamtool COMMAND --format json`` (run by ``run``) of the recording at ``path``: its
    output read from standard input (checked: exit 0), and read from the file."""
    proc = run(command, "-", "--format", "json", stdin=path.read_bytes())
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), json.loads(run(command, str(path), "--format", "json").stdout)


def fresh_python_prints(code: str, *args: str) -> str:
    """What ``code`` prints, run by a new interpreter (nothing imported yet; ``args`` its
    ``sys.argv[1:]``), stripped."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def pip_install_into(python: Path, package: Path) -> None:
    """The project at ``package`` installed (no dependencies, no index, no build isolation)
    into the environment of ``python``, by this interpreter's pip."""
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps"]
        + ["--no-build-isolation", "--no-index", str(package)],
        check=True,
        capture_output=True,
    )


def venv_seeing_our_packages(env_dir: Path, *, their_pth_files: bool = True) -> Path:
    """A fresh venv without pip at ``env_dir`` that sees this interpreter's packages (streamtool,
    its dependencies, setuptools): as a site directory, their own .pth files run (an editable
    install is one), or, with ``their_pth_files=False``, as a bare path (a package installed in
    the venv then comes before an editable streamtool); gives the venv's python."""
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(subprocess.check_output([python, "-c", code], text=True).strip())
    outer = sysconfig.get_paths()["purelib"]
    if their_pth_files:
        line = f"import site; site.addsitedir({outer!r})\n"
        (site / "_outer.pth").write_text(line, encoding="utf-8")
    else:
        (site / "deps.pth").write_text(outer + "\n", encoding="utf-8")
    return python


def sse(*payloads: Any, done: bool = True) -> bytes:
    """An SSE body with one ``data:`` event per payload (dicts are JSON-encoded)."""
    parts = []
    for p in payloads:
        data = p if isinstance(p, str) else json.dumps(p)
        parts.append(f"data: {data}\n\n")
    if done:
        parts.append("data: [DONE]\n\n")
    return "".join(parts).encode()


def chat_chunk(delta: dict | None = None, finish: str | None = None, **extra: Any) -> dict:
    chunk: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "model": "test-model",
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
    }
    chunk.update(extra)
    return chunk


def replay_bytes(
    reads: list[bytes] | bytes,
    *,
    converter: str = "auto",
    parser: str = "api_tool_call",
    header: Header | None = None,
    transcript: bool = False,
    keep_events: bool = False,
    **handler_options: Any,
) -> ReplayEngine:
    if isinstance(reads, bytes):
        reads = [reads]
    engine = ReplayEngine(
        header or Header(raw_body=True),
        converter=converter,
        parser=parser,
        source="test",
        handler_options=handler_options or None,
        transcript=transcript,
        keep_events=keep_events,
    )
    for i, data in enumerate(reads):
        engine.feed_chunk(Chunk(0.01 * i, data))
    engine.finish(End(0.01 * len(reads), "complete"))
    return engine


def recording_body(path: Any) -> tuple[Header, bytes, End | None]:
    """A recording's header, every byte of its body joined, and its end record."""
    source = Source(path)
    body = b"".join(
        c.data if isinstance(c.data, bytes) else c.data.encode("utf-8") for c in source.chunks()
    )
    return source.header, body, source.end


def recording_summary(
    path: Any, reads: list[bytes] | None = None, header: bool = True
) -> dict[str, Any]:
    """The summary of a recording replayed read by read (``reads`` in place of its own reads),
    ended complete; ``header=False`` replays without its header (the converter detected)."""
    source = Source(path)
    engine = ReplayEngine(source.header if header else None)
    for data in reads if reads is not None else [c.data for c in source.chunks()]:
        engine.feed_chunk(Chunk(None, data))
    engine.finish(End(None, "complete"))
    return engine.summary()


def random_cuts(body: bytes, rng: random.Random, max_cuts: int = 30) -> list[bytes]:
    if len(body) < 2:
        return [body]
    k = rng.randint(1, min(max_cuts, len(body) - 1))
    cuts = sorted(rng.sample(range(1, len(body)), k))
    return [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]


def meaning(summary: dict) -> dict:
    """A summary without the fields that legitimately depend on chunking (stats)."""
    return {k: v for k, v in summary.items() if k != "stats"}


def feed_many_replay(converter: str, items: list[Any], struct_path: bool, batch: int) -> list[str]:
    """The chunks (their reprs) of ``items`` fed to a new ``converter`` by ``feed_many``, ``batch``
    items at a time as the engine feeds them, then its ``finish``; ``struct_path=False`` without
    its typed hot decoder (every event read as a dict)."""
    from streamtool.core.converters import make_converter

    conv = make_converter(converter)
    assert type(conv).hot_decoder is not None
    if not struct_path:
        conv.hot_decoder = None  # type: ignore[misc]
    out: list[Any] = []
    for start in range(0, len(items), batch):
        out += conv.feed_many(items[start : start + batch])
    out += conv.finish()
    return [repr(cr) for cr in out]
