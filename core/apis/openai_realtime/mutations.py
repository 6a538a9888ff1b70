"""The Realtime faults ``mutate``, ``serve --mutate`` and ``conform --mutate`` apply to a recorded
session (:mod:`streamtool.core.mutations.session`): each edits the session's messages and returns
whether it found something to change.

- ``error_mid_response``: a non-fatal ``error`` event halfway through a response (the session
  goes on);
- ``rate_limits_after_done``: ``rate_limits.updated`` moved (or added) right after each
  ``response.done``;
- ``close_request_shape`` / ``close_auth``: the session refused at its start, as the server does
  it: an ``error`` event, then a close 4000 (``invalid_request_error.beta_api_shape_disabled``) or
  3000 (``invalid_request_error.invalid_api_key``);
- ``beta_names``: the server speaks the retired beta names;
- ``drop_mid_response``: the connection dropped without a close frame halfway through the last
  response;
- ``long_pause``: a pause of :data:`PAUSE` seconds halfway through a response, with the
  server's keep-alive pings in it.
"""

from __future__ import annotations

from typing import Any

from msgspec.structs import replace

from ...model.quirk_ids import QuirkId
from ...model.records import Control
from ...mutations import ApiMutations
from ...mutations.session import Session
from . import API
from .session import TERMINAL

realtime = ApiMutations(API.id)

PAUSE = 6.0  # seconds of the long pause (the server pings every PING_EVERY seconds in it)
PING_EVERY = 2.0
_DELTAS = (
    "response.output_text.delta",
    "response.output_audio.delta",
    "response.output_audio_transcript.delta",
    "response.function_call_arguments.delta",
    "response.mcp_call_arguments.delta",
)
_GA_TO_BETA = {
    "response.output_text.delta": "response.text.delta",
    "response.output_text.done": "response.text.done",
    "response.output_audio.delta": "response.audio.delta",
    "response.output_audio.done": "response.audio.done",
    "response.output_audio_transcript.delta": "response.audio_transcript.delta",
    "response.output_audio_transcript.done": "response.audio_transcript.done",
    "conversation.item.added": "conversation.item.created",
}
# the refusals a session gets at its start: (close code, the error's type and code, message)
_REFUSALS = {
    4000: (
        "invalid_request_error",
        "beta_api_shape_disabled",
        "The Realtime beta API shape is no longer supported; use the GA event names",
    ),
    3000: (
        "invalid_request_error",
        "invalid_api_key",
        "Incorrect API key provided",
    ),
}


def _responses(s: Session) -> list[tuple[int, int]]:
    return s.responses("response.created", TERMINAL)


def _middle_delta(s: Session, start: int, end: int) -> int | None:
    """The record index of the middle delta of a response (``None``: it has none)."""
    deltas = [i for i in range(start, end) if s.kind(i) in _DELTAS]
    return deltas[len(deltas) // 2] if deltas else None


@realtime(QuirkId.REALTIME_ERROR_NOT_FATAL, changes=("errors",), session=True)
def error_mid_response(s: Session) -> bool:
    for start, end in _responses(s):
        middle = _middle_delta(s, start, end)
        if middle is None:
            continue
        error = {
            "type": "error",
            "event_id": "event_streamtool_error",
            "error": {
                "type": "server_error",
                "code": None,
                "message": "The server had an error while processing your request; the "
                "response goes on (streamtool's fault injection)",
                "param": None,
                "event_id": None,
            },
        }
        s.insert(middle + 1, error)
        return True
    return False


@realtime(QuirkId.REALTIME_RATE_LIMITS_AFTER_DONE, session=True)
def rate_limits_after_done(s: Session) -> bool:
    limits = [i for i, obj in s.events() if obj.get("type") == "rate_limits.updated"]
    template: dict[str, Any] = (
        s.event(limits[0]) or {}
        if limits
        else {
            "type": "rate_limits.updated",
            "event_id": "event_streamtool_rate_limits",
            "rate_limits": [
                {"name": "requests", "limit": 5000, "remaining": 4999, "reset_seconds": 0.01},
                {"name": "tokens", "limit": 40000, "remaining": 39000, "reset_seconds": 1.5},
            ],
        }
    )
    for i in reversed(limits):
        del s.records[i]
    done = [i for i, obj in s.events() if obj.get("type") == "response.done"]
    if not done:
        return False
    for i in reversed(done):
        s.insert(i + 1, template, t=s.time(i))
    return True


def _refuse(s: Session, code: int) -> bool:
    first = next((i for i, _ in s.events()), None)
    if first is None:
        return False
    kind, error_code, message = _REFUSALS[code]
    t = s.time(first)
    del s.records[:]
    s.insert(
        0,
        {
            "type": "error",
            "event_id": "event_streamtool_refused",
            "error": {
                "type": kind,
                "code": error_code,
                "message": message,
                "param": None,
                "event_id": None,
            },
        },
        t=t,
    )
    s.records.append(Control(t, "server", "close", code=code, reason=f"{kind}.{error_code}"))
    return True


@realtime(QuirkId.REALTIME_CLOSE_REQUEST_SHAPE, changes=("all",), session=True)
def close_request_shape(s: Session) -> bool:
    return _refuse(s, 4000)


@realtime(QuirkId.REALTIME_CLOSE_AUTH, changes=("all",), session=True)
def close_auth(s: Session) -> bool:
    return _refuse(s, 3000)


@realtime(QuirkId.REALTIME_BETA_EVENT_NAMES, session=True)
def beta_names(s: Session) -> bool:
    found = False
    for i, obj in list(s.events()):
        beta = _GA_TO_BETA.get(str(obj.get("type")))
        if beta is not None:
            s.replace(i, {**obj, "type": beta})
            found = True
    return found


@realtime(QuirkId.WS_DROPPED_MID_RESPONSE, changes=("all",), session=True)
def drop_mid_response(s: Session) -> bool:
    responses = _responses(s)
    if not responses:
        return False
    start, end = responses[-1]
    middle = _middle_delta(s, start, end)
    if middle is None:
        return False
    t = s.time(middle)
    s.cut(middle + 1)
    s.records.append(Control(t, "server", "close"))
    return True


@realtime(QuirkId.WS_LONG_PAUSE_PINGS, stage=1, session=True)
def long_pause(s: Session) -> bool:
    for start, end in _responses(s):
        middle = _middle_delta(s, start, end)
        if middle is None:
            continue
        t = s.time(middle)
        pings = [
            Control(round(t + PING_EVERY * (n + 1), 6), "server", "ping")
            for n in range(int(PAUSE // PING_EVERY))
        ]
        # everything after the middle delta comes PAUSE seconds later
        later = [
            replace(record, t=None if record.t is None else round(record.t + PAUSE, 6))
            for record in s.records[middle + 1 :]
        ]
        s.records[middle + 1 :] = [*pings, *later]
        if s.end is not None and s.end.t is not None:
            s.end = replace(s.end, t=round(s.end.t + PAUSE, 6))
        return True
    return False
