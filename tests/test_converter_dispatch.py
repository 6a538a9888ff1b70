"""The converters' event table: the base dispatches each payload by its type."""

from __future__ import annotations

from typing import Any

from streamtool.core.apis.anthropic.decoder import AnthropicConverter
from streamtool.core.converters.base import Converter
from streamtool.core.model import ChunkResponse
from streamtool.core.wire.sse import SSEEvent


class Tiny(Converter):
    name = "tiny"
    events = {"say": "_say", "shout": ("_say", "!")}
    ignored_events = frozenset({"ping"})

    def _say(self, obj: dict[str, Any], end: str = "") -> list[ChunkResponse]:
        return [ChunkResponse(content=obj["text"] + end)]


class Louder(Tiny):
    def _say(self, obj: dict[str, Any], end: str = "") -> list[ChunkResponse]:
        return [ChunkResponse(content=obj["text"].upper() + end)]


def feed(converter: Converter, *events: SSEEvent) -> list[ChunkResponse]:
    return [cr for event in events for cr in converter.feed(event)]


def test_payloads_go_to_the_method_their_type_names():
    out = feed(
        Tiny(),
        SSEEvent('{"type": "say", "text": "hi"}'),
        SSEEvent('{"text": "yo"}', "shout"),  # no type: the SSE event name
        SSEEvent('{"type": "say", "text": "a"}\n{"type": "say", "text": "b"}'),  # two payloads
    )
    assert [cr.content for cr in out if cr.content] == ["hi", "yo!", "a", "b"]


def test_a_subclass_overrides_a_handler_by_its_name():
    out = feed(Louder(), SSEEvent('{"type": "say", "text": "hi"}'))
    assert [cr.content for cr in out] == ["HI"]


def test_ignored_and_unknown_types():
    converter = Tiny()
    out = feed(
        converter,
        SSEEvent('{"type": "ping"}'),
        SSEEvent('{"type": "nope"}'),
        SSEEvent('{"type": "nope"}'),
        SSEEvent("{}"),  # no type and no event name
    )
    assert out == []
    assert converter.unknown_events == {"nope": 2, "None": 1}


def test_the_table_is_built_once_per_class():
    assert AnthropicConverter._handlers is AnthropicConverter()._handlers
    assert Louder._handlers["say"][0] is Louder._say
    assert Tiny._handlers["say"][0] is Tiny._say
