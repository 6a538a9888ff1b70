"""``streamtool drift``: a tape's requests sent again to "today's provider" (``serve`` of real and
mutated recordings on 127.0.0.1) and what changed, tier by tier; ``--against``, ``--adopt``, the
formats and the exit codes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from streamtool.core.outputs.drift import TIERS, Change, ExchangeDrift, Side, compare, fails
from streamtool.core.recording.tape_index import read_index

from .serve_helpers import STREAMTOOL, start_listening
from .tape_helpers import openai_tape

KEY = "sk-drift-test-0123456789abcdefXYZ"


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*STREAMTOOL, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


@contextmanager
def serving(folder: Path) -> Iterator[str]:
    """``streamtool serve FOLDER`` on 127.0.0.1 (today's provider); its origin."""
    proc, _, origin = start_listening([*STREAMTOOL, "serve", str(folder), "--port", "0"])
    try:
        yield origin
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def mutated_tape(old: Path, today: Path, quirk: str) -> None:
    """A copy of the tape whose first exchange has ``quirk`` applied (``streamtool mutate``)."""
    shutil.copytree(old, today)
    first = today / read_index(today)[0].file
    out = first.with_suffix(".mutated")
    done = cli("mutate", str(first), "-q", quirk, "-o", str(out))
    assert done.returncode == 0, done.stderr
    os.replace(out, first)


@contextmanager
def serving_mutated(old: Path, today: Path, quirk: str) -> Iterator[str]:
    """serve of a copy of the tape ``old`` at ``today``, ``quirk`` applied to its first
    exchange; its origin."""
    mutated_tape(old, today, quirk)
    with serving(today) as origin:
        yield origin


def drift_upstream(
    old: Path, origin: str, new: Path, *more: str
) -> subprocess.CompletedProcess[str]:
    return cli(
        "drift", str(old), "--upstream", origin, "--out", str(new), "--format", "json", *more,
        env={"OPENAI_API_KEY": KEY},
    )  # fmt: skip


def doc(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    report = json.loads(done.stdout)
    for e in report["exchanges"]:
        assert set(e) >= {"file", "seq", "tier", "changes"}
        for c in e["changes"]:
            assert set(c) == {"tier", "kind", "path", "before", "after", "example"}
            assert c["tier"] in TIERS
    return report


def assert_no_key(*places: Path | str) -> None:
    for place in places:
        if isinstance(place, Path):
            for f in place.rglob("*"):
                if f.is_file():
                    assert KEY not in f.read_text(errors="replace"), f
        else:
            assert KEY not in place


def moved(exchange: dict[str, Any]) -> list[dict[str, Any]]:
    """The changes besides timing (which a busy machine moves while serve replays)."""
    return [c for c in exchange["changes"] if c["kind"] != "timing"]


def meaning_kept(exchange: dict[str, Any]) -> bool:
    return moved(exchange) == [] and exchange["tier"] in ("none", "warn")


@pytest.fixture
def old(tmp_path: Path) -> Path:
    folder = tmp_path / "old"
    openai_tape(folder)
    return folder


def test_the_same_provider_drifts_nowhere_and_no_key_is_written(old: Path, tmp_path: Path) -> None:
    new = tmp_path / "new"
    with serving(old) as origin:
        done = drift_upstream(old, origin, new)
    assert done.returncode == 0, done.stderr
    report = doc(done)
    # the same streams: nothing changed in meaning (a busy machine may deliver them slower)
    assert all(meaning_kept(e) for e in report["exchanges"])
    entries = read_index(new)
    assert [(e.seq, e.file, e.status, e.end) for e in entries] == [
        (o.seq, o.file, 200, "complete") for o in read_index(old)
    ]
    assert_no_key(new, done.stdout, done.stderr)


def test_other_tool_calls_are_a_break_and_exit_1(old: Path, tmp_path: Path) -> None:
    new = tmp_path / "new"
    with serving_mutated(old, tmp_path / "today", "model_tool_not_offered") as origin:
        done = drift_upstream(old, origin, new)
    assert done.returncode == 1, done.stderr
    first, second = doc(done)["exchanges"]
    assert first["tier"] == "break" and meaning_kept(second)
    kinds = {(c["tier"], c["kind"]) for c in first["changes"]}
    assert ("break", "tool_calls") in kinds
    assert ("break", "quirk_new") in kinds  # model_tool_not_offered is an error
    assert_no_key(new, done.stdout, done.stderr)


def test_a_new_quirk_of_lower_severity_is_a_warning(old: Path, tmp_path: Path) -> None:
    new = tmp_path / "new"
    with serving_mutated(old, tmp_path / "today", "sse_comment_keepalive") as origin:
        done = drift_upstream(old, origin, new)
        assert done.returncode == 0, done.stderr  # warn does not fail by default
        first = doc(done)["exchanges"][0]
        assert first["tier"] == "warn"
        assert [(c["kind"], c["path"]) for c in moved(first) if c["tier"] != "info"] == [
            ("quirk_new", "sse_comment_keepalive")
        ]
        stricter = drift_upstream(old, origin, tmp_path / "new2", "--fail-on", "warn")
    assert stricter.returncode == 1


def test_other_ids_are_info_against_another_tape(old: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    shutil.copytree(old, other)
    first = other / read_index(other)[0].file
    text = first.read_text()
    assert "chatcmpl-" in text
    first.write_text(text.replace("chatcmpl-", "chatcmpl-X"))
    done = cli("drift", str(old), "--against", str(other), "--format", "json")
    assert done.returncode == 0, done.stderr
    head = doc(done)["exchanges"][0]
    assert head["tier"] == "info"
    assert {(c["kind"], c["path"].split(": ")[-1]) for c in head["changes"]} == {("value", "id")}


def test_a_request_the_provider_no_longer_answers_is_reported_not_fatal(
    old: Path, tmp_path: Path
) -> None:
    today, new = tmp_path / "today", tmp_path / "new"
    today.mkdir()
    (today / "only.jsonl").write_bytes((old / read_index(old)[0].file).read_bytes())
    with serving(today / "only.jsonl") as origin:  # one recording: it answers any request
        done = drift_upstream(old, origin, new)
    # the second request gets the first answer: another text, other calls
    report = doc(done)
    assert meaning_kept(report["exchanges"][0])
    assert report["exchanges"][1]["tier"] == "break"
    refused = drift_upstream(old, "http://127.0.0.1:9", tmp_path / "new3")
    assert refused.returncode == 1
    tiers = [e["tier"] for e in doc(refused)["exchanges"]]
    assert tiers == ["break", "break"]  # connection refused: an error where there was none


def test_adopt_replaces_the_chosen_exchanges_in_place(old: Path, tmp_path: Path) -> None:
    today, new = tmp_path / "today", tmp_path / "new"
    mutated_tape(old, today, "model_tool_not_offered")
    before = [(e.seq, e.file) for e in read_index(old)]
    second = (old / before[1][1]).read_bytes()
    with serving(today) as origin:
        done = drift_upstream(old, origin, new, "--adopt", "1")
    assert done.returncode == 1
    assert [(e.seq, e.file) for e in read_index(old)] == before  # the index keeps its order
    assert (old / before[0][1]).read_bytes() == (new / before[0][1]).read_bytes()
    assert (old / before[1][1]).read_bytes() == second  # not adopted: unchanged
    again = cli("drift", str(old), "--against", str(new), "--format", "json")
    assert [e["tier"] for e in doc(again)["exchanges"]] == ["none", "none"]


def test_markdown_and_text_reports(old: Path, tmp_path: Path) -> None:
    today = tmp_path / "today"
    mutated_tape(old, today, "model_tool_not_offered")
    md = cli("drift", str(old), "--against", str(today), "--format", "markdown")
    assert md.returncode == 1
    assert md.stdout.startswith("## Stream drift\n\n2 exchanges: 1 break, 1 unchanged")
    assert "| break | tool_calls | invocations[].name |" in md.stdout
    text = cli("drift", str(old), "--against", str(today))
    assert "break" in text.stdout and "tool_calls" in text.stdout


def test_bad_input_is_one_line_and_exit_2(old: Path, tmp_path: Path) -> None:
    for args in (
        ["drift", str(tmp_path / "nope"), "--against", str(old)],
        ["drift", str(old)],
        ["drift", str(old), "--upstream", "ftp://x", "--out", str(tmp_path / "n")],
        ["drift", str(old), "--upstream", "http://127.0.0.1:9", "--out", str(old)],
        ["drift", str(old), "--against", str(old), "--adopt", "one"],
    ):
        done = cli(*args)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert [e.seq for e in read_index(old)] == [1, 2]  # nothing of the user's touched


# -- the comparison itself ------------------------------------------------------------------------
def side(**summary: Any) -> Side:
    base: dict[str, Any] = {"text": "", "invocations": [], "finish_class": "stop", "quirks": []}
    return Side({**base, **summary})


def test_each_change_is_told_once_per_event_type_with_an_example() -> None:
    a = side()
    a.events = [("chunk", {"choices": [{"delta": {"content": "a"}}], "id": "x"})] * 3
    b = side()
    b.events = [("chunk", {"choices": [{"delta": {"content": 1}}], "id": "y"})] * 3
    changes = compare(a, b)
    assert [(c.tier, c.kind, c.path) for c in changes] == [
        ("break", "field_type", "chunk: choices[].delta.content"),
        ("info", "value", "chunk: id"),
    ]
    assert changes[0].before == ["string"] and changes[0].after == ["number"]
    assert changes[0].example == 1


def test_text_within_the_wording_threshold_is_info_else_warn() -> None:
    long = "The weather in Paris is sunny and warm today, about 21 degrees."
    close = compare(side(text=long), side(text=long.replace("about", "around")))
    far = compare(side(text=long), side(text="I cannot help with that."))
    assert [(c.tier, c.kind) for c in close] == [("info", "text")]
    assert [(c.tier, c.kind) for c in far] == [("warn", "text")]
    assert far[0].example["similarity"] < 0.8 <= close[0].example["similarity"]


def test_fail_on_is_a_threshold() -> None:
    warn = ExchangeDrift("a", 1, [Change("warn", "text")])
    brk = ExchangeDrift("b", 2, [Change("break", "finish_class")])
    assert not fails([warn], "break") and fails([warn], "warn")
    assert fails([brk], "break") and fails([warn, brk], "warn")


# -- two writers, and a kill -9 -----------------------------------------------------------------
def big_tapes(tmp_path: Path, n: int) -> tuple[Path, Path, Path]:
    """A tape of ``n`` exchanges and two other answers to it (one with other tool calls)."""
    from .tape_helpers import OPENAI_TOOLS, OPENAI_TURN1, recorded_reads, write_exchange

    old = tmp_path / "big"
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "weather?"}]}
    body |= {"tools": OPENAI_TOOLS, "stream": True}
    reads = recorded_reads(OPENAI_TURN1)
    for i in range(1, n + 1):
        write_exchange(
            old, f"{i:04d}-openai-chat-gpt-4o.jsonl", url="https://api.openai.com/v1/chat/completions",
            body={**body, "seed": i}, reads=reads, index=i,
        )  # fmt: skip
    one, two = tmp_path / "one", tmp_path / "two"
    mutated_tape(old, one, "model_tool_not_offered")
    mutated_tape(old, two, "sse_comment_keepalive")
    return old, one, two


def assert_whole_tape(old: Path, originals: dict[str, bytes], *others: Path) -> None:
    """Every indexed file is one whole version of itself: the original or an adopted one."""
    from streamtool.core.recording.reader import Source

    entries = read_index(old)
    assert sorted(e.seq for e in entries) == sorted(range(1, len(originals) + 1))
    for e in entries:
        data = (old / e.file).read_bytes()
        choices = {originals[e.file], *((o / e.file).read_bytes() for o in others)}
        assert data in choices, e.file
        assert Source(old / e.file).end is not None or list(Source(old / e.file).chunks())
    assert not [p.name for p in old.iterdir() if p.name.endswith(".adopt")]


def test_two_adopters_at_once_leave_whole_recordings(tmp_path: Path) -> None:
    old, one, two = big_tapes(tmp_path, 12)
    originals = {e.file: (old / e.file).read_bytes() for e in read_index(old)}
    procs = [
        subprocess.Popen(
            [
                *STREAMTOOL,
                "drift",
                str(old),
                "--against",
                str(other),
                "--adopt",
                "all",
                "--format",
                "json",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for other in (one, two)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode in (0, 1) and "Traceback" not in err, err
    assert_whole_tape(old, originals, one, two)
    first = (old / read_index(old)[0].file).read_bytes()
    assert first in (
        (one / read_index(one)[0].file).read_bytes(),
        (two / read_index(two)[0].file).read_bytes(),
    )


def test_a_killed_adopter_leaves_the_tape_whole(tmp_path: Path) -> None:
    import signal
    import time

    old, one, _ = big_tapes(tmp_path, 40)
    originals = {e.file: (old / e.file).read_bytes() for e in read_index(old)}
    for delay in (0.4, 0.9, 1.6):
        proc = subprocess.Popen(
            [*STREAMTOOL, "drift", str(old), "--against", str(one), "--adopt", "all"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        for stray in old.glob(".*.adopt"):
            stray.unlink()  # a temporary file a killed writer leaves is not part of the tape
        assert_whole_tape(old, originals, one)


def test_a_websocket_session_drifts_by_its_messages(tmp_path: Path) -> None:
    """A Realtime session whose server went back to the beta event names: the GA event types
    are gone (a break), the beta ones new, and the quirk says so."""
    from .conftest import RECORDINGS

    sessions = RECORDINGS / "realtime"
    if not (sessions / "index.jsonl").exists():
        pytest.skip("no bundled sessions")
    old, today = tmp_path / "old", tmp_path / "today"
    shutil.copytree(sessions, old)
    shutil.copytree(sessions, today)
    target = today / read_index(today)[1].file
    done = cli("mutate", str(target), "-q", "realtime_beta_event_names", "-o", str(tmp_path / "m"))
    assert done.returncode == 0, done.stderr
    os.replace(tmp_path / "m", target)
    same = cli("drift", str(old), "--against", str(old), "--format", "json")
    assert [e["tier"] for e in doc(same)["exchanges"]] == ["none"] * len(read_index(old))
    moved_ = cli("drift", str(old), "--against", str(today), "--format", "json")
    assert moved_.returncode == 1
    second = doc(moved_)["exchanges"][1]
    kinds = {(c["tier"], c["kind"], c["path"]) for c in second["changes"]}
    assert ("break", "event_type_gone", "response.output_text.delta") in kinds
    assert ("warn", "event_type_new", "response.text.delta") in kinds
    assert ("warn", "quirk_new", "realtime_beta_event_names") in kinds


def test_a_field_gone_with_all_under_it_is_told_once() -> None:
    a = side()
    a.events = [("m", {"result": {"tools": [{"name": "add", "schema": {"type": "object"}}]}})]
    b = side()
    b.events = [("m", {"result": {"other": 1}})]
    changes = [(c.kind, c.path) for c in compare(a, b)]
    assert changes == [("field_gone", "m: result.tools"), ("field_new", "m: result.other")]
