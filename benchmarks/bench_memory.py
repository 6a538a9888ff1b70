"""Peak memory of ``streamtool replay FILE --format json`` against the size of what it prints.

    python benchmarks/bench_memory.py [--mb 200] [--shapes huge-call,many-calls,text]

Writes a recording of about ``--mb`` MB (OpenAI Chat Completions wire format) of each shape:

- ``huge-call``: one ``write_file`` call whose content streams in small fragments;
- ``many-calls``: 10,000 short calls (about 2 KB of arguments each; as many as fit the size);
- ``text``: mostly text (a short reasoning, then text in small deltas).

Then runs ``streamtool replay FILE --format json > summary`` in a child process and reads its
peak resident memory from the kernel (``wait4``'s ``ru_maxrss``), and, in the same round, the
strict floor: a process that imports every module ``replay --format json`` has loaded once it is
done and holds one copy of the summary (read as bytes). Target: peak RSS <= 1.3 x the floor's
(median of the per-round ratios, ``--runs`` rounds, at least 5). Exits 1 when a shape misses it.
Slow at the default size (minutes): use a smaller ``--mb`` while working.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
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
TARGET = 1.3  # peak RSS / the strict floor's
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


# the modules ``replay --format json`` has loaded once it is done (run on a small recording)
_MODULES_PROBE = """
import json, sys
from streamtool.cli.main import main
sys.argv = ["streamtool", "replay", sys.argv[1], "--format", "json"]
try:
    main()
except SystemExit:
    pass
sys.stderr.write("\\nMODULES " + json.dumps(sorted(sys.modules)))
"""
# the strict floor: those modules imported, and one copy of the summary held (as bytes)
_FLOOR = """
import importlib, json, sys
for name in json.loads(sys.argv[1]):
    try:
        importlib.import_module(name)
    except Exception:
        pass
with open(sys.argv[2], "rb") as fh:
    summary = fh.read()
"""


def replay_modules() -> list[str]:
    small = ROOT / "recordings" / "openai-parallel-tool-calls.jsonl"
    proc = subprocess.run(
        [sys.executable, "-c", _MODULES_PROBE, str(small)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=True,
    )
    names = json.loads(proc.stderr.rsplit("MODULES ", 1)[1])
    return [n for n in names if n != "__main__" and not n.endswith(".__main__")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=200.0, help="size of each recording in MB")
    ap.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated shapes")
    ap.add_argument("--runs", type=int, default=5, help="paired rounds (median kept; at least 5)")
    opts = ap.parse_args()
    runs = max(5, opts.runs)
    cli = [sys.executable, "-m", "streamtool.cli", "replay"]
    ok = True
    modules = json.dumps(replay_modules())
    with tempfile.TemporaryDirectory(prefix="streamtool-mem-") as tmp:
        base, _ = peak_rss([sys.executable, "-c", _FLOOR, modules, os.devnull], Path(tmp) / "none")
        print(
            f"python + the {len(json.loads(modules))} modules replay --format json loads: "
            f"{base / MB:.0f} MB peak RSS; medians of {runs} paired rounds; "
            f"load {os.getloadavg()[0]:.2f} (1 min)"
        )
        print(
            f"{'shape':<12}{'recording':>11}{'summary':>10}{'floor':>9}{'peak RSS':>10}"
            f"{'ratio':>8}{'wall s':>8}  target: <= {TARGET:g} x the strict floor"
        )
        for name in opts.shapes.split(","):
            path = Path(tmp) / f"{name}.jsonl"
            header = _header("openai", "chat.completions", "https://x/v1/chat/completions", MODEL)
            size = int(opts.mb * 1_000_000)
            write_recording(path, header, SHAPES[name](size), size * 3)
            summary = Path(tmp) / f"{name}.summary.json"
            floors: list[int] = []
            peaks: list[int] = []
            walls: list[float] = []
            for _ in range(runs):  # interleaved: the replay, then its floor
                rss, wall = peak_rss([*cli, str(path), "--format", "json"], summary)
                peaks.append(rss)
                walls.append(wall)
                floor, _ = peak_rss(
                    [sys.executable, "-c", _FLOOR, modules, str(summary)], Path(tmp) / "none"
                )
                floors.append(floor)
            ratio = statistics.median(p / f for p, f in zip(peaks, floors, strict=True))
            out = summary.stat().st_size
            good = ratio <= TARGET
            ok &= good
            print(
                f"{name:<12}{path.stat().st_size / MB:>9.1f}MB{out / MB:>8.1f}MB"
                f"{statistics.median(floors) / MB:>7.0f}MB{statistics.median(peaks) / MB:>8.0f}MB"
                f"{ratio:>7.2f}x{statistics.median(walls):>8.1f}  {'ok' if good else 'MISSED'}",
                flush=True,
            )
            path.unlink()
            summary.unlink()
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
