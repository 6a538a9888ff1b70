"""``replay --emit``: the replayed stream re-encoded for other clients, written to stdout."""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import IO

from streamtool.core.outputs.emit_openai import OpenAISSEEmitter, stream_identity
from streamtool.core.replay import Item, ReplayEngine

from .errors import warn


class Emit(StrEnum):
    openai_sse = "openai-sse"


class OpenAISSESink:
    """``--emit openai-sse``: an OpenAI chat-completions SSE stream, written as the replay goes."""

    def __init__(self, out: IO[bytes] | None = None) -> None:
        self.out = out if out is not None else sys.stdout.buffer
        self.emitter: OpenAISSEEmitter | None = None

    def _emitter(self, engine: ReplayEngine) -> OpenAISSEEmitter:
        if self.emitter is None:
            completion_id, created = stream_identity(engine.header)
            self.emitter = OpenAISSEEmitter(completion_id=completion_id, created=created)
        if engine.model:
            self.emitter.model = engine.model
        return self.emitter

    def on_items(self, engine: ReplayEngine, t: float | None, items: list[Item]) -> None:
        text = self._emitter(engine).feed(items)
        if text:
            self.out.write(text.encode("utf-8"))
            self.out.flush()

    def close(self, engine: ReplayEngine) -> None:
        emitter = self._emitter(engine)
        text = emitter.finish(
            finish_reason=engine.finish_reason,
            usage=engine.usage,
            finish_class=engine.finish_class(),
        )
        self.out.write(text.encode("utf-8"))
        self.out.flush()
        carried = ("provider_error", "truncated", "segment")  # segment: the call carries it
        n = sum(1 for e in engine.errors if e.kind not in carried)
        if n:
            warn(
                f"{engine.source}: {n} error{'s' if n > 1 else ''} in the stream, not part of the "
                "emitted stream (see --format json)"
            )


def make_emit_sink(emit: Emit) -> OpenAISSESink:
    return OpenAISSESink()
