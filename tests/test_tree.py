"""The live terminal tree: its model, the drawn tree of bundled recordings (through rich's
recording console), live frames, pacing, and the ``replay`` options that choose them."""

from __future__ import annotations

import io
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.style import Style
from typer.testing import CliRunner

from streamtool.cli.main import app
from streamtool.cli.pacing import Pacer, parse_speed
from streamtool.cli.tree import TreeSink, make_console, make_live_sink
from streamtool.cli.tree_model import Cut, Note, Part, Segment, Stats, TreeState, clip
from streamtool.cli.tree_view import (
    ViewOptions,
    lexer_for_path,
    plan_live,
    render_live,
    render_static,
)
from streamtool.core.drive.replay_file import replay_file
from streamtool.core.model import Quirk, SegmentEvent, SegmentType, StreamError, ToolInvocation

from .conftest import RECORDINGS
from .helpers import chat_chunk, replay_bytes, sse

WIDTH = 100
COLOR_SGR = re.compile(r"\x1b\[[0-9;]*(?:3[0-7]|38;[0-9;]+|9[0-7])m")


# -- helpers ---------------------------------------------------------------------------------------
def tree_of(path: Path, width: int = WIDTH, options: ViewOptions | None = None) -> tuple[str, Any]:
    """Replay ``path`` into a static tree sink on a recording console; (text, engine)."""
    console = make_console(file=io.StringIO(), width=width, record=True)
    sink = TreeSink(console, live=False, options=options)
    engine = replay_file(path, on_items=sink.on_items)
    sink.close(engine)
    return console.export_text(), engine


def lines_of(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines()]


def unguided(line: str) -> str:
    """A tree line without its guide characters."""
    return re.sub(r"^[│├└─ ]*", "", line)


def draw(renderable: Any, width: int = WIDTH, height: int = 40) -> str:
    console = Console(file=io.StringIO(), width=width, height=height, record=True)
    console.print(renderable)
    return console.export_text()


def style_of(renderable: Any, needle: str, width: int = WIDTH) -> Style:
    """The style of the first drawn piece of text that contains ``needle``."""
    console = Console(file=io.StringIO(), width=width, force_terminal=True, color_system="standard")
    for line in console.render_lines(renderable, console.options, pad=False):
        for seg in line:
            if needle in seg.text:
                return seg.style or Style()
    raise AssertionError(f"{needle!r} not drawn")


def state_of(*items: Any) -> TreeState:
    state = TreeState()
    state.feed(list(items))
    return state


def stats(**kw: Any) -> Stats:
    base: dict[str, Any] = {"source": "hand.jsonl", "parser": "xml", "converter": "openai-chat"}
    base.update(kw)
    return Stats(**base)


def write_file_events(seg_id: str, path: str | None, content: str, *, end_path: str | None = None):
    start = SegmentEvent.start(seg_id, SegmentType.WRITE_FILE, {"path": path} if path else {})
    pieces = [content[i : i + 7] for i in range(0, len(content), 7)]
    end = SegmentEvent.end(seg_id, {"path": end_path} if end_path else {})
    return [start, *[SegmentEvent.content(seg_id, p) for p in pieces], end]


# -- bundled recordings, static tree ---------------------------------------------------------------
def test_deepseek_root_reasoning_tool_call_invocation_and_footer() -> None:
    path = RECORDINGS / "deepseek-reasoning-then-tool-call.jsonl"
    text, engine = tree_of(path)
    lines = lines_of(text)
    assert lines[0] == str(path)
    assert lines[1] == (
        "provider deepseek · converter openai-chat · parser api_tool_call · model deepseek-reasoner"
    )
    reasoning, _ = engine.texts()[1], None
    i = next(n for n, line in enumerate(lines) if unguided(line).startswith("reasoning"))
    assert unguided(lines[i]) == f"reasoning  1 line · {len(reasoning)} chars"
    assert unguided(lines[i + 1]) == reasoning
    # the tool call: name and id on its node, then its arguments as indented JSON
    (inv,) = engine.invocations()
    j = next(n for n, line in enumerate(lines) if "tool_call get_weather" in line)
    assert unguided(lines[j]) == f"tool_call get_weather  {inv.id}"
    body = [line[4:] for line in lines[j + 1 : j + 4]]
    assert body == json.dumps(inv.arguments, indent=2).splitlines()
    assert j > i  # in stream order
    # the invocations at the end, then the footer
    k = lines.index("└── invocations (1)")
    assert unguided(lines[k + 1]) == f'get_weather({{"city": "Berlin"}})  {inv.id}'
    s = engine.stats()
    out = engine.usage["output_tokens"]
    rate = out / (s["duration_s"] - s["ttft_s"])
    assert lines[k + 2] == (
        f"{s['chunks']} chunks · {s['bytes']:,} bytes · {s['sse_events']} events · "
        f"elapsed {s['duration_s']:.2f} s · TTFT {s['ttft_s']:.2f} s · {rate:,.1f} tok/s"
    )
    assert lines[k + 3] == "usage: in 301 · out 41 · reasoning 24 · cached 256 · total 342"
    assert lines[k + 4] == "finish_reason: tool_calls  1 quirk"
    assert "quirk reasoning_field_reasoning_content: reasoning arrives in" in text


def test_reasoning_is_dimmed_and_tool_call_json_highlighted() -> None:
    path = RECORDINGS / "deepseek-reasoning-then-tool-call.jsonl"
    state = TreeState()
    engine = replay_file(path, on_items=lambda e, t, items: state.feed(items))
    tree = render_static(state, Stats.of(engine))
    style = style_of(tree, "The user wants the weather")
    assert style.dim and style.italic
    assert style_of(tree, '"city"').color is not None  # a JSON key is coloured
    assert not style_of(tree, "tool_call").dim


def test_errors_red_and_quirks_yellow_where_they_happened() -> None:
    path = RECORDINGS / "openrouter-error-in-stream.jsonl"
    text, engine = tree_of(path)
    lines = [unguided(line) for line in lines_of(text)]
    quirk = lines.index(
        "quirk sse_comment_keepalive: SSE comment lines such as 'OPENROUTER PROCESSING'"
    )
    seg = next(n for n, line in enumerate(lines) if line.startswith("text  1 line"))
    assert lines[seg + 1] == "Here is the first part of the report. The second"
    errors = [n for n, line in enumerate(lines) if line.startswith("error ")]
    assert (
        [lines[n] for n in errors]
        == [f"error {e.kind}: {e.message}" for e in engine.errors]
        == [
            "error provider_error: error inside the stream: Overloaded",
            "error provider_error: finish_reason 'error'",
        ]
    )
    assert quirk < seg < errors[0]
    assert "finish_reason: error  2 errors  1 quirk" in lines
    state = TreeState()
    engine = replay_file(path, on_items=lambda e, t, items: state.feed(items))
    tree = render_static(state, Stats.of(engine))
    assert style_of(tree, "inside the stream: Overloaded").color.name == "red"
    assert style_of(tree, "SSE comment lines").color.name == "yellow"


def test_parallel_calls_quirk_between_calls_and_three_invocations() -> None:
    text, engine = tree_of(RECORDINGS / "ollama-parallel-calls-same-index.jsonl")
    lines = [unguided(line) for line in lines_of(text)]
    calls = [n for n, line in enumerate(lines) if line.startswith("tool_call get_weather")]
    quirk = next(n for n, line in enumerate(lines) if line.startswith("quirk oai_parallel"))
    assert len(calls) == 3 and calls[0] < quirk < calls[1]
    assert "invocations (3)" in lines
    for inv in engine.invocations():
        city = inv.arguments["city"]
        assert f'get_weather({{"city": "{city}"}})  {inv.id}' in lines
        assert f'"city": "{city}"' in [line.strip() for line in lines]
    # no usage in this stream: the rate is in characters, and said so
    assert re.search(r"TTFT 2\.80 s · \d+ chars/s$", text.splitlines()[-2].rstrip())


def test_every_bundled_recording_draws_its_invocations_errors_and_quirks() -> None:
    for path in sorted(RECORDINGS.glob("*.jsonl")):
        text, engine = tree_of(path)
        flat = " ".join(" ".join(unguided(line) for line in lines_of(text)).split())
        for inv in engine.invocations():
            assert f"{inv.name}(" in text and inv.id in text
        status = engine.header.response.get("status")
        for err in engine.errors:
            if status >= 400:
                # an HTTP error answer: one HTTP error line with the provider's message once
                assert flat.count(f"error HTTP {status}: ") == 1
                continue
            # a segment's own error (unparsable arguments) is drawn under that segment
            label = "error" if err.kind == "segment" else f"error {err.kind}"
            assert f"{label}: {err.message}" in flat
        for q in engine.quirks:
            assert f"quirk {q.id}: {q.detail}" in flat
        chunks = "1 chunk ·" if engine.chunks == 1 else f"{engine.chunks:,} chunks ·"
        assert chunks in text


def test_whitespace_only_text_gets_no_node() -> None:
    path = RECORDINGS / "vllm-crlf-framing-tool-call.jsonl"
    text, engine = tree_of(path)
    events = replay_file(path, keep_events=True).handler.get_all_events()
    kinds = [ev.segment_type for ev in events if ev.segment_type]
    assert kinds == [SegmentType.REASONING, SegmentType.TEXT, SegmentType.TOOL_CALL]
    assert engine.texts()[0] == "\n\n"  # the stream has a text segment of two line breaks...
    lines = [unguided(line) for line in lines_of(text)]
    assert not any(line.startswith("text") for line in lines)  # ...that the tree leaves out
    assert [
        line.split("  ")[0] for line in lines if line.startswith(("reasoning", "tool_call"))
    ] == [
        "reasoning",
        "tool_call read_file",
    ]
    # nor does a live frame show it, or count it as a node left out
    state = TreeState()
    engine = replay_file(path, on_items=lambda e, t, items: state.feed(items))
    frame = "\n".join(lines_of(draw(render_live(state, Stats.of(engine), 80, 8), 80, 8)))
    assert "text  " not in frame and "earlier node" not in frame


def test_cut_off_recording_shows_the_error_at_the_end(tmp_path: Path) -> None:
    src = (RECORDINGS / "openai-parallel-tool-calls.jsonl").read_text().splitlines()
    cut = tmp_path / "openai-cut.jsonl"
    cut.write_text("\n".join(src[:-1]) + "\n")
    text, _ = tree_of(cut)
    lines = [unguided(line) for line in lines_of(text)]
    err = lines.index("error recording_cut_off: the recording has no end record (cut off)")
    assert err > max(n for n, line in enumerate(lines) if line.startswith("tool_call"))


def test_unparsable_arguments_shown_raw_with_the_error() -> None:
    body = sse(
        chat_chunk({"tool_calls": [{"index": 0, "id": "call_bad1", "type": "function",
                                    "function": {"name": "lookup", "arguments": '{"q": '}}]}),
        chat_chunk({}, "tool_calls"),
    )  # fmt: skip
    state = TreeState()
    engine = replay_bytes(body, keep_events=True)
    state.feed(engine.handler.get_all_events())
    state.feed([*engine.errors])
    state.feed(engine.invocations())
    text = draw(render_static(state, Stats.of(engine)))
    lines = [unguided(line) for line in lines_of(text)]
    n = lines.index("tool_call lookup  call_bad1")
    assert lines[n + 1] == "arguments do not parse; raw text:"
    assert lines[n + 2] == '{"q":'
    assert lines[n + 3].startswith("error: tool call call_bad1 (lookup): arguments are not valid")


# -- segments the text parsers produce (hand-made events) ------------------------------------------
PY = 'def hello():\n    print("hi")\n    return 1\n'


def test_write_file_path_line_numbers_and_highlighting_by_extension() -> None:
    state = state_of(
        *write_file_events("seg_1", "src/app.py", PY),
        ToolInvocation("seg_1", "write_file", {"path": "src/app.py", "content": PY}),
    )
    tree = render_static(state, stats())
    lines = [unguided(line) for line in lines_of(draw(tree))]
    n = lines.index("write_file src/app.py  3 lines  seg_1")
    assert lines[n + 1 : n + 4] == ["1 def hello():", '2     print("hi")', "3     return 1"]
    # the invocation does not repeat the file: its content is summarised
    assert 'write_file({"path": "src/app.py", "content": <3 lines, 42 chars>})  seg_1' in lines
    assert style_of(tree, "def").color is not None  # python: 'def' is a keyword
    plain = state_of(*write_file_events("seg_2", "notes.txt", PY))
    assert style_of(render_static(plain, stats()), "def hello").color is None


@pytest.mark.parametrize(
    ("path", "lexer"),
    [
        ("a.py", "python"),
        ("lib/x.rs", "rust"),
        ("web/App.tsx", "tsx"),
        ("conf/settings.toml", "toml"),
        ("Makefile", "make"),
        ("src/Main.kt", "kotlin"),
        ("data.unknownext", "text"),
        (None, "text"),
    ],
)
def test_lexer_from_the_path(path: str | None, lexer: str) -> None:
    assert lexer_for_path(path) == lexer


def test_path_arriving_late_in_end_metadata() -> None:
    events = write_file_events("seg_3", None, PY, end_path="late/app.py")
    state = state_of(*events[:-1])
    frame = draw(render_live(state, stats(), 100, 30))
    assert "write_file (path not known yet)" in frame and "▍" in frame
    state.feed(events[-1:])
    tree = render_static(state, stats())
    assert "write_file late/app.py  3 lines  seg_3" in draw(tree)
    assert style_of(tree, "def").color is not None


def test_live_file_tail_keeps_true_line_numbers() -> None:
    code = "".join(f"x_{i} = {i}\n" for i in range(1, 101))
    state = state_of(*write_file_events("seg_1", "big.py", code)[:-1])
    frame = lines_of(draw(render_live(state, stats(), 80, 20)))
    assert any(unguided(line).startswith("… ") and "earlier lines" in line for line in frame)
    assert "100 x_100 = 100" in [unguided(line) for line in frame]
    assert not any("x_1 = 1" in line for line in frame)
    assert len(frame) <= 20


def test_live_frame_reads_the_end_of_a_long_segment_with_true_counts() -> None:
    code = "".join(f"v{i} = {i}\n" for i in range(1, 50001))
    state = state_of(*write_file_events("seg_1", "gen.py", code)[:-1])
    frame = [unguided(line) for line in lines_of(draw(render_live(state, stats(), 80, 16)))]
    shown = [line for line in frame if re.match(r"\d+ v\d+ = \d+$", line)]
    assert shown and shown[-1] == "50000 v50000 = 50000"
    first = int(shown[0].split()[0])
    assert f"… {first - 1:,} earlier lines" in frame
    one_line = "".join(f"[{i}]" for i in range(40000))  # no newline at all
    state = state_of(
        SegmentEvent.start("seg_2", SegmentType.TEXT, {}),
        *[SegmentEvent.content("seg_2", one_line[i : i + 50]) for i in range(0, len(one_line), 50)],
    )
    frame = [unguided(line) for line in lines_of(draw(render_live(state, stats(), 60, 12), 60))]
    body = "".join(frame[frame.index(f"text  1 line · {len(one_line):,} chars  ▍") + 1 :])
    assert body.startswith("…") and "[39999]" in body and "[0]" not in body


def test_patch_file_drawn_as_a_diff() -> None:
    patch = "--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,2 @@\n-x = 1\n+x = 2\n y = 3\n"
    seg = "seg_4"
    state = state_of(
        SegmentEvent.start(seg, SegmentType.PATCH_FILE, {"path": "app.py"}),
        SegmentEvent.content(seg, patch[:20]),
        SegmentEvent.content(seg, patch[20:]),
        SegmentEvent.end(seg, {}),
    )
    tree = render_static(state, stats())
    assert "patch_file app.py  6 lines  seg_4" in draw(tree)
    assert style_of(tree, "+x = 2").color.name == "green"
    assert style_of(tree, "-x = 1").color.name == "red"
    assert style_of(tree, "@@ -1,2").color.name == "cyan"


def test_run_bash_and_incomplete_segments() -> None:
    state = state_of(
        SegmentEvent.start("seg_5", SegmentType.RUN_BASH, {}),
        SegmentEvent.content("seg_5", "ls -la"),
        SegmentEvent.end("seg_5", {}),
        SegmentEvent.start("seg_6", SegmentType.WRITE_FILE, {"path": "cut.py"}),
        SegmentEvent.content("seg_6", "def f("),
        SegmentEvent.end("seg_6", {"incomplete": True}),
    )
    lines = [unguided(line) for line in lines_of(draw(render_static(state, stats())))]
    assert lines[lines.index("run_bash  seg_5") + 1] == "$ ls -la"
    assert "write_file cut.py  1 line  seg_6  [incomplete]" in lines


def test_tool_call_streams_raw_then_shows_pretty_json() -> None:
    seg = "toolu_01A09q90qw90lq917835lq9"
    state = state_of(
        SegmentEvent.start(seg, SegmentType.TOOL_CALL, {"tool_name": "get_weather"}),
        SegmentEvent.content(seg, '{"city": '),
        SegmentEvent.content(seg, '"Ber'),
    )
    frame = [unguided(line) for line in lines_of(draw(render_live(state, stats(), 100, 30)))]
    n = frame.index(f"tool_call get_weather  {seg}  ▍")
    assert frame[n + 1] == '{"city": "Ber'
    state.feed(
        [
            SegmentEvent.content(seg, 'lin"}'),
            SegmentEvent.end(seg, {"arguments": {"city": "Berlin"}}),
        ]
    )
    final = [unguided(line) for line in lines_of(draw(render_static(state, stats())))]
    n = final.index(f"tool_call get_weather  {seg}")
    assert final[n + 1 : n + 4] == ["{", '"city": "Berlin"', "}"]


def test_xml_tool_call_takes_pretty_arguments_from_its_invocation() -> None:
    seg = "seg_2"
    state = state_of(
        SegmentEvent.start(seg, SegmentType.TOOL_CALL, {"tool_name": "read_file"}),
        SegmentEvent.content(seg, '<arg name="path">/src/main.py</arg>'),
        SegmentEvent.end(seg, {}),
        ToolInvocation(seg, "read_file", {"path": "/src/main.py"}),
    )
    lines = [unguided(line) for line in lines_of(draw(render_static(state, stats())))]
    n = lines.index("tool_call read_file  seg_2")
    assert lines[n + 1 : n + 4] == ["{", '"path": "/src/main.py"', "}"]


# -- the model -------------------------------------------------------------------------------------
def test_model_keeps_stream_order_and_attaches_segment_errors() -> None:
    state = state_of(
        Quirk("oai_id_every_chunk", "the id repeats"),
        SegmentEvent.start("seg_1", SegmentType.TEXT, {}),
        SegmentEvent.content("seg_1", "a\nb"),
        SegmentEvent.end("seg_1", {}),
        SegmentEvent.start("call_1", SegmentType.TOOL_CALL, {"tool_name": "f"}),
        SegmentEvent.end("call_1", {"error": "bad"}),
        StreamError("segment", "bad", "call_1"),
        StreamError("provider_error", "Overloaded"),
    )
    kinds = [n.kind if isinstance(n, Note) else n.id for n in state.nodes]
    assert kinds == ["quirk", "seg_1", "call_1", "error"]
    seg = state.segments["seg_1"]
    assert (seg.lines, seg.chars, seg.text, seg.closed) == (2, 3, "a\nb", True)
    assert [e.message for e in state.segments["call_1"].errors] == ["bad"]
    assert (state.errors, state.quirks) == (2, 1)


@given(st.lists(st.text(alphabet="ab\n", max_size=6), max_size=30))
@settings(max_examples=60, deadline=None)
def test_segment_counts_hold_for_any_deltas(deltas: list[str]) -> None:
    seg = Segment("s", SegmentType.TEXT, {})
    for d in deltas:
        seg.append(d)
    text = "".join(deltas)
    assert seg.text == text and seg.chars == len(text)
    assert seg.lines == len(text.splitlines())


@given(
    st.lists(st.text(alphabet="xy", max_size=5), min_size=1, max_size=40),
    st.integers(min_value=0, max_value=45),
    st.sampled_from(["head", "tail", "both"]),
)
@settings(max_examples=100, deadline=None)
def test_clip_keeps_whole_lines_in_place_and_counts_the_rest(
    lines: list[str], max_lines: int, keep: str
) -> None:
    text = "\n".join(lines)
    body = text[:-1] if text.endswith("\n") else text  # a final newline ends the last line
    lines = body.split("\n") if text else []
    pieces = clip(text, max_lines, keep)  # type: ignore[arg-type]
    kept = sum(p.text.count("\n") + 1 for p in pieces if isinstance(p, Part))
    cut = sum(p.lines for p in pieces if isinstance(p, Cut))
    assert kept + cut == len(lines)
    assert kept == min(len(lines), max_lines)
    for p in pieces:
        if isinstance(p, Part):
            n = p.text.count("\n") + 1
            assert p.text.split("\n") == lines[p.first_line - 1 : p.first_line - 1 + n]
    if keep == "tail" and kept:
        assert pieces[-1].text.split("\n")[-1] == lines[-1]  # type: ignore[union-attr]
    if keep == "head" and kept:
        assert pieces[0].text.split("\n")[0] == lines[0]  # type: ignore[union-attr]


def test_long_content_is_cut_with_a_visible_marker() -> None:
    text = "".join(f"line {i}\n" for i in range(1, 1001)) + "z" * 9000
    state = state_of(
        SegmentEvent.start("seg_1", SegmentType.TEXT, {}),
        SegmentEvent.content("seg_1", text),
        SegmentEvent.end("seg_1", {}),
    )
    out = [unguided(line) for line in lines_of(draw(render_static(state, stats()), width=120))]
    assert "… 801 lines cut (--full shows all)" in out
    assert "line 100" in out and "line 101" not in out and "line 902" in out
    assert any(line.endswith(" … (+4,000 chars)") for line in out)
    full = draw(render_static(state, stats(), ViewOptions.full()), width=120)
    assert (
        "line 500" in full
        and "lines cut" not in full
        and "z" * 9000 in "".join(unguided(line) for line in lines_of(full))
    )


def test_reasoning_collapsed_to_its_last_lines() -> None:
    reasoning = "".join(f"thought {i}\n" for i in range(1, 21))
    state = state_of(
        SegmentEvent.start("seg_1", SegmentType.REASONING, {}),
        SegmentEvent.content("seg_1", reasoning),
    )
    live = [unguided(line) for line in lines_of(draw(render_live(state, stats(), 80, 40)))]
    assert live[live.index("reasoning  20 lines · 211 chars  ▍") + 1 :][:5] == [
        "… 16 earlier lines",
        "thought 17",
        "thought 18",
        "thought 19",
        "thought 20",
    ]
    state.feed([SegmentEvent.end("seg_1", {})])
    static = [unguided(line) for line in lines_of(draw(render_static(state, stats())))]
    assert "… 16 earlier lines cut (--full shows all)" in static
    assert "thought 1" not in static and "thought 20" in static
    full = [
        unguided(line) for line in lines_of(draw(render_static(state, stats(), ViewOptions.full())))
    ]
    assert all(f"thought {i}" in full for i in range(1, 21))


# -- live frames -----------------------------------------------------------------------------------
def many_segments(n: int, lines: int) -> TreeState:
    items: list[Any] = []
    for i in range(n):
        sid = f"seg_{i}"
        items += [
            SegmentEvent.start(sid, SegmentType.TEXT, {}),
            SegmentEvent.content(sid, "".join(f"{sid} line {k}\n" for k in range(lines))),
            SegmentEvent.end(sid, {}),
        ]
        items.append(ToolInvocation(f"call_{i}", "f", {"i": i}))
    return state_of(*items)


@pytest.mark.parametrize(("width", "height"), [(80, 24), (120, 50), (40, 12)])
def test_live_frame_fits_the_terminal(width: int, height: int) -> None:
    state = many_segments(60, 10)
    frame = lines_of(draw(render_live(state, stats(chunks=5), width, height), width, height))
    assert len(frame) <= height
    assert max(len(line) for line in frame) <= width
    assert frame[0] == "hand.jsonl"
    assert any(line.startswith("5 chunks · 0 bytes") for line in frame[-3:])
    assert "seg_59 line 9" in "\n".join(frame)  # the newest content is on screen
    assert any("earlier node" in line or "lines above" in line for line in frame)


def test_plan_gives_the_newest_node_the_room() -> None:
    state = many_segments(5, 30)
    hidden, plan = plan_live(state.nodes, 20)
    assert hidden == 5 - len(plan)
    assert plan[-1][0].id == "seg_4" and plan[-1][1] >= 10
    assert all(show <= 2 for _, show in plan[:-1])
    assert len(plan) + sum(show + 1 for _, show in plan) <= 20 + len(plan)


# -- colour ----------------------------------------------------------------------------------------
def _styled_output(**kw: Any) -> str:
    out = io.StringIO()
    console = make_console(file=out, force_terminal=True, width=WIDTH, **kw)
    sink = TreeSink(console, live=False)
    engine = replay_file(RECORDINGS / "openrouter-error-in-stream.jsonl", on_items=sink.on_items)
    sink.close(engine)
    return out.getvalue()


def test_colour_on_a_terminal_and_none_with_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert COLOR_SGR.search(_styled_output())
    assert not COLOR_SGR.search(_styled_output(no_color=True))
    monkeypatch.setenv("NO_COLOR", "1")
    plain = _styled_output()
    assert not COLOR_SGR.search(plain)
    assert "error provider_error" in re.sub(r"\x1b\[[0-9;]*m", "", plain)


# -- the sink, live ------------------------------------------------------------------------------
def _paced_recording(path: Path, n: int, step: float) -> None:
    header = json.loads(
        (RECORDINGS / "openai-parallel-tool-calls.jsonl").read_text().splitlines()[0]
    )
    with open(path, "w") as fh:
        fh.write(json.dumps(header) + "\n")
        for i in range(n):
            raw = "data: " + json.dumps(chat_chunk({"content": f"word{i} "})) + "\n\n"
            fh.write(
                json.dumps({"type": "chunk", "t": round(0.1 + i * step, 4), "text": raw}) + "\n"
            )
        raw = sse(chat_chunk({}, "stop")).decode()
        fh.write(json.dumps({"type": "chunk", "t": round(0.1 + n * step, 4), "text": raw}) + "\n")
        fh.write(
            json.dumps({"type": "end", "t": round(0.1 + n * step, 4), "reason": "complete"}) + "\n"
        )


def test_live_sink_redraws_at_most_15_times_a_second_then_prints_the_tree(tmp_path: Path) -> None:
    path = tmp_path / "openai-many-reads.jsonl"
    _paced_recording(path, 400, 0.005)  # 2 s of recording, 400 reads
    out = io.StringIO()
    sink = make_live_sink(make_console(file=out, force_terminal=True, width=90, height=30))
    assert sink.live
    pacer = Pacer(2.0, None)  # about one second of wall time

    def before(engine: Any, chunk: Any) -> None:
        sink.observe(engine)
        pacer.wait(chunk.t)

    start = time.monotonic()
    engine = replay_file(path, on_items=sink.on_items, before_chunk=before)
    sink.close(engine)
    elapsed = time.monotonic() - start
    assert elapsed >= 0.9  # paced: 2 s of recording at speed 2
    assert 3 <= sink.frames <= 15 * elapsed + 2
    text = out.getvalue()
    assert "\x1b[?25l" in text and "\x1b[2K" in text  # a live display: cursor hidden, lines erased
    final = text[text.rfind("\x1b[2K") :]
    assert "word399" in final and "401 chunks" in final and "error" not in final


def test_interrupt_prints_the_tree_so_far() -> None:
    out = io.StringIO()
    sink = make_live_sink(make_console(file=out, width=90), live=False)
    path = RECORDINGS / "openai-parallel-tool-calls.jsonl"

    def stop_after_four(engine: Any, chunk: Any) -> None:
        if engine.chunks == 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        replay_file(path, on_items=sink.on_items, before_chunk=stop_after_four)
    sink.interrupt()
    text = out.getvalue()
    assert "interrupted: the replay was stopped here" in text
    assert "4 chunks ·" in text and "interrupted" in text.splitlines()[-1]


# -- pacing ----------------------------------------------------------------------------------------
class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.sleeps.append(round(s, 6))
        self.now += s


@pytest.mark.parametrize(
    ("speed", "max_gap", "expected"),
    [
        (1.0, None, [0.5, 0.25, 4.0, 0.25]),
        (2.0, None, [0.25, 0.125, 2.0, 0.125]),
        (1.0, 2.0, [0.5, 0.25, 2.0, 0.25]),
        (4.0, 0.1, [0.1, 0.0625, 0.1, 0.0625]),
        (None, 2.0, []),
    ],
)
def test_pacer_waits_the_recorded_gaps(
    speed: float | None, max_gap: float | None, expected: list[float]
) -> None:
    fake = FakeClock()
    pacer = Pacer(speed, max_gap, clock=fake.clock, sleep=fake.sleep)
    for t in (0.5, 0.75, 4.75, 5.0, None):
        pacer.wait(t)
    assert fake.sleeps == expected


def test_pacer_keeps_its_schedule_when_drawing_takes_time() -> None:
    fake = FakeClock()
    pacer = Pacer(1.0, None, clock=fake.clock, sleep=fake.sleep)
    pacer.wait(0.0)
    for t in (0.1, 0.2, 0.3):
        fake.now += 0.04  # work between reads
        pacer.wait(t)
    assert fake.sleeps == [0.06, 0.06, 0.06]
    fake.now += 5  # suspended far behind: the schedule restarts instead of racing
    pacer.wait(0.4)
    assert fake.sleeps[-1] == 0.1


@pytest.mark.parametrize(
    ("text", "value"),
    [("1", 1.0), ("2.5", 2.5), ("10x", 10.0), ("max", None), ("MAX", None), ("inf", None)],
)
def test_parse_speed(text: str, value: float | None) -> None:
    assert parse_speed(text) == value


@pytest.mark.parametrize("text", ["0", "-1", "fast", "nan", ""])
def test_parse_speed_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="--speed"):
        parse_speed(text)


# -- the command -----------------------------------------------------------------------------------
runner = CliRunner()


def test_replay_off_a_terminal_prints_the_tree_once_without_waiting() -> None:
    path = RECORDINGS / "ollama-parallel-calls-same-index.jsonl"  # 4.3 s of recording
    start = time.monotonic()
    result = runner.invoke(app, ["replay", str(path)], env={"COLUMNS": "100"})
    elapsed = time.monotonic() - start
    assert result.exit_code == 0, result.output
    assert elapsed < 2.5  # no pacing by default off a terminal
    assert result.output.count(str(path)) == 1  # printed once, no redraws
    assert "\x1b[" not in result.output
    expected, _ = tree_of(path)
    assert lines_of(result.output) == lines_of(expected)


def test_format_text_is_the_static_tree_and_width_follows_columns() -> None:
    path = RECORDINGS / "openrouter-keepalive-comments-tool-call.jsonl"
    result = runner.invoke(app, ["replay", str(path), "--format", "text"], env={"COLUMNS": "60"})
    assert result.exit_code == 0, result.output
    lines = lines_of(result.output)
    assert max(len(line) for line in lines) <= 60
    assert max(len(line) for line in lines) > 50
    assert '    └── list_files({"path": "src", "recursive": true})' in result.output


def test_explicit_speed_paces_any_format() -> None:
    path = RECORDINGS / "deepseek-reasoning-then-tool-call.jsonl"  # 1.21 s of recording
    start = time.monotonic()
    result = runner.invoke(app, ["replay", str(path), "--format", "jsonl", "--speed", "4"])
    assert result.exit_code == 0, result.output
    assert time.monotonic() - start >= 1.21 / 4 * 0.95
    assert json.loads(result.output.splitlines()[-1])["type"] == "summary"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--speed", "0"], "--speed must be a number > 0"),
        (["--speed", "warp"], "--speed must be a number > 0"),
        (["--max-gap", "-1"], "--max-gap must be a number of seconds"),
    ],
)
def test_bad_pacing_options_exit_2(args: list[str], message: str) -> None:
    path = RECORDINGS / "deepseek-reasoning-then-tool-call.jsonl"
    result = runner.invoke(app, ["replay", str(path), *args])
    assert result.exit_code == 2
    assert message in result.output
