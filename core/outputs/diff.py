"""Comparing two replays side by side: what each stream meant and how it arrived. Sans-IO.

Two finished :class:`~streamtool.core.engine.replay.ReplayEngine` s that kept their segments
(``transcript=True``; two recordings, say two providers answering one prompt, or one recording
through two parsers or converters) are described
(:func:`describe`) and lined up row by row (:func:`diff_streams`).

**Meaning** (what decides ``same_meaning`` and the exit code of ``streamtool diff``) is what a
client acting on the stream would do differently:

- the text and the reasoning (all text segments joined, all reasoning segments joined);
- the tool calls the client must run, in order: name and arguments (parsed values, so
  ``{"a":1}`` and ``{"a": 1}`` are the same; the raw text when they did not parse). Calls the
  provider ran itself (``server_side``: web search, code execution...) are shown, not compared:
  the client does nothing with them, and APIs without hosted tools cannot carry them;
- the finish class (:mod:`streamtool.core.model.finish`): providers name the same ending differently
  (``tool_calls`` / ``tool_use`` / Gemini ``STOP`` after function calls, ``stop`` / ``end_turn``,
  ``length`` / ``max_tokens``);
- the kinds of errors in the stream (a stream that broke does not mean what a whole one does; the
  wording of the messages differs between converters and is shown, not compared; so are how many
  times a kind occurs and the end record's account of how the capture ended (``recording_error``,
  ``recording_interrupted``...: a raw SSE body has no end record, and what the stream itself says
  about its end is compared). A recording that lost its end record (``recording_cut_off``) may
  have lost data: that counts. Copies that contradict the streamed content (``text_mismatch``,
  ``arguments_mismatch``: a final event restating it otherwise) are shown, not compared: the
  streamed content is kept, so a client gets the same, and a re-encoded stream has no such copy.

Everything else is shown but does not count: ids (tool-call ids are random per request; segment
ids follow them), usage (token accounting differs between providers and runs without changing
what was said), quirks, the model name, how segments were cut, and how the stream arrived
(chunks, bytes, events, comments, CRLF framing, time to first token, duration, arguments sent
incrementally or all at once).
"""

from __future__ import annotations

import difflib
import json
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from ..model.finish import finish_class
from ..model.vocabulary import ErrorKind
from .transcript import build_transcript

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.replay import ReplayEngine

T = TypeVar("T")

MEANING = "meaning"
SECTIONS = ("stream", MEANING, "segments", "other", "arrival")


def describe(engine: ReplayEngine) -> dict[str, Any]:
    """One side of a diff: the transcript of a finished replay plus how the stream arrived.

    The replay must have kept its segments (``transcript=True``)."""
    transcript = build_transcript(engine)
    assert engine.segments is not None  # build_transcript said so otherwise
    fragments: Counter[str] = Counter(engine.segments.fragments)
    segments = [dict(seg, fragments=fragments[seg["id"]]) for seg in transcript["segments"]]
    provider_fragments = engine.argument_fragments()
    tool_calls = []
    server_calls = []
    for inv in transcript["invocations"]:
        if inv.get("server_side"):
            server_calls.append({k: inv[k] for k in ("id", "name", "arguments") if k in inv})
            continue
        n = provider_fragments.get(inv["id"], fragments[inv["id"]])
        call = {k: inv[k] for k in ("id", "name", "arguments", "raw_arguments") if k in inv}
        call["fragments"] = n
        call["arguments_arrived"] = arrival_label(n)
        tool_calls.append(call)
    text, reasoning = engine.texts()
    stats = engine.stats()
    return {
        "source": engine.source,
        "converter": transcript["converter"],
        "parser": transcript["parser"],
        "model": transcript["model"],
        "text": text,
        "refusal": engine.refusal(),
        "reasoning": reasoning,
        "tool_calls": tool_calls,
        "server_side_calls": server_calls,
        "finish_reason": transcript["finish_reason"],
        "finish_class": transcript["finish_class"],
        "usage": transcript["usage"],
        "errors": transcript["errors"],
        "quirks": transcript["quirks"],
        "segments": segments,
        "arrival": {
            key: stats[key]
            for key in ("chunks", "bytes", "sse_events", "comments", "crlf", "ttft_s", "duration_s")
        },
    }


def arrival_label(fragments: int) -> str:
    if fragments == 0:
        return "no argument text"
    if fragments == 1:
        return "all at once"
    return f"incremental ({fragments} fragments)"


@dataclass(slots=True)
class Row:
    """One line of the side-by-side view. ``meaning`` rows decide ``same_meaning``."""

    section: str
    field: str
    a: Any
    b: Any
    same: bool
    meaning: bool = False
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {
            "section": self.section,
            "field": self.field,
            "a": self.a,
            "b": self.b,
            "same": self.same,
            "meaning": self.meaning,
        }
        if self.note is not None:
            out["note"] = self.note
        return out


@dataclass(slots=True)
class StreamDiff:
    a: dict[str, Any]
    b: dict[str, Any]
    rows: list[Row] = field(default_factory=list)

    @property
    def differences(self) -> list[str]:
        """The meaning rows that differ (their field names)."""
        return [r.field for r in self.rows if r.meaning and not r.same]

    @property
    def same_meaning(self) -> bool:
        return not self.differences

    def to_dict(self) -> dict[str, Any]:
        return {
            "same_meaning": self.same_meaning,
            "differences": self.differences,
            "a": self.a,
            "b": self.b,
            "rows": [r.to_dict() for r in self.rows],
        }


def diff_streams(engine_a: ReplayEngine, engine_b: ReplayEngine) -> StreamDiff:
    return diff_descriptions(describe(engine_a), describe(engine_b))


def diff_descriptions(a: dict[str, Any], b: dict[str, Any]) -> StreamDiff:
    d = StreamDiff(a, b)
    rows = d.rows

    def row(section: str, name: str, va: Any, vb: Any, same: bool | None = None, **kw: Any) -> None:
        rows.append(Row(section, name, va, vb, va == vb if same is None else same, **kw))

    for key in ("source", "converter", "parser", "model"):
        row("stream", key, a[key], b[key])

    # meaning
    for key in ("text", "refusal", "reasoning"):
        if key == "refusal" and not (a.get(key) or b.get(key)):
            continue  # a row only when a side refused
        note = None
        if a[key] != b[key]:
            at = first_difference(a[key], b[key])
            note = f"first difference at character {at}"
        row(MEANING, key, a[key], b[key], meaning=True, note=note)
    calls = align(a["tool_calls"], b["tool_calls"], call_signature)
    for i, (ca, cb) in enumerate(calls, 1):
        same = ca is not None and cb is not None and call_signature(ca) == call_signature(cb)
        row(MEANING, f"tool call {i}", _call_view(ca), _call_view(cb), same, meaning=True)
    fa, fb = a["finish_reason"], b["finish_reason"]
    class_a, class_b = _finish_class_of(a), _finish_class_of(b)
    note = None
    if class_a == class_b and fa != fb:
        note = f"both mean {class_a!r}"
    elif class_a != class_b:
        note = f"{class_a!r} vs {class_b!r}"
    row(MEANING, "finish_reason", fa, fb, class_a == class_b, meaning=True, note=note)
    row(
        MEANING,
        "errors",
        [f"{e['kind']}: {e['message']}" for e in a["errors"]],
        [f"{e['kind']}: {e['message']}" for e in b["errors"]],
        error_kinds(a) == error_kinds(b),
        meaning=True,
    )

    # segments, aligned by type and content (ids are shown, not compared)
    segs = align(a["segments"], b["segments"], segment_signature)
    for i, (sa, sb) in enumerate(segs, 1):
        same = sa is not None and sb is not None and segment_signature(sa) == segment_signature(sb)
        row("segments", f"segment {i}", _segment_view(sa), _segment_view(sb), same)

    # shown, never compared for meaning
    row("other", "server-side calls", _server_calls(a), _server_calls(b))
    row("other", "usage", a["usage"], b["usage"])
    row("other", "quirks", [q["id"] for q in a["quirks"]], [q["id"] for q in b["quirks"]])

    # how the stream arrived
    for key, value in a["arrival"].items():
        row("arrival", key, value, b["arrival"][key])
    for i, (ca, cb) in enumerate(calls, 1):
        row("arrival", f"tool call {i} id", _get(ca, "id"), _get(cb, "id"))
        row(
            "arrival",
            f"tool call {i} arguments",
            _get(ca, "arguments_arrived"),
            _get(cb, "arguments_arrived"),
        )
    return d


def error_kinds(side: dict[str, Any]) -> list[str]:
    """The kinds of errors compared for meaning (each once; see the module docstring)."""
    return sorted(
        {
            kind
            for kind in (e["kind"] for e in side["errors"])
            if (not kind.startswith("recording_") or kind == ErrorKind.RECORDING_CUT_OFF)
            and not kind.endswith("_mismatch")
        }
    )


def _server_calls(side: dict[str, Any]) -> list[str]:
    return [str(c.get("name")) for c in side.get("server_side_calls", [])]


def _finish_class_of(side: dict[str, Any]) -> str:
    cls = side.get("finish_class")
    if isinstance(cls, str):
        return cls
    return finish_class(side.get("finish_reason"), errors=bool(side.get("errors")))


def call_signature(call: dict[str, Any]) -> str:
    """What a tool call means: its name and arguments (raw text when they did not parse)."""
    args = call.get("arguments")
    value = ["raw", call.get("raw_arguments")] if args is None else ["args", args]
    return json.dumps([call.get("name"), value], sort_keys=True, ensure_ascii=False)


def segment_signature(seg: dict[str, Any]) -> str:
    return json.dumps([seg["type"], seg["content"]], ensure_ascii=False)


def first_difference(a: str, b: str) -> int:
    """The index of the first character where ``a`` and ``b`` differ."""
    n = min(len(a), len(b))
    lo, hi = 0, n  # binary search on common-prefix length: C-speed slicing compares
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def align(
    a: Sequence[T], b: Sequence[T], key: Callable[[T], Hashable]
) -> list[tuple[T | None, T | None]]:
    """Pair the items of two sequences: equal items line up, the rest pair in order or alone."""
    keys_a = [key(x) for x in a]
    keys_b = [key(x) for x in b]
    out: list[tuple[T | None, T | None]] = []
    matcher = difflib.SequenceMatcher(None, keys_a, keys_b, autojunk=False)
    for _tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for k in range(max(i2 - i1, j2 - j1)):
            xa = a[i1 + k] if i1 + k < i2 else None
            xb = b[j1 + k] if j1 + k < j2 else None
            out.append((xa, xb))
    return out


def _get(item: dict[str, Any] | None, key: str) -> Any:
    return None if item is None else item.get(key)


def _call_view(call: dict[str, Any] | None) -> dict[str, Any] | None:
    if call is None:
        return None
    out = {"name": call["name"], "arguments": call["arguments"]}
    if call["arguments"] is None:
        out["raw_arguments"] = call.get("raw_arguments")
    return out


def _segment_view(seg: dict[str, Any] | None) -> dict[str, Any] | None:
    if seg is None:
        return None
    return {"type": seg["type"], "id": seg["id"], "content": seg["content"]}
