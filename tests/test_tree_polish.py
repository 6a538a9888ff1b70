"""The printed tree's polish (issue 19, item 6): lines that break between fields, never inside
one; counts in plural only when plural; a rate only over a window that means something; an HTTP
error said once; a live frame that shows it is waiting."""

from __future__ import annotations

import io
import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamtool.cli.tree import TreeSink, make_console
from streamtool.cli.tree_model import Stats, TreeState
from streamtool.cli.tree_view import Fields, footer, render_live, root_label
from streamtool.core.drive.replay_file import replay_file

from .conftest import RECORDINGS
from .test_tree import draw, lines_of, tree_of, unguided


def _fields_of(stats: Stats, state: TreeState) -> list[str]:
    """Every field of the root line and the footer, as drawn without a width limit."""
    out = []
    for fields in (root_label(stats), footer(stats, state)):
        for row, _sep in fields.rows:
            out += [f.plain for f in row]
    return out


@pytest.mark.parametrize(
    "name",
    [
        "openai-write-file.jsonl",
        "anthropic-http-529-overloaded.jsonl",
        "openrouter-keepalive-comments-tool-call.jsonl",
    ],
)
def test_root_line_and_footer_break_only_between_fields_at_80_columns(name: str) -> None:
    path = RECORDINGS / name
    text, engine = tree_of(path, width=80)
    lines = lines_of(text)
    state = TreeState()
    replay_file(path, on_items=lambda e, t, items: state.feed(items))
    fields = [f for f in _fields_of(Stats.of(engine), state) if f != str(path)]
    head = lines[1 : lines.index(next(line for line in lines if line[:1] in "├└"))]
    foot = lines[max(i for i, line in enumerate(lines) if line.startswith(("│", "└", " "))) + 1 :]
    assert head and foot
    drawn = [piece for line in head + foot for piece in re.split(r" · |  ", line)]
    # every field is on one line, whole
    assert sorted(p.strip() for p in drawn if p.strip()) == sorted(fields)
    assert all(len(line) <= 80 for line in head + foot)


@settings(max_examples=40, deadline=None)
@given(
    width=st.integers(20, 120),
    words=st.lists(st.text("abcdefgh-.", min_size=1, max_size=15), min_size=1, max_size=8),
)
def test_fields_fill_lines_and_never_split_a_field(width: int, words: list[str]) -> None:
    from rich.text import Text

    fields = [Text(f"k{i} {w}") for i, w in enumerate(words)]
    lines = [line.plain for line in Fields([(fields, " · ")]).lines(width)]
    assert " · ".join(lines) == " · ".join(f.plain for f in fields)  # nothing lost, in order
    for n, line in enumerate(lines):
        parts = line.split(" · ")
        assert len(line) <= width or len(parts) == 1  # only a lone over-long field overflows
        if n + 1 < len(lines):  # greedy: the next field did not fit here
            assert len(line) + 3 + len(lines[n + 1].split(" · ")[0]) > width


def test_counts_are_plural_only_when_plural() -> None:
    state = TreeState()
    one = footer(Stats(chunks=1, bytes=1, sse_events=1), state).plain
    assert one.startswith("1 chunk · 1 byte · 1 event · ")
    many = footer(Stats(chunks=2, bytes=1234, sse_events=0), state).plain
    assert many.startswith("2 chunks · 1,234 bytes · 0 events · ")


@pytest.mark.parametrize(
    ("duration", "ttft", "out", "shown"),
    [
        (0.301, 0.3, 2, None),  # 2 tokens in a millisecond: no 2,000 tok/s
        (0.7, 0.3, 2, None),  # long enough, but two tokens say nothing
        (0.5, 0.3, 100, None),  # a hundred tokens in 0.2 s: too short a window
        (2.3, 0.3, 100, "50.0 tok/s"),
    ],
)
def test_tokens_per_second_only_over_a_meaningful_window(
    duration: float, ttft: float, out: int, shown: str | None
) -> None:
    stats = Stats(duration=duration, ttft=ttft, usage={"output_tokens": out}, finished=True)
    text = footer(stats, TreeState()).plain
    rates = re.findall(r"[\d,.]+ (?:tok|chars)/s", text)
    assert rates == ([shown] if shown else [])


@pytest.mark.parametrize(
    ("name", "status", "message"),
    [
        ("openai-http-429-rate-limit.jsonl", 429, "Rate limit reached for gpt-4o in organization"),
        ("anthropic-http-529-overloaded.jsonl", 529, "Overloaded (overloaded_error)"),
    ],
)
def test_an_http_error_is_one_http_error_line_with_its_message_once(
    name: str, status: int, message: str
) -> None:
    text, engine = tree_of(RECORDINGS / name, width=400)
    assert len(engine.errors) == 2  # the summary keeps both records...
    lines = [unguided(line) for line in lines_of(text)]
    errors = [line for line in lines if line.startswith("error")]
    assert len(errors) == 1  # ...the tree says it once, as an HTTP error
    assert errors[0].startswith(f"error HTTP {status}: {message}")
    assert text.count(message) == 1
    assert lines[-1] == "ended: error  1 error"


def test_a_live_frame_before_the_first_event_shows_a_spinner_and_the_time_waited() -> None:
    frame = draw(render_live(TreeState(), Stats(source="rec.jsonl"), 80, 24, waited=1.26), 80, 24)
    assert re.search(r"^└── [⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] waiting for the stream… 1\.3 s$", frame, re.M)
    # once something arrived (or the stream ended) there is nothing to wait for
    done = Stats(source="rec.jsonl", finished=True)
    assert "waiting" not in draw(render_live(TreeState(), done, 80, 24, waited=1.0), 80, 24)


def test_the_live_sink_turns_the_spinner_while_nothing_arrives() -> None:
    out = io.StringIO()
    console = make_console(file=out, force_terminal=True, width=80, height=24)
    sink = TreeSink(console, live=True)
    sink.start()
    time.sleep(0.5)
    frames_while_waiting = sink.frames
    sink.abort()
    drawn = out.getvalue()
    assert frames_while_waiting >= 4  # redrawn although the model did not change
    spinners = set(re.findall(r"([⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]) .*?waiting for the stream", drawn))
    assert len(spinners) >= 3
    times = [float(t) for t in re.findall(r"waiting for the stream… (\d+\.\d) s", drawn)]
    assert times == sorted(times) and times[-1] >= 0.3
