"""Emitters: a reply's meaning written as one wire API's real stream. Sans-IO.

One module per API of :mod:`streamtool.core.apis`, keyed by the table's ids; each has
``emit(reply) -> Emitted`` and ``INHERENT_QUIRKS`` (the catalogued quirks that API's own clean
streams show: Gemini ends a turn with tool calls on ``STOP``; OpenAI Chat has no reasoning field
of its own). :func:`emitter` finds one by any name of its API (and ``openai-sse``, the older name
of ``openai-chat``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType

from ...plugins import find_api
from .base import Emitted
from .reply import Part, Reply, ReplyBuilder

EMITTERS: dict[str, str] = {
    "openai-chat": "openai_chat",
    "openai-responses": "openai_responses",
    "anthropic": "anthropic",
    "gemini": "gemini",
}
ALIASES = {"openai-sse": "openai-chat"}

__all__ = ["ALIASES", "EMITTERS", "Emitted", "Part", "Reply", "ReplyBuilder", "emitter", "module"]


def api_id(name: str) -> str | None:
    """The API id an emitter name means (an id, any name of the API, or an alias)."""
    low = ALIASES.get(name.lower(), name.lower())
    if low in EMITTERS:
        return low
    api = find_api(low)
    return api.id if api is not None and api.id in EMITTERS else None


def module(name: str) -> ModuleType:
    found = api_id(name)
    if found is None:
        raise KeyError(name)
    return importlib.import_module(f"{__name__}.{EMITTERS[found]}")


def emitter(name: str) -> Callable[[Reply], Emitted]:
    """The emit function of an API (``KeyError`` when no emitter speaks it)."""
    fn: Callable[[Reply], Emitted] = module(name).emit
    return fn
