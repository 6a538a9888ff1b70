"""Encoders: a reply's meaning written as one wire API's real stream. Sans-IO.

An API can be emitted when its package has an ``encoder`` part (found through the registry, as
for a plugin's API): a module with ``emit(reply) -> Emitted`` and ``INHERENT_QUIRKS`` (the
catalogued quirks that API's own clean streams show: Gemini ends a turn with tool calls on
``STOP``; OpenAI Chat has no reasoning field of its own). Its row may name older names of
its encoder in ``encoder_aliases`` (``openai-sse``, Chat's). :func:`emitter` finds an encoder by
any name of its API or one of those.

Importing this package loads no encoder, nor the reply and the shared pieces (loaded when first
asked for): the command line reads :func:`builtin_names` when ``--emit``'s choices are shown,
checked or completed.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ...plugins import WireApi, api_table, builtin_apis, find_api, part
from ...plugins.table import has_part, plugin_apis

if TYPE_CHECKING:
    from .base import Emitted
    from .reply import Part, Reply, ReplyBuilder

__all__ = [
    "ALIASES",
    "EMITTERS",
    "Emitted",
    "Part",
    "Reply",
    "ReplyBuilder",
    "aliases",
    "api_id",
    "builtin_names",
    "emitter",
    "encoders",
    "module",
]

# what the package offers from its modules, loaded when first asked for
_LAZY = {"Emitted": ".base", "Part": ".reply", "Reply": ".reply", "ReplyBuilder": ".reply"}


def __getattr__(name: str) -> Any:
    if name == "EMITTERS":  # every API's encoder, by id (plugins' included)
        return encoders()
    if name == "ALIASES":
        return aliases()
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _aliases_of(api: WireApi) -> tuple[str, ...]:
    """The older names of an API's encoder (its row's ``encoder_aliases``)."""
    return tuple(n.lower() for n in api.encoder_aliases)


def encoders() -> dict[str, ModuleType]:
    """The encoder of every API that has one, by API id, in the table's order."""
    found: dict[str, ModuleType] = {}
    for api in api_table():
        encoder = part(api, "encoder")
        if encoder is not None:
            found[api.id] = encoder
    return found


def aliases() -> dict[str, str]:
    """The older names of the encoders, each with its API's id."""
    return {
        alias: api.id
        for api in api_table()
        if part(api, "encoder") is not None
        for alias in _aliases_of(api)
    }


def builtin_names() -> tuple[list[str], list[str]]:
    """The built-in APIs that have an encoder (their ids, in the table's order) and their
    encoders' older names: the command line's choices. Found without loading an encoder."""
    apis = [a for a in builtin_apis() if has_part(a, "encoder")]
    return [a.id for a in apis], [alias for a in apis for alias in _aliases_of(a)]


def _aliased(rows: tuple[WireApi, ...], low: str) -> WireApi | None:
    return next((api for api in rows if low in _aliases_of(api)), None)


def _encoder(name: str) -> tuple[str, ModuleType] | None:
    """The API a name means (an encoder's older name, else any name of the API; the built-ins
    first) and its encoder, when it has one."""
    low = name.lower()
    api = _aliased(builtin_apis(), low) or find_api(low) or _aliased(plugin_apis(), low)
    encoder = part(api, "encoder") if api is not None else None
    return (api.id, encoder) if api is not None and encoder is not None else None


def api_id(name: str) -> str | None:
    """The API id an emitter name means (an id, any name of the API, or an encoder's older
    name), when the API has an encoder."""
    found = _encoder(name)
    return found[0] if found is not None else None


def module(name: str) -> ModuleType:
    """The encoder of an API (``KeyError`` when no encoder speaks it)."""
    found = _encoder(name)
    if found is None:
        raise KeyError(name)
    return found[1]


def emitter(name: str) -> Callable[[Reply], Emitted]:
    """The emit function of an API (``KeyError`` when no emitter speaks it)."""
    fn: Callable[[Reply], Emitted] = module(name).emit
    return fn
