"""Plugins found through entry points: the converters and the handlers (``--parser``).

A converter or a handler is registered under a name in an entry-point group, as pytest and
simonw/llm find theirs::

    [project.entry-points."streamtool.converters"]
    my-dialect = "my_package.converter:MyDialectConverter"

streamtool's own are registered the same way, in its ``pyproject.toml`` (a test keeps that table
equal to :attr:`Registry.builtins`). Nothing is imported before it is used: a built-in name is
loaded straight from its table, and the installed distributions' entry points are read (with
``importlib.metadata``, some 10 ms) only when a name is not a built-in, or when every name is
asked for (``streamtool converters``, an unknown name's error message). A plugin may not take a
built-in's name: the built-in wins, and ``streamtool converters`` says the plugin is shadowed.
"""

from __future__ import annotations

import importlib
from typing import Any, NamedTuple

DISTRIBUTION = "streamtool"


class Plugin(NamedTuple):
    """One registered name: where it comes from and what it loads."""

    name: str
    target: str  # "module:attribute"
    distribution: str  # the installed distribution that registers it
    version: str
    shadowed: bool = False  # a plugin that names a built-in (the built-in is used)


class Registry:
    """The names of one entry-point group, built-ins first."""

    def __init__(self, group: str, builtins: dict[str, str]) -> None:
        self.group = group
        self.builtins = builtins
        self._plugins: dict[str, Plugin] | None = None

    def _installed(self) -> dict[str, Plugin]:
        if self._plugins is None:
            from importlib.metadata import entry_points

            found: dict[str, Plugin] = {}
            for ep in entry_points(group=self.group):
                dist = ep.dist
                name = dist.metadata["Name"] if dist is not None else "?"
                version = dist.version if dist is not None else "?"
                if name == DISTRIBUTION or ep.name in found:
                    continue
                found[ep.name] = Plugin(ep.name, ep.value, name, version, ep.name in self.builtins)
            self._plugins = found
        return self._plugins

    def __contains__(self, name: object) -> bool:
        if name in self.builtins:
            return True
        return isinstance(name, str) and name in self._installed()

    def names(self) -> list[str]:
        """Every usable name: the built-ins, then the plugins' (shadowed ones left out)."""
        extra = [n for n, p in self._installed().items() if not p.shadowed]
        return [*self.builtins, *sorted(extra)]

    def plugins(self) -> list[Plugin]:
        """Everything registered, built-ins first, with where it comes from."""
        from importlib.metadata import version

        own = [Plugin(n, t, DISTRIBUTION, version(DISTRIBUTION)) for n, t in self.builtins.items()]
        return [*own, *sorted(self._installed().values())]

    def load(self, name: str) -> Any:
        """The object registered under ``name`` (imported now); ``KeyError`` when none is."""
        target = self.builtins.get(name)
        if target is None:
            plugin = self._installed().get(name)
            if plugin is None:
                raise KeyError(name)
            target = plugin.target
        module_name, _, attribute = target.partition(":")
        obj: Any = importlib.import_module(module_name)
        for part in attribute.split(".") if attribute else ():
            obj = getattr(obj, part)
        return obj
