"""Output sinks for a replay: where the engine's items go (the JSON summary, JSONL events).

A sink has ``on_items(engine, t, items)`` (called as the stream plays) and ``close(engine)``.
"""

from __future__ import annotations

import json
import sys
from typing import IO, Any, Protocol

from streamtool.core.engine.replay import Item, ReplayEngine
from streamtool.core.model import (
    Quirk,
    SegmentEvent,
    ToolInvocation,
)
from streamtool.core.outputs.json_text import iter_json


class Sink(Protocol):
    def on_items(self, engine: ReplayEngine, t: float | None, items: list[Item]) -> None: ...

    def close(self, engine: ReplayEngine) -> None: ...


def item_to_dict(item: Item, t: float | None) -> dict[str, Any]:
    if isinstance(item, SegmentEvent):
        out = {"type": "segment", **item.to_dict()}
    elif isinstance(item, ToolInvocation):
        out = {"type": "invocation", **item.to_dict()}
    elif isinstance(item, Quirk):
        out = {"type": "quirk", **item.to_dict()}
    else:
        out = {"type": "error", **item.to_dict()}
    out["t"] = t
    return out


class JsonSink:
    """``--format json``: the summary object (docs/replay.md), printed once at the end."""

    # the summary does not depend on where the reads were cut: an unpaced replay is batched
    batchable = True

    def __init__(self, out: IO[str] | None = None) -> None:
        self.out = out or sys.stdout

    def on_items(self, engine: ReplayEngine, t: float | None, items: list[Item]) -> None:
        pass

    def close(self, engine: ReplayEngine) -> None:
        # written piece by piece: a long text or file argument is not copied whole to be printed
        write = self.out.write
        for piece in iter_json(engine.summary(pieces=True), indent=2):
            write(piece)
        write("\n")
        self.out.flush()


class JsonlSink:
    """``--format jsonl``: every segment event, invocation, quirk and error as it happens."""

    def __init__(self, out: IO[str] | None = None) -> None:
        self.out = out or sys.stdout

    def on_items(self, engine: ReplayEngine, t: float | None, items: list[Item]) -> None:
        write = self.out.write
        dumps = json.dumps
        for item in items:
            write(dumps(item_to_dict(item, t), ensure_ascii=False))
            write("\n")

    def close(self, engine: ReplayEngine) -> None:
        write = self.out.write
        for piece in iter_json({"type": "summary", **engine.summary(pieces=True)}):
            write(piece)
        write("\n")
        self.out.flush()
