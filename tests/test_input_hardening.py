"""Inputs that used to crash or hang: deep JSON, special files, a BOM, a chunk with both bodies,
non-finite times, a last line cut mid-way, and a full disk during ``record``.

Each one is unusable input (exit 2, one line naming the file and line) or a reported error, never
a traceback.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchmarks.generators import OPENAI_CHAT_URL, recording_header
from streamtool.cli.main import app
from streamtool.core.exchange.playback import Playback
from streamtool.core.net.server import serving
from streamtool.core.recording.reader import Source
from streamtool.core.wire.fastjson import MAX_DEPTH, loads

from .conftest import RECORDINGS
from .serve_helpers import record_args

STREAMTOOL = [sys.executable, "-c", "from streamtool.cli.main import main; main()"]
HEADER = recording_header(
    request={"url": OPENAI_CHAT_URL}, response={"status": 200}, recorded_at=None
)
DEEP = "[" * 1000 + "]" * 1000


def chat(content: str) -> str:
    return (
        "data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": content}}]}) + "\n\n"
    )


def write(path: Path, *lines: str, header: dict | None = None) -> Path:
    path.write_text("\n".join([json.dumps(header or HEADER), *lines]) + "\n", encoding="utf-8")
    return path


def chunk(text: str, t: float = 0.1) -> str:
    return json.dumps({"type": "chunk", "t": t, "text": text})


END = json.dumps({"type": "end", "t": 1.0, "reason": "complete", "error": None})


def cli(*args: str):
    result = CliRunner().invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def strict_json(text: str):
    def refuse(name: str):
        raise AssertionError(f"{name} in the output")

    return json.loads(text, parse_constant=refuse)


def one_line_error(result, where: str) -> None:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("streamtool: error: "), result.stderr
    assert where in lines[0]
    assert "Traceback" not in result.output


# -- deep JSON ------------------------------------------------------------------------------------
def test_loads_refuses_deep_json_and_non_json_constants():
    assert loads("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    for text in ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), DEEP, '{"a":' * 5000):
        with pytest.raises(ValueError):
            loads(text)
    for text in ('{"t": NaN}', "[Infinity]", "-Infinity"):
        with pytest.raises(json.JSONDecodeError, match="is not a JSON value"):
            loads(text)


@pytest.mark.parametrize(
    "first, error",
    [
        # a payload nested too deeply
        (
            'data: {"choices":[{"index":0,"delta":{"content":"hi"}}],"x":' + DEEP + "}\n\n",
            "nested too deeply",
        ),
        # NaN in a payload never reaches the JSON output
        (chat("a").replace("}]}", '}],"usage":{"prompt_tokens":NaN}}'), "NaN is not a JSON value"),
    ],
    ids=["deep", "nan"],
)
def test_a_bad_payload_is_a_reported_error(tmp_path, first, error):
    """The event that cannot be read is an error of the replay; the next one is read."""
    rec = write(
        tmp_path / "bad.jsonl", chunk(first), chunk(chat(" there") + "data: [DONE]\n\n"), END
    )
    result = cli("replay", str(rec), "--format", "json")
    assert result.exit_code == 0, result.output
    summary = strict_json(result.stdout)
    assert summary["text"] == " there"
    assert any(error in e["message"] for e in summary["errors"])


def test_deep_tool_arguments_are_kept_raw_with_an_error(tmp_path):
    args = '{"a":' + DEEP + "}"
    event = {
        "choices": [
            {
                "index": 0,
                "delta": {
                    "tool_calls": [
                        {"index": 0, "id": "c1", "function": {"name": "f", "arguments": args}}
                    ]
                },
                "finish_reason": "tool_calls",
            }
        ]
    }
    rec = write(
        tmp_path / "args.jsonl", chunk(f"data: {json.dumps(event)}\n\ndata: [DONE]\n\n"), END
    )
    for parser in ("api_tool_call", "json", "xml", "sentinel", "passthrough"):
        result = cli("replay", str(rec), "--format", "json", "--parser", parser)
        assert result.exit_code == 0, (parser, result.output)
        strict_json(result.stdout)


@pytest.mark.parametrize("command", ["replay", "check", "diff"])
def test_deep_recording_line_is_unusable_input(tmp_path, command):
    rec = write(
        tmp_path / "deep.jsonl", chunk(chat("hi")), '{"type":"chunk","x":' + DEEP + "}", END
    )
    other = write(tmp_path / "ok.jsonl", chunk(chat("hi")), END)
    args = {"replay": [str(rec)], "check": [str(rec)], "diff": [str(other), str(rec)]}[command]
    result = cli(command, *args)
    one_line_error(result, "deep.jsonl:3: not JSON (nested too deeply")


def test_deep_golden_file_is_unusable_input(tmp_path):
    rec = tmp_path / "a.jsonl"
    shutil.copy(RECORDINGS / "openai-parallel-tool-calls.jsonl", rec)
    golden = tmp_path / "a.golden.json"
    golden.write_text(DEEP + "\n")
    result = cli("check", str(rec))
    assert result.exit_code == 2, result.output
    assert "a.golden.json" in result.output and "nested too deeply" in result.output
    assert "Traceback" not in result.output
    assert golden.read_text() == DEEP + "\n"  # never overwritten


# -- special files, BOM, a chunk with two bodies, non-finite times -------------------------------
def _run(args: list[str], timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([*STREAMTOOL, *args], capture_output=True, text=True, timeout=timeout)


def test_a_fifo_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    for args in (["replay", str(fifo)], ["check", str(fifo)], ["diff", str(fifo), str(fifo)]):
        run = _run(args)  # a hang would end in TimeoutExpired
        assert run.returncode == 2, (args, run.stderr)
        assert "pipe.jsonl: is not a regular file" in run.stderr
        assert "Traceback" not in run.stderr
    # one found in a folder by check is refused the same way, the others still checked
    folder = tmp_path / "suite"
    folder.mkdir()
    shutil.copy(RECORDINGS / "openai-parallel-tool-calls.jsonl", folder / "ok.jsonl")
    os.mkfifo(folder / "stuck.jsonl")
    run = _run(["check", str(folder), "--update", "--create-missing"])
    assert run.returncode == 2, run.stderr
    assert "stuck.jsonl: is not a regular file" in run.stdout + run.stderr
    assert (folder / "ok.golden.json").exists()


def test_a_bom_at_the_start_is_accepted(tmp_path):
    plain = write(tmp_path / "plain.jsonl", chunk(chat("hi")), END)
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    a = cli("replay", str(plain), "--format", "json")
    b = cli("replay", str(bom), "--format", "json")
    assert b.exit_code == 0, b.output
    assert strict_json(b.stdout)["text"] == strict_json(a.stdout)["text"] == "hi"


def test_a_chunk_with_text_and_b64_is_unusable(tmp_path):
    both = json.dumps({"type": "chunk", "t": 0.1, "text": chat("hi"), "b64": "AAAA"})
    rec = write(tmp_path / "both.jsonl", both, END)
    one_line_error(cli("replay", str(rec)), "both.jsonl:2: chunk has both 'text' and 'b64'")


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_a_non_finite_time_is_reported(tmp_path, value):
    rec = write(
        tmp_path / "t.jsonl", chunk(chat("hi")), f'{{"type":"chunk","t":{value},"text":"x"}}', END
    )
    result = cli("replay", str(rec), "--format", "json")
    assert result.exit_code == 2, result.output
    assert "t.jsonl:3:" in result.stderr
    assert ("'t' is inf" if value == "1e400" else f"{value} is not a JSON value") in result.stderr
    assert result.stdout == ""  # no output with a bare NaN in it


# -- a last line cut mid-way ----------------------------------------------------------------------
def test_a_last_line_cut_mid_way_replays_everything_before_it(tmp_path):
    whole = RECORDINGS / "openai-parallel-tool-calls.jsonl"
    lines = whole.read_text().splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    # the file as a crash leaves it: the end record gone, the last chunk half written
    cut.write_text("".join(lines[:-2]) + lines[-2][: len(lines[-2]) // 2])
    expected = Source(cut)
    n = sum(1 for _ in expected.chunks())
    assert expected.cut_line == len(lines) - 1 and n == len(lines) - 3
    result = cli("replay", str(cut), "--format", "json")
    assert result.exit_code == 0, result.output
    assert "cut off" in result.stderr
    assert strict_json(result.stdout)["stats"]["chunks"] == n
    # a line cut in the middle of the file is still an error
    middle = tmp_path / "middle.jsonl"
    middle.write_text("".join(lines[:2]) + lines[2][:10] + "\n" + "".join(lines[3:]))
    one_line_error(cli("replay", str(middle)), "middle.jsonl:3: not JSON")


# -- a full disk during record --------------------------------------------------------------------
def _limit_file_size(limit: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_a_full_disk_ends_the_recording_cleanly(tmp_path):
    rec = RECORDINGS / "openai-parallel-tool-calls.jsonl"
    with serving([rec], Playback(speed=None, rechunk=64)) as server:
        out = tmp_path / "full.jsonl"
        args = [
            "record",
            *record_args(server.url + "/v1"),
            "--view",
            "none",
            "-o",
            str(out),
        ]
        env = {**os.environ, "OPENAI_API_KEY": "sk-test-FAKEfull0123456789abcdef"}
        # room for the header and a few chunks: the write that does not fit fails (EFBIG)
        run = subprocess.run(
            [*STREAMTOOL, *args],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            preexec_fn=_limit_file_size(1500),
        )
    assert run.returncode == 1, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("streamtool: error: "), run.stderr
    assert "full.jsonl: cannot write the recording" in lines[0]
    assert "Traceback" not in run.stderr
    assert 0 < out.stat().st_size <= 1500
    replay = cli("replay", str(out), "--format", "json")
    assert replay.exit_code == 0, replay.output
    assert strict_json(replay.stdout)["stats"]["chunks"] >= 1


# -- converters: fields of the wrong type -------------------------------------------------------
def _event(kind: str, **fields) -> str:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n"


@pytest.mark.parametrize("index", [[0], {"a": 1}])
def test_responses_content_index_of_the_wrong_type(tmp_path, index):
    body = (
        _event(
            "response.output_item.added",
            output_index=0,
            item={"type": "message", "id": "m1", "role": "assistant", "content": []},
        )
        + _event(
            "response.output_text.delta",
            output_index=0,
            item_id="m1",
            content_index=index,
            delta="hi",
        )
        + _event(
            "response.output_text.done",
            output_index=0,
            item_id="m1",
            content_index=index,
            text="hi",
        )
        + _event(
            "response.refusal.delta", output_index=0, item_id="m1", content_index=index, delta="no"
        )
    )
    header = {
        **HEADER,
        "api": "responses",
        "request": {"url": "https://api.openai.com/v1/responses"},
    }
    rec = write(tmp_path / "r.jsonl", chunk(body), END, header=header)
    result = cli("replay", str(rec), "--format", "json")
    assert result.exit_code == 0, result.output
    assert strict_json(result.stdout)["text"] == "hino"


@pytest.mark.parametrize("choices", [1.5, "abc", {"0": {"delta": {"content": "x"}}}, True])
def test_chat_choices_that_are_not_a_list(tmp_path, choices):
    bad = "data: " + json.dumps({"choices": choices}) + "\n\n"
    rec = write(
        tmp_path / "c.jsonl",
        chunk(chat("a")),
        chunk(bad),
        chunk(chat("b") + "data: [DONE]\n\n"),
        END,
    )
    result = cli("replay", str(rec), "--format", "json")
    assert result.exit_code == 0, result.output
    summary = strict_json(result.stdout)
    assert summary["text"] == "ab"
    assert any("'choices' is not a list" in e["message"] for e in summary["errors"])


# -- lines that are not UTF-8 (records are read as bytes) -----------------------------------------
@pytest.mark.parametrize("bad", [b"\xff", b"\xed\xa0\x80", b"\xc3"])
def test_a_line_that_is_not_utf8_is_named_by_its_line(tmp_path, bad):
    good = chunk(chat("hi")).encode()
    broken = chunk(chat("XX")).encode().replace(b"XX", bad)
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"\n".join([json.dumps(HEADER).encode(), good, good, broken, END.encode()]))
    proc = _run(["replay", str(path), "--format", "json"])
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"streamtool: error: {path}:4: not UTF-8 text"]
    piped = subprocess.run(
        [*STREAMTOOL, "replay", "-", "--format", "json"],
        input=path.read_bytes(), capture_output=True, timeout=30,
    )  # fmt: skip
    assert piped.returncode == 2
    said = piped.stderr.decode().strip().splitlines()
    assert said == ["streamtool: error: <stdin>:4: not UTF-8 text"]


def test_bytes_and_text_lines_replay_alike(tmp_path):
    """A recording with a BOM, CRLF line ends, non-ASCII text and a blank line replays as the
    same recording written plainly."""
    lines = [chunk(chat("héllo ✓ 𝄞")), chunk(chat("\u2028 and \\ escapes")), END]
    plain = write(tmp_path / "plain.jsonl", *lines)
    fancy = tmp_path / "fancy.jsonl"
    fancy.write_bytes(b"\xef\xbb\xbf" + "\r\n".join([json.dumps(HEADER), "", *lines]).encode())
    a = _run(["replay", str(plain), "--format", "json"])
    b = _run(["replay", str(fancy), "--format", "json"])
    assert a.returncode == b.returncode == 0, (a.stderr, b.stderr)
    expected = "héllo ✓ 𝄞\u2028 and \\ escapes"
    assert json.loads(a.stdout)["text"] == json.loads(b.stdout)["text"] == expected


# -- mutate on events nested deeper than a replay reads ------------------------------------------
def _with_deep_event(source: Path, path: Path, depth: int) -> Path:
    """``source`` with one more read after its first: an event whose data is nested ``depth``
    deep (a replay reports it: nested too deeply)."""
    lines = source.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[1])
    deep = 'data: {"x":' + "[" * depth + "]" * depth + "}\n\n"
    lines.insert(2, json.dumps({"type": "chunk", "t": first["t"], "text": deep}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 100_000])
@pytest.mark.parametrize("name", ["openai-write-file.jsonl", "anthropic-text-then-tool-use.jsonl"])
def test_mutate_keeps_an_event_nested_deeper_than_replay_reads(tmp_path, name, depth):
    from streamtool.core import mutations as M

    rec = _with_deep_event(RECORDINGS / name, tmp_path / "deep.jsonl", depth)
    listed = cli("mutate", str(rec), "--list")
    assert listed.exit_code == 0, listed.output
    source = Source(rec)
    chunks = list(source.chunks())
    original = M.analyse(source.header, chunks, source.end)
    quirks = [info.id for info in M.applicable(original)]
    assert len(quirks) >= 5, quirks
    deep = ('"x":' + "[" * depth).encode()
    for n, quirk in enumerate(quirks):
        out = tmp_path / f"out{n}.jsonl"
        result = cli("mutate", str(rec), "-q", quirk, "-o", str(out))
        assert result.exit_code == 0, (quirk, result.output)
        mutated = Source(out)
        body = b"".join(
            c.data.encode() if isinstance(c.data, str) else c.data for c in mutated.chunks()
        )
        assert deep in body, quirk  # the event is kept as it is
        replayed = cli("replay", str(out), "--format", "json")
        assert replayed.exit_code == 0, (quirk, replayed.output)
        errors = strict_json(replayed.stdout)["errors"]
        assert any("nested too deeply" in e["message"] for e in errors), quirk


def test_mutate_on_arguments_nested_too_deeply_says_the_quirk_does_not_apply(tmp_path):
    # the arguments are only whole once joined: "[" * 100,000 over many fragments
    pieces = ["[" * 10_000] * 10 + ["]" * 10_000] * 10
    reads = [
        chat_call(
            {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": ""}}
        ),  # fmt: skip
        *(chat_call({"index": 0, "function": {"arguments": p}}) for p in pieces),
        "data: "
        + json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
        + "\n\n",  # fmt: skip
        "data: [DONE]\n\n",
    ]
    rec = write(
        tmp_path / "args.jsonl", *(chunk(r, 0.1 + i / 100) for i, r in enumerate(reads)), END
    )
    result = cli("mutate", str(rec), "-q", "oai_args_object", "-o", str(tmp_path / "out.jsonl"))
    one_line_error(result, "quirk oai_args_object does not apply to it")


def chat_call(call: dict) -> str:
    event = {"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]}
    return "data: " + json.dumps(event) + "\n\n"


@pytest.mark.parametrize("command", ["replay", "inspect", "report", "check"])
def test_a_chunk_text_with_a_lone_surrogate_is_unusable(tmp_path, command):
    # a JSON string may escape a lone surrogate; no read (bytes) decodes to one
    rec = write(
        tmp_path / "sur.jsonl",
        chunk(chat("hi")),
        '{"type":"chunk","t":0.2,"text":"data: x\\ud800\\n\\n"}',
        END,
    )
    args = [command, str(rec)] + (["-o", str(tmp_path / "r.html")] if command == "report" else [])
    one_line_error(cli(*args), "sur.jsonl:3: chunk 'text' holds a lone surrogate")
