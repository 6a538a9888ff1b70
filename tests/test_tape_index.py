"""The tape index: appended entries, a cut last line, exchange order, file-name allocation."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamtool.core.model.records import Header, RecordingError
from streamtool.core.recording.reader import Source
from streamtool.core.recording.tape_index import (
    COUNTER_NAME,
    INDEX_NAME,
    IndexEntry,
    Tape,
    append_entry,
    exchange_name,
    list_exchanges,
    read_counter,
    read_index,
    slug,
)
from streamtool.core.recording.writer import RecordingWriter


def entry(seq: int, file: str, **kw: object) -> IndexEntry:
    return IndexEntry(seq=seq, file=file, **kw)  # type: ignore[arg-type]


def touch(folder: Path, *names: str) -> None:
    for name in names:
        (folder / name).write_text("{}\n")


def test_append_then_read_round_trips_every_field(tmp_path: Path) -> None:
    full = IndexEntry(
        seq=1,
        file="0001-anthropic-messages-claude-sonnet-4-6.jsonl",
        recorded_at="2026-11-22T10:00:00Z",
        api="messages",
        provider="anthropic",
        method="POST",
        path="/v1/messages",
        model="claude-sonnet-4-6",
        status=200,
        end="complete",
        duration_s=1.25,
        ttft_s=0.4,
        chunks=17,
    )
    append_entry(tmp_path, full)
    append_entry(tmp_path, entry(2, "0002-x.jsonl"))
    lines = (tmp_path / INDEX_NAME).read_text().splitlines()
    assert len(lines) == 2
    assert set(json.loads(lines[0])) == {
        "seq",
        "file",
        "recorded_at",
        "api",
        "provider",
        "method",
        "path",
        "model",
        "status",
        "end",
        "duration_s",
        "ttft_s",
        "chunks",
    }
    got = read_index(tmp_path)
    assert got[0] == full
    assert [e.seq for e in got] == [1, 2]


def test_no_index_reads_as_empty(tmp_path: Path) -> None:
    assert read_index(tmp_path) == []


def test_a_cut_last_line_is_ignored_and_the_next_append_starts_a_new_line(
    tmp_path: Path,
) -> None:
    append_entry(tmp_path, entry(1, "a.jsonl"))
    with open(tmp_path / INDEX_NAME, "a") as fh:
        fh.write('{"seq": 2, "file": "b.js')  # a crash mid-write
    assert [e.file for e in read_index(tmp_path)] == ["a.jsonl"]
    append_entry(tmp_path, entry(3, "c.jsonl"))
    assert [e.file for e in read_index(tmp_path)] == ["a.jsonl", "c.jsonl"]


def test_a_broken_line_before_the_last_names_the_index_and_line(tmp_path: Path) -> None:
    (tmp_path / INDEX_NAME).write_text(
        '{"seq": 1, "file": "a.jsonl"}\nnot json\n{"seq": 3, "file": "c.jsonl"}\n'
    )
    with pytest.raises(RecordingError) as info:
        read_index(tmp_path)
    assert info.value.line == 2
    assert str(info.value).startswith(str(tmp_path / INDEX_NAME) + ":2:")


@pytest.mark.parametrize(
    "line",
    ['{"file": "a.jsonl"}', '{"seq": 1, "file": "../outside.jsonl"}', '{"seq": 1}', "[1, 2]"],
)
def test_an_entry_without_seq_or_a_plain_file_name_is_refused(tmp_path: Path, line: str) -> None:
    (tmp_path / INDEX_NAME).write_text(line + "\n" + '{"seq": 9, "file": "z.jsonl"}\n')
    with pytest.raises(RecordingError) as info:
        read_index(tmp_path)
    assert info.value.line == 1


def test_exchanges_in_index_order_then_the_rest_by_name(tmp_path: Path) -> None:
    touch(tmp_path, "b.jsonl", "a.jsonl", "c.sse", "d.txt", "z.jsonl", "notes.md")
    touch(tmp_path, "a.golden.json")
    append_entry(tmp_path, entry(1, "z.jsonl"))
    append_entry(tmp_path, entry(2, "b.jsonl"))
    names = [p.name for p in list_exchanges(tmp_path)]
    assert names == ["z.jsonl", "b.jsonl", "a.jsonl", "c.sse", "d.txt"]


def test_a_folder_without_an_index_is_its_recordings_by_name(tmp_path: Path) -> None:
    touch(tmp_path, "0002-b.jsonl", "0010-a.jsonl", "0001-c.jsonl")
    assert [p.name for p in list_exchanges(tmp_path)] == [
        "0001-c.jsonl",
        "0002-b.jsonl",
        "0010-a.jsonl",
    ]


def test_an_index_naming_a_missing_recording_is_an_error(tmp_path: Path) -> None:
    append_entry(tmp_path, entry(1, "gone.jsonl"))
    with pytest.raises(RecordingError, match="gone.jsonl"):
        list_exchanges(tmp_path)


def test_a_file_named_twice_by_the_index_is_listed_once(tmp_path: Path) -> None:
    touch(tmp_path, "a.jsonl")
    append_entry(tmp_path, entry(1, "a.jsonl"))
    append_entry(tmp_path, entry(2, "a.jsonl"))
    assert [p.name for p in list_exchanges(tmp_path)] == ["a.jsonl"]


def test_a_missing_tape_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(RecordingError, match="no such folder"):
        list_exchanges(tmp_path / "nope")


def test_an_unreadable_index_is_said_in_the_project_wording(tmp_path: Path) -> None:
    (tmp_path / INDEX_NAME).mkdir()  # an index.jsonl that is a folder
    with pytest.raises(RecordingError, match="index.jsonl: is a folder, not a file"):
        read_index(tmp_path)


def test_names_follow_the_pattern() -> None:
    assert (
        exchange_name(1, "anthropic-messages", "claude-sonnet-4-6")
        == "0001-anthropic-messages-claude-sonnet-4-6.jsonl"
    )
    assert exchange_name(12, "openai-chat.completions", "gpt-4.1") == (
        "0012-openai-chat-completions-gpt-4-1.jsonl"
    )
    assert exchange_name(3, None, None) == "0003-api-model.jsonl"
    assert slug("accounts/fireworks/models/Kimi-K2") == "accounts-fireworks-models-kimi-k2"


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_a_slug_is_always_a_safe_file_name_part(text: str) -> None:
    out = slug(text)
    assert out
    assert len(out) <= 80
    assert set(out) <= set("abcdefghijklmnopqrstuvwxyz0123456789-")
    assert not out.startswith("-") and not out.endswith("-") and "--" not in out


def test_allocation_continues_after_what_the_tape_holds(tmp_path: Path) -> None:
    touch(tmp_path, "0007-openai-chat-gpt.jsonl", "hand-made.jsonl")
    append_entry(tmp_path, entry(9, "elsewhere.jsonl"))
    seq, path = Tape(tmp_path).allocate("anthropic-messages", "claude-sonnet-4-6")
    assert seq == 10
    assert path == tmp_path / "0010-anthropic-messages-claude-sonnet-4-6.jsonl"


def test_allocation_creates_the_folder_and_starts_at_one(tmp_path: Path) -> None:
    tape = Tape(tmp_path / "new" / "tape")
    assert tape.allocate("gemini", "gemini-2.5-flash")[0] == 1
    assert tape.allocate("gemini", "gemini-2.5-flash")[0] == 2


def test_allocation_reads_the_counter_other_writers_leave_after_one_listing(tmp_path: Path) -> None:
    first, second = Tape(tmp_path), Tape(tmp_path)  # two writers, as two processes would be
    assert first.allocate("openai-chat", "a")[0] == 1
    assert second.allocate("openai-chat", "b")[0] == 2
    assert read_counter(tmp_path) == 2
    touch(tmp_path, "0050-hand-made.jsonl")  # after both listed the folder: not looked for
    assert first.allocate("openai-chat", "a")[0] == 3  # the other writer's 2, by the counter
    assert second.allocate("openai-chat", "b")[0] == 4
    assert Tape(tmp_path).allocate("openai-chat", "c")[0] == 51  # a new writer lists it
    (tmp_path / COUNTER_NAME).unlink()  # no counter: the folder is listed again
    assert first.allocate("openai-chat", "a")[0] == 52
    (tmp_path / COUNTER_NAME).write_text("not a number\n")
    assert second.allocate("openai-chat", "b")[0] == 53
    assert read_counter(tmp_path) == 53


def test_the_counter_written_over_its_old_text_never_reads_as_a_wrong_number(
    tmp_path: Path,
) -> None:
    # the counter is written in place (not truncated) while it holds a number: what the new text
    # does not cover must leave either the new number or no number (then the folder is listed)
    writer = Tape(tmp_path)
    last = writer.allocate("openai-chat", "a")[0]
    for old in ["  12  \n", "12\n\n\n\n", "   99\n", "7", "9 ", "   3\n"]:
        (tmp_path / COUNTER_NAME).write_text(old)
        seq = writer.allocate("openai-chat", "a")[0]
        assert seq == max(last, int(old)) + 1, old
        assert read_counter(tmp_path) in (seq, None), old
        last = writer.allocate("openai-chat", "a")[0]
        assert last == seq + 1
        assert read_counter(tmp_path) == last  # a garbled counter is rewritten whole
    assert (tmp_path / COUNTER_NAME).read_text().strip() == str(last)
    touch(tmp_path, "0500-hand-made.jsonl")
    (tmp_path / COUNTER_NAME).write_text("x" * 30)  # longer than any number written over it
    assert writer.allocate("openai-chat", "a")[0] == 501  # no number: the folder is listed
    assert (tmp_path / COUNTER_NAME).read_text() == "501\n"


def test_names_taken_in_one_batch_follow_each_other_past_names_held(tmp_path: Path) -> None:
    writer, other = Tape(tmp_path), Tape(tmp_path)  # two writers, as two processes would be
    assert writer.allocate("openai-chat", "a")[0] == 1
    assert other.allocate("openai-chat", "a")[0] == 2
    # the name the batch's second exchange would get at 4 is taken (a file put there by hand
    # after both writers looked at the folder): passed over, and left as it was
    held = exchange_name(4, "mcp", "tools/call b")
    (tmp_path / held).write_text("by hand\n")
    wanted = [("mcp", "tools/call a"), ("mcp", "tools/call b"), ("x", "c")]
    got = writer.allocate_many(wanted)
    assert got == [
        (n, tmp_path / exchange_name(n, *w)) for n, w in zip((3, 5, 6), wanted, strict=True)
    ]
    assert (tmp_path / held).read_text() == "by hand\n"
    # each name is held by its recording's file, made empty (no hidden file beside it)
    assert all(p.read_bytes() == b"" for _, p in got)  # type: ignore[misc]
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".reserved")]
    assert read_counter(tmp_path) == 6
    assert writer.in_flight() == sorted(
        [exchange_name(1, "openai-chat", "a"), exchange_name(2, "openai-chat", "a"), held]
        + [exchange_name(n, *w) for n, w in zip((3, 5, 6), wanted, strict=True)]
    )
    assert other.allocate("openai-chat", "a")[0] == 7  # after the batch, by the counter
    for _, path in got:  # type: ignore[misc]
        path.write_text("{}\n")
    writer.append_many([entry(n, p.name) for n, p in got])  # type: ignore[misc]
    assert [e.seq for e in read_index(tmp_path)] == [3, 5, 6]
    assert not any(n in writer.in_flight() for n in (p.name for _, p in got))  # type: ignore[misc]
    assert writer.allocate_many([]) == []


def test_batches_of_names_from_many_threads_never_collide(tmp_path: Path) -> None:
    tapes = [Tape(tmp_path), Tape(tmp_path)]
    got: list[int] = []
    lock = threading.Lock()

    def names(i: int) -> None:
        taken = tapes[i % 2].allocate_many([("openai-chat", f"m{i}-{k}") for k in range(i % 4 + 1)])
        with lock:
            got.extend(seq for seq, _ in taken)  # type: ignore[misc]

    threads = [threading.Thread(target=names, args=(i,)) for i in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == list(range(1, sum(i % 4 + 1 for i in range(24)) + 1))


def test_concurrent_allocations_and_appends_never_collide(tmp_path: Path) -> None:
    tape = Tape(tmp_path)
    got: list[tuple[int, Path]] = []
    lock = threading.Lock()

    def exchange() -> None:
        seq, path = tape.allocate("openai-chat", "gpt-4o")
        path.write_text("{}\n")
        tape.append(entry(seq, path.name, model="gpt-4o"))
        with lock:
            got.append((seq, path))

    threads = [threading.Thread(target=exchange) for _ in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(s for s, _ in got) == list(range(1, 41))
    assert len({p for _, p in got}) == 40
    index = read_index(tmp_path)
    assert sorted(e.seq for e in index) == list(range(1, 41))
    assert {p.name for p in tape.exchanges()} == {p.name for _, p in got}


def test_commands_that_search_folders_skip_a_tapes_index(tmp_path: Path) -> None:
    """``check``, ``ls`` and ``serve`` on a tape folder see its recordings, not its index."""
    from typer.testing import CliRunner

    from streamtool.cli.main import app
    from streamtool.core.net.library import Library

    from .tape_helpers import openai_tape

    files = openai_tape(tmp_path / "tape")
    assert (tmp_path / "tape" / INDEX_NAME).exists()
    runner = CliRunner()
    update = runner.invoke(app, ["check", "--update", "--create-missing", str(tmp_path / "tape")])
    assert update.exit_code == 0, update.output
    check = runner.invoke(app, ["check", str(tmp_path / "tape")])
    assert check.exit_code == 0, check.output
    assert INDEX_NAME not in check.output
    listing = runner.invoke(app, ["ls", str(tmp_path / "tape"), "--format", "json"])
    assert listing.exit_code == 0, listing.output
    assert INDEX_NAME not in listing.output
    library = Library.from_paths([tmp_path / "tape"])
    assert [r.name for r in library.recordings] == [f.stem for f in files]


def test_a_named_recording_is_written_as_is_and_given_up_only_when_empty(tmp_path: Path) -> None:
    """The file a name holds is the recording: its writer opens it (never a second file), and
    release removes it only if nothing was written to it."""
    tape = Tape(tmp_path)
    (_, unused), (_, used), (_, swapped) = tape.allocate_many([("x", "a"), ("x", "b"), ("x", "c")])
    header = Header(provider="openai", api="chat", request={}, response={"status": 200})
    with RecordingWriter(used, header, claimed=True) as writer:
        writer.write_read(0.1, b"data: {}\n\n")
    assert [r.data for r in Source(used).chunks()] == ["data: {}\n\n"]
    # a file given something by hand under a claimed name is refused, and left as it was
    swapped.write_text("by hand\n")
    with pytest.raises(RecordingError, match="holds data already"):
        RecordingWriter(swapped, header, claimed=True)
    assert swapped.read_text() == "by hand\n"
    # a link put in its place is never written through
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text("")
    unused.unlink()
    unused.symlink_to(outside)
    with pytest.raises(RecordingError, match="symbolic link"):
        RecordingWriter(unused, header, claimed=True)
    unused.unlink()
    unused.touch()
    for path in (unused, used, swapped):
        tape.release(path)
    assert not unused.exists() and used.exists() and swapped.read_text() == "by hand\n"
    assert outside.read_text() == ""
    assert tape.allocate("x", "d")[0] == 4  # a given-up number is not handed out again


def test_a_tape_serves_around_an_exchange_named_and_not_written(tmp_path: Path) -> None:
    """An empty numbered file in a tape is an exchange a writer has named: left out, and said
    so, not taken for a broken file."""
    from streamtool.core.net.tape import load_exchanges

    tape = Tape(tmp_path)
    (_, path), (_, waiting) = tape.allocate_many([("x", "a"), ("x", "b")])  # type: ignore[misc]
    header = Header(provider="openai", api="chat", request={}, response={"status": 200})
    with RecordingWriter(path, header, claimed=True) as writer:
        writer.write_read(0.1, b"data: {}\n\n")
    recordings, skipped = load_exchanges(tmp_path)
    assert [r.path for r in recordings] == [str(path)]
    assert skipped == [(waiting.name, "empty: an exchange named and not written yet")]
