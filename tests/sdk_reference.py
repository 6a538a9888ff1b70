"""The official SDKs' own accumulators as references, reached through their public API only.

A stream's bytes are served over HTTP on 127.0.0.1 (read by read) and read by the SDK's client
as a user's code would: ``messages.stream()`` for anthropic, ``responses.stream()`` for the
Responses API, and ``chat.completions.create(stream=True)`` fed to the public
``ChatCompletionStreamState`` for Chat Completions. What the SDK raises is kept beside what it
had built when it raised, so tests can state where the SDK stops and why.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streamtool.core.recording.reader import Source

from .emit_clients import anthropic_client, openai_client, stream_server

_names = itertools.count()


def body_reads(path: Path) -> list[bytes]:
    """A raw capture's bytes as one read, or a recording's reads as recorded."""
    if path.suffix == ".jsonl":
        return [
            c.data if isinstance(c.data, bytes) else c.data.encode() for c in Source(path).chunks()
        ]
    return [path.read_bytes()]


class Streams:
    """One local server for a test module: :meth:`base` serves the given reads on a new route."""

    def __init__(self, base: str, bodies: dict[str, tuple[int, str, list[bytes]]]) -> None:
        self._base = base
        self._bodies = bodies

    def base(self, reads: list[bytes]) -> str:
        name = f"s{next(_names)}"
        self._bodies[name] = (200, "text/event-stream", reads)
        return f"{self._base}/{name}"


@contextmanager
def serving() -> Iterator[Streams]:
    with stream_server() as (base, bodies):
        yield Streams(base, bodies)


@dataclass
class Outcome:
    """What the SDK built (``None`` if nothing) and what it raised (``None`` if it finished)."""

    value: Any
    raised: BaseException | None


def anthropic_message(base: str) -> Outcome:
    """``MessageStream``'s snapshot: the final message, or the snapshot when it raised."""
    client = anthropic_client(base)
    with client.messages.stream(
        model="m", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        try:
            return Outcome(stream.get_final_message(), None)
        except Exception as exc:  # the SDK stops at an error event: keep what it had
            return Outcome(stream.current_message_snapshot, exc)


def openai_response(base: str) -> Outcome:
    """The Responses stream helper's final response, or what it raised."""
    client = openai_client(base)
    try:
        with client.responses.stream(model="m", input="hi") as stream:
            return Outcome(stream.get_final_response(), None)
    except Exception as exc:
        return Outcome(None, exc)


def openai_chat_snapshot(base: str) -> Outcome:
    """The chunks the SDK's stream yields, fed to its public ``ChatCompletionStreamState``."""
    from openai.lib.streaming.chat import ChatCompletionStreamState

    client = openai_client(base)
    state = ChatCompletionStreamState()
    raised: BaseException | None = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pydantic warns about Mistral's content arrays
        try:
            stream = client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], stream=True
            )
            with stream:
                for chunk in stream:
                    state.handle_chunk(chunk)
        except Exception as exc:
            raised = exc
    try:
        snapshot = state.current_completion_snapshot
    except AssertionError:  # no chunk arrived
        snapshot = None
    return Outcome(snapshot, raised)
