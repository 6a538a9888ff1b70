"""Making and running the Python lexer the tree highlights code with, in fresh processes.

Three lexers, each in its own fresh process (runs interleaved, so load on the machine hits all
alike), after ``pygments.lexers`` is imported (the tree has it imported by then):

- ``pygments``: pygments' own lexer, as ``full_lexer`` makes it;
- ``ascii copy``: the previous quick lexer, remade here: pygments' lexer with its Unicode classes
  cut to ASCII and its word lists as plain alternations, every rule compiled at the first
  instance, lexed by pygments' own loop;
- ``quick``: ``quick_lexer("python")``, what ``lexer_for`` gives for ASCII text now.

Each process times making the lexer (importing the language's module included), its first
lexing of the code the tree benchmark draws (80 lines of ``bench_tree``'s streamed file: the
first lexing compiles what it needs), then steady lexing (median of 20) of that code and of a
standard library module (``json/decoder.py``). Prints medians of ``--runs`` processes and the
ratios against pygments' own and against the ASCII copy, from the same run. Every lexer's tokens
are checked against pygments' own before timing.

    python benchmarks/bench_lexers.py [--runs 15]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

KINDS = ("pygments", "ascii copy", "quick")
FIGURES = ("make", "first lex", "make + first", "steady lex", "steady stdlib")


def bench_code(lines: int = 80) -> str:
    """The first ``lines`` lines of the file ``bench_tree`` streams."""
    from benchmarks.bench_tree import _code

    text = ""
    pieces = _code()
    while text.count("\n") < lines:
        text += next(pieces)
    return "\n".join(text.split("\n")[:lines]) + "\n"


def stdlib_code() -> str:
    import json.decoder

    return Path(json.decoder.__file__).read_text(encoding="utf-8")


def ascii_copy() -> Any:
    """The previous quick lexer: the ASCII token definitions with plain word lists, made and
    run by pygments."""
    from pygments.lexer import words

    from streamtool.cli.lexer_rules import plain_words
    from streamtool.cli.lexers import LEXER_OPTIONS, _lexer_class, ascii_tokendefs

    cls = _lexer_class("python")
    tokens = {
        state: [
            (plain_words(rule[0]), *rule[1:])
            if type(rule) is tuple and isinstance(rule[0], words)
            else rule
            for rule in rules
        ]
        for state, rules in ascii_tokendefs(cls).items()
    }
    copy = type(f"Ascii{cls.__name__}", (cls,), {"tokens": tokens})
    return copy(**LEXER_OPTIONS)


def child(kind: str) -> dict[str, float]:
    """One fresh process: the figures of one kind of lexer, in milliseconds."""
    import pygments.lexers  # noqa: F401  (imported by the tree before any lexer is made)

    from streamtool.cli import lexers

    code, stdlib = bench_code(), stdlib_code()
    start = time.perf_counter()
    if kind == "pygments":
        lexer = lexers.full_lexer("python")
    elif kind == "ascii copy":
        lexer = ascii_copy()
    else:
        lexer = lexers.quick_lexer("python")
    made = time.perf_counter()
    list(lexer.get_tokens(code))
    first = time.perf_counter()

    def steady(text: str) -> float:
        list(lexer.get_tokens(text))
        times = []
        for _ in range(20):
            t0 = time.perf_counter()
            list(lexer.get_tokens(text))
            times.append(time.perf_counter() - t0)
        return statistics.median(times) * 1000

    return {
        "make": (made - start) * 1000,
        "first lex": (first - made) * 1000,
        "make + first": (first - start) * 1000,
        "steady lex": steady(code),
        "steady stdlib": steady(stdlib),
    }


def check_tokens() -> None:
    """Each lexer gives pygments' own tokens on both texts."""
    from streamtool.cli import lexers

    for text in (bench_code(), stdlib_code()):
        assert text.isascii()
        theirs = list(lexers.full_lexer("python").get_tokens(text))
        for lexer in (ascii_copy(), lexers.quick_lexer("python")):
            assert list(lexer.get_tokens(text)) == theirs, type(lexer).__name__


def run_child(kind: str) -> dict[str, float]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # timed as installed: bytecode written and read
    out = subprocess.run(
        [sys.executable, __file__, "--child", kind],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    return json.loads(out)  # type: ignore[no-any-return]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--child", choices=KINDS, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child)))
        return 0
    check_tokens()
    code = bench_code()
    print(f"code: {code.count(chr(10))} lines, {len(code):,} chars (bench_tree's file); "
          f"stdlib: json/decoder.py, {len(stdlib_code()):,} chars")  # fmt: skip
    for kind in KINDS:
        run_child(kind)  # bytecode written, caches warm
    seen: dict[str, list[dict[str, float]]] = {kind: [] for kind in KINDS}
    for _ in range(args.runs):
        for kind in KINDS:
            seen[kind].append(run_child(kind))
    med = {k: {f: statistics.median(run[f] for run in seen[k]) for f in FIGURES} for k in KINDS}
    print(f"medians of {args.runs} fresh processes, ms")
    print(f"{'':14}" + "".join(f"{k:>14}" for k in KINDS) + "   quick/pygments  quick/ascii copy")
    for f in FIGURES:
        row = "".join(f"{med[k][f]:14.2f}" for k in KINDS)
        quick = med["quick"][f]
        print(f"{f:14}{row}   {quick / med['pygments'][f]:14.2f}  "
              f"{quick / med['ascii copy'][f]:16.2f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
