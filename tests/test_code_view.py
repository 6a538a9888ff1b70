"""Code drawn from the lexer's tokens is, segment for segment and byte for byte, what rich's
``Syntax`` drew, on every kind of console; and drawing it does not import ``rich.syntax``."""

from __future__ import annotations

import io
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pygments import token as pygments_token
from rich import syntax as rich_syntax
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.style import Style
from rich.syntax import Syntax

from streamtool.cli import tree_view
from streamtool.cli.code_view import ANSI_DARK, token_style
from streamtool.cli.lexers import _LEXERS, lexer_for
from streamtool.cli.tree import TreeSink
from streamtool.cli.tree_view import CODE_TAB_SIZE, Code
from streamtool.core.drive.replay_file import replay_file

from .conftest import RECORDINGS
from .test_tree_pty import run_in_pty

LANGUAGES = sorted(set(_LEXERS.values()))

# every kind of console the tree is drawn on: colours of each depth, none (a pipe), NO_COLOR,
# recording consoles (exported as text and HTML afterwards)
CONSOLES: dict[str, dict[str, Any]] = {
    "truecolor": {"force_terminal": True, "color_system": "truecolor"},
    "256": {"force_terminal": True, "color_system": "256"},
    "standard": {"force_terminal": True, "color_system": "standard"},
    "windows": {"force_terminal": True, "color_system": "windows"},
    "pipe": {"force_terminal": False},
    "no_color": {"force_terminal": True, "color_system": "truecolor", "no_color": True},
    "NO_COLOR": {"force_terminal": True, "_environ": {"NO_COLOR": "1"}},
    "record": {"force_terminal": False, "record": True},
    "record_terminal": {"force_terminal": True, "color_system": "256", "record": True},
}


class SyntaxPath:
    """The code as it was drawn before: rich's ``Syntax``, told not to wrap (every line fits)."""

    def __init__(self, code: str, language: str, start_line: int) -> None:
        self.code, self.language, self.start_line = code, language, start_line

    def syntax(self, console: Console) -> Syntax:
        styled = console.color_system is not None or console.record
        return Syntax(
            self.code,
            lexer_for(self.language if styled else "text", self.code),
            theme="ansi_dark",
            line_numbers=True,
            start_line=self.start_line,
            background_color="default",
            word_wrap=False,
            tab_size=CODE_TAB_SIZE,
        )

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.syntax(console).__rich_console__(console, options.update(no_wrap=True))


def console(kind: str, width: int) -> Console:
    return Console(
        file=io.StringIO(),
        width=width,
        highlight=False,
        markup=False,
        emoji=False,
        **CONSOLES[kind],
    )


def outputs(renderable: Any, kind: str, width: int) -> list[Any]:
    """Everything a console makes of ``renderable``: its segments, the bytes printed and, for a
    recording console, its exports."""
    con = console(kind, width)
    segments = list(con.render(renderable, con.options))
    con = console(kind, width)
    con.print(renderable)
    out: list[Any] = [segments, con.file.getvalue()]  # type: ignore[attr-defined]
    if con.record:
        out += [con.export_text(clear=False), con.export_text(styles=True, clear=False)]
        out.append(con.export_html())
    return out


def needed_width(code: str, start_line: int) -> int:
    """The narrowest console on which every line of ``code`` fits beside its numbers."""
    drawn = Code(code, "text", start_line)
    return next(width for width in itertools.count(1) if drawn.fits(width))


def assert_same(code: str, language: str, start: int, width: int, kinds: list[str]) -> None:
    drawn = Code(code, language, start)
    assert drawn.fits(width)  # drawn from the tokens, not by Syntax
    for kind in kinds:
        ours = outputs(drawn, kind, width)
        assert ours == outputs(SyntaxPath(code, language, start), kind, width), kind


# -- the theme -------------------------------------------------------------------------------------
def test_the_theme_is_rich_s_ansi_dark() -> None:
    ours = {key: Style.parse(style) for key, style in ANSI_DARK.items()}
    assert ours == {tuple(key): style for key, style in rich_syntax.ANSI_DARK.items()}


def test_every_pygments_token_type_gets_the_style_rich_gives_it() -> None:
    theme = rich_syntax.ANSISyntaxTheme(rich_syntax.ANSI_DARK)
    types = [*pygments_token.STANDARD_TYPES, pygments_token.Name.Function.Magic]
    for token_type in types:
        assert token_style(token_type) == theme.get_style_for_token(token_type), token_type


# -- drawing ---------------------------------------------------------------------------------------
EDGES = [
    "",
    "\n",
    "\n\n\n",
    "x",
    "x\n",
    "x\n\n",
    "def f(x):\n\treturn x  \n\n\n# é 日本 😀\n",
    "\tif x:\n\t\treturn '''a\n\tb'''",
    "a\r\nb\rc\x07d\x0be\x0cf\n",
    "\ufeffimport os\n",
    "\x07\n",
    "trailing   \n   \n",
    's = """\nmulti\nline\n"""\n',
]


@pytest.mark.parametrize("language", ["python", "text", "json", "markdown", "bash", "html"])
@pytest.mark.parametrize("code", EDGES, ids=repr)
def test_edge_cases_draw_what_syntax_draws(code: str, language: str) -> None:
    for start in (1, 9, 99):
        width = needed_width(code, start)
        assert_same(code, language, start, width, list(CONSOLES))
        assert_same(code, language, start, width + 7, ["truecolor", "pipe"])


PIECES = [
    *"xyz_019 =+-*/.,:;()[]{}<>@$#'\"`\\",
    "  ",
    "\t",
    "def ",
    "class ",
    "fn ",
    "let ",
    "return ",
    "if ",
    "SELECT ",
    "true",
    "null",
    "0x1f",
    "3.5",
    "//",
    "/*",
    "*/",
    "<a>",
    "</a>",
    "<!--",
    "-->",
    "---",
    "key: ",
    "[tool]",
    "+ ",
    "- ",
    "é",
    "日本",
    "λ",
    "😀",
    "\x07",
    "\x0c",
    "\x1b",
    "\r",
    "\r\n",
    "\ufeff",
]
line = st.lists(st.sampled_from(PIECES), max_size=14).map("".join)
code_text = st.tuples(st.lists(line, max_size=6), st.booleans()).map(
    lambda parts: "\n".join(parts[0]) + ("\n" if parts[1] else "")
)


@given(
    code=code_text,
    language=st.sampled_from(LANGUAGES),
    start=st.sampled_from([1, 2, 9, 10, 99, 100, 9_999]),
    slack=st.integers(min_value=0, max_value=12),
    kind=st.sampled_from(sorted(CONSOLES)),
)
@settings(max_examples=300, deadline=None)
def test_code_draws_what_syntax_draws(
    code: str, language: str, start: int, slack: int, kind: str
) -> None:
    assert_same(code, language, start, needed_width(code, start) + slack, [kind])


@given(
    code=code_text,
    start=st.sampled_from([1, 9, 99_999]),
    width=st.integers(min_value=1, max_value=60),
)
@settings(max_examples=150, deadline=None)
def test_code_measures_what_syntax_measures(code: str, start: int, width: int) -> None:
    con = console("truecolor", 80)
    options = con.options.update(max_width=width)
    ours = Measurement.get(con, options, Code(code, "python", start))
    assert ours == Measurement.get(con, options, SyntaxPath(code, "python", start).syntax(con))


def test_code_too_wide_still_wraps_through_syntax() -> None:
    code = "value = compute(alpha, beta, gamma, delta)\n"
    drawn = Code(code, "python")
    assert not drawn.fits(30)
    con = console("truecolor", 30)
    con.print(drawn)
    assert len(con.file.getvalue().splitlines()) > 2  # type: ignore[attr-defined]


# -- the bundled recordings ----------------------------------------------------------------------
def _golden(path: Path) -> dict[str, Any]:
    return json.loads(path.with_suffix(".golden.json").read_text(encoding="utf-8"))


def _with_code(path: Path) -> bool:
    segments = _golden(path)["transcript"]["segments"]
    return any(seg["type"] == "write_file" for seg in segments)


CODE_RECORDINGS = [p for p in sorted(RECORDINGS.glob("*.jsonl")) if _with_code(p)]


def test_the_bundled_recordings_have_code_to_draw() -> None:
    assert len(CODE_RECORDINGS) >= 8


def _final_trees(path: Path, monkeypatch: pytest.MonkeyPatch, via_syntax: bool) -> list[Any]:
    """The final tree (and the last live frame) of ``path`` on several consoles, its code
    drawn from the tokens or (``via_syntax``) by ``Syntax`` as before."""
    replay = _golden(path)["replay"]
    fast = tree_view.Code.__rich_console__
    drawn: list[Code] = []

    def draw(self: Code, con: Console, options: ConsoleOptions) -> RenderResult:
        drawn.append(self)
        if via_syntax and self.fits(options.max_width):
            yield SyntaxPath(self.code, self.language, self.start_line)
        else:
            yield from fast(self, con, options)

    out: list[Any] = []
    with monkeypatch.context() as patch:
        patch.setattr(tree_view.Code, "__rich_console__", draw)
        for kind in ("truecolor", "standard", "pipe", "record"):
            for width in (100, 64, 30):
                sink = TreeSink(console(kind, width), live=False)
                sink.observe(
                    replay_file(
                        path,
                        converter=replay["converter"],
                        parser=replay["parser"],
                        on_items=sink.on_items,
                    )
                )
                out.append(outputs(sink.final_renderable(), kind, width))
                out.append(outputs(sink.frame(), kind, width))
    assert drawn, "no code node drawn"
    return out


@pytest.mark.parametrize("path", CODE_RECORDINGS, ids=lambda p: p.stem)
def test_recordings_print_the_same_tree(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _final_trees(path, monkeypatch, False) == _final_trees(path, monkeypatch, True)


# -- imports ---------------------------------------------------------------------------------------
def test_the_live_tree_draws_code_without_importing_rich_syntax() -> None:
    """``replay --speed max`` on a terminal: the code node is drawn (highlighted) and
    ``rich.syntax`` is never imported; where lines are too long to fit it is (the check sees it)."""
    path = RECORDINGS / "openai-write-file.jsonl"
    args = ["replay", str(path), "--speed", "max"]
    env = {"PYTHONPROFILEIMPORTTIME": "1"}
    run = run_in_pty(args, cols=120, env=env)
    assert run.code == 0, run.raw[-500:]
    assert b"rich.syntax" not in run.raw
    # the import times were written, and the code was drawn from its tokens, highlighted
    assert b"streamtool.cli.code_view" in run.raw and b"pygments.lexer" in run.raw
    assert b"\x1b[94;49mdef\x1b[0m" in run.raw
    assert any(" slugify(title: str" in line for line in run.screen)
    narrow = run_in_pty(args, cols=40, env=env)
    assert narrow.code == 0, narrow.raw[-500:]
    assert b"rich.syntax" in narrow.raw
