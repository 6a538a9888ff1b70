"""Helpers for the converter tests: build wire bodies, replay them, cut them differently."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from streamtool.cli.sinks import item_to_dict
from streamtool.core.engine.replay import ReplayEngine
from streamtool.core.model.records import Chunk, End, Header
from streamtool.core.recording.reader import Source
from streamtool.core.wire.sse import SSEDecoder, SSEEvent

COMPLETE = End(None, "complete", None)


def sse(payload: dict[str, Any], named: bool = True, eol: str = "\n") -> str:
    """One SSE event holding ``payload`` (with an ``event:`` line naming its type if asked)."""
    data = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    head = f"event: {payload['type']}{eol}" if named and "type" in payload else ""
    return f"{head}data: {data}{eol}{eol}"


def body(payloads: list[dict[str, Any]], named: bool = True, eol: str = "\n") -> str:
    return "".join(sse(p, named, eol) for p in payloads)


def run(
    reads: list[bytes] | list[str] | str | bytes,
    *,
    header: Header | None = None,
    converter: str = "auto",
    parser: str = "api_tool_call",
    end: End | None = COMPLETE,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Replay ``reads``; the summary (without stats and source) and every item as a dict."""
    if isinstance(reads, str | bytes):
        reads = [reads]  # type: ignore[assignment]
    engine = ReplayEngine(header, converter=converter, parser=parser, source="test")
    items: list[Any] = []
    for read in reads:
        items.extend(engine.feed_chunk(Chunk(None, read)))
    items.extend(engine.finish(end))
    summary = engine.summary()
    summary.pop("stats")
    summary.pop("source")
    return summary, [item_to_dict(item, None) for item in items]


def joined(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items with adjacent content of one segment joined (the replay joins the argument
    fragments that arrive in one read, so how a body is cut decides only that)."""
    out: list[dict[str, Any]] = []
    for item in items:
        last = out[-1] if out else None
        if (
            last is not None
            and item.get("event") == "SEGMENT_CONTENT"
            and last.get("event") == "SEGMENT_CONTENT"
            and last["segment_id"] == item["segment_id"]
        ):
            out[-1] = dict(last, delta=last["delta"] + item["delta"])
        else:
            out.append(item)
    return out


def summary(reads: Any, **kwargs: Any) -> dict[str, Any]:
    return run(reads, **kwargs)[0]


def load(path: Path) -> tuple[Header, list[bytes], End | None]:
    """A recording or raw body: its header, its reads (as bytes) and its end record."""
    source = Source(path)
    reads = [
        c.data if isinstance(c.data, bytes) else c.data.encode("utf-8") for c in source.chunks()
    ]
    if source.raw:
        reads = [b"".join(reads)]
    return source.header, reads, source.end


def chunkings(data: bytes, seeds: tuple[int, ...] = (1, 2, 3)) -> dict[str, list[bytes]]:
    """The same bytes whole, one byte at a time, and cut at random points."""
    out = {"whole": [data], "bytewise": [data[i : i + 1] for i in range(len(data))]}
    for seed in seeds:
        rng = random.Random(seed)
        points = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(1, 60))))
        pieces, prev = [], 0
        for p in [*points, len(data)]:
            pieces.append(data[prev:p])
            prev = p
        out[f"random-{seed}"] = pieces
    return out


def assert_chunking_invariant(path: Path, converter: str = "auto") -> dict[str, Any]:
    """Replaying ``path`` gives the same summary and items however its bytes are cut."""
    header, reads, end = load(path)
    result, items = run(reads, header=header, end=end, converter=converter)
    reference = (result, joined(items))
    for name, pieces in chunkings(b"".join(reads)).items():
        again, again_items = run(pieces, header=header, end=end, converter=converter)
        assert (again, joined(again_items)) == reference, name
    return result


def payloads(path: Path) -> list[tuple[str | None, Any]]:
    """The (event name, JSON payload) of every SSE event of a raw body, in order."""
    decoder = SSEDecoder()
    events = decoder.feed(path.read_bytes()) + decoder.finish()
    out = []
    for ev in events:
        if isinstance(ev, SSEEvent) and ev.data.strip() and ev.data.strip() != "[DONE]":
            out.append((ev.event, json.loads(ev.data)))
    return out


def segments(items: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The END metadata of every segment of ``kind`` (text, reasoning, tool_call...)."""
    kinds = {}
    out = []
    for item in items:
        if item["type"] != "segment":
            continue
        if item["event"] == "SEGMENT_START":
            kinds[item["segment_id"]] = item["segment_type"]
        elif item["event"] == "SEGMENT_END" and kinds.get(item["segment_id"]) == kind:
            out.append(item["metadata"])
    return out


def calls(summary: dict[str, Any]) -> list[tuple[str, str, Any]]:
    return [(i["id"], i["name"], i["arguments"]) for i in summary["invocations"]]


def run_file(path: Path, **kwargs: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Replay a recording or raw body as recorded."""
    header, reads, end = load(path)
    return run(reads, header=header, end=end, **kwargs)


def recorded_payloads(path: Path) -> list[tuple[str | None, Any]]:
    """Like :func:`payloads`, for a recording (its reads joined into one body)."""
    _, reads, _ = load(path)
    decoder = SSEDecoder()
    events = decoder.feed(b"".join(reads)) + decoder.finish()
    return [
        (ev.event, json.loads(ev.data))
        for ev in events
        if isinstance(ev, SSEEvent) and ev.data.strip() and ev.data.strip() != "[DONE]"
    ]
