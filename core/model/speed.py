"""The ``--speed`` value of replay, serve and the pytest plugin: how fast recorded time passes."""

from __future__ import annotations

import math


def parse_speed(value: str) -> float | None:
    """``--speed`` (serve and replay): ``max`` -> ``None`` (no waiting); ``1``, ``2.5``, ``10x``
    -> a factor > 0."""
    text = value.strip().lower()
    if text in ("max", "inf", "infinity"):
        return None
    try:
        speed = float(text.removesuffix("x"))
    except ValueError:
        speed = math.nan
    if not speed > 0:  # also false for nan
        raise ValueError(f"--speed must be a number > 0 or 'max', not {value!r}")
    return None if math.isinf(speed) else speed
