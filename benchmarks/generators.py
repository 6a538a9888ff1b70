"""Generators of large, realistic recordings for the benchmarks.

``GENERATORS[name](path, target_bytes)`` writes a version-1 recording of about ``target_bytes``
whose stream is in the wire format of the converter ``name``, with a long streamed tool call.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

Generator = Callable[[Path, int], None]


def _header(provider: str, api: str, url: str, model: str) -> dict:
    return {
        "type": "header",
        "format": "streamtool-recording",
        "version": 1,
        "provider": provider,
        "api": api,
        "recorded_at": "2026-11-21T00:00:00Z",
        "request": {
            "method": "POST",
            "url": url,
            "headers": {"content-type": "application/json"},
            "body": {"model": model, "stream": True},
        },
        "response": {"status": 200, "headers": {"content-type": "text/event-stream"}},
    }


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
        budget = target_bytes
        for frag in code_fragments():
            enc = json.dumps(frag)[1:-1]
            event = sse({"tool_calls": [{"index": 0, "function": {"arguments": enc}}]})
            budget -= len(event) + 40
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

    write_recording(
        path,
        _header("openai", "chat.completions", "https://api.openai.com/v1/chat/completions", model),
        events(),
        target_bytes,
    )


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


GENERATORS: dict[str, Generator] = {
    "openai-chat": openai_chat,
    "kimi-k2": kimi_k2,
}
