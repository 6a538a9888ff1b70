"""Output sinks for a replay: where the engine's items go (JSON, JSONL, a readable text view).

A sink has ``on_items(engine, t, items)`` (called as the stream plays) and ``close(engine)``.
"""

from __future__ import annotations

import json
import sys
from typing import IO, Any, Protocol

from streamtool.core.model import (
    Quirk,
    SegmentEvent,
    SegmentEventType,
    SegmentType,
    ToolInvocation,
)
from streamtool.core.replay import Item, ReplayEngine


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
    """``--format json``: the summary object of DESIGN.md, printed once at the end."""

    def __init__(self, out: IO[str] | None = None) -> None:
        self.out = out or sys.stdout

    def on_items(self, engine: ReplayEngine, t: float | None, items: list[Item]) -> None:
        pass

    def close(self, engine: ReplayEngine) -> None:
        json.dump(engine.summary(), self.out, ensure_ascii=False, indent=2)
        self.out.write("\n")
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
        summary = engine.summary()
        self.out.write(json.dumps({"type": "summary", **summary}, ensure_ascii=False) + "\n")
        self.out.flush()


class TextSink:
    """``--format text``: a plain, readable transcript of the stream, printed at the end."""

    def __init__(self, out: IO[str] | None = None) -> None:
        self.out = out or sys.stdout

    def on_items(self, engine: ReplayEngine, t: float | None, items: list[Item]) -> None:
        pass

    def close(self, engine: ReplayEngine) -> None:
        self.out.write(render_text(engine))
        self.out.flush()


def render_text(engine: ReplayEngine) -> str:
    lines: list[str] = []
    head = [engine.source or "stream", engine.converter_name or "?", engine.parser]
    if engine.model:
        head.append(engine.model)
    lines.append(" · ".join(head))
    segments: dict[str, tuple[SegmentType, dict[str, Any], list[str]]] = {}
    order: list[str] = []
    ends: dict[str, dict[str, Any]] = {}
    for ev in engine.handler.get_all_events():
        if ev.event_type is SegmentEventType.START:
            assert ev.segment_type is not None
            segments[ev.segment_id] = (ev.segment_type, dict(ev.metadata or {}), [])
            order.append(ev.segment_id)
        elif ev.event_type is SegmentEventType.CONTENT:
            segments[ev.segment_id][2].append(ev.delta or "")
        else:
            ends[ev.segment_id] = ev.metadata or {}
    for seg_id in order:
        kind, meta, parts = segments[seg_id]
        meta.update(ends.get(seg_id, {}))
        body = "".join(parts)
        if kind is SegmentType.TEXT:
            lines.append("── text")
        elif kind is SegmentType.REASONING:
            lines.append("── reasoning")
        else:
            label = meta.get("tool_name") or kind.value
            lines.append(f"── {kind.value} {label} ({seg_id})")
            if meta.get("path"):
                lines.append(f"   path: {meta['path']}")
            if kind is SegmentType.TOOL_CALL and meta.get("arguments") is not None:
                body = json.dumps(meta["arguments"], ensure_ascii=False, indent=2)
        lines.append(body)
        if meta.get("incomplete"):
            lines.append("   [incomplete]")
    invocations = engine.invocations()
    if invocations:
        lines.append(f"── invocations ({len(invocations)})")
        for inv in invocations:
            args = (
                json.dumps(inv.arguments, ensure_ascii=False)
                if inv.arguments is not None
                else (f"null (raw: {inv.raw_arguments!r})")
            )
            lines.append(f"   {inv.name}({args})  id={inv.id}")
    tail = [f"finish_reason: {engine.finish_reason}"]
    if engine.usage:
        tail.append("usage: " + ", ".join(f"{k} {v}" for k, v in engine.usage.items()))
    stats = engine.stats()
    tail.append(f"{stats['chunks']} chunks, {stats['bytes']} bytes, {stats['sse_events']} events")
    lines.append("── " + " · ".join(tail))
    for err in engine.errors:
        lines.append(f"error: {err.kind}: {err.message}")
    for q in engine.quirks:
        lines.append(f"quirk: {q.id}: {q.detail}")
    return "\n".join(lines) + "\n"
