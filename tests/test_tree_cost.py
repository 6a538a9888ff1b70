"""What keeps the tree cheap to draw draws exactly what rich and pygments would have drawn.

The ASCII copies of pygments' lexers give pygments' tokens on ASCII text; ``Code`` draws what
rich's ``Syntax`` draws with word wrapping (which it turns off for code whose lines all fit);
``Body`` draws what ``Text`` draws; a live display that stops draws no frame only to erase it.
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pygments import unistring
from rich.console import Console
from rich.syntax import Syntax
from rich.text import Text

from streamtool.cli import tree_view
from streamtool.cli.lexers import _LEXERS, ascii_part, full_lexer, lexer_for
from streamtool.cli.tree import TreeSink, make_console
from streamtool.cli.tree_view import Body, Code
from streamtool.core.drive.replay_file import replay_file

from .conftest import RECORDINGS

ASCII = [chr(i) for i in range(128)]
LANGUAGES = sorted(set(_LEXERS.values()))


# -- lexers ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("flags", [0, re.MULTILINE | re.DOTALL, re.VERBOSE])
def test_the_ascii_part_of_every_unicode_class_matches_the_same_ascii(flags: int) -> None:
    texts = {getattr(unistring, n) for n in [*unistring.cats, "xid_start", "xid_continue"]}
    for text in texts:
        whole = re.compile(f"[{text}]", flags)
        part = re.compile(f"[{ascii_part(text)}]", flags)
        matched = [c for c in ASCII if whole.match(c)]
        assert matched == [c for c in ASCII if part.match(c)], text[:20]


@pytest.mark.parametrize(
    ("text", "part"),
    [
        ("A-Z_a-z\u00aa\u00b5", "A-Z_a-z"),
        ("!-#~-\u00a1\u00a7", "!-#~-\\x7f"),  # a range running past ASCII is cut at DEL
        ("a\\-\u00e9", "a\\-"),  # an escaped hyphen is no range
        ("\\\\-\u00e9", "\\\\-\\x7f"),  # an escaped backslash, then a range
        ("\u00c0-\u00d6", "\\u0100"),  # no ASCII member: a character no ASCII text has
        ("0-9", "0-9"),
    ],
)
def test_ascii_part_of_hand_made_classes(text: str, part: str) -> None:
    assert ascii_part(text) == part


CODE_PIECES = [
    "def", "class", "async", "await", "lambda", "import", "from", "return", "print", "self",
    "x", "_y1", "Name", "fn", "let", "const", "=>", "interface", "SELECT", "{", "}", "(", ")",
    "[", "]", ":", ";", ",", ".", "=", "+", "-", "*", "/", "%", "<", ">", "@", "#", "//", "/*",
    "*/", '"', "'", '"""', "`", "${", "\\", "0x1F", "1e-3", "1_000", "42", "3.14", "True",
    "None", "null", " ", "  ", "    ", "\t", "\n", "\n", "\n", "f'", "r'", "b'", "<div>", "$x",
    "as", "assert", "is", "isinstance", "len", "list", "Exception", "ValueError", "__init__",
    "__name__", "__all__", "abs", "all", "any", "__import__", "yield", "from", "elif", "else",
    "match", "case", "type", "int", "str", "impl", "pub", "mut", "var", "function", "typeof",
    "static", "void", "unsigned", "color", "margin", "px", "!important", "WHERE", "end", "do",
]  # fmt: skip
ascii_code = st.lists(st.sampled_from(CODE_PIECES), max_size=60).map("".join) | st.text(
    alphabet=st.characters(min_codepoint=9, max_codepoint=126), max_size=80
)


@pytest.mark.parametrize("name", LANGUAGES)
@given(text=ascii_code)
@settings(max_examples=40, deadline=None)
def test_ascii_lexer_gives_pygments_tokens_on_ascii_text(name: str, text: str) -> None:
    assert list(lexer_for(name, text).get_tokens(text)) == list(full_lexer(name).get_tokens(text))


def regex_lexer_class(name: str) -> type | None:
    from pygments.lexers import find_lexer_class_by_name

    cls = find_lexer_class_by_name(name)
    return cls if hasattr(cls, "get_tokendefs") else None


# json and text have hand-written lexers (no word lists to rewrite)
REGEX_LANGUAGES = [name for name in LANGUAGES if regex_lexer_class(name) is not None]


def test_most_languages_have_regex_lexers() -> None:
    assert len(REGEX_LANGUAGES) >= len(LANGUAGES) - 2


@pytest.mark.parametrize("name", REGEX_LANGUAGES)
def test_plain_word_lists_match_what_pygments_word_patterns_match(name: str) -> None:
    from pygments.lexer import words

    from streamtool.cli.lexer_rules import plain_words

    cls = regex_lexer_class(name)
    assert cls is not None
    lists = [
        rule[0]
        for rules in cls.get_tokendefs().values()
        for rule in rules
        if type(rule) is tuple and isinstance(rule[0], words)
    ]
    for listed in lists:
        ours, theirs = re.compile(plain_words(listed)), re.compile(listed.get())
        tried = list(listed.words)
        texts = [w + tail for w in tried for tail in ("", " ", "x", "_", "(", ".", "1")]
        texts += [a + b for a in tried[:40] for b in tried[:40]]
        texts += [w[:-1] for w in tried]
        for text in texts:
            a, b = ours.match(text), theirs.match(text)
            assert (a and (a.span(), a.groups())) == (b and (b.span(), b.groups())), text


def test_ascii_python_lexer_has_no_unicode_class_and_other_text_gets_pygments_own() -> None:
    lexer = lexer_for("python", "def f(x):\n    return x\n")
    patterns = [
        rule.source
        for rules in map(type(lexer)._rules.rules, type(lexer)._rules.defs)
        for rule in rules
        if isinstance(rule.source, str)
    ]
    assert patterns and all(p.isascii() for p in patterns)
    assert type(lexer_for("python", "café = 1\n")) is type(full_lexer("python"))


# -- drawing ---------------------------------------------------------------------------------------
def drawn(renderable: Any, width: int, *, color: bool = True) -> str:
    console = Console(
        file=io.StringIO(),
        width=width,
        force_terminal=color,
        color_system="truecolor" if color else None,
        highlight=False,
        markup=False,
        emoji=False,
    )
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined]


def lines_of(pieces: list[str], max_pieces: int) -> st.SearchStrategy[str]:
    line = st.lists(st.sampled_from(pieces), max_size=max_pieces).map("".join)
    return st.lists(line, min_size=1, max_size=8).map("\n".join)


code_lines = lines_of([*"abc xyz=():_", "\t", "日", "def ", "# é", "    "], 40)


@given(
    code=code_lines,
    width=st.integers(min_value=12, max_value=90),
    start=st.sampled_from([1, 9, 10, 99, 998]),
    color=st.booleans(),
)
@settings(max_examples=150, deadline=None)
def test_code_draws_what_rich_syntax_draws(code: str, width: int, start: int, color: bool) -> None:
    syntax = Syntax(
        code,
        full_lexer("python"),  # off a terminal Code lexes nothing: it must not show
        theme="ansi_dark",
        line_numbers=True,
        start_line=start,
        background_color="default",
        word_wrap=True,
    )
    assert drawn(Code(code, "python", start), width, color=color) == drawn(
        syntax, width, color=color
    )


prose = lines_of([*"ab ,.", "\t", "日本", "word ", "  "], 30)


@given(text=prose, width=st.integers(min_value=5, max_value=70), style=st.sampled_from(["", "dim"]))
@settings(max_examples=150, deadline=None)
def test_body_draws_what_text_draws(text: str, width: int, style: str) -> None:
    assert drawn(Body(text, style=style), width) == drawn(Text(text, style=style), width)
    assert drawn(Body(text), width, color=False) == drawn(Text(text), width, color=False)


def test_code_in_a_pipe_is_not_lexed(tmp_path: Path) -> None:
    """Off a terminal nothing shows the highlighting: the language's lexer is never made."""
    script = (
        "import io, sys\n"
        "from streamtool.cli.tree import TreeSink, make_console\n"
        "from streamtool.core.drive.replay_file import replay_file\n"
        "sink = TreeSink(make_console(file=io.StringIO(), width=100), live=False)\n"
        "sink.close(replay_file(sys.argv[1], on_items=sink.on_items))\n"
        "out = sink.console.file.getvalue()\n"
        "assert 'def ' in out, out\n"
        "print('pygments.lexers.python' in sys.modules)\n"
    )
    path = RECORDINGS / "openai-write-file.jsonl"
    result = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


# -- the live display ------------------------------------------------------------------------------
def test_a_live_display_that_stops_draws_no_frame_only_to_erase_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    drawn_frames = []
    render_live = tree_view.render_live

    class Counted:
        def __init__(self, frame: Any) -> None:
            self.frame = frame

        def __rich_console__(self, console: Any, options: Any) -> Any:
            drawn_frames.append(1)
            yield self.frame

    def counting(*args: Any, **kwargs: Any) -> Any:
        return Counted(render_live(*args, **kwargs))

    monkeypatch.setattr(tree_view, "render_live", counting)
    out = io.StringIO()
    sink = TreeSink(make_console(file=out, force_terminal=True, width=100, height=30), live=True)

    def slowly(engine: Any, chunk: Any) -> None:  # 11 reads over ~0.3 s: a few frames
        sink.observe(engine)
        time.sleep(0.03)

    engine = replay_file(
        RECORDINGS / "openai-parallel-tool-calls.jsonl",
        on_items=sink.on_items,
        before_chunk=slowly,
    )
    sink.close(engine)
    assert sink.frames >= 1
    assert len(drawn_frames) == sink.frames  # each frame drawn was shown; none at the stop
    assert "invocations (2)" in out.getvalue()[out.getvalue().rfind("\x1b[2K") :]


def test_the_live_footer_follows_reads_that_give_no_item_without_observe() -> None:
    """``replay --speed max`` does not call ``observe`` before every read: the redraw thread
    sees the engine's reads itself (here, keep-alive comments that give no item)."""
    from streamtool.core.records import Chunk, Header
    from streamtool.core.replay import ReplayEngine

    from .helpers import chat_chunk, sse

    out = io.StringIO()
    sink = TreeSink(make_console(file=out, force_terminal=True, width=100, height=30), live=True)
    engine = ReplayEngine(Header(raw_body=True), source="test")
    body = sse(chat_chunk({"role": "assistant", "content": "hello"}), done=False)
    sink.on_items(engine, 0.0, engine.feed_chunk(Chunk(0.0, body)))
    keep_alive = b": keep-alive\n\n"
    sink.on_items(engine, 0.01, engine.feed_chunk(Chunk(0.01, keep_alive)))  # a quirk, once

    def drawn(text: str) -> bool:
        deadline = time.monotonic() + 5
        while text not in out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.02)
        return text in out.getvalue()

    assert drawn("2 chunks")
    for i in range(2, 6):  # reads that give nothing to draw: only the counters move
        assert engine.feed_chunk(Chunk(0.01 * i, keep_alive)) == []
    assert drawn("6 chunks")
    sink.abort()


def test_a_stream_over_before_the_first_redraw_gets_its_tree_and_no_live_frame() -> None:
    """The live display begins one redraw interval in: an unpaced replay that ends sooner draws
    no frame only to replace it, and prints exactly what a sink that is never live prints."""
    path = RECORDINGS / "openai-parallel-tool-calls.jsonl"
    outputs = []
    for live in (True, False):
        out = io.StringIO()
        console = make_console(file=out, force_terminal=True, width=100, height=30)
        sink = TreeSink(console, live=live, refresh_per_second=2)  # first tick after 0.5 s
        engine = replay_file(path, on_items=sink.on_items, before_chunk=lambda e, c: None)
        sink.close(engine)
        assert sink.frames == 0
        outputs.append(out.getvalue())
    assert outputs[0] == outputs[1]
    assert "\x1b[?25l" not in outputs[0]  # the cursor was never hidden: no live display
    assert "invocations (2)" in outputs[0]
