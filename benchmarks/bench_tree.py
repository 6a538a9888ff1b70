"""Cost of the live tree: ``replay --speed max`` on a terminal against ``replay --format json``.

Writes a recording of 5,000 events (reasoning, text, a long streamed ``write_file`` call and two
small calls, one network read per event, in the OpenAI Chat Completions wire format), then times,
in the same run:

1. in process: the replay engine with the JSON sink, and with the tree sink drawing live on a
   forced-terminal rich console (the live path: redraw thread, frames, final tree), both fed in
   batches as an unpaced replay feeds them; both fed read by read (as a paced replay feeds the
   tree) are shown beside them;
2. end to end: ``streamtool replay FILE --format json`` into a pipe, and ``streamtool replay FILE
   --speed max`` in a real pseudo-terminal (so the command picks the live tree itself).

Prints the figures, the in-process ratio (target: at most 1.3: what the tree costs on the stream
against what the JSON summary costs on it) and the redraw rate (target: at most 15 per second).
Exit code 1 if a target is missed.

The end-to-end ratio is printed for information, split in two: the tree's start-up (importing rich
and pygments, which ``--format json`` never loads, and the lexer's first use: paid once per
process, whatever the stream), measured from the same commands on 50 events, and what is left,
the stream's own cost end to end. The timed commands run with bytecode on, as an installed command
does.

    python benchmarks/bench_tree.py [--events 5000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import io
import json
import os
import pty
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

TARGET_RATIO = 1.3
MAX_FPS = 15.0
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


def write_recording(path: Path, n_events: int) -> int:
    evs = events(n_events)
    header = {
        "type": "header",
        "format": "streamtool-recording",
        "version": 1,
        "provider": "openai",
        "api": "chat.completions",
        "recorded_at": "2026-11-21T00:00:00Z",
        "request": {
            "method": "POST",
            "url": "https://api.openai.com/v1/chat/completions",
            "headers": {"content-type": "application/json"},
            "body": {"model": MODEL, "stream": True},
        },
        "response": {"status": 200, "headers": {"content-type": "text/event-stream"}},
    }
    t = 0.42
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(header) + "\n")
        for raw in evs:
            fh.write(json.dumps({"type": "chunk", "t": round(t, 4), "text": raw}) + "\n")
            t += 0.011
        fh.write(json.dumps({"type": "end", "t": round(t, 4), "reason": "complete"}) + "\n")
    return len(evs)


# -- in process ------------------------------------------------------------------------------------
def run_json(path: Path, *, batched: bool = True) -> None:
    """The JSON summary as ``replay --format json`` makes it: the recording fed in batches
    (``batched=False``: read by read)."""
    from streamtool.cli.sinks import JsonSink
    from streamtool.core.drive.replay_file import replay_file

    sink = JsonSink(io.StringIO())
    if batched:
        engine = replay_file(path, batched=True)
    else:
        engine = replay_file(path, on_items=sink.on_items)
    sink.close(engine)


def run_tree(path: Path, frames: list[int], *, batched: bool = True) -> None:
    """The live tree as ``replay --speed max`` draws it: fed in batches (``batched=False``: read
    by read, as a paced replay feeds it)."""
    from streamtool.cli.tree import make_console, make_live_sink
    from streamtool.core.drive.replay_file import replay_file

    with open(os.devnull, "w") as devnull:
        console = make_console(file=devnull, force_terminal=True, width=120, height=40)
        sink = make_live_sink(console)
        assert sink.live
        engine = replay_file(path, on_items=sink.on_items, batched=batched)
        sink.close(engine)
    frames.append(sink.frames)


def timed(fn: Callable[[], None]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def compare(
    base: Callable[[], None], other: Callable[[], None], repeat: int
) -> tuple[float, float, float, float]:
    """Interleaved runs (a machine's load hits both alike): best and median of each."""
    (a, a_med), (b, b_med) = compare_all([base, other], repeat)
    return a, b, a_med, b_med


def compare_all(fns: list[Callable[[], None]], repeat: int) -> list[tuple[float, float]]:
    """Interleaved runs of each of ``fns``: (best, median) of each."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, seen in zip(fns, times, strict=True):
            seen.append(timed(fn))
    return [(min(seen), statistics.median(seen)) for seen in times]


@contextlib.contextmanager
def finished_tree(path: Path) -> Iterator[tuple[Any, Any]]:
    """A console (on the null device, 120x40, as a terminal) and a tree sink that has seen the
    whole recording, not live."""
    from streamtool.cli.tree import TreeSink, make_console
    from streamtool.core.drive.replay_file import replay_file

    with open(os.devnull, "w") as devnull:
        console = make_console(file=devnull, force_terminal=True, width=120, height=40)
        sink = TreeSink(console, live=False)
        engine = replay_file(path, on_items=sink.on_items)
        sink.observe(engine)
        yield console, sink


def frame_cost(path: Path, frames: int = 30) -> float:
    """Seconds to build and draw one live frame of the finished stream (median)."""
    with finished_tree(path) as (console, sink):
        console.print(sink.frame())  # warm caches (pretty arguments, lexers)
        return statistics.median(timed(lambda: console.print(sink.frame())) for _ in range(frames))


def final_cost(path: Path, repeat: int = 10) -> float:
    """Seconds to build and print the final tree of the finished stream (median)."""
    with finished_tree(path) as (console, sink):
        console.print(sink.final_renderable())  # warm caches (lexers)
        return statistics.median(
            timed(lambda: console.print(sink.final_renderable())) for _ in range(repeat)
        )


# -- end to end ------------------------------------------------------------------------------------
def cli_env(**extra: str) -> dict[str, str]:
    """The environment of the timed commands: as installed, with bytecode written and read (a
    shell that sets PYTHONDONTWRITEBYTECODE would have every module not yet compiled, of an
    editable install, compiled again on every run, a cost no installed command has)."""
    env = dict(os.environ, **extra)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def cli_json(path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "streamtool.cli", "replay", str(path), "--format", "json"],
        stdout=subprocess.DEVNULL,
        env=cli_env(),
        check=True,
    )


def cli_tree_pty(path: Path, cols: int = 120, rows: int = 40) -> bytes:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    env = cli_env(TERM="xterm-256color", COLUMNS=str(cols), LINES=str(rows))
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamtool.cli", "replay", str(path), "--speed", "max"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        close_fds=True,
    )
    os.close(slave)
    out = bytearray()

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            out.extend(data)

    reader = threading.Thread(target=drain)
    reader.start()
    code = proc.wait()
    reader.join()
    os.close(master)
    if code != 0:
        raise SystemExit(f"streamtool replay exited {code}: {bytes(out[-500:])!r}")
    return bytes(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "openai-bench-tree.jsonl"
        n = write_recording(path, args.events)
        size = path.stat().st_size
        print(f"recording: {n:,} events, {size / 1e6:.2f} MB")

        frames: list[int] = []
        run_json(path)  # warm up: imports, caches
        run_tree(path, frames)
        (json_s, json_m), (tree_s, tree_m), (reads_s, reads_m), (tree_r, tree_rm) = compare_all(
            [
                lambda: run_json(path),
                lambda: run_tree(path, frames),
                lambda: run_json(path, batched=False),
                lambda: run_tree(path, [], batched=False),
            ],
            args.repeat,
        )
        ratio = tree_s / json_s
        print(f"best of {args.repeat} (median in brackets), runs interleaved")
        print(f"in process   json sink  {json_s * 1000:8.1f} ms  ({json_m * 1000:.1f})")
        print(f"in process   live tree  {tree_s * 1000:8.1f} ms  ({tree_m * 1000:.1f})"
              f"   frames {max(frames)}")  # fmt: skip
        print(f"in process   ratio      {ratio:8.2f}  ({tree_m / json_m:.2f})"
              f"   target <= {TARGET_RATIO}")  # fmt: skip
        ok &= ratio <= TARGET_RATIO
        print(f"in process   json read by read {reads_s * 1000:5.1f} ms  ({reads_m * 1000:.1f})"
              f"   tree read by read {tree_r * 1000:.1f} ms  ({tree_rm * 1000:.1f})"
              f"   ratio {tree_r / reads_s:.2f}  ({tree_rm / reads_m:.2f})")  # fmt: skip
        final_ms = final_cost(path) * 1000
        print(f"in process   final tree {final_ms:8.1f} ms  (printing it: part of the live tree)")

        cli_json(path)
        out = cli_tree_pty(path)
        json_e, tree_e, json_em, tree_em = compare(
            lambda: cli_json(path), lambda: cli_tree_pty(path), args.repeat
        )
        ratio_e = tree_e / json_e
        print(f"end to end   --format json      {json_e * 1000:8.1f} ms  ({json_em * 1000:.1f})")
        print(f"end to end   --speed max (pty)  {tree_e * 1000:8.1f} ms  ({tree_em * 1000:.1f})"
              f"   {len(out):,} bytes drawn")  # fmt: skip
        print(f"end to end   ratio              {ratio_e:8.2f}  ({tree_em / json_em:.2f})"
              f"   (information: with the start-up below)")  # fmt: skip
        # what of that is start-up (rich, pygments, the lexer: paid once, whatever the stream):
        # the same two commands on a 50-event recording with a short file of the same code
        small = Path(tmp) / "openai-bench-tree-small.jsonl"
        write_recording(small, 50)
        json_s0, tree_s0, _, _ = compare(
            lambda: cli_json(small), lambda: cli_tree_pty(small), args.repeat
        )
        fixed = tree_s0 - json_s0
        print(f"end to end   start-up           {fixed * 1000:8.1f} ms"
              f"  (tree less json, 50 events: {fixed / json_e:.2f}x of the json run)")  # fmt: skip
        print(f"end to end   less the start-up  {(tree_e - fixed) / json_e:8.2f}"
              f"   (the stream's own cost, end to end)")  # fmt: skip

        # redraw rate while paced: a 2-second slice played at recorded speed x 10
        from streamtool.cli.pacing import Pacer

        frames.clear()
        pacer = Pacer(10.0, None)
        from streamtool.cli.tree import make_console, make_live_sink
        from streamtool.core.drive.replay_file import replay_file

        with open(os.devnull, "w") as devnull:
            console = make_console(file=devnull, force_terminal=True, width=120, height=40)
            sink = make_live_sink(console)
            start = time.perf_counter()
            deadline = start + 2.0

            def before(engine: object, chunk: object) -> None:
                sink.observe(engine)
                pacer.wait(chunk.t)  # type: ignore[attr-defined]
                if time.perf_counter() > deadline:
                    raise KeyboardInterrupt

            with contextlib.suppress(KeyboardInterrupt):
                replay_file(path, on_items=sink.on_items, before_chunk=before)
            sink.abort()
            elapsed = time.perf_counter() - start
        rate = sink.frames / elapsed
        print(f"paced x10    {sink.frames} frames in {elapsed:.2f} s = {rate:.1f} per second "
              f"(target <= {MAX_FPS:.0f})")  # fmt: skip
        ok &= rate <= MAX_FPS + 0.5
        # the cost of one live frame does not grow with the stream: 5,000 vs 50,000 events
        for n_events in (args.events, args.events * 10):
            big = Path(tmp) / f"openai-frame-{n_events}.jsonl"
            write_recording(big, n_events)
            per_frame = frame_cost(big)
            share = per_frame * MAX_FPS * 100
            print(f"frame cost   {n_events:>6,} events: {per_frame * 1000:6.2f} ms per live frame"
                  f" (120x40), {share:.1f}% of a core at 15 frames/s")  # fmt: skip
    print("OK" if ok else "TARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
