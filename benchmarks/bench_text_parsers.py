"""Speed of the ``xml``, ``json`` and ``sentinel`` text parsers.

Two checks per parser, each against figures measured in the same run:

1. **Scanning floor.** 10 MB of prose and code with a tool call every 50 KB, fed in reads of
   ``--chunk`` characters, must parse within 3x of a floor: finding every occurrence of the
   format's trigger (``<``; ``{`` and ``[``; ``[[SEG_START``) with ``str.find`` over the same
   reads. The floor is the least any scanner must do: look at every character once, in C.
2. **Linearity.** One write_file of 10 MB must take at most 2.3x the time of one of 5 MB.

Run ``python -m benchmarks.bench_text_parsers`` (``--quick`` for a smaller, faster run). Prints
the figures and ratios; exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections.abc import Callable

from streamtool.core.handlers import make_handler
from streamtool.core.model import ChunkResponse
from streamtool.core.parsers import make_text_parser

MB = 1_000_000
FLOOR_LIMIT = 3.0
LINEAR_LIMIT = 2.3

PROSE = (
    "The handler keeps one text segment open while prose streams in; it closes it only when a "
    "structured segment starts. Values such as n < 10 or a > b are ordinary text, and so are "
    "set literals like {1, 2} or lists like [3, 4] in an explanation. "
)
CODE = (
    "```python\n"
    "def merge(a: dict, b: dict) -> dict:\n"
    "    out = {**a}\n"
    "    for key, value in b.items():\n"
    "        if key in out and out[key] < value:\n"
    "            out[key] = [out[key], value]\n"
    "    return out\n"
    "```\n"
)
FILLER_UNIT = (PROSE * 3 + "\n\n" + CODE + "\n") * 4

FILE_LINE = '    items = [x * 2 for x in range(100) if x % 3 == 0]  # "ok" <tag> {a}\n'


def tool_call(fmt: str, n: int) -> str:
    """Tool call number ``n`` in the format ``fmt``: a small read_file call and a write_file of
    about 2 KB, in turn."""
    path = f"src/m{n}.py"
    if n % 2 == 0:
        if fmt == "xml":
            return (
                f'<tool name="read_file"><arguments><arg name="path">{path}</arg>'
                "</arguments></tool>\n"
            )
        if fmt == "json":
            return f'```json\n{{"name": "read_file", "args": {{"path": "{path}"}}}}\n```\n'
        return (
            '[[SEG_START {"type":"tool","tool_name":"read_file",'
            f'"arguments":{{"path":"{path}"}}}}]][[SEG_END]]\n'
        )
    content = FILE_LINE * 28
    if fmt == "xml":
        return (
            f'<tool name="write_file"><arguments><arg name="path">{path}</arg>'
            f'<arg name="content">__START_CONTENT__\n{content}__END_CONTENT__</arg>'
            "</arguments></tool>\n"
        )
    if fmt == "json":
        args = json.dumps({"path": path, "content": content})
        return f'{{"tool": {{"function": "write_file", "parameters": {args}}}}}\n'
    return f'[[SEG_START {{"type":"write_file","path":"{path}"}}]]{content}[[SEG_END]]\n'


def build_text(fmt: str, size: int, every: int = 50_000) -> tuple[str, int]:
    parts = []
    total = 0
    calls = 0
    filler = (FILLER_UNIT * (every // len(FILLER_UNIT) + 1))[:every]
    while total < size:
        parts.append(filler)
        call = tool_call(fmt, calls)
        parts.append(call)
        total += len(filler) + len(call)
        calls += 1
    return "".join(parts), calls


def single_write_file(fmt: str, size: int) -> str:
    content = (FILE_LINE * (size // len(FILE_LINE) + 1))[:size]
    if fmt == "xml":
        return (
            'Writing it.\n<tool name="write_file"><arguments><arg name="path">big.py</arg>'
            f'<arg name="content">__START_CONTENT__\n{content}\n__END_CONTENT__</arg>'
            "</arguments></tool>\nDone."
        )
    if fmt == "json":
        args = json.dumps({"path": "big.py", "content": content})
        return f'Writing it.\n{{"name": "write_file", "args": {args}}}\nDone.'
    return (
        f'Writing it.\n[[SEG_START {{"type":"write_file","path":"big.py"}}]]{content}'
        "[[SEG_END]]\nDone."
    )


TRIGGERS = {"xml": ("<",), "json": ("{", "["), "sentinel": ("[[SEG_START",)}


def chunks_of(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def floor_scan(chunks: list[str], triggers: tuple[str, ...]) -> int:
    found = 0
    for chunk in chunks:
        for trigger in triggers:
            i = chunk.find(trigger)
            while i >= 0:
                found += 1
                i = chunk.find(trigger, i + 1)
    return found


def parse(fmt: str, chunks: list[str]) -> int:
    parser = make_text_parser(fmt)
    events = 0
    feed = parser.feed
    for chunk in chunks:
        events += len(feed(chunk))
    events += len(parser.finish())
    return events


def parse_with_handler(fmt: str, chunks: list[str]) -> int:
    handler = make_handler(fmt)
    feed = handler.feed
    for chunk in chunks:
        feed(ChunkResponse(content=chunk))
    handler.finalize()
    return len(handler.get_all_invocations())


def best_of(runs: int, fn: Callable[[], object]) -> float:
    """The best CPU time of ``runs`` runs (CPU time: other processes on the machine do not
    count; the best run: the one least disturbed by caches and the scheduler)."""
    best = float("inf")
    for _ in range(runs):
        gc.collect()
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunk", type=int, default=4096, help="characters per read (default 4096)")
    ap.add_argument("--runs", type=int, default=7, help="runs per figure; the best counts")
    ap.add_argument("--quick", action="store_true", help="1 MB / 0.5+1 MB instead of 10 / 5+10")
    args = ap.parse_args(argv)
    scale = 10 if args.quick else 1
    ok = True

    size = 10 * MB // scale
    print(f"1. scanning: {size / MB:g} MB, a tool call every 50 KB, reads of {args.chunk} chars")
    print(f"   {'parser':<9}{'calls':>6}{'floor s':>10}{'parser s':>10}{'ratio':>7}"
          f"{'handler s':>11}  check")  # fmt: skip
    for fmt in ("xml", "json", "sentinel"):
        text, calls = build_text(fmt, size)
        chunks = chunks_of(text, args.chunk)
        invocations = parse_with_handler(fmt, chunks)
        if invocations != calls:
            print(f"   {fmt}: expected {calls} invocations, got {invocations}")
            ok = False
        floor = parsed = float("inf")
        for _ in range(args.runs):  # interleaved, so that both see the same machine
            floor = min(floor, best_of(1, lambda: floor_scan(chunks, TRIGGERS[fmt])))  # noqa: B023
            parsed = min(parsed, best_of(1, lambda: parse(fmt, chunks)))  # noqa: B023
        handled = best_of(1, lambda: parse_with_handler(fmt, chunks))  # noqa: B023
        ratio = parsed / floor
        good = ratio <= FLOOR_LIMIT
        ok &= good
        print(
            f"   {fmt:<9}{calls:>6}{floor:>10.4f}{parsed:>10.4f}{ratio:>7.2f}{handled:>11.4f}"
            f"  {'ok' if good else 'FAIL'} (<= {FLOOR_LIMIT})"
        )

    small, big = 5 * MB // scale, 10 * MB // scale
    print(f"2. linearity: one write_file of {small / MB:g} MB and of {big / MB:g} MB")
    print(f"   {'parser':<9}{'small s':>10}{'big s':>10}{'ratio':>7}  check")
    for fmt in ("xml", "json", "sentinel"):
        chunks_small = chunks_of(single_write_file(fmt, small), args.chunk)
        chunks_big = chunks_of(single_write_file(fmt, big), args.chunk)
        t_small = t_big = float("inf")
        for _ in range(args.runs):  # interleaved, so that both see the same machine
            t_small = min(t_small, best_of(1, lambda: parse(fmt, chunks_small)))  # noqa: B023
            t_big = min(t_big, best_of(1, lambda: parse(fmt, chunks_big)))  # noqa: B023
        ratio = t_big / t_small
        good = ratio <= LINEAR_LIMIT
        ok &= good
        print(
            f"   {fmt:<9}{t_small:>10.4f}{t_big:>10.4f}{ratio:>7.2f}"
            f"  {'ok' if good else 'FAIL'} (<= {LINEAR_LIMIT})"
        )
    print("all checks pass" if ok else "SOME CHECKS FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
