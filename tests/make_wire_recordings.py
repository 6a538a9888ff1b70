"""Writes the bundled recordings of Amazon Bedrock, Cohere v2, Gemini Interactions and legacy
Completions streams.

Run from the project root: ``python -m tests.make_wire_recordings`` (then ``streamtool check
--update`` for their golden files). Each stream follows its API's wire format as its SDK reads
it: Bedrock's as binary event-stream frames (written by ``core/wire/eventstream.py``'s encoder,
which the tests check against botocore's own decoder), chunked into reads the way a network
delivers them (several frames in one read, a frame cut across two), recorded as ``b64`` reads
by the project's own recording writer.
"""

from __future__ import annotations

import base64
import json
import string
from pathlib import Path
from typing import Any

from streamtool.core.model.records import Header
from streamtool.core.recording.writer import RecordingWriter
from streamtool.core.wire.eventstream import encode_event, encode_exception

ROOT = Path(__file__).resolve().parent.parent / "recordings"
RECORDED_AT = "2026-11-21T09:30:00Z"
BEDROCK_HOST = "https://bedrock-runtime.us-east-1.amazonaws.com"
CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
CLAUDE_PATH = CLAUDE.replace(":", "%3A")
WEATHER_TOOL = {
    "name": "get_weather",
    "description": "Current weather for a city",
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        "required": ["city"],
    },
}
BEDROCK_RESPONSE = {
    "status": 200,
    "headers": {
        "content-type": "application/vnd.amazon.eventstream",
        "x-amzn-requestid": "5f0d0c56-6a0f-4b8e-9d55-0b9a0c1f3e21",
    },
}


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _pad(n: int) -> str:
    """Bedrock's padding member: letters and digits of a length that varies per event."""
    alphabet = string.ascii_lowercase + string.ascii_uppercase + string.digits
    return alphabet[: 1 + (n * 7) % len(alphabet)]


def write(name: str, header: Header, reads: list[tuple[float, bytes]], end: float) -> None:
    path = ROOT / f"{name}.jsonl"
    with RecordingWriter(path, header, force=True) as writer:
        for t, data in reads:
            writer.write_read(t, data)
        writer.close(end)
    print("wrote", path)


def _reads(frames: list[bytes], groups: list[int], start: float, step: float) -> list[Any]:
    """Frames cut into reads: ``groups`` gives how many frames each read holds (the rest one
    each); a negative count cuts the next frame in two across reads."""
    reads: list[tuple[float, bytes]] = []
    t = start
    i = 0
    for g in groups:
        if g < 0:
            frame = frames[i]
            cut = len(frame) // 2 + g
            reads.append((round(t, 3), frame[:cut]))
            t += 0.004
            reads.append((round(t, 3), frame[cut:]))
            i += 1
        else:
            reads.append((round(t, 3), b"".join(frames[i : i + g])))
            i += g
        t += step
    while i < len(frames):
        reads.append((round(t, 3), frames[i]))
        i += 1
        t += step
    return reads


# -- Bedrock ConverseStream ----------------------------------------------------------------------
def converse_event(kind: str, body: dict[str, Any], n: int) -> bytes:
    return encode_event(kind, _dumps({**body, "p": _pad(n)}))


def bedrock_header(
    api: str, body: dict[str, Any], response: dict[str, Any], **headers: str
) -> Header:
    """The header of a Bedrock ``api`` stream's recording (``headers``: more request headers)."""
    return Header(
        provider="bedrock",
        api=api,
        recorded_at=RECORDED_AT,
        request={
            "method": "POST",
            "url": f"{BEDROCK_HOST}/model/{CLAUDE_PATH}/{api}",
            "headers": {
                "authorization": "[redacted]",
                "content-type": "application/json",
                **headers,
                "x-amz-date": "20261121T093000Z",
            },
            "body": body,
        },
        response=response,
    )


def converse_header(body: dict[str, Any]) -> Header:
    return bedrock_header("converse-stream", body, BEDROCK_RESPONSE)


def converse_tools() -> dict[str, Any]:
    spec = {k: WEATHER_TOOL[k] for k in ("name", "description")}
    return {"tools": [{"toolSpec": {**spec, "inputSchema": {"json": WEATHER_TOOL["parameters"]}}}]}


def converse_text(index: int, pieces: list[str]) -> list[tuple[str, Any]]:
    return [
        ("contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": t}}) for t in pieces
    ]


def converse_stop(reason: str, inp: int, out: int, latency: int) -> list[tuple[str, Any]]:
    """The ``messageStop`` and ``metadata`` events that end a Converse stream."""
    usage = {"inputTokens": inp, "outputTokens": out, "totalTokens": inp + out}
    return [
        ("messageStop", {"stopReason": reason}),
        ("metadata", {"usage": usage, "metrics": {"latencyMs": latency}}),
    ]


def converse_tool_use(index: int, call_id: str, pieces: list[str]) -> list[tuple[str, Any]]:
    """A ``get_weather`` tool use's block: its start, its input in ``pieces``, its stop."""
    start = {"toolUse": {"toolUseId": call_id, "name": "get_weather"}}
    return [
        ("contentBlockStart", {"contentBlockIndex": index, "start": start}),
        *[
            ("contentBlockDelta", {"contentBlockIndex": index, "delta": {"toolUse": {"input": t}}})
            for t in pieces
        ],
        ("contentBlockStop", {"contentBlockIndex": index}),
    ]


def bedrock_converse() -> None:
    # 1. reasoning then text
    events = [
        ("messageStart", {"role": "assistant"}),
        *[
            (
                "contentBlockDelta",
                {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": t}}},
            )
            for t in ["The user asks", " for a haiku about", " autumn rain. Five, seven,", " five."]
        ],
        (
            "contentBlockDelta",
            {
                "contentBlockIndex": 0,
                "delta": {"reasoningContent": {"signature": "EqQBCkYIBxgCKkBn3bXy0wR8dZ1v"}},
            },
        ),
        ("contentBlockStop", {"contentBlockIndex": 0}),
        *converse_text(
            1,
            [
                "Cold rain on",
                " the eaves —\nmaple",
                " leaves let go",
                " one by one,\nthe",
                " gutters hum",
                " all night.",
            ],
        ),
        ("contentBlockStop", {"contentBlockIndex": 1}),
        *converse_stop("end_turn", 41, 88, 1874),
    ]
    frames = [converse_event(k, b, i) for i, (k, b) in enumerate(events)]
    body = {
        "messages": [{"role": "user", "content": [{"text": "Write a haiku about autumn rain."}]}],
        "inferenceConfig": {"maxTokens": 2048},
        "additionalModelRequestFields": {"thinking": {"type": "enabled", "budget_tokens": 1024}},
    }
    write(
        "bedrock-converse-reasoning-then-text",
        converse_header(body),
        _reads(frames, [1, 2, -3, 1, 1, 2], 0.611, 0.071),
        1.52,
    )

    # 2. parallel tool calls, input streamed (the answer of anthropic-parallel-tool-calls)
    events = [
        ("messageStart", {"role": "assistant"}),
        *converse_text(0, ["I'll check the current weather in both", " cities at the same time."]),
        ("contentBlockStop", {"contentBlockIndex": 0}),
        *converse_tool_use(
            1, "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", ['{"city": "Pa', 'ris", "unit": "c', 'elsius"}']
        ),
        *converse_tool_use(
            2, "tooluse_3Wl2cG6bRzKq0yMfOa8nIg", ['{"ci', 'ty": "Tokyo"', ', "unit": "celsius"}']
        ),
        *converse_stop("tool_use", 612, 131, 2031),
    ]
    frames = [converse_event(k, b, i) for i, (k, b) in enumerate(events)]
    body = {
        "messages": [
            {
                "role": "user",
                "content": [{"text": "What's the weather in Paris and in Tokyo right now?"}],
            }
        ],
        "inferenceConfig": {"maxTokens": 1024},
        "toolConfig": converse_tools(),
    }
    write(
        "bedrock-converse-parallel-tool-calls",
        converse_header(body),
        _reads(frames, [2, 1, 1, 2, 1, -7, 1, 3], 0.912, 0.083),
        2.046,
    )

    # 3. an exception frame mid-stream
    events = [
        ("messageStart", {"role": "assistant"}),
        *converse_text(0, ["Here is a summary of", " the report:\n\n1. Revenue", " grew 12% year"]),
    ]
    frames = [converse_event(k, b, i) for i, (k, b) in enumerate(events)]
    frames.append(
        encode_exception(
            "throttlingException",
            _dumps({"message": "Too many tokens, please wait before trying again."}),
        )
    )
    body = {
        "messages": [{"role": "user", "content": [{"text": "Summarize the attached report."}]}],
        "inferenceConfig": {"maxTokens": 1024},
    }
    write(
        "bedrock-converse-throttling-mid-stream",
        converse_header(body),
        _reads(frames, [2, 1, -1], 0.703, 0.094),
        1.09,
    )


# -- Bedrock InvokeModelWithResponseStream (Claude: Anthropic Messages events) -----------------
def chunk_frame(event: dict[str, Any], n: int) -> bytes:
    data = base64.b64encode(_dumps(event)).decode("ascii")
    return encode_event("chunk", _dumps({"bytes": data, "p": _pad(n)}))


def invoke_header(body: dict[str, Any]) -> Header:
    response_headers = {
        **BEDROCK_RESPONSE["headers"],
        "x-amzn-bedrock-content-type": "application/json",
    }
    return bedrock_header(
        "invoke-with-response-stream",
        body,
        {**BEDROCK_RESPONSE, "headers": response_headers},
        accept="application/vnd.amazon.eventstream",
    )


def message_start(msg_id: str, input_tokens: int) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "model": "claude-sonnet-4-5-20250929",
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1},
        },
    }


def text_deltas(index: int, texts: list[str]) -> list[dict[str, Any]]:
    return [
        {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": t}}
        for t in texts
    ]


def text_block_start(index: int) -> dict[str, Any]:
    return {
        "type": "content_block_start",
        "index": index,
        "content_block": {"type": "text", "text": ""},
    }


def message_end_events(
    stop_reason: str, input_tokens: int, output_tokens: int, latency: int, first_byte: int
) -> list[dict[str, Any]]:
    """The ``message_delta`` and ``message_stop`` that end a Claude stream on Bedrock (its
    invocation metrics in the stop)."""
    return [
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens},
        },
        {
            "type": "message_stop",
            "amazon-bedrock-invocationMetrics": {
                "inputTokenCount": input_tokens,
                "outputTokenCount": output_tokens,
                "invocationLatency": latency,
                "firstByteLatency": first_byte,
            },
        },
    ]


def bedrock_invoke() -> None:
    anthropic_body = {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 1024,
    }
    # 1. text
    events = [
        message_start("msg_bdrk_01HJ2x8Yq4V5n1kQeF3aLmTz", 18),
        text_block_start(0),
        *text_deltas(0, ["The capital of", " Australia is Canberra", ", not Sydney."]),
        {"type": "content_block_stop", "index": 0},
        *message_end_events("end_turn", 18, 14, 702, 388),
    ]
    frames = [chunk_frame(e, i) for i, e in enumerate(events)]
    body = {
        **anthropic_body,
        "messages": [{"role": "user", "content": "What is the capital of Australia?"}],
    }
    write(
        "bedrock-invoke-claude-text",
        invoke_header(body),
        _reads(frames, [2, 1, -1], 0.388, 0.061),
        0.81,
    )

    # 2. parallel tool calls (the answer of anthropic-parallel-tool-calls)
    def tool_start(index: int, call_id: str) -> dict[str, Any]:
        return {
            "type": "content_block_start",
            "index": index,
            "content_block": {
                "type": "tool_use",
                "id": call_id,
                "name": "get_weather",
                "input": {},
            },
        }

    def input_deltas(index: int, pieces: list[str]) -> list[dict[str, Any]]:
        return [
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": p},
            }
            for p in pieces
        ]

    events = [
        message_start("msg_bdrk_01XFDUDYJgAACzvnptvVoYEL", 612),
        text_block_start(0),
        *text_deltas(0, ["I'll check the current weather in both", " cities at the same time."]),
        {"type": "content_block_stop", "index": 0},
        tool_start(1, "toolu_bdrk_01A09q90qw90lq917835lq9"),
        *input_deltas(1, ["", '{"city": "Pa', 'ris", "unit": "c', 'elsius"}']),
        {"type": "content_block_stop", "index": 1},
        tool_start(2, "toolu_bdrk_01D7FLrfh4GYq7yT1ULFeyMV"),
        *input_deltas(2, ["", '{"ci', 'ty": "Tokyo"', ', "unit": "celsius"}']),
        {"type": "content_block_stop", "index": 2},
        *message_end_events("tool_use", 612, 131, 2010, 905),
    ]
    frames = [chunk_frame(e, i) for i, e in enumerate(events)]
    body = {
        **anthropic_body,
        "tools": [
            {
                "name": WEATHER_TOOL["name"],
                "description": WEATHER_TOOL["description"],
                "input_schema": WEATHER_TOOL["parameters"],
            }
        ],
        "messages": [
            {"role": "user", "content": "What's the weather in Paris and in Tokyo right now?"}
        ],
    }
    write(
        "bedrock-invoke-claude-parallel-tool-calls",
        invoke_header(body),
        _reads(frames, [2, 1, 1, 1, 1, -2, 3, 1, 1, 2], 0.905, 0.077),
        2.02,
    )

    # 3. the model's stream fails mid-way: modelStreamErrorException
    events = [
        message_start("msg_bdrk_01Pq7Lw2Zx9Ke4RtYu6VbNmS", 230),
        text_block_start(0),
        *text_deltas(0, ["Step 1: install the", " package with pip.\n", "Step 2: "]),
    ]
    frames = [chunk_frame(e, i) for i, e in enumerate(events)]
    frames.append(
        encode_exception(
            "modelStreamErrorException",
            _dumps(
                {
                    "message": "Model stream error: the model's response was interrupted.",
                    "originalStatusCode": 500,
                    "originalMessage": "Internal server error",
                }
            ),
        )
    )
    body = {
        **anthropic_body,
        "messages": [{"role": "user", "content": "How do I set up the project?"}],
    }
    write(
        "bedrock-invoke-model-stream-error",
        invoke_header(body),
        _reads(frames, [2, 1, 1], 0.512, 0.09),
        1.3,
    )


# -- SSE helpers -----------------------------------------------------------------------------------
def sse_reads(events: list[bytes], groups: list[int], start: float, step: float) -> list[Any]:
    return _reads(events, groups, start, step)


def sse_header(
    provider: str,
    api: str,
    url: str,
    body: dict[str, Any],
    key_header: str = "authorization",
    content_type: str = "text/event-stream",
) -> Header:
    """The header of an SSE stream's recording, its request's key redacted."""
    return Header(
        provider=provider,
        api=api,
        recorded_at=RECORDED_AT,
        request={
            "method": "POST",
            "url": url,
            "headers": {key_header: "[redacted]", "content-type": "application/json"},
            "body": body,
        },
        response={"status": 200, "headers": {"content-type": content_type}},
    )


# -- Cohere v2 chat ------------------------------------------------------------------------------
def cohere_event(obj: dict[str, Any]) -> bytes:
    return b"event: " + obj["type"].encode() + b"\ndata: " + _dumps(obj) + b"\n\n"


def cohere_header(body: dict[str, Any]) -> Header:
    return sse_header("cohere", "v2.chat", "https://api.cohere.com/v2/chat", body)


def message_end(reason: str, inp: int, out: int, error: str | None = None) -> dict[str, Any]:
    delta: dict[str, Any] = {
        "finish_reason": reason,
        "usage": {
            "billed_units": {"input_tokens": inp, "output_tokens": out},
            "tokens": {"input_tokens": inp + 190, "output_tokens": out + 2},
        },
    }
    if error is not None:
        delta["error"] = error
    return {"type": "message-end", "delta": delta}


def cohere_start(msg_id: str) -> dict[str, Any]:
    return {
        "id": msg_id,
        "type": "message-start",
        "delta": {
            "message": {
                "role": "assistant",
                "content": [],
                "tool_plan": "",
                "tool_calls": [],
                "citations": [],
            }
        },
    }


def cohere_text(index: int, texts: list[str]) -> list[dict[str, Any]]:
    return [
        {
            "type": "content-start",
            "index": index,
            "delta": {"message": {"content": {"type": "text", "text": ""}}},
        },
        *[
            {
                "type": "content-delta",
                "index": index,
                "delta": {"message": {"content": {"text": t}}},
            }
            for t in texts
        ],
    ]


def penguin_citation(index: int, start: int, end: int, text: str, snippet: str) -> list[Any]:
    """A citation of the "Penguin species" document (doc:0): its start and its end."""
    document = {"id": "doc:0", "title": "Penguin species", "snippet": snippet}
    source = {"type": "document", "id": "doc:0", "document": document}
    citation = {
        "start": start,
        "end": end,
        "text": text,
        "sources": [source],
        "type": "TEXT_CONTENT",
    }
    return [
        {"type": "citation-start", "index": index, "delta": {"message": {"citations": citation}}},
        {"type": "citation-end", "index": index},
    ]


def cohere() -> None:
    model = "command-a-03-2025"
    # 1. text with citations from documents
    events = [
        cohere_start("5a8e3b0e-3f4b-4c1e-9d3a-2b7c1f0e9a11"),
        *cohere_text(
            0,
            [
                "The tallest",
                " penguin species is the",
                " emperor penguin",
                ", which can reach",
                " about 122 cm.",
            ],
        ),
        *penguin_citation(
            0, 23, 38, "emperor penguin", "Emperor penguins are the tallest penguins."
        ),
        *penguin_citation(1, 62, 68, "122 cm", "up to 122 cm tall"),
        {"type": "content-end", "index": 0},
        message_end("COMPLETE", 37, 19),
    ]
    body = {
        "model": model,
        "stream": True,
        "messages": [{"role": "user", "content": "Which penguin species is the tallest?"}],
        "documents": [
            {
                "id": "doc:0",
                "data": {
                    "title": "Penguin species",
                    "snippet": "Emperor penguins are the tallest penguins, up to 122 cm tall.",
                },
            }
        ],
    }
    write(
        "cohere-text-citations",
        cohere_header(body),
        sse_reads([cohere_event(e) for e in events], [2, 1, 1, -1, 1, 1, 2], 0.402, 0.052),
        1.02,
    )

    # 2. a tool plan, then two parallel calls with streamed arguments
    def call_events(index: int, call_id: str, pieces: list[str]) -> list[dict[str, Any]]:
        return [
            {
                "type": "tool-call-start",
                "index": index,
                "delta": {
                    "message": {
                        "tool_calls": {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": ""},
                        }
                    }
                },
            },
            *[
                {
                    "type": "tool-call-delta",
                    "index": index,
                    "delta": {"message": {"tool_calls": {"function": {"arguments": p}}}},
                }
                for p in pieces
            ],
            {"type": "tool-call-end", "index": index},
        ]

    events = [
        cohere_start("c14c80c3-18eb-4519-9460-6c92edd8cfb4"),
        *[
            {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": t}}}
            for t in [
                "I will look up",
                " the weather in Paris",
                " and in Tokyo at",
                " the same time.",
            ]
        ],
        *call_events(
            0,
            "get_weather_m2x4pq8a1k3v",
            ['{"', "city", '":"', "Paris", '","', "unit", '":"', "celsius", '"}'],
        ),
        *call_events(1, "get_weather_7yn0d2c5rw9h", ['{"city":"To', 'kyo","unit":"cel', 'sius"}']),
        message_end("TOOL_CALL", 612, 64),
    ]
    body = {
        "model": model,
        "stream": True,
        "messages": [
            {"role": "user", "content": "What's the weather in Paris and in Tokyo right now?"}
        ],
        "tools": [{"type": "function", "function": WEATHER_TOOL}],
    }
    write(
        "cohere-tool-plan-parallel-tool-calls",
        cohere_header(body),
        sse_reads(
            [cohere_event(e) for e in events], [2, 1, 1, 2, 1, -1, 3, 1, 2, 4, 1, 2], 0.515, 0.041
        ),
        1.4,
    )

    # 3. the generation fails: message-end with finish_reason ERROR
    events = [
        cohere_start("9f2b6d1a-7c44-4f0e-8b1d-5e3a2c9d8f70"),
        *cohere_text(0, ["Sure. The first", " three prime numbers are", " 2, 3"]),
        {"type": "content-end", "index": 0},
        message_end(
            "ERROR", 22, 9, error="internal server error, this has been reported to our developers"
        ),
    ]
    body = {
        "model": model,
        "stream": True,
        "messages": [{"role": "user", "content": "List the first ten prime numbers."}],
    }
    write(
        "cohere-error-in-message-end",
        cohere_header(body),
        sse_reads([cohere_event(e) for e in events], [2, 1, 1], 0.331, 0.06),
        0.92,
    )


# -- legacy Completions ----------------------------------------------------------------------------
def completion_event(obj: dict[str, Any] | str) -> bytes:
    data = obj.encode() if isinstance(obj, str) else _dumps(obj)
    return b"data: " + data + b"\n\n"


def completions_header(url: str, body: dict[str, Any], provider: str) -> Header:
    content_type = "text/event-stream; charset=utf-8"
    return sse_header(provider, "completions", url, body, content_type=content_type)


def text_chunks(
    cid: str, model: str, created: int, texts: list[str], logprobs: bool = False
) -> list[dict[str, Any]]:
    out = []
    for t in texts:
        choice: dict[str, Any] = {"text": t, "index": 0, "logprobs": None, "finish_reason": None}
        if logprobs:
            choice["logprobs"] = {
                "tokens": [t],
                "token_logprobs": [-0.0123],
                "top_logprobs": None,
                "text_offset": [0],
            }
        out.append(
            {
                "id": cid,
                "object": "text_completion",
                "created": created,
                "model": model,
                "choices": [choice],
            }
        )
    return out


def completions() -> None:
    # 1. gpt-3.5-turbo-instruct: text, a usage chunk, [DONE]
    cid, model, created = "cmpl-AzL3Qm8Tn2Wb8Lp0Hd5Kf9Js3", "gpt-3.5-turbo-instruct", 1763717400
    chunks = text_chunks(
        cid,
        model,
        created,
        ["\n\n", "Roses", " are", " red", ",\n", "vio", "lets", " are", " blue", "."],
    )
    chunks.append(
        {
            "id": cid,
            "object": "text_completion",
            "created": created,
            "model": model,
            "choices": [{"text": "", "index": 0, "logprobs": None, "finish_reason": "stop"}],
        }
    )
    chunks.append(
        {
            "id": cid,
            "object": "text_completion",
            "created": created,
            "model": model,
            "choices": [],
            "usage": {"prompt_tokens": 9, "completion_tokens": 11, "total_tokens": 20},
        }
    )
    events = [completion_event(c) for c in chunks] + [completion_event("[DONE]")]
    body = {
        "model": model,
        "prompt": "Write a two-line poem.",
        "max_tokens": 32,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    write(
        "openai-completions-text-usage",
        completions_header("https://api.openai.com/v1/completions", body, "openai"),
        sse_reads(events, [1, 2, 1, -1, 3, 1, 2], 0.214, 0.031),
        0.71,
    )

    # 2. vLLM: a model writing two tool calls in its text (read with --parser xml)
    cid, model = "cmpl-6c9d3f0b2a7e4e1c8f5a9b3d2e1f0a7c", "Qwen/Qwen2.5-Coder-32B-Instruct"
    text = (
        "I'll look up both cities at once.\n\n"
        '<tool name="get_weather">\n<arguments>\n<arg name="city">Paris</arg>\n'
        '<arg name="unit">celsius</arg>\n</arguments>\n</tool>\n\n'
        '<tool name="get_weather">\n<arguments>\n<arg name="city">Tokyo</arg>\n'
        '<arg name="unit">celsius</arg>\n</arguments>\n</tool>'
    )
    pieces = [text[i : i + 7] for i in range(0, len(text), 7)]
    chunks = text_chunks(cid, model, 1763717460, pieces)
    chunks.append(
        {
            "id": cid,
            "object": "text_completion",
            "created": 1763717460,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "text": "",
                    "logprobs": None,
                    "finish_reason": "stop",
                    "stop_reason": None,
                }
            ],
            "usage": {"prompt_tokens": 188, "total_tokens": 254, "completion_tokens": 66},
        }
    )
    events = [completion_event(c) for c in chunks] + [completion_event("[DONE]")]
    body = {
        "model": model,
        "prompt": (
            "<|im_start|>user\nWhat's the weather in Paris and in Tokyo?<|im_end|>\n"
            "<|im_start|>assistant\n"
        ),
        "max_tokens": 512,
        "stream": True,
    }
    write(
        "openai-completions-vllm-xml-tool-calls",
        completions_header("http://127.0.0.1:8000/v1/completions", body, "vllm"),
        sse_reads(events, [3, 2, -1, 4, 1, 5, 2, 3, -2, 6], 0.118, 0.022),
        0.9,
    )

    # 3. vLLM: an error object in the stream after some text, with logprobs
    cid, model = "cmpl-1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b", "meta-llama/Llama-3.1-8B-Instruct"
    chunks = text_chunks(cid, model, 1763717520, [" The", " answer", " is"], logprobs=True)
    chunks.append(
        {
            "error": {
                "object": "error",
                "message": "The engine stopped: out of KV cache blocks",
                "type": "InternalServerError",
                "param": None,
                "code": 500,
            }
        }
    )
    events = [completion_event(c) for c in chunks] + [completion_event("[DONE]")]
    body = {
        "model": model,
        "prompt": "Q: What is 6 times 7?\nA:",
        "max_tokens": 16,
        "logprobs": 1,
        "stream": True,
    }
    write(
        "openai-completions-vllm-error-mid-stream",
        completions_header("http://127.0.0.1:8000/v1/completions", body, "vllm"),
        sse_reads(events, [2, 1, 2], 0.095, 0.04),
        0.3,
    )


# -- Gemini Interactions -------------------------------------------------------------------------
INTERACTIONS_URL = "https://generativelanguage.googleapis.com/v1beta/interactions"


def interactions_event(obj: dict[str, Any]) -> bytes:
    """One event as the API sends it: its ``event_type`` as the SSE event name too."""
    return b"event: " + obj["event_type"].encode() + b"\ndata: " + _dumps(obj) + b"\n\n"


def interactions_header(body: dict[str, Any]) -> Header:
    return sse_header("gemini", "interactions", INTERACTIONS_URL, body, "x-goog-api-key")


def step(kind: str, index: int, **fields: Any) -> dict[str, Any]:
    return {"event_type": f"step.{kind}", "index": index, **fields}


def interaction(kind: str, iid: str, status: str, **fields: Any) -> dict[str, Any]:
    body = {"id": iid, "status": status, "object": "interaction", **fields}
    return {"event_type": f"interaction.{kind}", "interaction": body}


def texts(index: int, pieces: list[str]) -> list[dict[str, Any]]:
    return [step("delta", index, delta={"type": "text", "text": p}) for p in pieces]


def function_call_steps(index: int, call_id: str, pieces: list[str]) -> list[dict[str, Any]]:
    """A ``get_weather`` function call's step: its start, its arguments in ``pieces``, its stop."""
    call = {"type": "function_call", "id": call_id, "name": "get_weather", "arguments": {}}
    return [
        step("start", index, step=call),
        *[step("delta", index, delta={"type": "arguments_delta", "arguments": p}) for p in pieces],
        step("stop", index),
    ]


def interactions() -> None:
    model = "gemini-3-flash-preview"
    weather = {
        "type": "function",
        "name": WEATHER_TOOL["name"],
        "description": WEATHER_TOOL["description"],
        "parameters": WEATHER_TOOL["parameters"],
    }
    # 1. a thought, a Google Search the API runs itself, then the answer with a citation
    iid = "v1_ChdxZ3dFYWRpSU1vUHZtZVVQMTZ6azJBWRIXcWd3RWFkaUlNb1B2bWVVUDE2emsyQVk"
    usage = {
        "total_input_tokens": 18,
        "total_output_tokens": 41,
        "total_thought_tokens": 57,
        "total_tool_use_tokens": 212,
        "total_tokens": 328,
    }
    events = [
        interaction("created", iid, "in_progress", model=model),
        {"event_type": "interaction.status_update", "interaction_id": iid, "status": "in_progress"},
        step("start", 0, step={"type": "thought"}),
        step(
            "delta",
            0,
            delta={
                "type": "thought_summary",
                "content": {
                    "type": "text",
                    "text": "**Finding the tallest penguin**\n\nI should check a source.",
                },
            },
        ),
        step("delta", 0, delta={"type": "thought_signature", "signature": "EpgDCpUDAXLI2nw1"}),
        step("stop", 0),
        step(
            "start",
            1,
            step={
                "type": "google_search_call",
                "id": "8k2x1q7d",
                "arguments": {"queries": ["tallest penguin species height"]},
            },
        ),
        step("stop", 1),
        step(
            "start",
            2,
            step={"type": "google_search_result", "call_id": "8k2x1q7d", "result": []},
        ),
        step(
            "delta",
            2,
            delta={
                "type": "google_search_result",
                "result": [
                    {
                        "title": "Emperor penguin - Wikipedia",
                        "url": "https://en.wikipedia.org/wiki/Emperor_penguin",
                        "rendered_content": "<div>...</div>",
                    }
                ],
            },
        ),
        step("stop", 2),
        step("start", 3, step={"type": "model_output"}),
        *texts(3, ["The emperor penguin is the", " tallest penguin: adults stand", " about 1.1 m"]),
        step(
            "delta",
            3,
            delta={
                "type": "text_annotation_delta",
                "annotations": [
                    {
                        "type": "url_citation",
                        "url": "https://en.wikipedia.org/wiki/Emperor_penguin",
                        "title": "Emperor penguin - Wikipedia",
                        "start_index": 0,
                        "end_index": 61,
                    }
                ],
            },
        ),
        *texts(3, [" tall."]),
        step("stop", 3),
        interaction("completed", iid, "completed", model=model, usage=usage),
    ]
    body = {
        "model": model,
        "input": "Which penguin is the tallest?",
        "tools": [{"type": "google_search"}],
        "stream": True,
    }
    write(
        "gemini-interactions-thought-search-text",
        interactions_header(body),
        sse_reads(
            [interactions_event(e) for e in events], [2, 1, 2, 1, 3, -2, 2, 1, 1, 1, 2], 0.61, 0.05
        ),
        1.6,
    )

    # 2. two function calls in parallel, their arguments streamed in pieces
    iid = "v1_ChdPbHdFYWZ1T0RzcWVtZVVQaUs3TDZBRRIXT2x3RWFmdU9Ec3FlbWVVUGlLN0w2QUU"
    events = [
        interaction("created", iid, "in_progress", model=model),
        {"event_type": "interaction.status_update", "interaction_id": iid, "status": "in_progress"},
        step("start", 0, step={"type": "thought"}),
        step("delta", 0, delta={"type": "thought_signature", "signature": "CiQBcsjafA9s"}),
        step("stop", 0),
        step("start", 1, step={"type": "model_output"}),
        *texts(1, ["I'll look up both cities", " at once."]),
        step("stop", 1),
        *function_call_steps(2, "q1n5z7rk", ['{"city": "Pa', 'ris", "unit"', ': "celsius"}']),
        *function_call_steps(3, "x8c2m4wd", ['{"ci', 'ty": "Tokyo", ', '"unit": "celsius"}']),
        interaction(
            "completed",
            iid,
            "requires_action",
            model=model,
            usage={
                "total_input_tokens": 96,
                "total_output_tokens": 58,
                "total_thought_tokens": 31,
                "total_tokens": 185,
            },
        ),
    ]
    body = {
        "model": model,
        "input": "What's the weather in Paris and in Tokyo right now?",
        "tools": [weather],
        "stream": True,
    }
    write(
        "gemini-interactions-parallel-function-calls",
        interactions_header(body),
        sse_reads(
            [interactions_event(e) for e in events],
            [3, 2, 1, 2, 1, 1, -3, 1, 2, 1, 1, 3],
            0.52,
            0.04,
        ),
        1.2,
    )

    # 3. an error event mid-stream: the interaction never completes
    iid = "v1_ChdUMndFYWNYWUxwdWhtZVVQbDRfZ3FBURIXVDJ3RWFjWFlMcHVobWVVUGw0X2dxQVE"
    events = [
        interaction("created", iid, "in_progress", model=model),
        step("start", 0, step={"type": "model_output"}),
        *texts(0, ["Here is a plan for", " your trip:\n1. Day one: the", " old town"]),
        {
            "event_type": "error",
            "error": {
                "code": "resource_exhausted",
                "message": "The model is overloaded. Please try again later.",
            },
        },
    ]
    body = {"model": model, "input": "Plan a three-day trip to Lisbon.", "stream": True}
    write(
        "gemini-interactions-error-mid-stream",
        interactions_header(body),
        sse_reads([interactions_event(e) for e in events], [2, 1, 2], 0.44, 0.07),
        0.9,
    )

    # 4. the older content events (steps disabled): text, then a whole function call
    iid = "v1_ChdCeUZFYWZ5LUpvbWZtZVVQOGJLZXFBTRIXQnlGRWFmeS1Kb21mbWVVUDhiS2VxQU0"
    legacy = "gemini-2.5-flash"
    events = [
        {
            "event_type": "interaction.start",
            "interaction": {"id": iid, "status": "in_progress", "model": legacy},
        },
        {"event_type": "content.start", "index": 0, "content": {"type": "text"}},
        *[
            {"event_type": "content.delta", "index": 0, "delta": {"type": "text", "text": t}}
            for t in ["Let me check", " the weather in Paris."]
        ],
        {"event_type": "content.stop", "index": 0},
        {"event_type": "content.start", "index": 1, "content": {"type": "function_call"}},
        {
            "event_type": "content.delta",
            "index": 1,
            "delta": {
                "type": "function_call",
                "id": "3mt7gq0s",
                "name": "get_weather",
                "arguments": {"city": "Paris", "unit": "celsius"},
            },
        },
        {"event_type": "content.stop", "index": 1},
        {
            "event_type": "interaction.complete",
            "interaction": {
                "id": iid,
                "status": "requires_action",
                "model": legacy,
                "role": "model",
                "outputs": [],
                "usage": {
                    "total_input_tokens": 71,
                    "total_output_tokens": 27,
                    "total_tokens": 98,
                },
            },
        },
    ]
    body = {
        "model": legacy,
        "input": "What's the weather in Paris?",
        "tools": [weather],
        "stream": True,
    }
    write(
        "gemini-interactions-content-events-function-call",
        interactions_header(body),
        sse_reads([interactions_event(e) for e in events], [2, 2, 1, -1, 1, 2], 0.38, 0.05),
        0.8,
    )


if __name__ == "__main__":
    bedrock_converse()
    bedrock_invoke()
    cohere()
    completions()
    interactions()
