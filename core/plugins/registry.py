"""Plugins found through entry points: wire APIs, converters and handlers (``--parser``).

A wire API (a package: :mod:`streamtool.core.apis`), a converter or a handler is registered under
a name in an entry-point group, as pytest and simonw/llm find theirs::

    [project.entry-points."streamtool.apis"]
    my-api = "my_package.my_api:API"

    [project.entry-points."streamtool.converters"]
    my-dialect = "my_package.my_api.decoder:MyDialectConverter"

streamtool's own are registered the same way, in its ``pyproject.toml``; :data:`BUILTINS` is
that table (a test keeps the two equal). Nothing is imported before it is used: a built-in name is
loaded straight from its table, and the installed distributions' entry points are read (with
``importlib.metadata``, some 10 ms) only when a name is not a built-in, or when every name is
asked for (``streamtool converters``, an unknown name's error message). A plugin may not take a
built-in's name: the built-in wins, and ``streamtool converters`` says the plugin is shadowed.
"""

from __future__ import annotations

import importlib
from typing import Any

DISTRIBUTION = "streamtool"

_APIS = "streamtool.core.apis"

# every built-in, by entry-point group, as registered in pyproject.toml
BUILTINS: dict[str, dict[str, str]] = {
    # the wire APIs, in the table's order
    "streamtool.apis": {
        "openai-chat": f"{_APIS}.openai_chat:API",
        "openai-responses": f"{_APIS}.openai_responses:API",
        "anthropic": f"{_APIS}.anthropic:API",
        "openai-completions": f"{_APIS}.openai_completions:API",
        "gemini": f"{_APIS}.gemini:API",
        "gemini-interactions": f"{_APIS}.gemini_interactions:API",
        "bedrock-converse": f"{_APIS}.bedrock_converse:API",
        "bedrock-invoke": f"{_APIS}.bedrock_invoke:API",
        "cohere": f"{_APIS}.cohere:API",
        "openai-realtime": f"{_APIS}.openai_realtime:API",
        "mcp": f"{_APIS}.mcp:API",
    },
    "streamtool.converters": {
        "openai-chat": f"{_APIS}.openai_chat.decoder:OpenAIChatConverter",
        "openai-responses": f"{_APIS}.openai_responses.decoder:OpenAIResponsesConverter",
        "anthropic": f"{_APIS}.anthropic.decoder:AnthropicConverter",
        "gemini": f"{_APIS}.gemini.decoder:GeminiConverter",
        "kimi-k2": f"{_APIS}.openai_chat.kimi_k2:KimiK2Converter",
        "openai-completions": f"{_APIS}.openai_completions.decoder:OpenAICompletionsConverter",
        "bedrock-converse": f"{_APIS}.bedrock_converse.decoder:BedrockConverseConverter",
        "bedrock-invoke": f"{_APIS}.bedrock_invoke.decoder:BedrockInvokeConverter",
        "cohere": f"{_APIS}.cohere.decoder:CohereConverter",
        "gemini-interactions": (f"{_APIS}.gemini_interactions.decoder:GeminiInteractionsConverter"),
        "openai-realtime": f"{_APIS}.openai_realtime.decoder:RealtimeConverter",
        "mcp": f"{_APIS}.mcp.decoder:McpConverter",
    },
    "streamtool.handlers": {
        "api_tool_call": (
            "streamtool.core.handlers.api_tool_call:ApiToolCallStreamingResponseHandler"
        ),
        "passthrough": "streamtool.core.handlers.passthrough:PassThroughStreamingResponseHandler",
        "xml": "streamtool.core.handlers.parsing:XmlStreamingResponseHandler",
        "json": "streamtool.core.handlers.parsing:JsonStreamingResponseHandler",
        "sentinel": "streamtool.core.handlers.parsing:SentinelStreamingResponseHandler",
    },
    # the proxy's --transform: a stream rewritten on its way to the client
    "streamtool.transforms": {
        "kimi-k2": f"{_APIS}.openai_chat.kimi_transform:KimiTransform",
    },
}


class Plugin:
    """One registered name: where it comes from and what it loads. (A plain class: this module
    is imported by every command, and a ``NamedTuple`` of five fields cost 1.2M instructions to
    define at each start; a Plugin is made only when the entry points are read.)"""

    __slots__ = ("name", "target", "distribution", "version", "shadowed")

    def __init__(
        self, name: str, target: str, distribution: str, version: str, shadowed: bool = False
    ) -> None:
        self.name = name
        self.target = target  # "module:attribute"
        self.distribution = distribution  # the installed distribution that registers it
        self.version = version
        self.shadowed = shadowed  # a plugin that names a built-in (the built-in is used)

    def __repr__(self) -> str:
        return f"Plugin({self.name!r}, {self.target!r}, {self.distribution!r}, {self.version!r})"


class Registry:
    """The names of one entry-point group, built-ins first."""

    def __init__(self, group: str) -> None:
        self.group = group
        self.builtins = BUILTINS[group]
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
        return [*own, *sorted(self._installed().values(), key=lambda p: p.name)]

    def target(self, name: str) -> str:
        """Where ``name`` is registered (``module:attribute``); ``KeyError`` when it is not."""
        target = self.builtins.get(name)
        if target is None:
            plugin = self._installed().get(name)
            if plugin is None:
                raise KeyError(name)
            target = plugin.target
        return target

    def load(self, name: str) -> Any:
        """The object registered under ``name`` (imported now); ``KeyError`` when none is."""
        module_name, _, attribute = self.target(name).partition(":")
        obj: Any = importlib.import_module(module_name)
        for part in attribute.split(".") if attribute else ():
            obj = getattr(obj, part)
        return obj


APIS = Registry("streamtool.apis")
CONVERTERS = Registry("streamtool.converters")
HANDLERS = Registry("streamtool.handlers")
TRANSFORMS = Registry("streamtool.transforms")
