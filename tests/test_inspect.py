"""``streamtool inspect``: per-read facts, cuts, timing, stalls, quirk lint, --fail-on, stdin."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from streamtool.core.model.records import Chunk, End, Header
from streamtool.core.outputs.inspect import Inspector, findings_failing

from .conftest import RECORDINGS
from .helpers import chat_chunk, sse, stdin_and_file_json

SAME_INDEX = RECORDINGS / "ollama-parallel-calls-same-index.jsonl"
UTF8 = RECORDINGS / "openai-text-usage-chunk-utf8-split.jsonl"


def run(*args: str, stdin: bytes | None = None, columns: int = 80) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_PARSER")}
    env["COLUMNS"] = str(columns)
    return subprocess.run(
        [sys.executable, "-m", "streamtool.cli", *args],
        capture_output=True,
        input=stdin,
        env=env,
    )


def inspect_reads(reads: list[tuple[float | None, bytes | str]], stall: float = 1.0) -> Inspector:
    ins = Inspector(Header(raw_body=True), source="test", stall=stall)
    for t, data in reads:
        ins.feed(Chunk(t, data))
    last = reads[-1][0] if reads else None
    ins.finish(End(None if last is None else last + 0.01, "complete"))
    return ins


def tool_stream() -> bytes:
    return sse(
        json.dumps(chat_chunk({"role": "assistant", "content": "Héllo 🌍"}), ensure_ascii=False),
        chat_chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": ""},
                    }
                ]
            }
        ),
        chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": '}}]}),
        chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Paris"}'}}]}),
        chat_chunk({}, finish="tool_calls"),
    )


def test_each_read_says_what_it_produced_and_which_cuts_it_made():
    body = tool_stream()
    emoji = body.index("🌍".encode())
    second = body.index(b"data: ", 1)
    crlf_body = b": keep\r\n\r\n" + body  # a comment line ending in CRLF, cut between CR and LF
    cr = crlf_body.index(b"\r") + 1
    shift = len(crlf_body) - len(body)
    cuts = [cr, emoji + 2 + shift, second + 10 + shift]
    pieces = [crlf_body[a:b] for a, b in zip([0, *cuts], [*cuts, len(crlf_body)], strict=True)]
    ins = inspect_reads([(0.1 * (i + 1), p) for i, p in enumerate(pieces)])
    reads = ins.result()["reads"]
    assert [r["index"] for r in reads] == [0, 1, 2, 3]
    assert reads[0]["cuts"] == ["crlf"]  # ends on the CR of a CRLF
    assert reads[0]["comments"] == 1  # a CR ends the line: the comment is whole
    assert "utf8" in reads[1]["cuts"] and "event" in reads[1]["cuts"]
    assert reads[1]["text_chars"] == 0  # its event is not whole yet
    assert reads[2]["text_chars"] == len("Héllo 🌍")
    assert reads[2]["cuts"] == ["event"]  # ten bytes into the second event
    assert reads[3]["cuts"] == []
    assert reads[3]["tool_args"] == {"call_a": len('{"city": "Paris"}')}
    assert reads[3]["tool_calls_opened"] == ["call_a"]
    assert sum(r["events"] for r in reads) == ins.engine.sse_events == 6


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=900), max_size=12, unique=True))
def test_what_the_reads_produced_adds_up_to_the_replay_whatever_the_chunking(cuts):
    body = tool_stream()
    points = sorted(c for c in cuts if c < len(body))
    pieces = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    ins = inspect_reads([(0.05 * i, p) for i, p in enumerate(pieces)])
    result = ins.result()
    summary = result["summary"]
    reads = result["reads"]
    assert sum(r["text_chars"] for r in reads) == len(summary["text"]) == len("Héllo 🌍")
    assert sum(r["tool_args"].get("call_a", 0) for r in reads) == len('{"city": "Paris"}')
    assert sum(r["bytes"] for r in reads) == len(body)
    boundaries = {i + 2 for i in range(len(body) - 1) if body[i : i + 2] == b"\n\n"}
    for r, end in zip(reads, [*points, len(body)], strict=True):
        # a read cuts an event exactly when it does not end on an event boundary
        assert ("event" in r["cuts"]) == (end not in boundaries)
        try:
            body[:end].decode("utf-8")
            whole = True
        except UnicodeDecodeError:
            whole = False
        assert ("utf8" in r["cuts"]) == (not whole)


def test_timing_gaps_stalls_and_first_tool_fragment():
    body = tool_stream()
    events = [e + b"\n\n" for e in body.split(b"\n\n") if e]
    times = [0.5, 0.6, 3.6, 3.7, 3.8, 5.9]
    ins = inspect_reads(list(zip(times, events, strict=True)), stall=1.5)
    timing = ins.result()["timing"]
    assert timing["ttfb_s"] == 0.5
    assert timing["ttft_s"] == 0.5
    assert timing["reads"] == 6
    gaps = sorted([0.1, 3.0, 0.1, 0.1, 2.1])
    assert timing["gap_max_s"] == 3.0
    assert timing["gap_p50_s"] == gaps[2]
    assert [s["read"] for s in timing["stalls"]] == [2, 5]
    assert timing["stalls"][0]["gap"] == 3.0
    assert timing["stalls"][0]["after"] == "get_weather (call_a) +9"
    assert timing["first_tool_fragment_s"] == 0.6  # the call opened (id, name) at 0.6
    assert timing["generating_s"] == round(3.7 - 0.5, 6)  # finish and [DONE] produced nothing


def test_quirks_are_located_and_explained_and_fail_on_picks_them():
    from streamtool.core.drive.inspect_file import inspect_file

    result = inspect_file(SAME_INDEX).result()
    (quirk,) = result["quirks"]
    assert quirk["id"] == "oai_parallel_same_index"
    assert quirk["severity"] == "error"
    assert quirk["read"] == 2 and quirk["t"] == 3.1
    assert quirk["doc"] == "docs/quirks.md#oai_parallel_same_index"
    assert quirk["reference"].startswith("Q-TC-2")
    assert findings_failing(result, {"error"}) == ["oai_parallel_same_index"]
    assert findings_failing(result, {"info"}) == ["oai_parallel_same_index"]
    assert findings_failing(result, {"eof_no_done"}) == []
    info_only = inspect_file(UTF8).result()
    assert [q["severity"] for q in info_only["quirks"]] == ["info"]
    assert findings_failing(info_only, {"warn"}) == []
    assert findings_failing(info_only, {"info"}) == ["usage_only_chunk"]


def test_cli_text_fits_80_and_200_columns_and_fail_on_exits_1():
    for columns in (80, 200):
        proc = run("inspect", str(SAME_INDEX), "--reads", columns=columns)
        assert proc.returncode == 0, proc.stderr
        out = proc.stdout.decode()
        assert max(len(line) for line in out.splitlines()) <= columns
        for needle in ("TTFT 2.80 s", "stalls", "oai_parallel_same_index", "get_weather +14"):
            assert needle in out
    proc = run("inspect", str(SAME_INDEX), "--fail-on", "error")
    assert proc.returncode == 1
    assert "--fail-on met: oai_parallel_same_index" in proc.stdout.decode()
    assert run("inspect", str(UTF8), "--fail-on", "warn").returncode == 0
    assert run("inspect", str(UTF8), "--fail-on", "eof_no_done,usage_only_chunk").returncode == 1


def test_cli_json_one_object_per_file_and_a_bad_file_is_one_line_exit_2(tmp_path):
    (tmp_path / "a.jsonl").write_bytes(SAME_INDEX.read_bytes())
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.jsonl").write_bytes(UTF8.read_bytes())
    (tmp_path / "sub" / "b.golden.json").write_text("{}")  # golden files are not recordings
    proc = run("inspect", str(tmp_path), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    objs = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    assert [o["source"] for o in objs] == [str(tmp_path / "a.jsonl"), str(tmp_path / "sub/b.jsonl")]
    for o in objs:
        assert set(o) >= {"facts", "timing", "quirks", "errors", "reads", "tool_calls", "summary"}
    assert objs[0]["facts"]["provider"] == "ollama"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "header", "format": "streamtool-recording", "version": 1}\nnope\n')
    proc = run("inspect", str(bad), str(SAME_INDEX), "--format", "json")
    assert proc.returncode == 2
    err = proc.stderr.decode().strip().splitlines()
    assert err == [f"streamtool: error: {bad}:2: not JSON (Expecting value)"]
    assert json.loads(proc.stdout)["facts"]["model"] == "qwen3:8b"  # the good file still shown


def test_stdin_recording_and_raw_body_with_arrival_timings():
    from_stdin, from_file = stdin_and_file_json(run, "inspect", SAME_INDEX)
    assert from_stdin["source"] == "<stdin>"
    assert from_stdin["reads"] == from_file["reads"]
    assert from_stdin["quirks"] == from_file["quirks"]
    proc = run("inspect", "-", "--format", "json", stdin=tool_stream())
    assert proc.returncode == 0, proc.stderr
    raw = json.loads(proc.stdout)
    assert raw["facts"]["raw_body"] is True
    assert raw["timing"]["ttfb_s"] is not None  # reads from stdin are timed as they arrive
    assert raw["summary"]["invocations"][0]["arguments"] == {"city": "Paris"}


# -- any number of reads ---------------------------------------------------------------------------
def test_the_spooled_reads_give_the_same_result_byte_for_byte() -> None:
    from streamtool.core.drive.inspect_file import inspect_file
    from streamtool.core.outputs.inspect import json_pieces

    for path in sorted(RECORDINGS.glob("*.jsonl")):
        if ".golden" in path.name:
            continue
        whole = inspect_file(path)  # every read's facts in memory
        spooled = inspect_file(path, keep_reads=0, spool=True)
        assert spooled.reads == []
        assert list(spooled.read_rows()) == whole.result()["reads"], path.name
        pieces = "".join(json_pieces(spooled.result(with_reads=False), spooled.read_texts()))
        assert pieces == json.dumps(whole.result(), ensure_ascii=False) + "\n", path.name


def test_stalls_past_the_cap_are_counted_not_kept(monkeypatch) -> None:
    from streamtool.core.outputs import inspect as inspect_mod

    monkeypatch.setattr(inspect_mod, "MAX_STALLS", 5)
    reads = [(2.0 * (i + 1), sse(chat_chunk({"content": f"w{i} "}))) for i in range(12)]
    timing = inspect_reads(reads).result()["timing"]
    assert [s["read"] for s in timing["stalls"]] == [0, 1, 2, 3, 4]
    assert timing["stalls_total"] == 12
    assert timing["stalls"][1]["after"] == "text 3"


def _peak_rss_mb(args: list[str]) -> float:
    env = {k: v for k, v in os.environ.items() if k != "AUTOBYTEUS_STREAM_PARSER"}
    env["COLUMNS"] = "100"
    with open(os.devnull, "wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamtool.cli", *args], stdout=sink, stderr=sink, env=env
        )
        _, status, usage = os.wait4(proc.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, args
    return usage.ru_maxrss / 1024


def test_inspect_reads_json_and_report_hold_no_more_for_eight_times_the_reads(tmp_path) -> None:
    """Peak memory (the kernel's figure for the child) with 4,000 and with 32,000 reads: a few
    megabytes apart (each read kept would cost kilobytes: 28,000 of them, over 100 MB)."""
    from .serve_helpers import write_recording

    recs = {}
    for n in (4_000, 32_000):
        body = [(0.001 * i, sse(chat_chunk({"content": f"w{i} "}))) for i in range(n)]
        recs[n] = write_recording(tmp_path / f"r{n}.jsonl", body)
    for args in (["inspect", "--reads"], ["inspect", "--format", "json"], ["report", "-o", "-"]):
        small, large = (_peak_rss_mb([*args, str(recs[n])]) for n in (4_000, 32_000))
        assert large - small < 12, (args, small, large)
