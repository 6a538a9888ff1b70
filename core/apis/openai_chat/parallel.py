"""OpenAI's parallel-call wrapper: one call whose arguments hold the real calls.

Some OpenAI models, asked for several calls at once, send one call of a tool that was never
declared, ``multi_tool_use.parallel`` (Chat Completions) or ``parallel`` (Responses), whose
arguments are ``{"tool_uses": [{"recipient_name": "functions.NAME", "parameters": {...}}]}``.
The decoders hold such a call until its arguments are whole and give the calls it wraps instead.
Sans-IO.
"""

from __future__ import annotations

import json
from typing import Any

from ...model import ToolCallDelta
from ...pipeline.tracker import ToolCallTracker

PARALLEL_WRAPPER = "multi_tool_use.parallel"  # Chat Completions' name of the wrapper


class Wrapper:
    """A wrapper call being received: its id and its argument text so far."""

    __slots__ = ("call_id", "arguments")

    def __init__(self, call_id: str | None) -> None:
        self.call_id = call_id
        self.arguments: list[str] = []


def tool_uses(text: str) -> list[tuple[str, Any]] | None:
    """``{"tool_uses": [{"recipient_name": "functions.NAME", "parameters": {...}}]}`` as
    ``[(NAME, parameters)]``; None when the text is not that."""
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    uses = obj.get("tool_uses") if isinstance(obj, dict) else None
    if not isinstance(uses, list) or not uses:
        return None
    out: list[tuple[str, Any]] = []
    for use in uses:
        if not isinstance(use, dict):
            return None
        name = use.get("recipient_name")
        if not isinstance(name, str) or not name:
            return None
        params = use.get("parameters", {})
        out.append((name.removeprefix("functions."), params))
    return out


def unwrapped(
    tracker: ToolCallTracker, wrapper_name: str, base: str, text: str
) -> tuple[list[ToolCallDelta], int | None]:
    """The calls a whole wrapper holds, opened and completed in ``tracker`` as if sent one by one
    (ids ``<base>_<n>``, names without ``functions.``, metadata naming the wrapper), and how many
    there were; a text that is not the documented shape gives the wrapper as the call it claims
    to be, its arguments as sent (nothing dropped, nothing invented), and ``None``."""
    out: list[ToolCallDelta] = []
    uses = tool_uses(text)
    if uses is None:
        call = tracker.open()
        for delta in (
            tracker.update(call, call_id=base, name=wrapper_name, arguments=text),
            tracker.complete(call),
        ):
            if delta is not None:
                out.append(delta)
        return out, None
    for i, (name, params) in enumerate(uses):
        call = tracker.open()
        for delta in (
            tracker.update(
                call,
                call_id=f"{base}_{i}",
                name=name,
                arguments=json.dumps(params, ensure_ascii=False),
                metadata={"wrapped_in": wrapper_name, "wrapper_id": base},
            ),
            tracker.complete(call),
        ):
            if delta is not None:
                out.append(delta)
    return out, len(uses)
