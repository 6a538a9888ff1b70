"""Tables at 80 columns and piped (issue 46, item 3): ``ls``, ``conform`` and the proxy's journal
keep what tells their rows apart (names lose their middle, never the part that differs), fit the
width by design (columns that matter least go first, long cells fold or end in ``…``) and, off
a terminal without COLUMNS, print every row whole on one line."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from streamtool.cli.fit import ELLIPSIS, shorten_names
from streamtool.cli.journal import Journal, Row
from streamtool.core.net.forward import Exchange

from .conftest import RECORDINGS

STREAMTOOL = [sys.executable, "-c", "from streamtool.cli.main import main; main()"]
# two proxy-named files that differ only in the middle, and a third that differs at its start
MIDDLE = [
    "openai-chat-gpt-4-1-mini-weather-parallel-calls.jsonl",
    "openai-chat-gpt-4-1-nano-weather-parallel-calls.jsonl",
    "anthropic-claude-sonnet-4-5-weather-parallel-calls.jsonl",
]


def run(*args: str, columns: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = columns
    return subprocess.run(
        [*STREAMTOOL, *args], capture_output=True, text=True, env=env, timeout=120
    )


# -- the names ------------------------------------------------------------------------------------
_names = st.lists(st.text("ab-", min_size=1, max_size=30), min_size=1, max_size=8, unique=True)


@given(_names, st.integers(8, 40))  # a column narrower than 8 shows too little to tell apart
def test_a_shortened_name_fits_and_keeps_what_tells_it_apart(names: list[str], width: int):
    short = shorten_names(names, width)
    assert all(len(s) <= width for s in short)
    assert [s for n, s in zip(names, short, strict=True) if len(n) <= width] == [
        n for n in names if len(n) <= width
    ]  # a name that fits is left alone

    def shared(a: str, b: str) -> int:
        return len(os.path.commonprefix([a, b]))

    # wherever one end can show a name's first difference within the width, names stay apart
    if all(
        len(n) <= width
        or min(
            max((shared(n, m) for m in names if m != n), default=0),
            max((shared(n[::-1], m[::-1]) for m in names if m != n), default=0),
        )
        + 2
        <= width
        for n in names
    ):
        assert len(set(short)) == len(names), short


def test_names_differing_in_the_middle_keep_the_word_that_differs():
    mini, nano, claude = shorten_names(MIDDLE, 28)
    assert "mini" in mini and "nano" in nano and mini != nano
    assert claude.startswith("anthropic")
    assert shorten_names([MIDDLE[0], MIDDLE[0]], 20)[0] == shorten_names([MIDDLE[0]], 20)[0]


# -- ls -------------------------------------------------------------------------------------------
def _ls_folder(tmp_path: Path) -> Path:
    for name in MIDDLE:
        shutil.copy(RECORDINGS / "openai-parallel-tool-calls.jsonl", tmp_path / name)
    shutil.copy(
        RECORDINGS / "anthropic-thinking-web-search-then-tool-call.jsonl",
        tmp_path / "0001-anthropic-messages-claude-sonnet-4-5-20250929.jsonl",
    )
    return tmp_path


def test_ls_at_80_columns_keeps_what_tells_the_files_apart(tmp_path: Path) -> None:
    folder = _ls_folder(tmp_path)
    proc = run("ls", str(folder), columns="80")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), proc.stdout
    rows = lines[2:-1]
    assert len(rows) == 4 and lines[-1] == "4 recordings"
    files = [row.split()[0] for row in rows]
    assert len(set(files)) == 4, files
    assert any("mini" in f for f in files) and any("nano" in f for f in files)
    assert any(f.startswith("0001-") for f in files)
    header = lines[1].split()
    assert header[0] == "file" and {"model", "err", "quirks"} <= set(header)


def test_ls_piped_prints_every_row_whole(tmp_path: Path) -> None:
    folder = _ls_folder(tmp_path)
    proc = run("ls", str(folder), columns=None)
    assert proc.returncode == 0, proc.stderr
    assert ELLIPSIS not in proc.stdout
    header = proc.stdout.splitlines()[1].split()
    assert header[:4] == ["file", "provider", "api", "model"] and header[-1] == "quirks"
    for name in MIDDLE:
        row = next(line for line in proc.stdout.splitlines() if line.startswith(name))
        assert "usage_only_chunk" in row and row == row.rstrip()


def test_ls_of_nothing_usable_is_one_error_line_no_table(tmp_path: Path) -> None:
    proc = run("ls", str(tmp_path / "nope") + "/", columns=None)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == f"streamtool: error: {tmp_path / 'nope'}: no such file or folder\n"
    (tmp_path / "empty").mkdir()
    proc = run("ls", str(tmp_path / "empty"), columns=None)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "no recordings (*.jsonl, *.sse) in it" in proc.stderr


# -- conform --------------------------------------------------------------------------------------
# a client that answers the same whatever it is sent: right for one recording, wrong for others
CLIENT = (
    "import json, os, urllib.request\n"
    "base = os.environ['OPENAI_BASE_URL']\n"
    "body = json.dumps({'model': 'm', 'stream': True, 'messages': []}).encode()\n"
    "req = urllib.request.Request(base + '/chat/completions', body,\n"
    "    {'content-type': 'application/json', 'authorization': 'Bearer x'})\n"
    "urllib.request.urlopen(req).read()\n"
    "print(json.dumps({'text': 'nothing', 'tool_calls': [], 'finish_reason': 'stop'}))\n"
)


@pytest.fixture(scope="module")
def conform_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str | None, str]:
    """conform's output at 80 and 120 columns and piped (the three runs at once)."""
    folder = tmp_path_factory.mktemp("conform")
    for name in MIDDLE[:2]:
        shutil.copy(RECORDINGS / "openai-parallel-tool-calls.jsonl", folder / name)
    client = folder.parent / f"{folder.name}-client.py"
    client.write_text(CLIENT)

    def once(columns: str | None) -> str:
        proc = run(
            "conform", "-r", str(folder), "--chunkings", "5", "--",
            sys.executable, str(client), columns=columns,
        )  # fmt: skip
        assert proc.returncode == 1, proc.stderr
        return proc.stdout

    widths: list[str | None] = ["80", "120", None]
    with ThreadPoolExecutor(3) as pool:
        return dict(zip(widths, pool.map(once, widths), strict=True))


def test_conform_at_80_columns_fits_and_wraps_by_design(conform_runs) -> None:
    lines = conform_runs["80"].splitlines()
    assert all(len(line) <= 80 for line in lines), conform_runs["80"]
    headings = ["recording", "whole", "1 byte", "seed 1", "seed 2", "seed 3"]
    assert all(h in lines[0] for h in headings)  # every chunking's heading, whole
    rows = [line for line in lines if line.startswith("openai-chat-gpt-4-1-")]
    assert len(rows) == 2 and "mini" in rows[0] and "nano" in rows[1]
    # too narrow for the fields that differ: FAIL, and what differs names them below
    assert rows[0].split()[1:] == ["FAIL"] * 5
    differs = lines[lines.index("What differs") + 1 :]
    first = differs[0]
    assert first.startswith("  openai-chat-gpt-4-1-mini-weather-parallel-calls [whole, ")
    assert differs[1].startswith("    ")  # the paragraph's next lines, indented under it


def test_conform_wide_enough_names_the_fields_folded_whole(conform_runs) -> None:
    lines = conform_runs["120"].splitlines()
    table = lines[: lines.index("")]
    assert all(len(line) <= 120 for line in table)
    words = [w for line in table[1:] for w in line.split()[1:]]
    assert set(words) == {"finish_reason,", "text,", "tool_calls"}, table  # never cut inside


def test_conform_piped_prints_one_line_per_difference(conform_runs) -> None:
    lines = conform_runs[None].splitlines()
    differs = lines[lines.index("What differs") + 1 :]
    for name in MIDDLE[:2]:
        assert any(line.startswith(f"  {name[:-6]} [") and "tool calls" in line for line in differs)
    assert ELLIPSIS not in "\n".join(lines[: lines.index("")])


# -- the proxy's journal --------------------------------------------------------------------------
def _journal(width: int, live: bool) -> tuple[Journal, io.StringIO]:
    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=False, color_system=None)
    journal = Journal(console=console, live=live)
    for i, (model, end) in enumerate(
        [("gpt-4.1-mini", "complete"), ("gpt-4.1-nano", "complete"), ("gpt-4.1-mini", "error")]
    ):
        ex = Exchange(
            method="POST",
            path="/v1/chat/completions",
            provider="openai",
            api="openai-chat",
            model=model,
            file=f"tapes/s/000{i + 1}-openai-chat-{model.replace('.', '-')}.jsonl",
            status=200,
            ttft=0.312,
            duration=2.5,
            chunks=40,
            end=end,
            error="upstream closed the connection" if end == "error" else None,
        )
        journal.rows.append(Row(ex))
    return journal, out


def test_the_journal_at_80_columns_keeps_api_end_ttft_and_file() -> None:
    journal, out = _journal(80, live=True)
    journal.console.print(journal.table())
    lines = out.getvalue().splitlines()
    assert all(len(line.rstrip()) <= 80 for line in lines), out.getvalue()
    assert lines[0].split()[:6] == ["API", "model", "status", "end", "TTFT", "file"]
    rows = lines[1:]
    assert " chat " in f" {rows[0]} " and " ok " in rows[0] and "312ms" in rows[0]
    assert "0001-" in rows[0] and "mini" in rows[0] and "0002-" in rows[1] and "nano" in rows[1]
    models = [row.split()[1] for row in rows[:2]]
    assert models[0].startswith("gpt-4") and models[0].endswith("mini")
    assert models[1].startswith("gpt-4") and models[1].endswith("nano")
    assert " error " in rows[2] and "upstream closed" in "\n".join(rows[2:])


def test_the_journal_off_a_terminal_prints_each_exchange_whole() -> None:
    journal, out = _journal(80, live=False)
    with journal:  # off a terminal: a line per exchange once it ended
        pass
    lines = out.getvalue().splitlines()
    assert len(lines) == 3
    assert "file=0002-openai-chat-gpt-4-1-nano.jsonl" in lines[1]
    assert lines[2].endswith("(upstream closed the connection)") and "TTFT=312ms" in lines[2]


def test_json_of_ls_is_unchanged_by_the_width(tmp_path: Path) -> None:
    folder = _ls_folder(tmp_path)
    wide = json.loads(run("ls", str(folder), "--format", "json", columns="200").stdout)
    narrow = json.loads(run("ls", str(folder), "--format", "json", columns="40").stdout)
    assert wide == narrow and len(wide) == 4
