"""The official SDKs as readers of emitted streams: each returns what its own accumulator
made of a stream served over HTTP on 127.0.0.1 (text, reasoning, client tool calls and the
finish class), or raises what the SDK raised."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from benchmarks.raw_http import http_server
from streamtool.core.model.finish import finish_class


@dataclass
class Read:
    text: str = ""
    reasoning: str = ""
    calls: list[tuple[str, Any]] = field(default_factory=list)
    finish: str = "unknown"


class _Streams(BaseHTTPRequestHandler):
    bodies: dict[str, tuple[int, str, list[bytes]]] = {}
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        self.rfile.read(int(self.headers.get("content-length") or 0))
        name = self.path.strip("/").split("/")[0]
        found = self.bodies.get(name)
        if found is None:
            self.send_error(404)
            return
        status, content_type, reads = found
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(sum(len(r) for r in reads)))
        self.end_headers()
        for read in reads:  # read by read, as emitted: the client reassembles the events
            self.wfile.write(read)
            self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def stream_server() -> Iterator[tuple[str, dict[str, tuple[int, str, list[bytes]]]]]:
    bodies: dict[str, tuple[int, str, list[bytes]]] = {}
    with http_server(type("Handler", (_Streams,), {"bodies": bodies})) as url:
        yield url, bodies


def _args(text: str | None) -> Any:
    try:
        return json.loads(text or "")
    except ValueError:
        return text


# One client per SDK for the whole run, as an application keeps one (making one costs 40-80 ms:
# each loads the CA bundle into a new TLS context); each read points it at its own stream.
@functools.cache
def _openai() -> Any:
    from openai import OpenAI

    return OpenAI(base_url="http://127.0.0.1", api_key="test-key", max_retries=0, timeout=10)


@functools.cache
def _anthropic() -> Any:
    from anthropic import Anthropic

    return Anthropic(base_url="http://127.0.0.1", api_key="test-key", max_retries=0, timeout=10)


@functools.cache
def _gemini() -> Any:
    from google import genai

    return genai.Client(api_key="test-key")


def openai_client(base: str) -> Any:
    """The openai SDK's client, reading from ``base``."""
    return _openai().with_options(base_url=base)


def anthropic_client(base: str) -> Any:
    """The anthropic SDK's client, reading from ``base``."""
    return _anthropic().with_options(base_url=base)


def read_openai_chat(base: str) -> Read:
    client = openai_client(base)
    with client.chat.completions.stream(
        model="m", messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        completion = stream.get_final_completion()
    choice = completion.choices[0]
    message = choice.message
    calls = [(c.function.name, _args(c.function.arguments)) for c in message.tool_calls or []]
    reasoning = getattr(message, "reasoning_content", None) or ""
    refusal = message.refusal or ""
    out = Read((message.content or "") + refusal, reasoning, calls)
    out.finish = finish_class(
        choice.finish_reason, client_calls=bool(calls), refusal=bool(refusal) and not calls
    )
    return out


def read_openai_responses(base: str) -> Read:
    client = openai_client(base)
    with client.responses.stream(model="m", input="hi") as stream:
        for event in stream:
            if event.type == "error":  # the SDK hands it on as an event: raise it here
                raise RuntimeError(f"error event: {event.code}: {event.message}")
        response = stream.get_final_response()
    out = Read()
    refused = False
    for item in response.output:
        if item.type == "message":
            for part in item.content:
                if part.type == "output_text":
                    out.text += part.text
                elif part.type == "refusal":
                    out.text += part.refusal
                    refused = True
        elif item.type == "reasoning":
            out.reasoning += "".join(s.text for s in item.summary)
        elif item.type == "function_call":
            out.calls.append((item.name, _args(item.arguments)))
    reason = response.status
    if response.status == "incomplete" and response.incomplete_details is not None:
        reason = response.incomplete_details.reason
    out.finish = finish_class(reason, client_calls=bool(out.calls), refusal=refused)
    return out


def read_anthropic(base: str) -> Read:
    client = anthropic_client(base)
    with client.messages.stream(
        model="m", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        message = stream.get_final_message()
    out = Read()
    for block in message.content:
        if block.type == "text":
            out.text += block.text
        elif block.type == "thinking":
            out.reasoning += block.thinking
        elif block.type == "tool_use":
            out.calls.append((block.name, block.input))
    out.finish = finish_class(message.stop_reason, client_calls=bool(out.calls))
    return out


def read_gemini(base: str) -> Read:
    from google.genai import types

    # the request's own http_options (google-genai's per-request settings) name the stream
    config = types.GenerateContentConfig(
        http_options=types.HttpOptions(base_url=base, timeout=10_000)
    )
    out = Read()
    reason = None
    for chunk in _gemini().models.generate_content_stream(model="m", contents="hi", config=config):
        for candidate in chunk.candidates or []:
            if candidate.finish_reason is not None:
                reason = candidate.finish_reason.value
            for part in (candidate.content.parts if candidate.content else None) or []:
                if part.function_call is not None:
                    out.calls.append((part.function_call.name, part.function_call.args))
                elif part.text is not None:
                    if part.thought:
                        out.reasoning += part.text
                    else:
                        out.text += part.text
    out.finish = finish_class(reason, client_calls=bool(out.calls))
    return out


READERS = {
    "openai-chat": read_openai_chat,
    "openai-responses": read_openai_responses,
    "anthropic": read_anthropic,
    "gemini": read_gemini,
}
