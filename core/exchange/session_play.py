"""Planning how a recorded WebSocket session is played back to a client (sans-IO).

:func:`script` turns a session's records into :class:`Step`\\ s: the server's messages to send
(at their recorded time), the client's messages to wait for and compare, the close to send (or
the connection to drop, for a session whose server went without a close frame), the client's
close to wait for. :func:`difference` compares a client's message with the recorded one, as
the API's ``session`` part normalizes both (``normalize_client_event``: ids, event ids and
audio payloads left out); it names the first field that differs. The server only sleeps, sends
and receives (:mod:`streamtool.core.net.ws_serve`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ..model.records import Control, Message
from ..wire import fastjson

SEND = "send"  # send a server message
EXPECT = "expect"  # wait for a client message and compare it
CLOSE = "close"  # close with the recorded code and reason
DROP = "drop"  # drop the connection without a close frame
AWAIT_CLOSE = "await close"  # the client closed: wait for it to
PAUSE = "pause"  # the server pinged: the connection idled until then (kept at any speed)


@dataclass(frozen=True, slots=True)
class Step:
    kind: str
    at: float  # the recorded time (seconds from the session's start)
    data: str | bytes = ""
    code: int | None = None
    reason: str = ""
    index: int = 0  # EXPECT: the client message's number in the session (1, 2...)


def script(records: Iterable[Message | Control]) -> list[Step]:
    """The steps of a session: everything up to the first close (a session ends there)."""
    steps: list[Step] = []
    last = 0.0
    n = 0
    for record in records:
        at = record.t if record.t is not None else last
        last = at
        if type(record) is Message:
            if record.direction == "server":
                steps.append(Step(SEND, at, record.data))
            else:
                n += 1
                steps.append(Step(EXPECT, at, record.data, index=n))
            continue
        assert type(record) is Control
        if record.kind == "ping" and record.direction == "server":
            # the connection idled until the ping: the pause is served (the pings themselves
            # are the server's keep-alive, uvicorn's)
            steps.append(Step(PAUSE, at))
            continue
        if record.kind != "close":
            continue
        if record.direction == "server":
            if record.code is None:
                steps.append(Step(DROP, at))
            else:
                steps.append(Step(CLOSE, at, code=record.code, reason=record.reason))
        else:
            steps.append(Step(AWAIT_CLOSE, at, code=record.code, reason=record.reason))
        break
    return steps


def delays(steps: list[Step], speed: float | None, max_gap: float | None) -> Iterator[float]:
    """For each step, how long to wait before it after the step before (or after the client
    message the step answers): the recorded gap at ``speed`` (``None``: none), capped at
    ``max_gap``. A pause the server pinged through is kept at any speed."""
    last = 0.0
    for step in steps:
        gap = max(step.at - last, 0.0)
        last = step.at
        if step.kind == EXPECT or (speed is None and step.kind != PAUSE):
            yield 0.0
            continue
        if speed is not None:
            gap /= speed
        yield gap if max_gap is None else min(gap, max_gap)


def _parsed(data: str | bytes) -> Any:
    if isinstance(data, bytes):
        return _BINARY
    try:
        return fastjson.loads(data)
    except ValueError:
        return data


_BINARY = object()


def first_difference(expected: Any, got: Any, path: str = "") -> str | None:
    """Where two JSON values first differ (a dotted path and both values), or ``None``."""
    where = path or "the event"
    if isinstance(expected, dict) and isinstance(got, dict):
        for key in expected:
            at = f"{path}.{key}" if path else str(key)
            if key not in got:
                return f"{at}: missing (recorded {_show(expected[key])})"
            found = first_difference(expected[key], got[key], at)
            if found is not None:
                return found
        for key in got:
            if key not in expected:
                at = f"{path}.{key}" if path else str(key)
                return f"{at}: not recorded (got {_show(got[key])})"
        return None
    if isinstance(expected, list) and isinstance(got, list):
        for i, (a, b) in enumerate(zip(expected, got, strict=False)):
            found = first_difference(a, b, f"{path}.{i}" if path else str(i))
            if found is not None:
                return found
        if len(expected) != len(got):
            return f"{where}: {len(got)} items, recorded {len(expected)}"
        return None
    if expected == got and type(expected) is type(got):
        return None
    return f"{where}: expected {_show(expected)}, got {_show(got)}"


def _show(value: Any) -> str:
    if value is _BINARY:
        return "a binary message"
    text = repr(value) if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 80 else text[:79] + "…"


def difference(
    step: Step, got: str | bytes, normalize: Callable[[Any], Any] | None = None
) -> str | None:
    """Why a client's message does not match the recorded one (``None``: it matches). Its
    ``type`` is compared first, then the rest as ``normalize`` leaves them."""
    expected, received = _parsed(step.data), _parsed(got)
    if expected is _BINARY or received is _BINARY:
        if expected is received:
            return None  # binary payloads (audio) are not compared
        return f"expected {_show(expected)}, got {_show(received)}"
    kind = expected.get("type") if isinstance(expected, dict) else None
    got_kind = received.get("type") if isinstance(received, dict) else None
    if kind != got_kind:
        return f"expected a {kind or 'message'} event, got {got_kind or _show(received)}"
    if normalize is not None:
        expected, received = normalize(expected), normalize(received)
    return first_difference(expected, received)
