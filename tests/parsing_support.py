"""Helpers for the text-parser tests: run a handler over pieces of text, coalesce its events,
check that the event stream is well formed, and compare chunkings."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamtool.core.handlers import make_handler
from streamtool.core.handlers.base import StreamingResponseHandler
from streamtool.core.model import ChunkResponse, SegmentEvent, SegmentEventType


def run(parser: str, pieces: list[str] | str) -> StreamingResponseHandler:
    """Feed ``pieces`` (a list of chunks, or one string) as chunk contents, then finalize."""
    handler = make_handler(parser, keep_events=True)
    if isinstance(pieces, str):
        pieces = [pieces]
    for piece in pieces:
        handler.feed(ChunkResponse(content=piece))
    handler.finalize()
    return handler


def check_well_formed(events: list[SegmentEvent]) -> None:
    """Every segment starts once, gets non-empty deltas while open, and ends once."""
    open_ids: set[str] = set()
    seen: set[str] = set()
    for event in events:
        sid = event.segment_id
        if event.event_type is SegmentEventType.START:
            assert sid not in seen, f"segment {sid} started twice"
            seen.add(sid)
            open_ids.add(sid)
        elif event.event_type is SegmentEventType.CONTENT:
            assert sid in open_ids, f"content for a segment that is not open: {sid}"
            assert event.delta, f"empty delta in {sid}"
        else:
            assert sid in open_ids, f"END of a segment that is not open: {sid}"
            open_ids.discard(sid)
    assert not open_ids, f"segments never ended: {sorted(open_ids)}"


def coalesce(events: list[SegmentEvent]) -> list[dict[str, Any]]:
    """Segments in START order with their START/END metadata and joined content."""
    segments: dict[str, dict[str, Any]] = {}
    for event in events:
        sid = event.segment_id
        if event.event_type is SegmentEventType.START:
            assert event.segment_type is not None
            segments[sid] = {
                "id": sid,
                "type": event.segment_type.value,
                "start": dict(event.metadata or {}),
                "parts": [],
                "end": None,
            }
        elif event.event_type is SegmentEventType.CONTENT:
            segments[sid]["parts"].append(event.delta)
        else:
            segments[sid]["end"] = dict(event.metadata or {})
    out = []
    for seg in segments.values():
        parts = seg.pop("parts")
        seg["content"] = "".join(parts)
        out.append(seg)
    return out


def outcome(parser: str, pieces: list[str] | str) -> tuple[list[dict[str, Any]], list[dict]]:
    handler = run(parser, pieces)
    events = handler.get_all_events()
    check_well_formed(events)
    return coalesce(events), [inv.to_dict() for inv in handler.get_all_invocations()]


def segments(parser: str, pieces: list[str] | str) -> list[dict[str, Any]]:
    return outcome(parser, pieces)[0]


def invocations(parser: str, pieces: list[str] | str) -> list[dict]:
    return outcome(parser, pieces)[1]


def cut(text: str, points: list[int]) -> list[str]:
    bounds = sorted({p for p in points if 0 < p < len(text)})
    pieces = []
    last = 0
    for b in [*bounds, len(text)]:
        pieces.append(text[last:b])
        last = b
    return pieces


def cut_points(text: str) -> st.SearchStrategy[list[int]]:
    return st.lists(st.integers(min_value=0, max_value=max(len(text), 1)), max_size=40)


def assert_chunking_invariant(parser: str, text: str, points: list[int]) -> None:
    """Whole, one character at a time and at ``points`` give the same result."""
    whole = outcome(parser, text)
    assert outcome(parser, list(text)) == whole
    assert outcome(parser, cut(text, points)) == whole
    # small steady chunks (1..11 characters), the sizes that exposed the reference's bugs
    for size in (2, 3, 7, 11):
        pieces = [text[i : i + size] for i in range(0, len(text), size)]
        assert outcome(parser, pieces) == whole, f"chunks of {size} differ"


def text_of(segs: list[dict[str, Any]]) -> str:
    return "".join(s["content"] for s in segs if s["type"] == "text")


def chunking_tests(parser: str, examples: list[str], fragments: list[str]) -> tuple[Any, Any]:
    """The two chunking tests of a text parser, for its test module to bind as
    ``test_chunking_never_changes_meaning`` and
    ``test_random_fragments_chunking_never_changes_meaning``: each of ``examples``, and random
    texts made of the format's ``fragments`` (markers, cut markers, quotes, brackets...), give
    the same result whole, a character at a time and cut anywhere."""

    @pytest.mark.parametrize("text", examples, ids=range(len(examples)))
    @settings(max_examples=25, deadline=None)
    @given(data=st.data())
    def examples_test(text: str, data: st.DataObject) -> None:
        assert_chunking_invariant(parser, text, data.draw(cut_points(text)))

    @settings(max_examples=40, deadline=None)
    @given(parts=st.lists(st.sampled_from(fragments), max_size=30), data=st.data())
    def fragments_test(parts: list[str], data: st.DataObject) -> None:
        text = "".join(parts)
        assert_chunking_invariant(parser, text, data.draw(cut_points(text)))

    return examples_test, fragments_test
