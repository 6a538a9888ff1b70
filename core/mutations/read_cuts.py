"""Mutations of how the bytes arrive: where the reads are cut (catalogue section J). The events
are kept byte for byte (except that a CRLF split needs CRLF line ends); only the read boundaries
move, each read keeping the time of the recorded read its last byte came in."""

from __future__ import annotations

import bisect

from ..model.quirk_ids import QuirkId
from . import Scope, mutation
from .stream import Cut, Stream


def _time_at(cuts: list[Cut], offset: int) -> float | None:
    """The time of the recorded read that held byte ``offset - 1``."""
    k = bisect.bisect_left([at for at, _ in cuts], offset)
    if k < len(cuts):
        return cuts[k][1]
    return cuts[-1][1] if cuts else None


def _event_ends(s: Stream) -> list[int]:
    out = []
    at = 0
    for ev in s.events:
        at += len(ev.raw)
        out.append(at)
    return out


@mutation(QuirkId.READS_SINGLE, Scope.READS, stage=2)
def single_read(s: Stream) -> bool:
    cuts = s.global_cuts()
    ends = _event_ends(s)
    if len(s.events) < 2 or (len(cuts) == 1 and cuts[0][0] == ends[-1]):
        return False
    s.recut([(ends[-1], cuts[-1][1] if cuts else s.tail_t)])
    return True


@mutation(QuirkId.READS_ONE_EVENT_EACH, Scope.READS, stage=2)
def one_event_each(s: Stream) -> bool:
    cuts = s.global_cuts()
    ends = _event_ends(s)
    if len(s.events) < 2 or any(not ev.terminated for ev in s.events if s.framing == "sse"):
        return False
    s.recut([(end, _time_at(cuts, end)) for end in ends])
    return True


@mutation(QuirkId.READS_UTF8_SPLIT, Scope.READS, stage=3)
def utf8_split(s: Stream) -> bool:
    """Up to three multi-byte characters cut in the middle, each across two reads."""
    cuts = s.global_cuts()
    body = b"".join(ev.raw for ev in s.events)
    splits: list[int] = []
    at = 0
    while len(splits) < 3:
        found = next((k for k in range(at, len(body)) if body[k] >= 0xC0), None)
        if found is None:
            break
        splits.append(found + 1)
        at = found + 4 + len(body) // 8  # spread them over the body
    if not splits:
        return False
    merged = dict(cuts)
    for pos in splits:
        merged.setdefault(pos, _time_at(cuts, pos))
    s.recut(sorted(merged.items()))
    return True


@mutation(QuirkId.READS_CRLF_SPLIT, Scope.READS, stage=2)
def crlf_split(s: Stream) -> bool:
    """CRLF line ends, and every event's last CRLF cut between its CR and its LF."""
    if s.framing != "sse" or not s.events:
        return False
    for i, ev in enumerate(s.events):
        if b"\r" not in ev.raw:
            s.set_raw(i, ev.raw.replace(b"\n", b"\r\n"))
    cuts = s.global_cuts()
    merged = dict(cuts)
    for end, ev in zip(_event_ends(s), s.events, strict=True):
        if ev.raw.endswith(b"\r\n"):
            merged.setdefault(end - 1, _time_at(cuts, end))
    s.recut(sorted(merged.items()))
    return True
