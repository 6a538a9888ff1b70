"""Planning how a recorded body is written back to a client (sans-IO).

``schedule(chunks, playback, total)`` turns recorded reads ``(t, bytes)`` into the writes a
server makes: when (seconds after the request arrived) and what. Fault injection for tests lives
here too: re-cutting the body into N-byte writes or at pseudo-random points from a seed, pausing
mid-stream, dropping the connection after N bytes. The server only sleeps and sends.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

# response headers never replayed: framing and connection handling are the server's own, the
# body is served decoded, and cookies or redacted values mean nothing to a client
DROPPED_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "transfer-encoding",
        "content-length",
        "content-encoding",
        "date",
        "server",
        "set-cookie",
        "alt-svc",
        "strict-transport-security",
        "via",
    }
)


@dataclass(frozen=True, slots=True)
class Playback:
    """How to play recordings back.

    ``speed``: 1.0 keeps the recorded pacing, 2.0 plays twice as fast, ``None`` sends
    without any sleep. ``rechunk``: write the body in pieces of this many bytes.
    ``rechunk_seed``: cut the body at pseudo-random points drawn from this seed (see
    :func:`random_cuts`; the same seed and body always give the same cuts). ``stall``:
    pause this many seconds once ``stall_after`` bytes were written (default: half the body).
    ``cut_after``: drop the connection once this many bytes were written. ``max_gap``: no
    pause between two writes lasts longer than this many seconds (``None``: as recorded).
    """

    speed: float | None = 1.0
    rechunk: int | None = None
    rechunk_seed: int | None = None
    stall: float = 0.0
    stall_after: int | None = None
    cut_after: int | None = None
    max_gap: float | None = None

    def __post_init__(self) -> None:
        if self.speed is not None and not self.speed > 0:
            raise ValueError("speed must be a positive number (or max)")
        if self.rechunk is not None and self.rechunk < 1:
            raise ValueError("rechunk must be at least 1 byte")
        if self.rechunk is not None and self.rechunk_seed is not None:
            raise ValueError("rechunk and rechunk_seed cannot be combined")
        if self.stall < 0:
            raise ValueError("stall must not be negative")
        if self.stall_after is not None and self.stall_after < 0:
            raise ValueError("stall-after must not be negative")
        if self.cut_after is not None and self.cut_after < 0:
            raise ValueError("cut-after must not be negative")
        if self.max_gap is not None and not self.max_gap >= 0:
            raise ValueError("--max-gap must be a number of seconds >= 0")


@dataclass(frozen=True, slots=True)
class Write:
    at: float  # seconds after the request arrived
    data: bytes


@dataclass(frozen=True, slots=True)
class Cut:
    """Drop the connection now (after ``sent`` bytes)."""

    sent: int


def _timed(
    chunks: Iterable[tuple[float | None, bytes]],
    speed: float | None,
    max_gap: float | None = None,
) -> Iterator[Write]:
    last = 0.0
    at = 0.0
    for t, data in chunks:
        if speed is not None and t is not None and t > last:
            gap = (t - last) / speed
            at += gap if max_gap is None else min(gap, max_gap)
            last = t
        if data:
            yield Write(at, data)


def _rechunk(writes: Iterable[Write], size: int) -> Iterator[Write]:
    buf = bytearray()
    at = 0.0
    for w in writes:
        buf += w.data
        at = w.at  # a piece is sent when the read holding its last byte was received
        if len(buf) >= size:
            whole = len(buf) - len(buf) % size
            for i in range(0, whole, size):
                yield Write(at, bytes(buf[i : i + size]))
            del buf[:whole]
    if buf:
        yield Write(at, bytes(buf))


# where a cut is most likely to break a client: before a UTF-8 continuation byte (mid-character)
# and between the CR and LF of a CRLF (mid line end)
_TRICKY = re.compile(rb"[\x80-\xbf]|(?<=\r)\n")
MAX_RANDOM_PIECE = 48


def random_cuts(body: bytes, seed: int) -> list[int]:
    """Offsets (0 < cut < len(body), ascending) at which to cut ``body``, drawn from ``seed``.

    Pieces are 1 to :data:`MAX_RANDOM_PIECE` bytes long, so most cuts fall mid-line and
    mid-event; on top of that, each spot where a cut splits a UTF-8 character or a CRLF is cut
    with probability one half, so those spots are exercised in every body that has them.
    """
    rng = random.Random(seed)
    size = len(body)
    cuts: set[int] = set()
    at = rng.randint(1, MAX_RANDOM_PIECE)
    while at < size:
        cuts.add(at)
        at += rng.randint(1, MAX_RANDOM_PIECE)
    for m in _TRICKY.finditer(body):
        if m.start() > 0 and rng.random() < 0.5:
            cuts.add(m.start())
    return sorted(cuts)


def _random_rechunk(writes: Iterable[Write], seed: int) -> Iterator[Write]:
    """The body cut at :func:`random_cuts`; a piece is sent when the read holding its last
    byte was received."""
    timed = list(writes)
    body = b"".join(w.data for w in timed)
    if not body:
        return
    ends: list[tuple[int, float]] = []  # (offset just past a read, its time)
    offset = 0
    for w in timed:
        offset += len(w.data)
        ends.append((offset, w.at))
    start = 0
    read = 0
    for cut in [*random_cuts(body, seed), len(body)]:
        while ends[read][0] < cut:
            read += 1
        yield Write(ends[read][1], body[start:cut])
        start = cut


def schedule(
    chunks: Iterable[tuple[float | None, bytes]], playback: Playback, total: int
) -> Iterator[Write | Cut]:
    """The writes (and maybe a final :class:`Cut`) for a body of ``total`` bytes."""
    writes: Iterable[Write] = _timed(chunks, playback.speed, playback.max_gap)
    if playback.rechunk:
        writes = _rechunk(writes, playback.rechunk)
    elif playback.rechunk_seed is not None:
        writes = _random_rechunk(writes, playback.rechunk_seed)
    stall_at: int | None = None
    if playback.stall > 0:
        stall_at = playback.stall_after if playback.stall_after is not None else total // 2
    cut_at = playback.cut_after
    sent = 0
    shift = 0.0
    for w in writes:
        data = w.data
        while data:
            # split the write where a stall or the cut must happen
            limits = [x - sent for x in (stall_at, cut_at) if x is not None and x >= sent]
            room = min(limits) if limits else len(data)
            if room == 0:
                if cut_at is not None and sent >= cut_at:
                    yield Cut(sent)
                    return
                shift += playback.stall
                stall_at = None
                continue
            piece, data = data[:room], data[room:]
            sent += len(piece)
            yield Write(w.at + shift, piece)
    if cut_at is not None:
        yield Cut(sent)
