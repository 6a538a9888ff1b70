"""``--emit API``: every bundled recording re-emitted in every wire API is read back by that
API's official SDK (its stream accumulator, over HTTP on 127.0.0.1) and by streamtool's own
replay with the original's text, refusal, reasoning, client tool calls and finish class; the
emitted streams are clean (no quirk but the ones the API's own streams show and the model's own
faults the original shows) and keep the timing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamtool.core.drive.replay_file import replay_file
from streamtool.core.drive.translate import recording_of, reply_from_file, wire_api
from streamtool.core.model.quirks import CATALOGUE
from streamtool.core.outputs.emit import EMITTERS, emitter, module
from streamtool.core.outputs.emit.pieces import groups, tokens
from streamtool.core.recording.writer import RecordingWriter

from .conftest import RECORDINGS
from .emit_clients import READERS, stream_server

ALL_RECORDINGS = sorted(RECORDINGS.glob("*.jsonl"))
APIS = sorted(EMITTERS)

# what an API cannot say: the finish class it becomes there
LOSSY_FINISH = {("anthropic", "content_filter"): "refusal", ("gemini", "refusal"): "stop"}
# the APIs that keep a refusal apart from the text (Chat ``delta.refusal``, a Responses
# ``refusal`` part); the others say it as text (Anthropic ending on ``refusal``, Gemini on STOP)
REFUSAL_APIS = {"openai-chat", "openai-responses"}


@pytest.fixture(scope="module")
def server():
    with stream_server() as found:
        yield found


def expected(path: Path, api: str) -> dict[str, Any]:
    engine = replay_file(path)
    summary = engine.summary()
    calls = [
        (inv["name"], inv["arguments"] if inv["arguments"] is not None else inv["raw_arguments"])
        for inv in summary["invocations"]
        if not inv.get("server_side")
    ]
    if api == "gemini":  # arguments that are not JSON cannot be said in Gemini (a cut call)
        calls = [c for c in calls if not isinstance(c[1], str)]
    cls = summary["finish_class"]
    text, refusal = summary["text"], summary["refusal"]
    if api not in REFUSAL_APIS:
        text, refusal = text + refusal, ""
    return {
        "text": text,
        "refusal": refusal,
        "reasoning": summary["reasoning"],
        "calls": calls,
        "finish": LOSSY_FINISH.get((api, cls), cls),
        "errors": provider_errors(summary),
        "status": engine.header.response.get("status"),
        # faults of the model's output the original already shows (a call cut by the stream's
        # end): its meaning, which the emitted stream keeps, so its replay may show them too
        "model_quirks": {
            q["id"]
            for q in summary["quirks"]
            if q["id"] in CATALOGUE and CATALOGUE[q["id"]].kind == "model"
        },
    }


def provider_errors(summary: dict[str, Any]) -> list[str]:
    """The messages of the errors the provider reported, as it worded them (the error's own
    message when its detail has none: Cohere's ``error`` is a bare string)."""
    out = []
    for e in summary["errors"]:
        if e["kind"] == "provider_error":
            detail = e.get("detail")
            if isinstance(detail, dict) and isinstance(detail.get("error"), dict):
                detail = detail["error"]
            message = detail.get("message") if isinstance(detail, dict) else None
            out.append(message if isinstance(message, str) else e["message"])
    return out


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("path", ALL_RECORDINGS, ids=lambda p: p.stem)
def test_the_official_sdk_reads_the_emitted_stream(server, path, api):
    base, bodies = server
    want = expected(path, api)
    reply, _ = reply_from_file(path)
    emitted = emitter(api)(reply)
    name = f"{path.stem}-{api}"
    reads = [text.encode("utf-8") for _, text in emitted.reads]
    bodies[name] = (emitted.status, emitted.content_type, reads)
    read = READERS[api]
    if want["errors"]:
        # an error the provider reported: the SDK raises it, with the provider's message
        message = want["errors"][0]
        with pytest.raises(Exception) as raised:
            read(f"{base}/{name}")
        words = [w for w in message.split() if len(w) > 4][:3]
        assert all(w in str(raised.value) for w in words), (message, str(raised.value))
        if want["status"] and want["status"] >= 400:
            status = getattr(raised.value, "status_code", None) or getattr(
                raised.value, "code", None
            )
            assert status == want["status"]
        return
    if reply.truncated:
        return  # a cut-off stream: checked by the replay test below (SDKs differ on the cut)
    got = read(f"{base}/{name}")
    # the readers join a refusal (``message.refusal``, a ``refusal`` part) to the text; the
    # finish class says whether the SDK took it for a refusal
    assert got.text == want["text"] + want["refusal"]
    assert got.reasoning == want["reasoning"]
    assert got.calls == want["calls"]
    assert got.finish == want["finish"]


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("path", ALL_RECORDINGS, ids=lambda p: p.stem)
def test_replaying_the_emitted_stream_gives_the_same_meaning_and_no_quirk(tmp_path, path, api):
    want = expected(path, api)
    reply, _ = reply_from_file(path)
    emitted = emitter(api)(reply)
    header, chunks, end = recording_of(emitted, api, model=reply.model)
    out = tmp_path / f"{api}.jsonl"
    with RecordingWriter(out, header) as writer:
        for chunk in chunks:
            assert isinstance(chunk.data, str)
            writer.write_read(chunk.t or 0.0, chunk.data.encode("utf-8"))
        writer.close(end.t, end.reason)
    again = replay_file(out).summary()
    assert again["converter"] in wire_api(api).converters
    assert again["text"] == want["text"]
    assert again["refusal"] == want["refusal"]
    assert again["reasoning"] == want["reasoning"]
    calls = [
        (i["name"], i["arguments"] if i["arguments"] is not None else i["raw_arguments"])
        for i in again["invocations"]
    ]
    assert calls == want["calls"]
    if not reply.truncated:
        assert again["finish_class"] == want["finish"]
    assert provider_errors(again)[:1] == want["errors"][:1]
    inherent = set(module(api).INHERENT_QUIRKS)
    if api == "openai-chat" and not want["reasoning"]:
        inherent.clear()
    if api == "gemini" and not want["calls"]:
        inherent.clear()
    assert {q["id"] for q in again["quirks"]} <= inherent | want["model_quirks"]


@pytest.mark.parametrize("api", APIS)
def test_the_timing_is_scaled_onto_the_new_events(api):
    # the original: message_start at 0.871, "I'll look up" at 0.931 ... " in Celsius." at 1.189,
    # the tool call's last fragment at 2.057, its end at 2.172
    path = RECORDINGS / "anthropic-text-then-tool-use.jsonl"
    reply, engine = reply_from_file(path)
    emitted = emitter(api)(reply)
    times = [t for t, _ in emitted.reads]
    assert times == sorted(times)
    assert times[0] >= engine.first_t == 0.871
    assert emitted.t_end == pytest.approx(engine.last_t)

    def first_time(fragment: str) -> float:
        return next(t for t, text in emitted.reads if fragment in text)

    # the text ends when the original's text ended, its first token came before the original's
    # first (longer) delta, and the call's arguments end when the original's did
    assert 1.09 < first_time("Celsius") <= 1.189
    assert 1.189 < first_time("celsius") <= 2.14
    if api != "gemini":  # Gemini sends the whole sentence at once, when it is whole
        assert engine.first_t < first_time(" look") < 1.004


def test_chunked_as_the_provider_chunks():
    reply, _ = reply_from_file(RECORDINGS / "openai-responses-text-then-function-call.jsonl")
    chat = emitter("openai-chat")(reply).body
    deltas = [
        json.loads(b[6:])["choices"][0]["delta"]
        for b in chat.split("\n\n")
        if b.startswith("data: {")
    ]
    texts = [d["content"] for d in deltas if d.get("content")]
    assert len(texts) > 5 and max(len(t) for t in texts) <= 8  # token-sized
    heads = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
    assert "id" in heads[0] and all("id" not in h for h in heads[1:])  # the id on the first only
    assert len(heads) > 3  # arguments in small pieces
    gemini = emitter("gemini")(reply).body
    assert gemini.count("data: ") < len(texts)  # Gemini sends long pieces


@settings(max_examples=200, deadline=None)
@given(st.text(), st.integers(min_value=1, max_value=30))
def test_token_pieces_join_to_the_text(text, n):
    assert "".join(tokens(text)) == text
    assert "".join(groups(text, n)) == text
    assert all(len(t) <= 8 for t in tokens(text))
