"""WebSocket sessions as recordings: the format, the reader, the Realtime converter and outline,
``replay`` (tree and JSON), the session faults as mutations. No network here: the proxy, serve
and conform are tests/test_ws_net.py."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamtool.core.apis.openai_realtime.session import normalize_client_event
from streamtool.core.engine.replay import ReplayEngine
from streamtool.core.exchange.session_play import EXPECT, Step, difference, script
from streamtool.core.model.records import Control, End, Header, Message, RecordingError
from streamtool.core.mutations import analyse_session, apply_session, replay_records
from streamtool.core.recording.reader import Source
from streamtool.core.recording.session import session_request
from streamtool.core.recording.writer import RecordingWriter

from .conftest import RECORDINGS

TAPE = RECORDINGS / "realtime"
AUDIO = TAPE / "0001-openai-realtime-gpt-realtime.jsonl"  # audio answer, a function call
TEXT = TAPE / "0002-openai-realtime-gpt-realtime.jsonl"  # text; rate limits before done
REFUSED = TAPE / "0003-openai-realtime-gpt-realtime.jsonl"  # the beta's header: close 4000
RESPONSES = TAPE / "0004-openai-responses-model.jsonl"  # responses.connect()


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "streamtool.cli", *args], capture_output=True, text=True
    )


def header(api: str = "realtime", path: str = "/v1/realtime?model=gpt-realtime") -> Header:
    return Header(
        provider="openai",
        api=api,
        request={"method": "GET", "url": f"wss://api.openai.com{path}", "headers": {}},
        response={"status": 101, "headers": {}},
        extra={"transport": "websocket"},
    )


def server(t: float, obj: dict[str, Any]) -> Message:
    return Message(t, "server", json.dumps(obj))


def client(t: float, obj: dict[str, Any]) -> Message:
    return Message(t, "client", json.dumps(obj))


COMPLETE = End(1.0)


def write(path: Path, head: Header, records: list[Any], end: End | None = COMPLETE) -> Path:
    writer = RecordingWriter(path, head)
    for record in records:
        writer.write_session_record(record)
    if end is not None:
        writer.close(end.t, end.reason, end.error)
    else:
        writer.abandon()
    return path


def text_response(rid: str, pieces: list[str], t: float = 0.1) -> list[Message]:
    base = {"response_id": rid, "item_id": f"item_{rid}", "output_index": 0, "content_index": 0}
    item = {"id": f"item_{rid}", "type": "message", "role": "assistant", "content": []}
    out = [
        server(t, {"type": "response.created", "response": {"id": rid}}),
        server(t, {"type": "response.output_item.added", "item": item}),
    ]
    out += [server(t, {"type": "response.output_text.delta", **base, "delta": p}) for p in pieces]
    done = {"id": rid, "status": "completed", "usage": {"input_tokens": 5, "output_tokens": 7}}
    out.append(server(t, {"type": "response.done", "response": done}))
    return out


# -- the format ----------------------------------------------------------------------------------
def test_a_session_round_trips_through_the_writer_and_the_reader(tmp_path: Path) -> None:
    records = [
        server(0.01, {"type": "session.created"}),
        client(0.02, {"type": "response.create"}),
        Message(0.03, "client", b"\x00\x01binary"),
        Control(0.04, "server", "ping", b"hi"),
        Control(0.05, "client", "pong", b"hi"),
        Control(0.06, "server", "close", code=4000, reason="invalid_request_error.x"),
    ]
    path = write(tmp_path / "s.jsonl", header(), records)
    source = Source(path)
    assert source.websocket and source.header.model == "gpt-realtime"
    assert list(source.session_records()) == records
    assert source.end == End(1.0, "complete", None)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["transport"] == "websocket" and lines[0]["response"]["status"] == 101
    assert lines[3] == {"type": "message", "t": 0.03, "direction": "client", "b64": "AAFiaW5hcnk="}
    assert lines[6] == {
        "type": "close",
        "t": 0.06,
        "direction": "server",
        "code": 4000,
        "reason": "invalid_request_error.x",
    }


_session_records = st.lists(
    st.one_of(
        st.builds(
            Message,
            st.one_of(st.none(), st.floats(0, 1e7, allow_nan=False)),
            st.sampled_from(["client", "server"]),
            st.one_of(st.text(max_size=300), st.binary(max_size=40)),
        ),
        st.builds(
            Control,
            st.floats(0, 1e4, allow_nan=False),
            st.sampled_from(["client", "server"]),
            st.sampled_from(["ping", "pong"]),
            st.binary(max_size=8),
        ),
        st.builds(
            Control,
            st.floats(0, 1e4, allow_nan=False),
            st.sampled_from(["client", "server"]),
            st.just("close"),
            code=st.one_of(st.none(), st.integers(1000, 4999)),
            reason=st.text(max_size=40),
        ),
    ),
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(records=_session_records)
def test_a_turns_records_written_at_once_are_the_lines_each_would_be_alone(
    tmp_path_factory: pytest.TempPathFactory, records: list[Message | Control]
) -> None:
    """A turn of the event loop's messages are encoded in one call: every byte of every line is
    what writing each record alone writes, and they read back as the records."""
    folder = tmp_path_factory.mktemp("turn")
    together = RecordingWriter(folder / "together.jsonl", header())
    together.write_session_records(records)
    together.close(1.0)
    alone = RecordingWriter(folder / "alone.jsonl", header())
    for record in records:
        alone.write_session_record(record)
    alone.close(1.0)
    assert (folder / "together.jsonl").read_bytes() == (folder / "alone.jsonl").read_bytes()
    assert list(Source(folder / "together.jsonl").session_records()) == records


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ({"type": "message", "t": 0.1, "text": "{}"}, "'direction' of client or server"),
        ({"type": "close", "t": 0.1, "direction": "server", "code": 99}, "not a close code"),
        ({"type": "message", "t": 0.1, "direction": "server"}, "needs a 'text' or 'b64'"),
        ({"type": "ping", "t": 0.1, "direction": "server", "b64": "%%"}, "not valid base64"),
        ({"type": "chunk", "t": 0.1, "text": "data: {}\n\n"}, "a chunk record in a WebSocket"),
    ],
)
def test_a_bad_session_record_is_one_line_naming_the_file_and_line(
    tmp_path: Path, line: dict[str, Any], says: str
) -> None:
    path = write(tmp_path / "bad.jsonl", header(), [server(0.0, {"type": "session.created"})])
    lines = path.read_text().splitlines()
    lines.insert(2, json.dumps(line))
    path.write_text("\n".join(lines) + "\n")
    run = cli("replay", str(path), "--format", "json")
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    assert f"{path}:3" in run.stderr and says in run.stderr, run.stderr


def test_a_message_record_in_a_recording_of_reads_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "sse.jsonl"
    head = Header("openai", "responses", request={"url": "https://api.openai.com/v1/responses"})
    with RecordingWriter(path, head) as writer:
        writer.write_read(0.1, b'data: {"type": "response.created"}\n\n')
    lines = path.read_text().splitlines()
    lines.insert(1, json.dumps({"type": "message", "t": 0, "direction": "server", "text": "{}"}))
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(RecordingError, match="names no websocket transport"):
        list(Source(path).chunks())


def test_outputs_of_reads_refuse_a_session_in_one_line() -> None:
    with pytest.raises(RecordingError, match="WebSocket session") as refused:
        list(Source(AUDIO).chunks())
    assert "replay, inspect, report, check, diff, serve, conform and mutate read it" in str(
        refused.value
    )


# -- inspect -------------------------------------------------------------------------------------
def _records_as_read(path: Path) -> list[tuple[float | None, int, str]]:
    """Each record of a session as ``inspect`` must show it, from the file alone: its time, its
    bytes and its name, its direction's arrow and its event type (a control frame: its kind,
    code, reason)."""
    rows = []
    for r in Source(path).session_records():
        arrow = "→" if r.direction == "client" else "←"
        if type(r) is Message:
            data = r.data.encode() if isinstance(r.data, str) else r.data
            kind = json.loads(r.data).get("type") if isinstance(r.data, str) else "binary"
            rows.append((r.t, len(data), f"{arrow} {kind}"))
        else:
            assert type(r) is Control
            code = "" if r.code is None else f" {r.code}"
            rows.append((r.t, len(r.data), f"{arrow} {r.kind}{code} {r.reason}".rstrip()))
    return rows


@pytest.mark.parametrize("path", [AUDIO, TEXT, REFUSED, RESPONSES], ids=lambda p: p.stem[:4])
def test_inspect_json_shows_every_record_of_a_session(path: Path) -> None:
    run = cli("inspect", str(path), "--format", "json")
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    expected = _records_as_read(path)
    assert doc["facts"]["websocket"] is True and doc["facts"]["status"] == 101
    assert [(r["t"], r["bytes"], " ".join(r["frames"])) for r in doc["reads"]] == expected
    # a text message's preview is its text (the first 400 characters), a control frame's empty
    texts = [
        r.data[:400] if type(r) is Message and isinstance(r.data, str) else ""
        for r in Source(path).session_records()
    ]
    assert [r["preview"] for r in doc["reads"]] == texts
    assert doc["timing"]["reads"] == len(expected)
    assert doc["timing"]["bytes"] == sum(n for _, n, p in expected if "close" not in p)
    first_server = next(t for t, _, p in expected if p.startswith("←"))
    assert doc["timing"]["ttfb_s"] == first_server
    # the same quirks, errors and calls as replay finds in the session
    replayed = json.loads(cli("replay", str(path), "--format", "json").stdout)
    assert [q["id"] for q in doc["quirks"]] == [q["id"] for q in replayed["quirks"]]
    assert [e["kind"] for e in doc["errors"]] == [e["kind"] for e in replayed["errors"]]
    assert [c["name"] for c in doc["tool_calls"]] == [i["name"] for i in replayed["invocations"]]


def test_inspect_annotates_the_line_of_a_session_s_record() -> None:
    """``--format github``: a quirk met at a session's close points at the close record's line
    of the file, and names it as a message, not a read."""
    lines = REFUSED.read_text().splitlines()
    close = next(i for i, line in enumerate(lines, 1) if json.loads(line)["type"] == "close")
    run = cli("inspect", str(REFUSED), "--format", "github")
    assert run.returncode == 0, run.stderr
    [quirk] = [line for line in run.stdout.splitlines() if "title=quirk" in line]
    assert f"file={REFUSED},line={close},title=quirk realtime_close_request_shape::" in quirk
    assert f"(error, message {close - 2})" in quirk


def test_inspect_text_names_messages_and_their_pauses(tmp_path: Path) -> None:
    paused = tmp_path / "paused.jsonl"
    assert cli("mutate", str(AUDIO), "-q", "ws_long_pause_pings", "-o", str(paused)).returncode == 0
    run = cli("inspect", str(paused), "--reads", "--no-color")
    assert run.returncode == 0, run.stderr
    out = run.stdout
    rows = _records_as_read(paused)
    assert f"messages {len(rows)}" in out
    # the pause: a stall named by the message before it and the one after it
    gaps = [(i, b[0] - a[0]) for i, (a, b) in enumerate(zip(rows, rows[1:], strict=False), 1)]
    at, gap = max(gaps, key=lambda g: g[1])
    assert gap > 1
    assert f"after message {at - 1}, message {at} at" in out
    # the table: every record's direction and type, in order
    table = out[out.index("\nmessages\n") :]
    assert table.splitlines()[2].split() == ["#", "t", "gap", "bytes", "ev", "message"]
    found = 0
    for _, _, preview in rows:
        found = table.index(preview, found)
    assert re.search(r"\bread \d|\breads \d|after request sent", out) is None  # messages, not reads


# -- replay --------------------------------------------------------------------------------------
def test_replay_json_of_a_realtime_session() -> None:
    run = cli("replay", str(AUDIO), "--format", "json")
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc["converter"] == "openai-realtime"
    assert doc["text"] == "It is 18 degrees and sunny in Paris."  # the audio's transcript
    assert doc["invocations"] == [
        {
            "id": "call_009",
            "name": "get_weather",
            "arguments": {"city": "Paris", "unit": "c"},
            "call_id": "call_009",
        }
    ]
    # two responses, their usage summed; the call was answered: the session stopped
    assert doc["usage"] == {
        "total_tokens": 360,
        "input_tokens": 240,
        "output_tokens": 120,
        "cached_input_tokens": 128,
    }
    assert doc["finish_class"] == "stop" and doc["errors"] == []
    assert [q["id"] for q in doc["quirks"]] == ["realtime_rate_limits_after_done"]
    events = doc["events"]
    assert events[0] == {"type": "session.created", "direction": "server"}
    assert events[1] == {"type": "session.update", "direction": "client"}
    client_events = [e["type"] for e in events if e["direction"] == "client"]
    assert client_events == [
        "session.update",
        "conversation.item.create",
        "response.create",
        "conversation.item.create",
        "response.create",
    ]
    assert sum(e["direction"] == "server" for e in events) == doc["messages"]["server"] == 41
    assert doc["closes"] == [{"direction": "client", "code": 1000, "reason": ""}]


def test_the_tree_counts_audio_and_never_prints_it() -> None:
    run = cli("replay", str(AUDIO), "--format", "text")
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "audio  19,200 bytes, 0.40 s in 8 deltas" in out
    assert "audio transcript  'It is 18 degrees and sunny in Paris.'" in out
    assert 'function call get_weather (call_009)  {"city": "Paris", "unit": "c"}' in out
    assert "→ conversation.item.create  function_call_output call_009" in out
    assert "rate limits (after the response ended)" in out
    assert "usage  input 120" in out and "■ close by the client  1000" in out
    assert "AAAAAAAA" not in out  # the base64 audio itself
    for line in out.splitlines():
        assert len(line) <= 80  # off a terminal, the width rich falls back to


def test_a_refused_session_shows_its_error_and_close() -> None:
    doc = json.loads(cli("replay", str(REFUSED), "--format", "json").stdout)
    assert doc["finish_class"] == "error"
    assert [e["kind"] for e in doc["errors"]] == ["provider_error", "provider_error"]
    assert "beta_api_shape_disabled" in doc["errors"][0]["message"]
    assert doc["closes"] == [
        {
            "direction": "server",
            "code": 4000,
            "reason": "invalid_request_error.beta_api_shape_disabled",
        }
    ]
    assert [q["id"] for q in doc["quirks"]] == ["realtime_close_request_shape"]


def test_responses_over_websocket_is_read_by_the_responses_decoder() -> None:
    doc = json.loads(cli("replay", str(RESPONSES), "--format", "json").stdout)
    assert doc["converter"] == "openai-responses"
    assert doc["text"] == "It is 18 degrees and sunny in Paris."
    assert [i["name"] for i in doc["invocations"]] == ["get_weather"]
    # two responses in one connection: numbered from their own start, usage summed, no quirk
    assert doc["quirks"] == [] and doc["errors"] == []
    assert doc["usage"]["input_tokens"] == 100 and doc["finish_class"] == "stop"
    assert [e["type"] for e in doc["events"] if e["direction"] == "client"] == [
        "response.create",
        "response.create",
    ]


def test_a_tape_of_sessions_replays_in_its_order() -> None:
    run = cli("replay", str(TAPE), "--format", "json")
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert [Path(s["source"]).name for s in doc["sessions"]] == [
        AUDIO.name,
        TEXT.name,
        REFUSED.name,
        RESPONSES.name,
    ]
    tree = cli("replay", str(TAPE), "--format", "text").stdout
    assert tree.index(AUDIO.name) < tree.index(TEXT.name) < tree.index(RESPONSES.name)


def test_the_bundled_sessions_match_their_golden_files() -> None:
    run = cli("check", str(TAPE))
    assert run.returncode == 0, run.stdout + run.stderr
    gold = json.loads((TAPE / "0001-openai-realtime-gpt-realtime.golden.json").read_text())
    assert gold["transcript"]["events"][:3] == [
        "server session.created",
        "client session.update",
        "server session.updated",
    ]


def test_beta_names_are_read_as_ga_and_named() -> None:
    records = [
        server(0.0, {"type": "session.created"}),
        server(0.1, {"type": "conversation.item.added", "item": {"type": "message"}}),
        *text_response("resp_1", ["Hel", "lo"]),
    ]
    renamed = {"response.output_text.": "response.text.", ".item.added": ".item.created"}
    beta = []
    for r in records:
        data = str(r.data)
        for ga, old in renamed.items():
            data = data.replace(ga, old)
        beta.append(Message(r.t, r.direction, data))
    ga = replay_records(header(), records, End(1.0))
    old = replay_records(header(), beta, End(1.0))
    assert old.texts() == ga.texts() == ("Hello", "")
    assert {q.id for q in old.quirks} == {"realtime_beta_event_names"}
    assert not ga.quirks


def test_an_error_the_session_goes_on_from_is_not_its_end() -> None:
    error = {"type": "error", "error": {"type": "server_error", "message": "hiccup"}}
    responses = text_response("resp_1", ["A", "B"])
    records = [*responses[:3], server(0.1, error), *responses[3:]]
    engine = replay_records(header(), records, End(1.0))
    assert [e.kind for e in engine.errors] == ["provider_error_recovered"]
    assert {q.id for q in engine.quirks} == {"realtime_error_not_fatal"}
    assert engine.finish_class() == "stop" and engine.texts()[0] == "AB"
    # the same error followed by a close: the session ended with it
    closed = [*responses[:3], server(0.1, error), Control(0.2, "server", "close", code=1011)]
    engine = replay_records(header(), closed, End(1.0))
    assert [e.kind for e in engine.errors][:1] == ["provider_error"]


@settings(max_examples=60, deadline=None)
@given(
    text=st.text(min_size=1, max_size=40),
    cuts=st.lists(st.integers(min_value=1, max_value=39), max_size=8),
)
def test_the_text_does_not_depend_on_how_it_was_cut_into_deltas(text: str, cuts: list[int]) -> None:
    points = sorted({c for c in cuts if c < len(text)})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    engine = replay_records(header(), text_response("resp_1", pieces), End(1.0))
    assert engine.texts()[0] == text
    assert engine.finish_reason == "completed"
    assert [e["type"] for e in engine.session.summary()["events"]].count(
        "response.output_text.delta"
    ) == len(pieces)


# -- serve's matching rules ------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(
    ids=st.dictionaries(
        st.sampled_from(["event_id", "item_id", "previous_item_id", "call_id", "id"]),
        st.text(max_size=12),
    ),
    audio=st.binary(max_size=30),
)
def test_ids_and_audio_never_make_a_client_event_differ(ids: dict[str, str], audio: bytes) -> None:
    import base64

    recorded = {
        "type": "conversation.item.create",
        "event_id": "evt_1",
        "item": {"type": "message", "role": "user", "content": [{"type": "input_audio"}]},
    }
    sent = json.loads(json.dumps(recorded))
    sent.update(ids)
    sent["item"]["content"][0]["audio"] = base64.b64encode(audio).decode()
    step = Step(EXPECT, 0.0, json.dumps(recorded), index=1)
    assert difference(step, json.dumps(sent), normalize_client_event) is None
    sent["item"]["role"] = "system"
    assert difference(step, json.dumps(sent), normalize_client_event) == (
        "item.role: expected 'user', got 'system'"
    )


def test_a_session_script_stops_at_its_first_close() -> None:
    records = [
        server(0.1, {"type": "session.created"}),
        client(0.2, {"type": "response.create"}),
        Control(0.3, "server", "ping"),
        Control(0.4, "server", "close", code=4000, reason="x"),
        server(0.5, {"type": "never.sent"}),
    ]
    assert [s.kind for s in script(records)] == ["send", "expect", "pause", "close"]
    assert [s.kind for s in script([*records[:2], Control(0.3, "server", "close")])][-1] == "drop"


# -- the session faults -------------------------------------------------------------------------
FAULTS = [
    ("realtime_beta_event_names", AUDIO, True),
    ("realtime_error_not_fatal", AUDIO, True),
    ("realtime_rate_limits_after_done", TEXT, True),
    ("realtime_close_request_shape", AUDIO, False),
    ("realtime_close_auth", AUDIO, False),
    ("ws_dropped_mid_response", AUDIO, False),
    ("ws_long_pause_pings", AUDIO, True),
]


@pytest.mark.parametrize(("quirk", "path", "keeps_text"), FAULTS, ids=[f[0] for f in FAULTS])
def test_each_session_fault_is_reported_by_a_replay_of_it(
    quirk: str, path: Path, keeps_text: bool
) -> None:
    source = Source(path)
    original = analyse_session(source.header, list(source.session_records()), source.end)
    assert quirk not in original.reported
    head, records, end = apply_session(original, [quirk])
    engine = replay_records(head, records, end)
    assert quirk in {q.id for q in engine.quirks}
    if keeps_text:
        assert engine.texts() == original.engine.texts()
        assert [i.to_dict() for i in engine.invocations()] == [
            i.to_dict() for i in original.engine.invocations()
        ]
    else:
        assert engine.errors and engine.finish_class() == "error"


def test_the_mutate_command_writes_a_session(tmp_path: Path) -> None:
    out = tmp_path / "paused.jsonl"
    run = cli("mutate", str(AUDIO), "-q", "ws_long_pause_pings", "-o", str(out))
    assert run.returncode == 0, run.stderr
    records = list(Source(out).session_records())
    pings = [r for r in records if type(r) is Control and r.kind == "ping"]
    assert len(pings) == 3 and all(p.direction == "server" for p in pings)
    doc = json.loads(cli("replay", str(out), "--format", "json").stdout)
    assert "ws_long_pause_pings" in {q["id"] for q in doc["quirks"]}
    listed = cli("mutate", str(AUDIO), "--list").stdout
    assert "realtime_error_not_fatal" in listed and "reads_single" not in listed.split("for ")[0]


def test_a_session_cut_off_by_a_crash_replays_what_it_has(tmp_path: Path) -> None:
    records = [server(0.0, {"type": "session.created"}), *text_response("r", ["Hi", " there"])]
    path = write(tmp_path / "cut.jsonl", header(), records[:-1], end=None)
    with open(path, "a") as fh:
        fh.write('{"type":"message","t":0.2,"direc')  # a last line cut mid-way
    run = cli("replay", str(path), "--format", "json")
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc["text"] == "Hi there"
    assert "recording_cut_off" in {e["kind"] for e in doc["errors"]}
    assert "cut off" in run.stderr


def test_the_engine_reads_a_session_without_a_header_api() -> None:
    head = header(api=None, path="/somewhere")  # type: ignore[arg-type]
    records = [server(0.0, {"type": "session.created"}), *text_response("r", ["Hi"])]
    engine = ReplayEngine(head)
    for record in records:
        engine.feed_message(record)
    engine.finish(End(1.0))
    assert engine.converter_name == "openai-realtime" and engine.texts()[0] == "Hi"


def test_the_upgrades_credentials_are_looked_for_and_its_nonce_is_not() -> None:
    """Every credential the upgrade carries is scrubbed from the messages; the handshake's nonce
    is public (RFC 6455), kept out of the recording and not searched for in every message."""
    request, secrets = session_request(
        "wss://api.example.com/v1/realtime?model=m&api-key=query-secret-1",
        [
            ("Host", "api.example.com"),
            ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
            ("Authorization", "Bearer header-secret-2"),
            ("Sec-WebSocket-Protocol", "realtime, openai-insecure-api-key.proto-secret-3"),
        ],
    )
    assert set(secrets) == {
        "Bearer header-secret-2",
        "header-secret-2",
        "query-secret-1",
        "proto-secret-3",
    }
    assert "dGhlIHNhbXBsZSBub25jZQ==" not in secrets
    assert "sec-websocket-key" not in request["headers"] and "host" not in request["headers"]
