"""What keeps the tree cheap to draw draws exactly what rich would have drawn.

``Code`` draws what rich's ``Syntax`` draws with word wrapping (which it turns off for code whose
lines all fit); ``Body`` draws what ``Text`` draws; a live display that stops draws no frame only
to erase it.
"""

from __future__ import annotations

import io
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.syntax import Syntax
from rich.text import Text

from streamtool.cli import tree_view
from streamtool.cli.tree import TreeSink, make_console
from streamtool.cli.tree_view import Body, Code
from streamtool.core.drive.replay_file import replay_file

from .conftest import RECORDINGS


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
        "python",  # off a terminal Code lexes nothing: it must not show
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
    from streamtool.core.engine.replay import ReplayEngine
    from streamtool.core.model.records import Chunk, Header

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
