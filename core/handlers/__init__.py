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


def make_handler(name: str, **options: Any) -> StreamingResponseHandler:
    target = PARSERS.get(name)
    if target is None:
        raise UnknownParser(f"unknown parser {name!r}; valid: {', '.join(parser_names())}")
    module_name, _, class_name = target.partition(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    handler: StreamingResponseHandler = cls(**options)
    return handler
