"""Helpers for the Kimi K2 tests: OpenAI-compatible streams carrying text, replayed in memory."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from streamtool.core.engine.replay import ReplayEngine
from streamtool.core.model.records import Chunk, End, Header

KIMI_MODEL = "moonshotai/Kimi-K2-Instruct-0905"


def chat_event(delta: dict[str, Any], finish: str | None = None, model: str = KIMI_MODEL) -> str:
    obj = {
        "id": "chatcmpl-0a1b2c3d4e5f",
        "object": "chat.completion.chunk",
        "created": 1795253400,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    return "data: " + json.dumps(obj, ensure_ascii=False) + "\n\n"


def text_stream(
    pieces: Iterable[str],
    field: str = "content",
    finish: str | None = "stop",
    model: str = KIMI_MODEL,
    done: bool = True,
) -> list[str]:
    """SSE events: a role chunk, one event per text piece in ``field``, the finish, [DONE]."""
    events = [chat_event({"role": "assistant", "content": ""}, model=model)]
    events += [chat_event({field: p}, model=model) for p in pieces if p]
    if finish is not None:
        events.append(chat_event({}, finish, model=model))
    if done:
        events.append("data: [DONE]\n\n")
    return events


def tools_header(tools: list[dict[str, Any]] | None = None, model: str = KIMI_MODEL) -> Header:
    body: dict[str, Any] = {"model": model, "stream": True, "messages": []}
    if tools is not None:
        body["tools"] = tools
    return Header(
        provider="vllm",
        api="chat.completions",
        request={
            "method": "POST",
            "url": "http://127.0.0.1:8000/v1/chat/completions",
            "body": body,
        },
    )


def function_tool(name: str, params: Iterable[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "parameters": {"type": "object", "properties": {p: {"type": "string"} for p in params}},
        },
    }


def replay_events(
    events: Iterable[str],
    converter: str = "kimi-k2",
    header: Header | None = None,
    parser: str = "api_tool_call",
) -> ReplayEngine:
    engine = ReplayEngine(header, converter=converter, parser=parser, keep_events=True)
    t = 0.0
    for raw in events:
        t += 0.01
        engine.feed_chunk(Chunk(round(t, 3), raw))
    engine.finish(End(round(t + 0.01, 3)))
    return engine


def summary(events: Iterable[str], **kwargs: Any) -> dict[str, Any]:
    return replay_events(events, **kwargs).summary()


def calls_of(summary: dict[str, Any]) -> list[tuple[str, str, Any]]:
    return [(inv["id"], inv["name"], inv["arguments"]) for inv in summary["invocations"]]


def kinds(items: list[dict[str, Any]], key: str = "kind") -> list[str]:
    return [item[key] for item in items]
