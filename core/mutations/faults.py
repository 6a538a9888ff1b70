"""Faults of the model's output, and an error inside a 200 stream, cut into a real stream
(catalogue section I, and ``provider_error``, ``tool_id_reused``).

Where a fault goes depends on the API's shape: each API's mutations part has the rules, under the
fault's name, and a fault applies to the APIs that have its rule:

- ``args_invalid_json(s) -> bool``: the last call whose arguments hold a string value, cut in the
  middle of it (:func:`mid_string`);
- ``args_empty(s) -> bool``: the last call's arguments made an empty string;
- ``tool_not_offered(s, offered, other) -> bool``: the first call of an offered tool renamed
  ``other(name)``;
- ``stream_cut_mid_call(s) -> int | None``: the event after which the stream ends inside the last
  call's arguments;
- ``call_id_duplicate(s) -> bool``: the second call given the first one's id;
- ``ERROR_EVENT``: an error event in the provider's shape (``provider_error``).
"""

from __future__ import annotations

from typing import Any

from ..engine.wire_watch import offered_tools
from ..model.quirk_ids import QuirkId
from . import Decorator, MutationFunc, Scope, mutation, rules_of
from .stream import Stream


def mid_string(text: str) -> int | None:
    """A cut inside the last string value of a JSON text (after at least one character of it)."""
    starts: list[tuple[int, int]] = []  # (opening quote, closing quote) of every string
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            starts.append((i, j))
            i = j + 1
        else:
            i += 1
    values = [(a, b) for a, b in starts if b - a > 2 and text[b + 1 : b + 2] != ":"]
    if not values:
        return None
    a, b = values[-1]
    cut = a + 1 + (b - a - 1) // 2
    if text[cut - 1] == "\\":
        cut -= 1
    return cut


def _rules(s: Stream) -> Any:
    rules = rules_of(s.api)
    assert rules is not None, s.api
    return rules


def fault(quirk: QuirkId, changes: tuple[str, ...]) -> Decorator:
    """A fault (of ``quirk``) the APIs whose mutations part has a rule of the function's name
    apply."""

    def register(func: MutationFunc) -> MutationFunc:
        return mutation(quirk, Scope.FAULT, rule=func.__name__, changes=changes)(func)

    return register


# -- the faults --------------------------------------------------------------------------------
@fault(QuirkId.MODEL_ARGS_INVALID_JSON, changes=("all",))
def args_invalid_json(s: Stream) -> bool:
    """The last call's arguments cut in the middle of a string; the call and the stream end
    normally after it."""
    return bool(_rules(s).args_invalid_json(s))


@fault(QuirkId.MODEL_ARGS_EMPTY, changes=("all",))
def args_empty(s: Stream) -> bool:
    """The last call's arguments sent as an empty string."""
    return bool(_rules(s).args_empty(s))


@fault(QuirkId.MODEL_TOOL_NOT_OFFERED, changes=("all",))
def tool_not_offered(s: Stream) -> bool:
    """The first call names a tool the request did not offer."""
    offered = offered_tools(s.header.request.get("body"))
    if offered is None:
        return False

    def other(name: str) -> str:
        new = name + "_v2"
        while new in offered:
            new += "_v2"
        return new

    return bool(_rules(s).tool_not_offered(s, offered, other))


@fault(QuirkId.MODEL_STREAM_CUT_MID_CALL, changes=("all",))
def stream_cut_mid_call(s: Stream) -> bool:
    """The stream ends (cleanly) in the middle of the last call's arguments."""
    at: int | None = _rules(s).stream_cut_mid_call(s)
    if at is None:
        return False
    s.truncate(at + 1)
    return True


@fault(QuirkId.TOOL_ID_REUSED, changes=("ids",))
def call_id_duplicate(s: Stream) -> bool:
    """The second tool call comes with the first one's id."""
    return bool(_rules(s).call_id_duplicate(s))


@mutation(QuirkId.PROVIDER_ERROR, Scope.FAULT, rule="ERROR_EVENT", changes=("all",))
def provider_error(s: Stream) -> bool:
    """Halfway through, an error event in the provider's shape, then the stream ends."""
    datas = [i for i, _ in s.data_events()]
    if len(datas) < 3:
        return False
    at = datas[len(datas) // 2]
    s.truncate(at)
    s.insert_json(at, _rules(s).ERROR_EVENT, like=datas[0], name="error")
    return True
