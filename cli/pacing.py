"""Pacing a replay: wait between recorded reads so the stream plays at its recorded speed.

``Pacer(speed, max_gap).wait(t)`` is called before each read with the read's recording time
``t`` (seconds since the request was sent). It sleeps until ``t / speed`` seconds after the replay
began, where every pause is first shortened to at most ``max_gap`` seconds of wall time. The
schedule is kept against a monotonic clock, so time spent drawing between reads is not added to
the pauses. ``speed=None`` means as fast as possible (no waiting).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from streamtool.core.model.speed import parse_speed

__all__ = ["DEFAULT_MAX_GAP", "Pacer", "parse_speed"]

DEFAULT_MAX_GAP = 2.0
LATE_FORGIVEN = 0.25  # fall this far behind (a suspended process) and the schedule restarts


class Pacer:
    def __init__(
        self,
        speed: float | None,
        max_gap: float | None = DEFAULT_MAX_GAP,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if max_gap is not None and (math.isnan(max_gap) or max_gap < 0):
            raise ValueError("--max-gap must be a number of seconds >= 0")
        self.speed = speed
        self.max_gap = None if max_gap is None or math.isinf(max_gap) else max_gap
        self._clock = clock
        self._sleep = sleep
        self._last_t: float | None = None
        self._due: float | None = None
        self.slept = 0.0

    @property
    def paced(self) -> bool:
        return self.speed is not None

    def gap(self, t: float) -> float:
        """The wall-clock pause before the read at recording time ``t``."""
        assert self.speed is not None
        previous = 0.0 if self._last_t is None else self._last_t
        pause = max(0.0, t - previous) / self.speed
        if self.max_gap is not None:
            pause = min(pause, self.max_gap)
        return pause

    def wait(self, t: float | None) -> None:
        if self.speed is None or t is None:
            return
        pause = self.gap(t)
        self._last_t = t if self._last_t is None else max(self._last_t, t)
        now = self._clock()
        if self._due is None or now - self._due > LATE_FORGIVEN:
            self._due = now
        self._due += pause
        delay = self._due - now
        if delay > 0:
            self._sleep(delay)
            self.slept += delay
