"""Peak memory of ``streamtool replay FILE --format json`` against the size of what it prints.

    python benchmarks/bench_memory.py [--mb 200] [--shapes huge-call,many-calls,text]

Writes a recording of about ``--mb`` MB (OpenAI Chat Completions wire format) of each shape:

- ``huge-call``: one ``write_file`` call whose content streams in small fragments;
- ``many-calls``: 10,000 short calls (about 2 KB of arguments each; as many as fit the size);
- ``text``: mostly text (a short reasoning, then text in small deltas).

Then runs ``streamtool replay FILE --format json > summary`` in a child process and reads its
peak resident memory from the kernel (``wait4``'s ``ru_maxrss``). Target: peak RSS <= 1.5 x the
summary's size + 60 MB (what the output must hold, plus the interpreter and its modules; the
interpreter alone is printed as ``python -c pass`` + imports). Exits 1 when a shape misses it.
Slow at the default size (minutes): use a smaller ``--mb`` while working.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.generators import _header, code_fragments, write_recording  # noqa: E402

MB = 1024 * 1024
MODEL = "gpt-4o-2024-08-06"
BASE = {"id": "chatcmpl-mem", "object": "chat.completion.chunk", "model": MODEL}


def sse(delta: dict, finish: str | None = None, **extra: object) -> str:
    obj = dict(BASE, choices=[{"index": 0, "delta": delta, "finish_reason": finish}], **extra)
    return "data: " + json.dumps(obj, separators=(",", ":")) + "\n\n"


def call(index: int, args: str, *, name: str | None = None, call_id: str | None = None) -> str:
    fn: dict[str, str] = {"arguments": args}
    tc: dict[str, object] = {"index": index, "function": fn}
    if name is not None:
        fn["name"] = name
        tc["id"] = call_id
        tc["type"] = "function"
    return sse({"tool_calls": [tc]})


def ending(finish: str) -> Iterator[str]:
    yield sse({}, finish)
    yield sse({}, None, usage={"prompt_tokens": 50, "completion_tokens": 9, "total_tokens": 59})
    yield "data: [DONE]\n\n"


def huge_call(size: int) -> Iterator[str]:
    yield sse({"role": "assistant", "content": None})
    yield call(0, "", name="write_file", call_id="call_mem0001")
    yield call(0, '{"path": "app.py", "content": "')
    written = 0
    for frag in code_fragments():
        event = call(0, json.dumps(frag)[1:-1])
        written += len(event) + 40
        yield event
        if written >= size:
            break
    yield call(0, '"}')
    yield from ending("tool_calls")


def many_calls(size: int, calls: int = 10_000) -> Iterator[str]:
    yield sse({"role": "assistant", "content": None})
    written = 0
    per_call = max(1, size // calls)
    fragments = code_fragments(60)
    for i in range(calls):
        yield call(i, "", name="run_query", call_id=f"call_mem{i:05d}")
        yield call(i, '{"query": "')
        body = 0
        while body < per_call:
            event = call(i, json.dumps(next(fragments))[1:-1])
            body += len(event) + 40
            yield event
        yield call(i, '", "limit": 10}')
        written += body
        if written >= size:
            break
    yield from ending("tool_calls")


def text(size: int) -> Iterator[str]:
    yield sse({"role": "assistant", "content": ""})
    yield sse({"reasoning_content": "Think about the answer first. " * 20})
    written = 0
    for frag in code_fragments(20):
        event = sse({"content": frag})
        written += len(event) + 40
        yield event
        if written >= size:
            break
    yield from ending("stop")


SHAPES = {"huge-call": huge_call, "many-calls": many_calls, "text": text}


def peak_rss(cmd: list[str], stdout_path: Path) -> tuple[int, float]:
    """Peak RSS in bytes of ``cmd`` (its own, from the kernel) and its wall time."""
    start = time.perf_counter()
    with open(stdout_path, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{err}")
    return usage.ru_maxrss * 1024, elapsed  # ru_maxrss is in KB on Linux


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=200.0, help="size of each recording in MB")
    ap.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated shapes")
    opts = ap.parse_args()
    cli = [sys.executable, "-m", "streamtool.cli", "replay"]
    ok = True
    with tempfile.TemporaryDirectory(prefix="streamtool-mem-") as tmp:
        base, _ = peak_rss(
            [sys.executable, "-c", "import streamtool.cli.replay, streamtool.cli.sinks"],
            Path(tmp) / "none",
        )
        print(f"python + streamtool's replay modules imported: {base / MB:.0f} MB peak RSS")
        print(
            f"{'shape':<12}{'recording':>11}{'summary':>10}{'peak RSS':>10}"
            f"{'limit':>9}{'wall s':>8}  target: <= 1.5 x summary + 60 MB"
        )
        for name in opts.shapes.split(","):
            path = Path(tmp) / f"{name}.jsonl"
            header = _header("openai", "chat.completions", "https://x/v1/chat/completions", MODEL)
            size = int(opts.mb * 1_000_000)
            write_recording(path, header, SHAPES[name](size), size * 3)
            summary = Path(tmp) / f"{name}.summary.json"
            rss, wall = peak_rss([*cli, str(path), "--format", "json"], summary)
            out = summary.stat().st_size
            limit = 1.5 * out + 60 * MB
            good = rss <= limit
            ok &= good
            print(
                f"{name:<12}{path.stat().st_size / MB:>9.1f}MB{out / MB:>8.1f}MB"
                f"{rss / MB:>8.0f}MB{limit / MB:>7.0f}MB{wall:>8.1f}  {'ok' if good else 'MISSED'}"
            )
            path.unlink()
            summary.unlink()
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
