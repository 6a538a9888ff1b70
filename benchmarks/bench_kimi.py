"""Benchmark the ``kimi-k2`` converter and the OpenAI-SSE emitter against baselines of the same run.

    python benchmarks/bench_kimi.py [--mb 16] [--repeat 5]

Prints throughput (MB of recording per second, best of ``--repeat`` interleaved runs) and ratios:

1. a Kimi stream (tool calls as special tokens in ``content``) through ``kimi-k2`` vs through
   ``openai-chat`` (same bytes, markers read as plain text): the cost of reading the tokens;
2. a stream with structured tool calls and no markers through ``kimi-k2`` vs ``openai-chat``:
   what the converter costs where there is nothing to find;
3. linear time: the Kimi stream at half and at full size (seconds per MB should not grow);
4. ``--emit openai-sse`` vs ``--format json`` on the Kimi stream: the cost of re-encoding.

Exits 1 when a ratio misses its target.
"""

from __future__ import annotations

import argparse
import gc
import io
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from streamtool.cli.emit import OpenAISSESink
from streamtool.cli.sinks import JsonSink
from streamtool.core.drive.replay_file import replay_file

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.generators import GENERATORS  # noqa: E402

TARGETS = {
    "kimi_tokens": 1.6,  # kimi-k2 / openai-chat on a Kimi stream
    "no_markers": 1.15,  # kimi-k2 / openai-chat on a stream without markers
    "linear": 1.25,  # seconds per MB, full size / half size
    "emit": 1.6,  # --emit openai-sse / --format json
}


def best_of(runs: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """The best time of each run; runs are interleaved, so that a load change on a shared
    machine hits every run alike."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, fn in runs.items():
            gc.collect()
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: min(ts) for name, ts in times.items()}


def replay(path: Path, converter: str, sink: str = "json") -> Callable[[], object]:
    def run() -> object:
        if sink == "emit":
            out = OpenAISSESink(io.BytesIO())
        else:
            out = JsonSink(io.StringIO())  # type: ignore[assignment]
        engine = replay_file(path, converter=converter, on_items=out.on_items)
        out.close(engine)
        return engine

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=16.0, help="size of the big recordings")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    size = int(args.mb * 1_000_000)
    with tempfile.TemporaryDirectory() as tmp:
        kimi = Path(tmp) / "kimi.jsonl"
        kimi_half = Path(tmp) / "kimi-half.jsonl"
        plain = Path(tmp) / "openai.jsonl"
        GENERATORS["kimi-k2"](kimi, size)
        GENERATORS["kimi-k2"](kimi_half, size // 2)
        GENERATORS["openai-chat"](plain, size)
        mb = {p: p.stat().st_size / 1e6 for p in (kimi, kimi_half, plain)}
        engine = replay(kimi, "kimi-k2")()
        calls = len(engine.invocations())  # type: ignore[attr-defined]
        assert calls and not engine.errors, "the Kimi stream must replay cleanly"  # type: ignore[attr-defined]

        t = best_of(
            {
                "kimi": replay(kimi, "kimi-k2"),
                "kimi_as_chat": replay(kimi, "openai-chat"),
                "plain_kimi": replay(plain, "kimi-k2"),
                "plain_chat": replay(plain, "openai-chat"),
                "half": replay(kimi_half, "kimi-k2"),
                "emit": replay(kimi, "kimi-k2", "emit"),
            },
            args.repeat,
        )
    t_kimi, t_kimi_as_chat, t_half, t_emit = t["kimi"], t["kimi_as_chat"], t["half"], t["emit"]
    t_plain_kimi, t_plain_chat = t["plain_kimi"], t["plain_chat"]

    def rate(t: float, path: Path) -> str:
        return f"{mb[path] / t:7.1f} MB/s ({t:.3f} s for {mb[path]:.1f} MB)"

    print(f"Kimi stream, {calls} tool calls in content tokens")
    print(f"  kimi-k2                {rate(t_kimi, kimi)}")
    print(f"  openai-chat (baseline) {rate(t_kimi_as_chat, kimi)}")
    print("Structured tool calls, no markers")
    print(f"  kimi-k2                {rate(t_plain_kimi, plain)}")
    print(f"  openai-chat (baseline) {rate(t_plain_chat, plain)}")
    print("Kimi stream at half size")
    print(f"  kimi-k2                {rate(t_half, kimi_half)}")
    print("Kimi stream, --emit openai-sse")
    print(f"  kimi-k2 + emitter      {rate(t_emit, kimi)}")
    ratios = {
        "kimi_tokens": t_kimi / t_kimi_as_chat,
        "no_markers": t_plain_kimi / t_plain_chat,
        "linear": (t_kimi / mb[kimi]) / (t_half / mb[kimi_half]),
        "emit": t_emit / t_kimi,
    }
    labels = {
        "kimi_tokens": "kimi-k2 / openai-chat, Kimi stream",
        "no_markers": "kimi-k2 / openai-chat, no markers",
        "linear": "s/MB full size / s/MB half size",
        "emit": "--emit openai-sse / --format json",
    }
    print("Ratios (target):")
    missed = 0
    for key, value in ratios.items():
        verdict = "ok" if value <= TARGETS[key] else "MISSED"
        missed += verdict != "ok"
        print(f"  {labels[key]:38} {value:5.2f}  (<= {TARGETS[key]})  {verdict}")
    if missed:
        sys.exit(1)


if __name__ == "__main__":
    main()
