"""``replay --emit openai-sse``: the emitted stream read back by the real openai SDK and by
streamtool itself gives the same text, reasoning and tool calls."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from benchmarks.raw_http import http_server
from streamtool.cli.emit import OpenAISSESink
from streamtool.cli.main import app
from streamtool.core.apis.openai_chat.encoder import OpenAISSEEmitter, openai_usage
from streamtool.core.drive.replay_file import replay_file
from streamtool.core.model import SegmentEvent, SegmentType, StreamError, ToolInvocation
from streamtool.core.model.finish import OPENAI_CHAT_REASONS
from streamtool.core.model.records import Header
from streamtool.core.outputs.emit.reply import stream_identity

from .conftest import RECORDINGS
from .helpers import fresh_python_prints
from .kimi_streams import text_stream

ALL_RECORDINGS = sorted(RECORDINGS.glob("*.jsonl"))
KIMI_RECORDINGS = sorted(RECORDINGS.glob("*kimi-k2*.jsonl"))


def emit(path: Path, converter: str = "auto") -> tuple[bytes, dict[str, Any]]:
    out = io.BytesIO()
    sink = OpenAISSESink(out)
    engine = replay_file(
        path, converter=converter, on_items=sink.on_items, segments=sink.needs_segments
    )
    sink.close(engine)
    return out.getvalue(), engine.summary()


def sse_payloads(body: bytes) -> list[str]:
    return [
        block.removeprefix("data: ")
        for block in body.decode("utf-8").split("\n\n")
        if block.startswith("data: ")
    ]


# -- a real HTTP server on loopback that plays emitted streams -----------------------------------
class _Streams(BaseHTTPRequestHandler):
    bodies: dict[str, bytes] = {}

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        self.rfile.read(int(self.headers.get("content-length") or 0))
        name = self.path.strip("/").split("/")[0]
        body = self.bodies.get(name)
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        # in pieces, as a server would: the client must reassemble the events
        for i in range(0, len(body), 97):
            self.wfile.write(body[i : i + 97])
            self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, dict[str, bytes]]]:
    bodies: dict[str, bytes] = {}
    with http_server(type("Handler", (_Streams,), {"bodies": bodies})) as url:
        yield url, bodies


def sdk_completion(server: tuple[str, dict[str, bytes]], name: str, body: bytes) -> Any:
    """The real openai client reads the stream over HTTP; ChatCompletionStreamState accumulates."""
    from openai import OpenAI
    from openai.lib.streaming.chat import ChatCompletionStreamState

    base, bodies = server
    bodies[name] = body
    client = OpenAI(base_url=f"{base}/{name}", api_key="test-key", max_retries=0, timeout=10)
    state = ChatCompletionStreamState()
    stream = client.chat.completions.create(
        model="replayed", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    for chunk in stream:
        state.handle_chunk(chunk)
    return state.get_final_completion()


@pytest.mark.parametrize("path", ALL_RECORDINGS, ids=lambda p: p.stem)
def test_openai_sdk_accumulates_the_same_calls_and_text(server, path):
    import openai

    body, summary = emit(path)
    provider_errors = [e for e in summary["errors"] if e["kind"] == "provider_error"]
    if provider_errors:
        # the error is in the emitted stream, where the SDK raises it as it does for OpenAI's own
        with pytest.raises(openai.APIError):
            sdk_completion(server, path.stem, body)
        return
    completion = sdk_completion(server, path.stem, body)
    (choice,) = completion.choices
    message = choice.message
    calls = [
        (tc.id, tc.function.name, _arguments(tc.function.arguments))
        for tc in message.tool_calls or []
    ]
    expected = [
        (inv["id"], inv["name"], _expected_arguments(inv))
        for inv in summary["invocations"]
        if not inv.get("server_side")
    ]
    assert calls == expected
    # a refusal is sent as refusal deltas, which the SDK keeps apart from the content
    assert (message.content or "") == summary["text"]
    assert (message.refusal or "") == summary["refusal"]
    assert bool(message.refusal) is (summary["finish_class"] == "refusal")
    assert (getattr(message, "reasoning_content", None) or "") == summary["reasoning"]
    if expected:
        assert choice.finish_reason == "tool_calls"
    elif summary["finish_reason"] is None:
        assert choice.finish_reason is None  # none is invented
    else:
        assert choice.finish_reason == OPENAI_CHAT_REASONS.get(
            summary["finish_class"], summary["finish_reason"]
        )
    usage = summary["usage"] or {}
    if "input_tokens" in usage:
        assert completion.usage.prompt_tokens == usage["input_tokens"]
        assert completion.usage.completion_tokens == usage["output_tokens"]
    assert completion.model == (summary_model(path) or "")


def _arguments(text: str) -> Any:
    """Parsed arguments, or the raw text of a call cut off mid-arguments."""
    try:
        return json.loads(text)
    except ValueError:
        return ("raw", text)


def _expected_arguments(invocation: dict[str, Any]) -> Any:
    if invocation["arguments"] is None:
        return ("raw", invocation["raw_arguments"])
    return invocation["arguments"]


def summary_model(path: Path) -> str | None:
    return replay_file(path).model


def test_sdk_stream_helper_reads_a_kimi_recording(server):
    """``client.chat.completions.stream()`` (which uses ChatCompletionStreamState itself)."""
    from openai import OpenAI

    path = RECORDINGS / "vllm-kimi-k2-tokens-in-content.jsonl"
    body, _ = emit(path)
    base, bodies = server
    bodies["helper"] = body
    client = OpenAI(base_url=f"{base}/helper", api_key="test-key", max_retries=0, timeout=10)
    with client.chat.completions.stream(
        model="replayed", messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        done = [e for e in stream if e.type == "tool_calls.function.arguments.done"]
        final = stream.get_final_completion()
    assert [(e.name, e.arguments) for e in done] == [
        ("get_weather", '{"city": "Paris", "unit": "celsius"}'),
        ("get_time", '{"city": "Paris"}'),
    ]
    assert [tc.id for tc in final.choices[0].message.tool_calls] == [
        "functions.get_weather:0",
        "functions.get_time:1",
    ]
    assert final.choices[0].finish_reason == "tool_calls"


@pytest.mark.parametrize("path", ALL_RECORDINGS, ids=lambda p: p.stem)
def test_emitted_stream_replays_to_the_same_summary(tmp_path, path):
    body, original = emit(path)
    emitted = tmp_path / f"{path.stem}.sse"
    emitted.write_bytes(body)
    again = replay_file(emitted).summary()
    assert again["converter"] == (
        "kimi-k2" if "kimi" in (summary_model(path) or "").lower() else "openai-chat"
    )
    for key in ("text", "reasoning"):
        assert again[key] == original[key], key
    # server-side tools (run by the provider) are not part of an OpenAI stream
    client_side = [i for i in original["invocations"] if not i.get("server_side")]
    assert [(i["id"], i["name"], i["arguments"]) for i in again["invocations"]] == [
        (i["id"], i["name"], i["arguments"]) for i in client_side
    ]
    assert again["finish_class"] == original["finish_class"]
    if client_side and original["finish_reason"] is not None:
        assert again["finish_reason"] == "tool_calls"
    if original["usage"]:
        for key in ("input_tokens", "output_tokens", "reasoning_tokens", "cached_input_tokens"):
            assert again["usage"].get(key) == original["usage"].get(key), key
    # a call cut off mid-arguments is sent as it was cut, and read back as such
    cut = [i["id"] for i in client_side if i["arguments"] is None]
    assert [e["detail"] for e in again["errors"] if e["kind"] == "segment"] == cut
    # provider errors are sent where they happened and a cut stream stays cut; how the
    # recording itself ended is not part of any stream
    kinds = {e["kind"] for e in again["errors"] if e["kind"] != "segment"}
    assert kinds == {
        e["kind"] for e in original["errors"] if e["kind"] in ("provider_error", "truncated")
    }
    # the emitted stream is clean: none of the source's Kimi markup is left in it
    assert not [q for q in again["quirks"] if q["id"].startswith("kimi_tokens")]


@pytest.mark.parametrize("path", KIMI_RECORDINGS, ids=lambda p: p.stem)
def test_kimi_recordings_become_standard_tool_calls(path):
    body, summary = emit(path)
    payloads = sse_payloads(body)
    assert payloads[-1] == "[DONE]"
    chunks = [json.loads(p) for p in payloads[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    heads = [
        tc
        for c in chunks
        for choice in c["choices"]
        for tc in choice["delta"].get("tool_calls", [])
        if "id" in tc
    ]
    assert [(h["index"], h["id"], h["type"], h["function"]["name"]) for h in heads] == [
        (n, inv["id"], "function", inv["name"]) for n, inv in enumerate(summary["invocations"])
    ]
    finishes = [ch["finish_reason"] for c in chunks for ch in c["choices"] if ch["finish_reason"]]
    assert finishes == ["tool_calls"]  # the source said "stop"
    assert summary["finish_reason"] == "stop"
    assert "<|tool_call" not in body.decode("utf-8")
    usage_chunks = [c for c in chunks if c.get("usage")]  # on the finish chunk
    assert len(usage_chunks) == 1 and usage_chunks[0]["choices"][0]["finish_reason"]


def test_emitted_stream_is_deterministic():
    path = RECORDINGS / "openrouter-kimi-k2-tokens-in-reasoning.jsonl"
    first, _ = emit(path)
    second, _ = emit(path)
    assert first == second
    chunk = json.loads(sse_payloads(first)[0])
    completion_id, created = stream_identity(replay_file(path).header)
    assert chunk["id"] == completion_id and chunk["created"] == created
    assert created == 1795253400  # the header's recorded_at, 2026-11-21T09:30:00Z


def test_emitter_works_behind_the_openai_chat_converter_too():
    body, summary = emit(RECORDINGS / "vllm-kimi-k2-tokens-in-content.jsonl", "openai-chat")
    text = "".join(
        json.loads(p)["choices"][0]["delta"].get("content", "")
        for p in sse_payloads(body)[:-1]
        if json.loads(p)["choices"]
    )
    assert text == summary["text"] and "<|tool_calls_section_begin|>" in text
    finishes = [json.loads(p)["choices"] for p in sse_payloads(body)[:-1]]
    assert [c[0]["finish_reason"] for c in finishes if c and c[0]["finish_reason"]] == ["stop"]


# -- the emitter on its own ---------------------------------------------------------------------
def test_emitter_maps_segments_and_invocations():
    emitter = OpenAISSEEmitter(completion_id="chatcmpl-x", created=7, model="m")
    items: list[object] = [
        SegmentEvent.start("seg_1", SegmentType.REASONING),
        SegmentEvent.content("seg_1", "think"),
        SegmentEvent.end("seg_1"),
        SegmentEvent.start("seg_2", SegmentType.TEXT),
        SegmentEvent.content("seg_2", "héllo"),
        SegmentEvent.end("seg_2"),
        SegmentEvent.start("call_1", SegmentType.WRITE_FILE, {"path": "a.py"}),
        SegmentEvent.content("call_1", "print(1)\n"),  # file content: not message content
        SegmentEvent.end("call_1"),
        ToolInvocation("call_1", "write_file", {"path": "a.py", "content": "print(1)\n"}),
        ToolInvocation("srv_1", "web_search", {"q": "x"}, server_side=True),
        ToolInvocation("call_2", "broken", None, raw_arguments='{"a": '),
    ]
    body = emitter.feed(items) + emitter.finish(
        finish_reason="end_turn", usage={"input_tokens": 3, "output_tokens": 4}
    )
    assert emitter.finish() == ""
    chunks = [json.loads(p) for p in sse_payloads(body.encode())[:-1]]
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert deltas == [
        {"role": "assistant", "content": ""},
        {"reasoning_content": "think"},
        {"content": "héllo"},
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "write_file", "arguments": ""},
                }
            ]
        },
        {
            "tool_calls": [
                {
                    "index": 0,
                    "function": {"arguments": '{"path": "a.py", "content": "print(1)\\n"}'},
                }
            ]
        },
        {
            "tool_calls": [
                {
                    "index": 1,
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "broken", "arguments": ""},
                }
            ]
        },
        {"tool_calls": [{"index": 1, "function": {"arguments": '{"a": '}}]},
        {},
    ]
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1] == {
        "id": "chatcmpl-x",
        "object": "chat.completion.chunk",
        "created": 7,
        "model": "m",
        "choices": [],
        "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7},
    }
    assert body.endswith("data: [DONE]\n\n")


@pytest.mark.parametrize(
    ("source", "emitted"),
    [
        ("end_turn", "stop"),
        ("tool_use", "tool_calls"),
        ("max_tokens", "length"),
        ("MAX_TOKENS", "length"),
        ("SAFETY", "content_filter"),
        ("completed", "stop"),
        ("pause_turn", "stop"),
        ("refusal", "stop"),  # the refusal text itself goes in refusal deltas
        ("failed", "error"),
        ("error", "error"),
        ("eos_token", "eos_token"),  # reasons no table knows pass through unchanged
    ],
)
def test_finish_reasons(source, emitted):
    emitter = OpenAISSEEmitter()
    chunks = [
        json.loads(p) for p in sse_payloads(emitter.finish(finish_reason=source).encode())[:-1]
    ]
    assert chunks[-1]["choices"][0]["finish_reason"] == emitted


def test_stop_with_calls_sent_is_tool_calls():
    emitter = OpenAISSEEmitter()
    call = ToolInvocation("call_1", "f", {"a": 1})
    body = emitter.feed([call]) + emitter.finish(finish_reason="STOP")
    finishes = [
        c["finish_reason"]
        for p in sse_payloads(body.encode())[:-1]
        for c in json.loads(p)["choices"]
        if c["finish_reason"]
    ]
    assert finishes == ["tool_calls"]


def test_provider_errors_are_sent_and_a_cut_stream_stays_cut():
    emitter = OpenAISSEEmitter()
    detail = {"type": "overloaded_error", "message": "Overloaded"}
    body = emitter.feed(
        [
            StreamError("provider_error", "error event in the stream: Overloaded", detail),
            StreamError("truncated", "the stream ended without message_stop"),
        ]
    )
    body += emitter.finish(finish_reason=None, finish_class="error")
    payloads = [json.loads(p) for p in sse_payloads(body.encode())]
    assert {"error": detail} in payloads
    assert "[DONE]" not in body
    assert all(c["finish_reason"] is None for p in payloads for c in p.get("choices", []))


def test_no_finish_reason_is_invented():
    emitter = OpenAISSEEmitter()
    payloads = sse_payloads(emitter.finish().encode())
    assert payloads[-1] == "[DONE]"
    assert all(c["finish_reason"] is None for p in payloads[:-1] for c in json.loads(p)["choices"])


def test_usage_mapping():
    assert openai_usage(
        {
            "input_tokens": 10,
            "output_tokens": 5,
            "total_tokens": 15,
            "reasoning_tokens": 2,
            "cached_input_tokens": 4,
        }
    ) == {
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "total_tokens": 15,
        "prompt_tokens_details": {"cached_tokens": 4},
        "completion_tokens_details": {"reasoning_tokens": 2},
    }


def test_stream_identity_without_a_header_is_fixed():
    assert stream_identity(None) == stream_identity(None)
    assert stream_identity(None)[1] == 0
    assert stream_identity(Header(recorded_at="not a date"))[1] == 0


# -- the command line --------------------------------------------------------------------------
def test_cli_emit_writes_the_stream_to_stdout():
    path = RECORDINGS / "fireworks-kimi-k2-tokens-split-across-chunks.jsonl"
    result = CliRunner().invoke(app, ["replay", str(path), "--emit", "openai-sse"])
    assert result.exit_code == 0, result.output
    expected, _ = emit(path)
    assert result.stdout_bytes == expected


def test_cli_emit_replaces_the_format_output(tmp_path):
    path = RECORDINGS / "openai-parallel-tool-calls.jsonl"
    result = CliRunner().invoke(app, ["replay", str(path), "--emit", "openai-sse"])
    assert result.exit_code == 0
    assert result.stdout.startswith("data: {") and result.stdout.endswith("data: [DONE]\n\n")
    # both at once is refused, not one silently ignored
    result = CliRunner().invoke(
        app, ["replay", str(path), "--format", "json", "--emit", "openai-sse"]
    )
    assert result.exit_code == 2 and result.stdout == ""


def test_cli_emit_unknown_value_is_a_usage_error():
    path = RECORDINGS / "openai-parallel-tool-calls.jsonl"
    result = CliRunner().invoke(app, ["replay", str(path), "--emit", "anthropic-sse"])
    assert result.exit_code == 2


def test_cli_emit_names_errors_on_stderr(tmp_path):
    raw = tmp_path / "cut.sse"
    pieces = ["<|tool_calls_section_begin|><|tool_call_begin|>functions.a:0"]
    raw.write_text("".join(text_stream(pieces, done=False, finish=None)), encoding="utf-8")
    result = CliRunner().invoke(app, ["replay", str(raw), "--emit", "openai-sse"])
    assert result.exit_code == 0
    assert "error" in result.stderr and str(raw) in result.stderr
    content = "".join(
        json.loads(p)["choices"][0]["delta"].get("content", "")
        for p in sse_payloads(result.stdout.encode())
        if p != "[DONE]" and json.loads(p)["choices"]
    )
    assert "<|tool_calls_section_begin|>" in content  # given back as text, never lost


def test_replay_does_not_import_the_sdks():
    code = (
        "import sys; from streamtool.cli import main, replay, emit; "
        "from streamtool.core.converters import make_converter; make_converter('kimi-k2'); "
        "print(sorted(m for m in ('openai', 'anthropic') if m in sys.modules))"
    )
    assert fresh_python_prints(code) == "[]"
