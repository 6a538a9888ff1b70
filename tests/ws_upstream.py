"""A local WebSocket upstream for the tests: a ``websockets`` asyncio server (127.0.0.1, a free
port, a background thread) that speaks the documented GA events of OpenAI's Realtime API at
``/v1/realtime`` and the Responses API's events at ``/v1/responses`` (``responses.connect()``).

Its answers are deterministic (ids are counters): a user message that asks for the weather gets a
function call (``get_weather``, arguments in several deltas); a function output gets the answer as
audio with its transcript (Realtime) or text (Responses); anything else a short text answer. After
each Realtime ``response.done`` comes a ``rate_limits.updated``. A client that sends
``OpenAI-Beta: realtime=v1`` gets the ``beta_api_shape_disabled`` error and a close 4000, as the
retired beta's clients do. The server notes what it saw (``seen``: the upgrade requests' headers,
subprotocols and paths) for the tests that check what was forwarded.
"""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.server import ServerConnection, serve

from benchmarks.generators import responses_usage

WEATHER_ARGS = ['{"ci', 'ty": "Pa', 'ris", "un', 'it": "c"}']
ANSWER = "It is 18 degrees and sunny in Paris."
# 0.05 s of 24 kHz 16-bit PCM per delta (silence): 2,400 bytes
AUDIO_CHUNK = base64.b64encode(b"\x00\x00" * 1200).decode("ascii")


@dataclass
class Seen:
    paths: list[str] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    subprotocols: list[list[str]] = field(default_factory=list)
    client_events: list[dict[str, Any]] = field(default_factory=list)


class _Ids:
    def __init__(self) -> None:
        self.n = 0

    def __call__(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}_{self.n:03d}"


class Upstream:
    """``with Upstream() as up:`` ``up.url`` is ``ws://127.0.0.1:PORT``."""

    def __init__(
        self, *, delay: float = 0.0, rate_limits_first: bool = False, ssl: Any = None
    ) -> None:
        self.ssl = ssl  # a server SSLContext: wss://
        self.delay = delay  # seconds between two server events of a response
        # rate_limits.updated before response.done (else after it, as OpenAI sends it)
        self.rate_limits_first = rate_limits_first
        self.seen = Seen()
        self.url = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()

    def __enter__(self) -> Upstream:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the test upstream did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(10)

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with serve(
            self._handler,
            "127.0.0.1",
            0,
            process_request=_refuse_forbidden,
            subprotocols=None,
            select_subprotocol=_select,
            compression=None,
            max_size=None,
            ssl=self.ssl,
        ) as server:
            port = next(iter(server.sockets)).getsockname()[1]
            self.url = f"{'wss' if self.ssl else 'ws'}://127.0.0.1:{port}"
            self._ready.set()
            await self._stop.wait()

    async def _handler(self, ws: ServerConnection) -> None:
        request = ws.request
        assert request is not None
        headers = {k.lower(): v for k, v in request.headers.raw_items()}
        self.seen.paths.append(request.path)
        self.seen.headers.append(headers)
        self.seen.subprotocols.append(
            [t.strip() for t in headers.get("sec-websocket-protocol", "").split(",") if t.strip()]
        )
        if request.path.startswith("/v1/realtime"):
            await Realtime(ws, self).run(headers)
        elif request.path.startswith("/v1/responses"):
            await Responses(ws, self).run()
        else:
            await ws.close(4004, "no such endpoint")


def _refuse_forbidden(connection: ServerConnection, request: Any) -> Any:
    """``/v1/forbidden``: the upgrade refused with a 403 and a JSON error body."""
    if request.path.startswith("/v1/forbidden"):
        body = json.dumps({"error": {"message": "forbidden here", "type": "invalid_request_error"}})
        response = connection.respond(403, body + "\n")
        return response
    return None


def _select(connection: ServerConnection, subprotocols: list[str]) -> str | None:
    return "realtime" if "realtime" in subprotocols else None


class Realtime:
    """One Realtime session (GA event names)."""

    def __init__(self, ws: ServerConnection, upstream: Upstream) -> None:
        self.ws = ws
        self.up = upstream
        self.ids = _Ids()
        self.items: list[dict[str, Any]] = []

    async def send(self, event: dict[str, Any]) -> None:
        event = {"event_id": self.ids("event"), **event}
        await self.ws.send(json.dumps(event))

    async def run(self, headers: dict[str, str]) -> None:
        if headers.get("openai-beta", "").startswith("realtime"):
            await self.send(
                {
                    "type": "error",
                    "error": {
                        "type": "invalid_request_error",
                        "code": "beta_api_shape_disabled",
                        "message": "The Realtime beta API shape is no longer supported.",
                        "param": None,
                        "event_id": None,
                    },
                }
            )
            await self.ws.close(4000, "invalid_request_error.beta_api_shape_disabled")
            return
        session = {
            "type": "realtime",
            "object": "realtime.session",
            "id": "sess_001",
            "model": "gpt-realtime",
            "output_modalities": ["audio"],
            "instructions": "",
            "audio": {
                "input": {"format": {"type": "audio/pcm", "rate": 24000}},
                "output": {"format": {"type": "audio/pcm", "rate": 24000}, "voice": "marin"},
            },
        }
        await self.send({"type": "session.created", "session": session})
        async for message in self.ws:
            event = json.loads(message)
            self.up.seen.client_events.append(event)
            kind = event.get("type")
            if kind == "session.update":
                session.update(event.get("session") or {})
                await self.send({"type": "session.updated", "session": session})
            elif kind == "conversation.item.create":
                item = {"id": self.ids("item"), "object": "realtime.item", **event["item"]}
                item.setdefault("status", "completed")
                self.items.append(item)
                previous = self.items[-2]["id"] if len(self.items) > 1 else None
                await self.send(
                    {"type": "conversation.item.added", "previous_item_id": previous, "item": item}
                )
                await self.send(
                    {"type": "conversation.item.done", "previous_item_id": previous, "item": item}
                )
            elif kind == "input_audio_buffer.append":
                pass
            elif kind == "input_audio_buffer.commit":
                await self.send({"type": "input_audio_buffer.committed", "item_id": "item_audio"})
            elif kind == "response.create":
                await self.respond(session)

    async def pause(self) -> None:
        await asyncio.sleep(self.up.delay)

    async def respond(self, session: dict[str, Any]) -> None:
        rid = self.ids("resp")
        response = {"id": rid, "object": "realtime.response", "status": "in_progress", "output": []}
        await self.send({"type": "response.created", "response": response})
        last = self.items[-1] if self.items else {}
        modalities = session.get("output_modalities") or ["audio"]
        output: list[dict[str, Any]] = []
        asks_weather = last.get("type") == "message" and "weather" in json.dumps(last).lower()
        if asks_weather:
            output.append(await self.function_call(rid))
        elif last.get("type") == "function_call_output":
            output.append(await self.message(rid, ANSWER, audio="audio" in modalities))
        else:
            output.append(await self.message(rid, "Hello!", audio="audio" in modalities))
        usage = {
            "total_tokens": 180,
            "input_tokens": 120,
            "output_tokens": 60,
            "input_token_details": {"text_tokens": 120, "audio_tokens": 0, "cached_tokens": 64},
            "output_token_details": {"text_tokens": 20, "audio_tokens": 40},
        }
        done = {**response, "status": "completed", "output": output, "usage": usage}
        limits = {
            "type": "rate_limits.updated",
            "rate_limits": [
                {"name": "requests", "limit": 5000, "remaining": 4999, "reset_seconds": 0.01},
                {"name": "tokens", "limit": 40000, "remaining": 39820, "reset_seconds": 0.3},
            ],
        }
        if self.up.rate_limits_first:
            await self.send(limits)
        await self.send({"type": "response.done", "response": done})
        if not self.up.rate_limits_first:
            await self.send(limits)

    async def function_call(self, rid: str) -> dict[str, Any]:
        item_id = self.ids("item")
        call_id = self.ids("call")
        item = _weather_call_item(item_id, call_id, object="realtime.item")
        base = {"response_id": rid, "item_id": item_id, "output_index": 0, "call_id": call_id}
        done = await _stream_weather_call(
            self.send,
            item,
            lambda what, item: _item_event(what, rid, item),
            base,
            self.pause,
            name="get_weather",
        )
        self.items.append(done)
        return done

    async def message(self, rid: str, text: str, *, audio: bool) -> dict[str, Any]:
        item_id = self.ids("item")
        item = _message_item(item_id, object="realtime.item")
        base = {"response_id": rid, "item_id": item_id, "output_index": 0, "content_index": 0}
        await self.send(_item_event("added", rid, item))
        part_type = "output_audio" if audio else "output_text"
        part: dict[str, Any] = {"type": part_type}
        part.update({"transcript": ""} if audio else {"text": ""})
        await self.send({"type": "response.content_part.added", **base, "part": part})
        for piece in _word_pieces(text):
            await self.pause()
            if audio:
                audio_delta = {"type": "response.output_audio.delta", **base, "delta": AUDIO_CHUNK}
                await self.send(audio_delta)
                await self.send(
                    {"type": "response.output_audio_transcript.delta", **base, "delta": piece}
                )
            else:
                await self.send({"type": "response.output_text.delta", **base, "delta": piece})
        if audio:
            await self.send({"type": "response.output_audio.done", **base})
            await self.send(
                {"type": "response.output_audio_transcript.done", **base, "transcript": text}
            )
            part = {"type": "output_audio", "transcript": text}
        else:
            await self.send({"type": "response.output_text.done", **base, "text": text})
            part = {"type": "output_text", "text": text}
        await self.send({"type": "response.content_part.done", **base, "part": part})
        done = {**item, "status": "completed", "content": [part]}
        await self.send(_item_event("done", rid, done))
        self.items.append(done)
        return done


def _message_item(item_id: str, **first: Any) -> dict[str, Any]:
    """The assistant's message item as it starts, empty (``first``: fields after its id)."""
    return {
        "id": item_id,
        **first,
        "type": "message",
        "role": "assistant",
        "status": "in_progress",
        "content": [],
    }


def _weather_call_item(item_id: str, call_id: str, **first: Any) -> dict[str, Any]:
    """A ``get_weather`` function call item as it starts (``first``: fields after its id)."""
    return {
        "id": item_id,
        **first,
        "type": "function_call",
        "status": "in_progress",
        "name": "get_weather",
        "call_id": call_id,
        "arguments": "",
    }


async def _stream_weather_call(
    send: Callable[[dict[str, Any]], Awaitable[None]],
    item: dict[str, Any],
    item_event: Callable[[str, dict[str, Any]], dict[str, Any]],
    base: dict[str, Any],
    pause: Callable[[], Awaitable[None]] | None = None,
    **done_fields: Any,
) -> dict[str, Any]:
    """Sends the function call ``item`` as added, WEATHER_ARGS as ``function_call_arguments``
    deltas (each after ``pause``) and their ``done`` (``done_fields`` before the arguments), then
    the item done; gives the done item."""
    await send(item_event("added", item))
    for piece in WEATHER_ARGS:
        if pause is not None:
            await pause()
        await send({"type": "response.function_call_arguments.delta", **base, "delta": piece})
    arguments = "".join(WEATHER_ARGS)
    done_args = {"type": "response.function_call_arguments.done", **base, **done_fields}
    await send({**done_args, "arguments": arguments})
    done = {**item, "status": "completed", "arguments": arguments}
    await send(item_event("done", done))
    return done


def _word_pieces(text: str) -> list[str]:
    """``text`` cut after each space, as a model streams it word by word."""
    words = text.split(" ")
    return [w + " " for w in words[:-1]] + [words[-1]]


def _output_item_event(what: str, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": f"response.output_item.{what}", "output_index": 0, "item": item}


def _item_event(what: str, rid: str, item: dict[str, Any]) -> dict[str, Any]:
    kind = f"response.output_item.{what}"
    return {"type": kind, "response_id": rid, "output_index": 0, "item": item}


class Responses:
    """One Responses session over WebSocket (``responses.connect()``)."""

    def __init__(self, ws: ServerConnection, upstream: Upstream) -> None:
        self.ws = ws
        self.up = upstream
        self.ids = _Ids()
        self.seq = 0

    async def send(self, event: dict[str, Any]) -> None:
        await self.ws.send(json.dumps({**event, "sequence_number": self.seq}))
        self.seq += 1

    async def run(self) -> None:
        async for message in self.ws:
            event = json.loads(message)
            self.up.seen.client_events.append(event)
            if event.get("type") == "response.create":
                await self.respond(event)

    async def respond(self, event: dict[str, Any]) -> None:
        self.seq = 0
        rid = self.ids("resp")
        model = event.get("model", "gpt-5")
        response = {
            "id": rid,
            "object": "response",
            "created_at": 1767225600,
            "status": "in_progress",
            "model": model,
            "output": [],
            "usage": None,
        }
        await self.send({"type": "response.created", "response": response})
        await self.send({"type": "response.in_progress", "response": response})
        items = event.get("input")
        items = items if isinstance(items, list) else [{"role": "user", "content": str(items)}]
        last = items[-1] if items else {}
        if last.get("type") == "function_call_output":
            output = [await self.text(ANSWER)]
        elif "weather" in json.dumps(last).lower():
            output = [await self.function_call()]
        else:
            output = [await self.text("Hello!")]
        usage = responses_usage(50, 12)
        done = {**response, "status": "completed", "output": output, "usage": usage}
        await self.send({"type": "response.completed", "response": done})

    async def function_call(self) -> dict[str, Any]:
        item_id = self.ids("fc")
        call_id = self.ids("call")
        item = _weather_call_item(item_id, call_id)
        base = {"item_id": item_id, "output_index": 0}
        return await _stream_weather_call(self.send, item, _output_item_event, base)

    async def text(self, text: str) -> dict[str, Any]:
        item_id = self.ids("msg")
        item = _message_item(item_id)
        base = {"item_id": item_id, "output_index": 0, "content_index": 0}
        await self.send(_output_item_event("added", item))
        part = {"type": "output_text", "text": "", "annotations": []}
        await self.send({"type": "response.content_part.added", **base, "part": part})
        for piece in _word_pieces(text):
            await self.send(
                {"type": "response.output_text.delta", **base, "delta": piece, "logprobs": []}
            )
        await self.send({"type": "response.output_text.done", **base, "text": text, "logprobs": []})
        part = {"type": "output_text", "text": text, "annotations": []}
        await self.send({"type": "response.content_part.done", **base, "part": part})
        done = {**item, "status": "completed", "content": [part]}
        await self.send(_output_item_event("done", done))
        return done
