"""Code in the tree: highlighted by pygments' own lexer for its language, made once and while the
stream plays (not by a frame), drawn by rich's ``Syntax``; a live frame lexes only the lines it
shows; ``--format json`` loads neither rich nor pygments."""

from __future__ import annotations

import io
import subprocess
import sys
from typing import Any

import pytest
from pygments.lexers.python import PythonLexer
from pygments.lexers.rust import RustLexer
from rich.console import Console
from rich.syntax import Syntax

from streamtool.cli import lexers
from streamtool.cli.tree_model import Stats, TreeState
from streamtool.cli.tree_view import Code, render_live, render_static
from streamtool.core.model import SegmentEvent, SegmentType

from .conftest import RECORDINGS


def terminal(width: int = 100, height: int = 30) -> Console:
    return Console(
        file=io.StringIO(),
        width=width,
        height=height,
        force_terminal=True,
        color_system="truecolor",
        highlight=False,
        markup=False,
        emoji=False,
    )


def test_code_is_drawn_by_rich_syntax_with_pygments_own_lexer_made_once() -> None:
    console = terminal()
    (drawn,) = Code("def f():\n    return 1\n", "python").__rich_console__(console, console.options)
    assert isinstance(drawn, Syntax)
    assert type(drawn.lexer) is PythonLexer
    (again,) = Code("fn main() {}\n", "rust").__rich_console__(console, console.options)
    assert type(again.lexer) is RustLexer
    assert lexers.lexer("python") is drawn.lexer  # one lexer per language, kept
    # made as Syntax makes one from a name: what it draws is what Syntax(code, "python") draws
    assert drawn.lexer.options == {"stripnl": False, "ensurenl": True, "tabsize": 4}


_PREPARED = """
import io, sys, threading
from streamtool.cli.tree import TreeSink, make_console
from streamtool.core.drive.replay_file import replay_file

console = make_console(file=io.StringIO(), force_terminal=True, width=100)
sink = TreeSink(console, live=False)
replay_file(sys.argv[1], on_items=sink.on_items)  # the stream only: nothing is drawn
for thread in threading.enumerate():
    if thread.name == "lexer":
        thread.join(30)
print(console.file.getvalue() == "", "pygments.lexers.python" in sys.modules)
"""


def test_the_lexer_is_made_while_the_stream_plays_before_any_frame() -> None:
    path = RECORDINGS / "openai-write-file.jsonl"  # a write_file of a .py file
    result = subprocess.run(
        [sys.executable, "-c", _PREPARED, str(path)], capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == ["True", "True"]


def _state_with_file(lines: int) -> tuple[TreeState, str]:
    code = "".join(f"value_{n} = compute({n})  # line {n}\n" for n in range(1, lines + 1))
    seg = "seg_1"
    state = TreeState()
    state.feed(
        [
            SegmentEvent.start(seg, SegmentType.WRITE_FILE, {"path": "app/values.py"}),
            *(SegmentEvent.content(seg, code[i : i + 500]) for i in range(0, len(code), 500)),
        ]
    )
    return state, code


@pytest.fixture
def lexed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts the Python lexer is given."""
    seen: list[str] = []
    lexer = lexers.lexer("python")
    real = lexer.get_tokens

    def get_tokens(text: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(text)
        return real(text, *args, **kwargs)

    monkeypatch.setattr(lexer, "get_tokens", get_tokens)
    return seen


def test_a_live_frame_lexes_only_the_lines_on_the_screen(lexed: list[str]) -> None:
    state, code = _state_with_file(5_000)
    console = terminal(100, 30)
    console.print(render_live(state, Stats(), 100, 30))
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert "5000" in out and "compute" in out
    (text,) = lexed
    assert 0 < text.count("\n") <= 30
    assert code.endswith(text)  # the end of the file: what the frame shows
    # the static tree lexes what it shows too: its first and last lines, not all 5,000
    lexed.clear()
    render = render_static(state, Stats())
    terminal(100, 30).print(render)
    assert 0 < sum(t.count("\n") for t in lexed) <= 100


def test_replay_format_json_imports_neither_rich_nor_pygments() -> None:
    path = RECORDINGS / "openai-write-file.jsonl"
    probe = (
        "import sys\n"
        "from streamtool.cli.main import main\n"
        "sys.argv = ['streamtool', 'replay', sys.argv[1], '--format', sys.argv[2]]\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'rich', 'pygments'})\n"
        "sys.stderr.write('HEAVY ' + ' '.join(heavy))\n"
    )
    heavy = {}
    for fmt in ("json", "text"):
        proc = subprocess.run(
            [sys.executable, "-c", probe, str(path), fmt], capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stderr
        heavy[fmt] = proc.stderr.rsplit("HEAVY", 1)[1].split()
    assert heavy["json"] == []
    assert "rich" in heavy["text"]  # the probe sees what a command imports
