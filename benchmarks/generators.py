"""Generators of large, realistic recordings for the benchmarks.

``GENERATORS[name](path, target_bytes)`` writes a version-1 recording of about ``target_bytes``
whose stream is in the wire format of the converter ``name``, with a long streamed tool call.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

Generator = Callable[[Path, int], None]


OPENAI_CHAT_URL = "https://api.openai.com/v1/chat/completions"


def recording_header(
    provider: str = "openai",
    api: str = "chat.completions",
    *,
    url: str = OPENAI_CHAT_URL,
    body: object = None,
    request: dict | None = None,
    response: dict | None = None,
    status: int = 200,
    response_headers: dict | None = None,
    recorded_at: str | None = "2026-11-21T00:00:00Z",
) -> dict:
    """A version-1 recording's header record: a JSON POST of ``body`` to ``url`` (``request``
    in its place when given) answered ``status`` with an event stream (``response_headers`` in
    place of its content type when given; ``response`` in place of that response); no
    ``recorded_at`` when it is None."""
    header: dict = {"type": "header", "format": "streamtool-recording", "version": 1}
    header.update(provider=provider, api=api)
    if recorded_at is not None:
        header["recorded_at"] = recorded_at
    header["request"] = request or {
        "method": "POST",
        "url": url,
        "headers": {"content-type": "application/json"},
        "body": body,
    }
    if response_headers is None:
        response_headers = {"content-type": "text/event-stream"}
    header["response"] = response or {"status": status, "headers": response_headers}
    return header


def _header(provider: str, api: str, url: str, model: str) -> dict:
    return recording_header(provider, api, url=url, body={"model": model, "stream": True})


def code_fragments(fragment_chars: int = 24) -> Iterator[str]:
    """An endless supply of source-code text cut into small pieces."""
    lines = [
        "def handler(event, context):\n",
        '    """Process one event and return the result."""\n',
        "    items = [x * 2 for x in range(100) if x % 3 == 0]\n",
        '    message = f"processed {len(items)} items: \\"ok\\""\n',
        "    return {'status': 200, 'body': message}\n",
        "\n",
    ]
    text = "".join(lines) * 8
    while True:
        for i in range(0, len(text), fragment_chars):
            yield text[i : i + fragment_chars]


def responses_usage(inp: int, out: int, cached: int = 0, reasoning: int = 0) -> dict:
    """A Responses API usage object."""
    return {
        "input_tokens": inp,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": out,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": inp + out,
    }


def _write_self_ending(path: Path, target_bytes: int, header: dict, events: Iterator[str]) -> None:
    """Write a stream that ends itself near ``target_bytes``: never cut it (the cap twice that)."""
    write_recording(path, header, events, target_bytes * 2)


def write_recording(path: Path, header: dict, events: Iterator[str], target_bytes: int) -> None:
    """Write ``events`` (raw SSE text, one network read each) until the file reaches the size."""
    dumps = json.dumps
    t = 0.25
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(dumps(header) + "\n")
        written = 0
        for raw in events:
            line = dumps({"type": "chunk", "t": round(t, 6), "text": raw}) + "\n"
            fh.write(line)
            written += len(line)
            t += 0.0004
            if written >= target_bytes:
                break
        fh.write(
            dumps({"type": "end", "t": round(t, 6), "reason": "complete", "error": None}) + "\n"
        )


def openai_chat(path: Path, target_bytes: int) -> None:
    model = "gpt-4o-2024-08-06"
    base = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1763700000,
        "model": model,
        "system_fingerprint": "fp_bench",
    }

    def sse(delta: dict, finish: str | None = None, **extra: object) -> str:
        obj = dict(
            base,
            choices=[{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
            **extra,
        )
        return "data: " + json.dumps(obj, separators=(",", ":")) + "\n\n"

    def events() -> Iterator[str]:
        yield sse({"role": "assistant", "content": None})
        yield sse(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_bench0001",
                        "type": "function",
                        "function": {"name": "write_file", "arguments": ""},
                    }
                ]
            }
        )
        yield sse(
            {
                "tool_calls": [
                    {"index": 0, "function": {"arguments": '{"path": "app.py", "content": "'}}
                ]
            }
        )
        budget = target_bytes - 2000  # room for the closing events
        for frag in code_fragments():
            enc = json.dumps(frag)[1:-1]
            event = sse({"tool_calls": [{"index": 0, "function": {"arguments": enc}}]})
            budget -= _line_size(event)
            yield event
            if budget <= 0:
                break
        yield sse({"tool_calls": [{"index": 0, "function": {"arguments": '"}'}}]})
        yield sse({}, "tool_calls")
        yield sse(
            {},
            None,
            usage={"prompt_tokens": 50, "completion_tokens": 99999, "total_tokens": 100049},
        )
        yield "data: [DONE]\n\n"

    header = _header(
        "openai", "chat.completions", "https://api.openai.com/v1/chat/completions", model
    )
    _write_self_ending(path, target_bytes, header, events())


def kimi_k2(path: Path, target_bytes: int) -> None:
    """A vLLM-served Kimi K2 stream whose tool calls are special tokens in ``content``: prose,
    then a section with a ``write_file`` call whose arguments stream in small pieces, repeated;
    markers arrive alone and cut across events."""
    model = "moonshotai/Kimi-K2-Instruct-0905"
    base = {
        "id": "chatcmpl-benchkimi",
        "object": "chat.completion.chunk",
        "created": 1763700000,
        "model": model,
    }

    def sse(delta: dict, finish: str | None = None) -> str:
        obj = dict(
            base, choices=[{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        )
        return "data: " + json.dumps(obj, separators=(",", ":")) + "\n\n"

    prose = ["I", "will", "write", "the", "next", "module", "now,", "then", "check", "it."]
    call_bytes = 64 * 1024  # each call's arguments: well under the 1 MiB section limit

    def events() -> Iterator[str]:
        budget = target_bytes - 32768  # room for the last cycle's closing events
        n = 0
        fragments = code_fragments()

        def sized(event: str) -> str:
            nonlocal budget
            budget -= len(json.dumps(event)) + 48  # the recording line it becomes (at most)
            return event

        yield sized(sse({"role": "assistant", "content": ""}))
        while budget > 0:
            for word in prose:
                yield sized(sse({"content": word + " "}))
            yield sized(sse({"content": "<|tool_calls_sec"}))
            yield sized(sse({"content": "tion_begin|>"}))
            yield sized(sse({"content": "<|tool_call_begin|>"}))
            yield sized(sse({"content": f" functions.write_file:{n}"}))
            yield sized(sse({"content": " <|tool_call_argument_begin|>"}))
            yield sized(sse({"content": f'{{"path": "mod{n}.py", "content": "'}))
            size = 0
            for frag in fragments:
                enc = json.dumps(frag)[1:-1]
                size += len(enc)
                yield sized(sse({"content": enc}))
                if size >= call_bytes or budget <= 0:
                    break
            yield sized(sse({"content": '"}'}))
            yield sized(sse({"content": "<|tool_call_end|><|tool_calls_sec"}))
            yield sized(sse({"content": "tion_end|>"}))
            n += 1
        yield sse({}, "stop")
        yield "data: [DONE]\n\n"

    write_recording(
        path,
        _header("vllm", "chat.completions", "http://127.0.0.1:8000/v1/chat/completions", model),
        events(),
        target_bytes,
    )


def _line_size(raw: str) -> int:
    """The size of the recording line that holds the read ``raw``."""
    return len(json.dumps(raw)) + 32


def anthropic(path: Path, target_bytes: int) -> None:
    """Messages API: thinking, a short text, then a ``write_file`` tool_use streamed as
    ``input_json_delta`` fragments until the recording reaches ``target_bytes``."""
    model = "claude-sonnet-4-5-20250929"

    def sse(obj: dict) -> str:
        return f"event: {obj['type']}\ndata: " + json.dumps(obj, separators=(",", ":")) + "\n\n"

    def delta(index: int, body: dict) -> str:
        return sse({"type": "content_block_delta", "index": index, "delta": body})

    def events() -> Iterator[str]:
        budget = target_bytes - 2000
        usage = {
            "input_tokens": 1850,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 4,
            "service_tier": "standard",
        }
        message = {
            "id": "msg_01BenchStreamToolUse0001",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage,
        }
        head = [
            sse({"type": "message_start", "message": message}),
            sse(
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "thinking", "thinking": "", "signature": ""},
                }
            ),
            'event: ping\ndata: {"type": "ping"}\n\n',
            delta(0, {"type": "thinking_delta", "thinking": "The user wants app.py written."}),
            delta(0, {"type": "signature_delta", "signature": "EqQBCkYIBxgCKkBbench" + "A" * 80}),
            sse({"type": "content_block_stop", "index": 0}),
            sse(
                {
                    "type": "content_block_start",
                    "index": 1,
                    "content_block": {"type": "text", "text": ""},
                }
            ),
            delta(1, {"type": "text_delta", "text": "I'll write the file now."}),
            sse({"type": "content_block_stop", "index": 1}),
            sse(
                {
                    "type": "content_block_start",
                    "index": 2,
                    "content_block": {
                        "type": "tool_use",
                        "id": "toolu_01BenchWriteFile00000001",
                        "name": "write_file",
                        "input": {},
                    },
                }
            ),
            delta(2, {"type": "input_json_delta", "partial_json": ""}),
            delta(2, {"type": "input_json_delta", "partial_json": '{"path": "app.py", '}),
            delta(2, {"type": "input_json_delta", "partial_json": '"content": "'}),
        ]
        for raw in head:
            budget -= _line_size(raw)
            yield raw
        for frag in code_fragments():
            raw = delta(2, {"type": "input_json_delta", "partial_json": json.dumps(frag)[1:-1]})
            budget -= _line_size(raw)
            yield raw
            if budget <= 0:
                break
        yield delta(2, {"type": "input_json_delta", "partial_json": '"}'})
        yield sse({"type": "content_block_stop", "index": 2})
        yield sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": 99999},
            }
        )
        yield sse({"type": "message_stop"})

    header = _header("anthropic", "messages", "https://api.anthropic.com/v1/messages", model)
    _write_self_ending(path, target_bytes, header, events())


def openai_responses(path: Path, target_bytes: int) -> None:
    """Responses API: a reasoning summary, then a ``write_file`` function call whose arguments
    stream as deltas; ``.done``, ``output_item.done`` and ``response.completed`` repeat them whole,
    as the API does."""
    model = "gpt-5.1-2025-11-13"
    resp_id = "resp_0bench5c1d2e3f40000691c7c9d222481a3b595421266dab42"
    rs_id = "rs_0bench5c1d2e3f40000691c7c9e0a4c81a3a7f0e2c1d0b9a8f7"
    fc_id = "fc_0bench5c1d2e3f40000691c7c9f5c2881a39c4d3e2f1a0b9c8d"
    call_id = "call_BenchWriteFile0001aBcD"
    seq = 0

    def sse(obj: dict) -> str:
        nonlocal seq
        obj = {"type": obj["type"], "sequence_number": seq, **obj}
        seq += 1
        return f"event: {obj['type']}\ndata: " + json.dumps(obj, separators=(",", ":")) + "\n\n"

    def response(status: str, output: list, usage: dict | None) -> dict:
        return {
            "id": resp_id,
            "object": "response",
            "created_at": 1763700000,
            "status": status,
            "error": None,
            "incomplete_details": None,
            "model": model,
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "usage": usage,
        }

    summary = "**Writing the file**\n\nI'll write app.py with the handler."
    reasoning_item = {
        "id": rs_id,
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": summary}],
    }

    def call_item(status: str, arguments: str) -> dict:
        return {
            "id": fc_id,
            "type": "function_call",
            "status": status,
            "arguments": arguments,
            "call_id": call_id,
            "name": "write_file",
        }

    def events() -> Iterator[str]:
        parts: list[str] = []
        budget = target_bytes - 4000
        head = [
            sse({"type": "response.created", "response": response("in_progress", [], None)}),
            sse({"type": "response.in_progress", "response": response("in_progress", [], None)}),
            sse(
                {
                    "type": "response.output_item.added",
                    "output_index": 0,
                    "item": {"id": rs_id, "type": "reasoning", "summary": []},
                }
            ),
            sse(
                {
                    "type": "response.reasoning_summary_text.delta",
                    "item_id": rs_id,
                    "output_index": 0,
                    "summary_index": 0,
                    "delta": summary,
                    "obfuscation": "q7Rk2",
                }
            ),
            sse({"type": "response.output_item.done", "output_index": 0, "item": reasoning_item}),
            sse(
                {
                    "type": "response.output_item.added",
                    "output_index": 1,
                    "item": call_item("in_progress", ""),
                }
            ),
        ]
        for raw in head:
            budget -= _line_size(raw)
            yield raw
        opening = ['{"path": "app.py", "content": "']
        for frag in _chain(opening, (json.dumps(f)[1:-1] for f in code_fragments())):
            raw = sse(
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": fc_id,
                    "output_index": 1,
                    "delta": frag,
                    "obfuscation": "Lj4np0pap921xSq7"[: max(1, 16 - len(frag) % 16)],
                }
            )
            parts.append(frag)
            # the three final copies of the arguments, escaped twice, come after the deltas
            budget -= _line_size(raw) + 3 * int(len(frag) * 1.25)
            yield raw
            if budget <= 0:
                break
        parts.append('"}')
        arguments = "".join(parts)
        yield sse(
            {
                "type": "response.function_call_arguments.done",
                "item_id": fc_id,
                "output_index": 1,
                "arguments": arguments,
            }
        )
        done_item = call_item("completed", arguments)
        yield sse({"type": "response.output_item.done", "output_index": 1, "item": done_item})
        usage = responses_usage(1850, 99999, reasoning=64)
        final = response("completed", [reasoning_item, done_item], usage)
        yield sse({"type": "response.completed", "response": final})

    header = _header("openai", "responses", "https://api.openai.com/v1/responses", model)
    _write_self_ending(path, target_bytes, header, events())


def _chain(first: list[str], rest: Iterator[str]) -> Iterator[str]:
    yield from first
    yield from rest


GENERATORS: dict[str, Generator] = {
    "openai-chat": openai_chat,
    "kimi-k2": kimi_k2,
    "anthropic": anthropic,
    "openai-responses": openai_responses,
}
