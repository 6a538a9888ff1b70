"""``streamtool report``: a self-contained HTML page, escaped, checked in a real browser."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from streamtool.core.model.records import Chunk, End, Header
from streamtool.core.outputs.inspect import Inspector
from streamtool.core.outputs.report import build_report

from .conftest import RECORDINGS
from .helpers import chat_chunk, sse

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
HOSTILE = "</script><script>window.pwned=1</script><img src=x onerror=window.pwned=2> & é"
WEB_SEARCH = RECORDINGS / "anthropic-thinking-web-search-then-tool-call.jsonl"


def ci_is_set() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def hostile_stream() -> list[bytes]:
    body = sse(
        json.dumps(chat_chunk({"role": "assistant", "content": HOSTILE}), ensure_ascii=False),
        chat_chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_x",
                        "type": "function",
                        "function": {"name": "write_file", "arguments": ""},
                    }
                ]
            }
        ),
        chat_chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "function": {
                            "arguments": json.dumps({"path": "a<b>.py", "content": HOSTILE})
                        },
                    }
                ]
            }
        ),
        chat_chunk({}, finish="tool_calls"),
    )
    third = len(body) // 3
    return [body[:third], body[third : 2 * third], body[2 * third :]]


def hostile_report() -> str:
    ins = Inspector(
        Header(raw_body=True), source="/home/someone/secret-folder/x.sse", keep_items=True
    )
    for i, data in enumerate(hostile_stream()):
        ins.feed(Chunk(0.4 + 1.5 * i, data))
    ins.finish(End(3.5, "complete"))
    return build_report(ins)


def test_everything_from_the_recording_is_escaped_and_nothing_is_fetched():
    html = hostile_report()
    assert "<script>window.pwned" not in html
    assert "<img src=x" not in html
    # the player's data, the raw reads' data and the page's code
    assert html.count("<script") == 3
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", html)
    assert "default-src 'none'" in html  # the page may not load anything
    assert "secret-folder" not in html and "x.sse" in html  # the file's name only
    assert "a&lt;b&gt;.py" in html


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists() or shutil.which("chromium") is None:
        if ci_is_set():
            pytest.fail("chromium is not installed (CI installs Debian's chromium package)")
        pytest.skip("chromium is not installed")
    sync_api = pytest.importorskip("playwright.sync_api") if not ci_is_set() else None
    if sync_api is None:
        import playwright.sync_api as sync_api
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


def open_page(browser, path: Path):
    page = browser.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("request", lambda r: None if r.url.startswith("file:") else problems.append(r.url))
    page.goto(path.as_uri())
    return page, problems


def report_and_replay(rec: Path, out: Path) -> dict:
    """``report REC -o OUT`` (it must succeed), and what ``replay REC --format json`` says."""
    proc = subprocess.run(
        [sys.executable, "-m", "streamtool.cli", "report", str(rec), "-o", str(out)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    replayed = subprocess.run(
        [sys.executable, "-m", "streamtool.cli", "replay", str(rec), "--format", "json"],
        capture_output=True,
        text=True,
    )
    return json.loads(replayed.stdout)


def test_the_page_renders_tree_timeline_and_player_and_the_player_steps(browser, tmp_path):
    out = tmp_path / "report.html"
    summary = report_and_replay(WEB_SEARCH, out)
    page, problems = open_page(browser, out)
    tree = page.inner_text("#tree")
    assert summary["text"].strip() in tree
    assert "write_file notes.md" in tree and "web_search" in tree
    reads = summary["stats"]["chunks"]
    assert page.locator("#timeline-svg rect.read").count() == reads
    assert page.locator("#timeline-svg rect.stall").count() == 2
    assert page.inner_text("#pstatus").startswith(f"read 0 / {reads}")
    for n in (1, 2, 3):
        page.click("#step")
        assert page.inner_text("#pstatus").startswith(f"read {n} / {reads}")
    assert page.locator("#timeline-svg rect.read.on").count() == 1
    page.select_option("#speed", "Infinity")
    page.click("#play")
    page.locator("#pstatus", has_text=f"read {reads} / {reads}").wait_for(timeout=20000)
    played = page.inner_text("#out")
    assert summary["text"].strip() in played
    assert summary["reasoning"].strip()[:40] in played
    assert problems == []


def test_a_websocket_session_s_page_names_its_messages(browser, tmp_path):
    """A Realtime session (tests/test_ws_sessions.py reads the same recording): the page's
    reads are its messages, each bar and raw entry one record of the file, named by direction
    and type; the tree holds the transcript and the call; the player plays it to the end."""
    rec = RECORDINGS / "realtime" / "0001-openai-realtime-gpt-realtime.jsonl"
    out = tmp_path / "session.html"
    summary = report_and_replay(rec, out)
    records = [json.loads(line) for line in rec.read_text().splitlines()[1:]]
    records = [r for r in records if r["type"] != "end"]
    shown = []  # each raw entry: the record's direction and type, then its text
    for r in records:
        arrow = "\u2192" if r["direction"] == "client" else "\u2190"
        if r["type"] == "message":
            text = r["text"]
            more = " \u2026" if len(text) > 400 else ""
            shown.append(f"{arrow} {json.loads(text)['type']}\n{text[:400]}{more}")
        else:
            said = f"{r.get('code') or ''} {r.get('reason') or ''}".strip()
            shown.append(f"{arrow} {r['type']} {said}".strip())
    page, problems = open_page(browser, out)
    n = len(records)
    facts = page.inner_text("#facts")
    assert f"messages / bytes / events\t{n} / " in facts, facts
    assert "reads" not in facts
    assert page.locator("#timeline-svg rect.read").count() == n
    tree = page.inner_text("#tree")
    assert summary["text"] in tree and "get_weather" in tree
    assert '"city": "Paris"' in tree
    assert "message 16" in tree  # the quirk, where it was met
    page.click("#raw summary")
    raw = [page.inner_text(f"#read-{i} pre") for i in range(n)]
    assert raw == shown
    assert page.inner_text("#pstatus").startswith(f"message 0 / {n}")
    page.select_option("#speed", "Infinity")
    page.click("#play")
    page.locator("#pstatus", has_text=f"message {n} / {n}").wait_for(timeout=20000)
    assert summary["text"] in page.inner_text("#out")
    assert problems == []


def test_hostile_content_stays_text_in_the_browser(browser, tmp_path):
    out = tmp_path / "hostile.html"
    out.write_text(hostile_report(), encoding="utf-8")
    page, problems = open_page(browser, out)
    assert page.evaluate("window.pwned === undefined")
    assert HOSTILE in page.inner_text("#tree")
    page.click("#step")
    page.click("#step")
    page.click("#step")
    assert HOSTILE in page.inner_text("#out")
    assert page.evaluate("window.pwned === undefined")
    assert problems == []


def test_cli_refuses_to_overwrite_a_file_that_is_not_a_report(tmp_path):
    mine = tmp_path / "notes.html"
    mine.write_text("<p>my notes</p>")

    def run(*args):
        return subprocess.run(
            [sys.executable, "-m", "streamtool.cli", "report", *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )

    proc = run(str(WEB_SEARCH), "-o", str(mine))
    assert proc.returncode == 2
    assert "not a streamtool report" in proc.stderr
    assert mine.read_text() == "<p>my notes</p>"
    proc = run(str(WEB_SEARCH))  # default name, in the current folder
    assert proc.returncode == 0, proc.stderr
    default = tmp_path / "anthropic-thinking-web-search-then-tool-call.report.html"
    assert default.exists()
    assert run(str(WEB_SEARCH)).returncode == 0  # a report may be rewritten
    bad = tmp_path / "bad.jsonl"
    bad.write_text("nope\n")
    proc = run(str(bad), "-o", "x.html")
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"streamtool: error: {bad}")
    assert not (tmp_path / "x.html").exists()
