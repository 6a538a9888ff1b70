"""Handler (``--parser``) registry. Handlers are imported only when used."""

from __future__ import annotations

import importlib
import os
from typing import Any

from .base import StreamingResponseHandler

PARSERS: dict[str, str] = {
    "api_tool_call": "streamtool.core.handlers.api_tool_call:ApiToolCallStreamingResponseHandler",
    "passthrough": "streamtool.core.handlers.passthrough:PassThroughStreamingResponseHandler",
    "xml": "streamtool.core.handlers.parsing:XmlStreamingResponseHandler",
    "json": "streamtool.core.handlers.parsing:JsonStreamingResponseHandler",
    "sentinel": "streamtool.core.handlers.parsing:SentinelStreamingResponseHandler",
}
DEFAULT_PARSER = "api_tool_call"
PARSER_ENV = "AUTOBYTEUS_STREAM_PARSER"


class UnknownParser(ValueError):
    pass


def parser_names() -> list[str]:
    return list(PARSERS)


def default_parser() -> str:
    """``AUTOBYTEUS_STREAM_PARSER`` when set (as in the design documents), else api_tool_call."""
    return os.environ.get(PARSER_ENV, "").strip() or DEFAULT_PARSER


def check_parser_name(name: str) -> None:
    """Raise :class:`UnknownParser` (naming the valid ones) unless ``name`` is a parser."""
    if name not in PARSERS:
        raise UnknownParser(f"unknown parser {name!r}; valid: {', '.join(parser_names())}")


def make_handler(name: str, **options: Any) -> StreamingResponseHandler:
    check_parser_name(name)
    target = PARSERS[name]
    module_name, _, class_name = target.partition(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    handler: StreamingResponseHandler = cls(**options)
    return handler
