"""What the live tree costs, against fixed targets.

Writes recordings in the OpenAI Chat Completions wire format (reasoning, text, a long streamed
``write_file`` call and two small calls, one network read per event) and prints:

1. one live frame (120x40, on a forced-terminal console) of a finished stream of 50,000 events:
   target at most 5 ms (median of 30 frames; the figure at 5,000 events is printed beside it, as
   a frame reads only the end of each segment and should not cost more on a longer stream);
2. the final print of a 300-line ``write_file`` (the tree printed once at the end, the code cut to
   its first and last lines as by default): target at most 50 ms (median of 10 after one print
   that builds the lexer; the first print in a fresh process and the ``--full`` print, all 300
   lines, are printed for information);
3. a replay paced at ten times its recorded speed for 2 s, drawn live: the live frames drawn
   (at least one), frames per second (at most 15) and the CPU each frame costs (the CPU of the
   live run less that of the same paced run drawn nowhere; medians of ``--runs`` paired rounds);
4. ``streamtool replay FILE --format json`` imports neither rich nor pygments (``python -X
   importtime``; the same check on ``--format text``, which draws the tree, must see rich).

Exit code 1 if a target is missed.

    python benchmarks/bench_tree.py [--events 50000]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.generators import recording_header  # noqa: E402

MAX_FRAME_MS = 5.0
MAX_FINAL_MS = 50.0
MAX_FPS = 15.0
FILE_LINES = 300
MODEL = "gpt-4o-2024-08-06"


def _sse(delta: dict, finish: str | None = None, **extra: object) -> str:
    obj = {
        "id": "chatcmpl-AbC9tree5000events",
        "object": "chat.completion.chunk",
        "created": 1763700000,
        "model": MODEL,
        "system_fingerprint": "fp_f33640a400",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        **extra,
    }
    return "data: " + json.dumps(obj, separators=(",", ":")) + "\n\n"


def _call(index: int, *, call_id: str | None = None, name: str | None = None, args: str) -> str:
    entry: dict = {"index": index, "function": {"arguments": args}}
    if call_id:
        entry = {"index": index, "id": call_id, "type": "function",
                 "function": {"name": name, "arguments": args}}  # fmt: skip
    return _sse({"tool_calls": [entry]})


def _words(prefix: str) -> Iterator[str]:
    sentence = (
        "the stream arrives in small pieces and every piece must land in the right place "
        "so the reader sees what the model wrote while it is writing it"
    )
    words = sentence.split(" ")
    n = 0
    while True:
        for w in words:
            n += 1
            yield (f"\n{prefix} {n // 12}: " if n % 12 == 0 else " ") + w


def _code() -> Iterator[str]:
    source = (
        "def handler(event, context):\n"
        '    """Process one event and return the result."""\n'
        "    items = [x * 2 for x in range(100) if x % 3 == 0]\n"
        '    message = f"processed {len(items)} items"\n'
        "    return {'status': 200, 'body': message}\n\n"
    )
    while True:
        for i in range(0, len(source), 16):
            yield source[i : i + 16]


def events(n: int) -> list[str]:
    """``n`` SSE events: 20% reasoning, 30% text, 46% one long file write, then two calls."""
    out = [_sse({"role": "assistant", "content": None})]
    n_reason, n_text = n // 5, (3 * n) // 10
    n_file = n - n_reason - n_text - 11
    gen = _words("step")
    out += [_sse({"reasoning_content": next(gen)}) for _ in range(n_reason)]
    gen = _words("point")
    out += [_sse({"content": next(gen)}) for _ in range(n_text)]
    out.append(_call(0, call_id="call_Wf7kQ2nX9pL4sR1t", name="write_file", args=""))
    out.append(_call(0, args='{"path": "app/handler.py", "content": "'))
    code = _code()
    out += [_call(0, args=json.dumps(next(code))[1:-1]) for _ in range(n_file)]
    out.append(_call(0, args='"}'))
    out.append(_call(1, call_id="call_Rd2mT8vB5cX0zQ6y", name="run_tests", args=""))
    out.append(_call(1, args='{"path": "app", '))
    out.append(_call(1, args='"verbose": true}'))
    out.append(_call(2, call_id="call_Gh3jK9lM1nB7vC4x", name="get_status", args="{}"))
    out.append(_sse({}, "tool_calls"))
    usage = {"prompt_tokens": 812, "completion_tokens": n, "total_tokens": 812 + n}
    out.append(_sse({}, None, usage=usage))
    out.append("data: [DONE]\n\n")
    return out


def module_source(lines: int) -> str:
    """Python source of ``lines`` lines: small functions, one after another."""
    out: list[str] = []
    n = 0
    while len(out) < lines:
        n += 1
        out += [
            f"def handler_{n}(event, context):",
            f'    """Process event {n} and return the result."""',
            f"    items = [x * {n} for x in range(100) if x % 3 == 0]",
            '    message = f"processed {len(items)} items"',
            "    return {'status': 200, 'body': message}",
            "",
        ]
    return "\n".join(out[:lines]) + "\n"


def write_file_recording(path: Path, lines: int) -> None:
    """A recording of one ``write_file`` call streaming a file of ``lines`` lines."""
    source = module_source(lines)
    evs = [_sse({"role": "assistant", "content": None})]
    evs.append(_call(0, call_id="call_Wf7kQ2nX9pL4sR1t", name="write_file", args=""))
    evs.append(_call(0, args='{"path": "app/handlers.py", "content": "'))
    evs += [_call(0, args=json.dumps(source[i : i + 16])[1:-1]) for i in range(0, len(source), 16)]
    evs.append(_call(0, args='"}'))
    evs.append(_sse({}, "tool_calls"))
    evs.append("data: [DONE]\n\n")
    _write(path, evs)


def write_recording(path: Path, n_events: int) -> int:
    evs = events(n_events)
    _write(path, evs)
    return len(evs)


def _write(path: Path, evs: list[str]) -> None:
    header = recording_header(body={"model": MODEL, "stream": True})
    t = 0.42
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(header) + "\n")
        for raw in evs:
            fh.write(json.dumps({"type": "chunk", "t": round(t, 4), "text": raw}) + "\n")
            t += 0.011
        fh.write(json.dumps({"type": "end", "t": round(t, 4), "reason": "complete"}) + "\n")


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


@contextlib.contextmanager
def finished_tree(path: Path, *, full: bool = False) -> Iterator[tuple[Any, Any]]:
    """A console (on the null device, 120x40, as a terminal) and a tree sink that has seen the
    whole recording, not live (``full``: with ``--full``'s limits)."""
    from streamtool.cli.tree import TreeSink, make_console
    from streamtool.cli.tree_view import ViewOptions
    from streamtool.core.drive.replay_file import replay_file

    options = ViewOptions.full() if full else None
    with open(os.devnull, "w") as devnull:
        console = make_console(file=devnull, force_terminal=True, width=120, height=40)
        sink = TreeSink(console, live=False, options=options)
        engine = replay_file(path, on_items=sink.on_items)
        sink.observe(engine)
        yield console, sink


def frame_cost(path: Path, frames: int = 30) -> float:
    """Seconds to build and draw one live frame of the finished stream (median)."""
    with finished_tree(path) as (console, sink):
        console.print(sink.frame())  # the first frame builds the lexer
        return statistics.median(timed(lambda: console.print(sink.frame())) for _ in range(frames))


def final_cost(path: Path, repeat: int = 10, *, full: bool = False) -> float:
    """Seconds to build and print the final tree of the finished stream (median)."""
    with finished_tree(path, full=full) as (console, sink):
        console.print(sink.final_renderable())  # the first print builds the lexer
        return statistics.median(
            timed(lambda: console.print(sink.final_renderable())) for _ in range(repeat)
        )


_FIRST_PRINT = """
import os, sys, time
from streamtool.cli.tree import TreeSink, make_console
from streamtool.core.drive.replay_file import replay_file
with open(os.devnull, "w") as devnull:
    console = make_console(file=devnull, force_terminal=True, width=120, height=40)
    sink = TreeSink(console, live=False)
    sink.observe(replay_file(sys.argv[1], on_items=sink.on_items))
    start = time.perf_counter()
    console.print(sink.final_renderable())
    print(time.perf_counter() - start)
"""


def first_print_cost(path: Path, runs: int = 5) -> float:
    """Seconds of the first final print in a fresh process (median of ``runs`` processes)."""
    times = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", _FIRST_PRINT, str(path)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        times.append(float(out))
    return statistics.median(times)


def paced_rate(
    path: Path, seconds: float = 2.0, speed: float = 10.0, *, live: bool = True
) -> tuple[int, float, float]:
    """Frames drawn over ``seconds`` of a replay at ``speed`` times its recorded speed, the wall
    time and this process's CPU time (the redraw thread's included). ``live=False``: the same
    replay with nothing drawn (the CPU time a frame adds is the difference)."""
    from streamtool.cli.pacing import Pacer
    from streamtool.cli.tree import make_console, make_live_sink
    from streamtool.core.drive.replay_file import replay_file

    pacer = Pacer(speed, None)
    with open(os.devnull, "w") as devnull:
        console = make_console(file=devnull, force_terminal=True, width=120, height=40)
        sink = make_live_sink(console, live=live)
        cpu = time.process_time()
        start = time.perf_counter()
        deadline = start + seconds

        def before(engine: object, chunk: object) -> None:
            sink.observe(engine)
            pacer.wait(chunk.t)  # type: ignore[attr-defined]
            if time.perf_counter() > deadline:
                raise KeyboardInterrupt

        with contextlib.suppress(KeyboardInterrupt):
            replay_file(path, on_items=sink.on_items, before_chunk=before)
        sink.abort()
        elapsed = time.perf_counter() - start
        cpu = time.process_time() - cpu
    return sink.frames, elapsed, cpu


def paced_frames(path: Path, runs: int) -> tuple[float, float, float]:
    """Paired rounds of the paced replay drawn live and not drawn: the median frames drawn,
    frames per second and CPU milliseconds per frame (the CPU the live run costs more, per
    frame)."""
    frames, rates, costs = [], [], []
    for _ in range(runs):
        n, elapsed, cpu_live = paced_rate(path)
        _, _, cpu_quiet = paced_rate(path, live=False)
        frames.append(n)
        rates.append(n / elapsed)
        costs.append((cpu_live - cpu_quiet) / max(1, n) * 1000)
    return statistics.median(frames), statistics.median(rates), statistics.median(costs)


def imported(path: Path, fmt: str) -> set[str]:
    """The top-level packages ``streamtool replay PATH --format FMT`` imports."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "streamtool.cli", "replay", str(path),
         "--format", fmt],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=True,
    )  # fmt: skip
    names = set()
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    return names


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=50_000)
    ap.add_argument("--runs", type=int, default=5, help="paired rounds of the paced replay (>= 5)")
    args = ap.parse_args()
    args.runs = max(5, args.runs)
    ok = True
    print(f"load {os.getloadavg()[0]:.2f} (1 min); medians")
    with tempfile.TemporaryDirectory() as tmp:
        # 1. one live frame
        costs = {}
        for n_events in (args.events // 10, args.events):
            big = Path(tmp) / f"openai-frame-{n_events}.jsonl"
            write_recording(big, n_events)
            costs[n_events] = frame_cost(big) * 1000
        frame_ms = costs[args.events]
        print(f"live frame     {frame_ms:6.2f} ms at {args.events:,} events "
              f"({costs[args.events // 10]:.2f} ms at {args.events // 10:,})"
              f"   target <= {MAX_FRAME_MS:.0f} ms")  # fmt: skip
        ok &= frame_ms <= MAX_FRAME_MS

        # 2. the final print of a 300-line write_file
        code = Path(tmp) / "openai-write-file-300.jsonl"
        write_file_recording(code, FILE_LINES)
        final_ms = final_cost(code) * 1000
        full_ms = final_cost(code, full=True) * 1000
        first_ms = first_print_cost(code) * 1000
        print(f"final print    {final_ms:6.2f} ms for a {FILE_LINES}-line write_file"
              f"   target <= {MAX_FINAL_MS:.0f} ms")  # fmt: skip
        print(f"               ({first_ms:.1f} ms the first in a fresh process;"
              f" {full_ms:.1f} ms with --full, all {FILE_LINES} lines)")  # fmt: skip
        ok &= final_ms <= MAX_FINAL_MS

        # 3. the redraw rate while paced: live frames are drawn, and what each one costs
        paced = Path(tmp) / "openai-paced.jsonl"
        write_recording(paced, 5_000)
        frames, rate, per_frame = paced_frames(paced, args.runs)
        print(f"redraw rate    {rate:6.1f} frames/s ({frames:.0f} live frames drawn in 2 s at"
              f" x10; {per_frame:.2f} ms CPU per frame)   target <= {MAX_FPS:.0f}")  # fmt: skip
        ok &= rate <= MAX_FPS + 0.5 and frames > 0

        # 4. what --format json imports
        small = Path(tmp) / "openai-small.jsonl"
        write_recording(small, 200)
        heavy = {"rich", "pygments"}
        json_heavy = sorted(imported(small, "json") & heavy)
        text_heavy = sorted(imported(small, "text") & heavy)
        print(f"--format json  imports {', '.join(json_heavy) or 'neither rich nor pygments'}"
              f"   (--format text imports {', '.join(text_heavy) or 'neither'})")  # fmt: skip
        ok &= not json_heavy and "rich" in text_heavy  # (the check sees what is imported)
    print("OK" if ok else "TARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
