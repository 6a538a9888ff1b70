"""Converter registry and auto-detection.

Converters are plugins: registered by name in the ``streamtool.converters`` entry-point group
(the built-ins below in streamtool's own ``pyproject.toml``), each imported only when used (see
:mod:`streamtool.core.plugins.registry`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..plugins.registry import CONVERTERS

if TYPE_CHECKING:
    from ..records import Header
    from ..wire.sse import SSEEvent
    from .base import Converter

# Importing this module imports no converter, nor the table of wire APIs: ``--help`` reads only
# the built-in names below.

# the built-in converters, as registered in pyproject.toml's "streamtool.converters" group
BUILTIN_CONVERTERS: dict[str, str] = CONVERTERS.builtins


class UnknownConverter(ValueError):
    pass


def converter_names() -> list[str]:
    """Every converter's name: the built-ins, then those installed plugins register."""
    return CONVERTERS.names()


def is_converter(name: str) -> bool:
    return name in CONVERTERS


def check_converter_name(name: str) -> None:
    """Raise :class:`UnknownConverter` (naming the valid ones) unless ``name`` is ``auto`` or a
    registered converter."""
    if name != "auto" and name not in CONVERTERS:
        raise UnknownConverter(
            f"unknown converter {name!r}; valid: auto, {', '.join(converter_names())}"
        )


def make_converter(name: str) -> Converter:
    if name == "auto":
        raise UnknownConverter("'auto' picks a converter; it is not one")
    try:
        cls = CONVERTERS.load(name)
    except KeyError:
        check_converter_name(name)
        raise
    from .base import Converter

    converter = cls()
    if not isinstance(converter, Converter):
        raise UnknownConverter(
            f"converter {name!r} ({cls.__module__}.{cls.__qualname__}) is not a Converter"
        )
    return converter


def is_kimi_model(model: Any) -> bool:
    """A Kimi K2 model name (``moonshotai/kimi-k2-thinking``, ``kimi-k2-0905-preview``...)."""
    return isinstance(model, str) and "kimi" in model.lower()


def detect_from_header(header: Header) -> str | None:
    """The converter a recording header points to (its ``api``, then URL, then provider).

    An OpenAI-compatible request for a Kimi model gets ``kimi-k2``: it reads everything
    ``openai-chat`` reads, plus the special-token tool calls such models leak into the text.
    """
    name = _detect_from_header(header)
    if name == "openai-chat" and is_kimi_model(header.model):
        return "kimi-k2"
    return name


def _detect_from_header(header: Header) -> str | None:
    from urllib.parse import urlsplit

    from ..plugins import api_for_path, api_for_provider, converter_named

    if header.api:
        name = converter_named(str(header.api))
        if name:
            return name
    url = header.url
    if url:
        api = api_for_path(urlsplit(url).path, hosted=True)
        if api is not None:
            return api.converter
    api = api_for_provider(header.provider or "")
    return api.converter if api is not None else None


_ANTHROPIC_EVENTS = frozenset(
    {
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "ping",
    }
)


# the event types of AWS event-stream frames (Bedrock) and of Cohere's v2 chat stream
_CONVERSE_EVENTS = frozenset(
    {
        "messageStart",
        "contentBlockStart",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
    }
)
_COHERE_EVENTS = frozenset(
    {
        "message-start",
        "content-start",
        "content-delta",
        "content-end",
        "tool-plan-delta",
        "tool-call-start",
        "tool-call-delta",
        "tool-call-end",
        "citation-start",
        "citation-end",
        "message-end",
    }
)


# the events of Google's Interactions API: the steps, and the older content events
INTERACTIONS_STEP_EVENTS = frozenset(
    {
        "interaction.created",
        "interaction.completed",
        "interaction.status_update",
        "step.start",
        "step.delta",
        "step.stop",
    }
)
INTERACTIONS_CONTENT_EVENTS = frozenset(
    {"interaction.start", "interaction.complete", "content.start", "content.delta", "content.stop"}
)
INTERACTIONS_EVENTS = INTERACTIONS_STEP_EVENTS | INTERACTIONS_CONTENT_EVENTS


def detect_from_event(event: SSEEvent) -> str | None:
    """The converter one event's shape points to, or ``None`` if it does not tell."""
    name = event.event or ""
    if name in INTERACTIONS_EVENTS:
        return "gemini-interactions"
    if name in _ANTHROPIC_EVENTS:
        return "anthropic"
    if name.startswith("response."):
        return "openai-responses"
    if name in _CONVERSE_EVENTS:
        return "bedrock-converse"
    if name == "chunk":
        return "bedrock-invoke"
    if name in _COHERE_EVENTS:
        return "cohere"
    data = event.data.strip()
    if data == "[DONE]":
        return None
    from ..wire import fastjson

    try:
        obj: Any = fastjson.loads(data)
    except ValueError:
        return None
    if isinstance(obj, list) and obj and isinstance(obj[0], dict):
        obj = obj[0]
    if not isinstance(obj, dict):
        return None
    if obj.get("event_type") in INTERACTIONS_EVENTS:
        return "gemini-interactions"
    kind = obj.get("type")
    if isinstance(kind, str):
        if kind in _ANTHROPIC_EVENTS:
            return "anthropic"
        if kind.startswith("response.") or (kind == "error" and "sequence_number" in obj):
            return "openai-responses"
        if kind == "error" and isinstance(obj.get("error"), dict) and "type" in obj["error"]:
            return "anthropic"
        if kind in _COHERE_EVENTS:
            return "cohere"
    if "candidates" in obj or "usageMetadata" in obj or "promptFeedback" in obj:
        return "gemini"
    err = obj.get("error")
    if isinstance(err, dict) and isinstance(err.get("status"), str) and "choices" not in obj:
        return "gemini"  # a Google API error ({code, message, status}) as the stream's first word
    if obj.get("object") == "text_completion" or _legacy_choices(obj.get("choices")):
        return "openai-completions"
    if "choices" in obj or obj.get("object") == "chat.completion.chunk":
        return "kimi-k2" if is_kimi_model(obj.get("model")) else "openai-chat"
    return None


def _legacy_choices(choices: Any) -> bool:
    """Choices of a legacy completion: ``text`` and no ``delta`` (servers that omit
    ``object``); chat chunks that also carry ``text`` (Together) have a ``delta``."""
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return False
    return "text" in choices[0] and "delta" not in choices[0] and "message" not in choices[0]
