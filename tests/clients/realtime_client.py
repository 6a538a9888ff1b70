"""The openai SDK's Realtime client (``client.realtime.connect()``) as a recording session and a
``streamtool conform`` client: it asks for the weather in Paris, runs the function call the
model makes, and prints ``{"text", "tool_calls", "finish_reason"}`` (the answer's text is the
text and audio transcripts of the responses; the finish reason, the last response's status).

The SDK reaches the server through ``OPENAI_BASE_URL`` (its WebSocket URL is made from it) and
``OPENAI_API_KEY``. Behaviours a test can ask for, to show which faults break which client:

- ``REALTIME_CLIENT_ERRORS=fatal``: an ``error`` event ends the session (exit 1);
- ``REALTIME_CLIENT_TIMEOUT=SECONDS``: no event for that long ends it (exit 1);
- ``REALTIME_CLIENT_MODALITY=text``: ask for text instead of audio.
"""

from __future__ import annotations

import json
import os
import sys
import threading

import openai
from weather_tool import FLAT_TOOLS

MODEL = os.environ.get("STREAMTOOL_MODEL", "gpt-realtime")
MODALITY = os.environ.get("REALTIME_CLIENT_MODALITY", "audio")
FATAL_ERRORS = os.environ.get("REALTIME_CLIENT_ERRORS") == "fatal"
TIMEOUT = float(os.environ.get("REALTIME_CLIENT_TIMEOUT", "0") or 0)
TOOLS = FLAT_TOOLS


class Answer:
    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: list[dict[str, object]] = []
        self.finish: str | None = None
        self.types: list[str] = []  # every server event's type, in order


class Watchdog:
    """Exits the client when no event came for ``TIMEOUT`` seconds (a read timeout)."""

    def __init__(self) -> None:
        self.timer: threading.Timer | None = None

    def reset(self) -> None:
        self.stop()
        if TIMEOUT:
            self.timer = threading.Timer(TIMEOUT, self.give_up)
            self.timer.daemon = True
            self.timer.start()

    def stop(self) -> None:
        if self.timer is not None:
            self.timer.cancel()

    @staticmethod
    def give_up() -> None:
        print(f"no event for {TIMEOUT:g} s: giving up", file=sys.stderr, flush=True)
        os._exit(1)


WATCHDOG = Watchdog()


def read_response(conn: object, answer: Answer) -> list[object]:
    """Events until this response's ``response.done``; the function calls it made."""
    calls = []
    while True:
        WATCHDOG.reset()
        event = conn.recv()  # type: ignore[attr-defined]
        kind = event.type
        answer.types.append(kind)
        if kind == "error":
            if FATAL_ERRORS:
                sys.exit(f"error event: {event.error.message}")
            print(f"error event (the session goes on): {event.error.message}", file=sys.stderr)
        elif kind in ("response.output_text.delta", "response.output_audio_transcript.delta"):
            answer.text.append(event.delta)
        elif kind == "response.function_call_arguments.done":
            calls.append(event)
            answer.calls.append({"name": event.name, "arguments": json.loads(event.arguments)})
        elif kind == "response.done":
            WATCHDOG.stop()
            answer.finish = event.response.status
            return calls


def converse(conn: object, modality: str = MODALITY) -> Answer:
    """The session: the weather asked for, each function call answered, until the model stops
    calling. Returns what the client read."""
    answer = Answer()
    conn.session.update(  # type: ignore[attr-defined]
        session={
            "type": "realtime",
            "instructions": "Answer briefly.",
            "output_modalities": [modality],
            "tools": TOOLS,
        }
    )
    conn.conversation.item.create(  # type: ignore[attr-defined]
        item={
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "What's the weather in Paris?"}],
        }
    )
    conn.response.create()  # type: ignore[attr-defined]
    calls = read_response(conn, answer)
    while calls:
        for call in calls:
            conn.conversation.item.create(  # type: ignore[attr-defined]
                item={
                    "type": "function_call_output",
                    "call_id": call.call_id,
                    "output": json.dumps({"temperature_c": 18, "sky": "sunny"}),
                }
            )
        conn.response.create()  # type: ignore[attr-defined]
        calls = read_response(conn, answer)
    return answer


def main() -> None:
    client = openai.OpenAI(max_retries=0)
    with client.realtime.connect(model=MODEL) as conn:
        answer = converse(conn)
    print(
        json.dumps(
            {
                "text": "".join(answer.text),
                "tool_calls": answer.calls,
                "finish_reason": answer.finish,
            }
        )
    )


if __name__ == "__main__":
    main()
