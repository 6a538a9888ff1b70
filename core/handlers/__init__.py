"""Handler (``--parser``) registry.

Handlers are plugins: registered by name in the ``streamtool.handlers`` entry-point group (the
built-ins below in streamtool's own ``pyproject.toml``), each imported only when used (see
:mod:`streamtool.core.plugins.registry`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..plugins.registry import HANDLERS

if TYPE_CHECKING:
    from .base import StreamingResponseHandler

# the built-in handlers, as registered in pyproject.toml's "streamtool.handlers" group
PARSERS = HANDLERS
BUILTIN_PARSERS: dict[str, str] = PARSERS.builtins
DEFAULT_PARSER = "api_tool_call"
PARSER_ENV = "STREAMTOOL_PARSER"
PARSER_ENV_ALIASES = ("AUTOBYTEUS_STREAM_PARSER",)  # the older name, still read


class UnknownParser(ValueError):
    pass


def parser_names() -> list[str]:
    """Every handler's name: the built-ins, then those installed plugins register."""
    return PARSERS.names()


def default_parser() -> str:
    """``STREAMTOOL_PARSER`` when set (else its older name ``AUTOBYTEUS_STREAM_PARSER``), else
    api_tool_call."""
    for name in (PARSER_ENV, *PARSER_ENV_ALIASES):
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return DEFAULT_PARSER


def check_parser_name(name: str) -> None:
    """Raise :class:`UnknownParser` (naming the valid ones) unless ``name`` is a parser."""
    if name not in PARSERS:
        raise UnknownParser(f"unknown parser {name!r}; valid: {', '.join(parser_names())}")


def make_handler(name: str, **options: Any) -> StreamingResponseHandler:
    check_parser_name(name)
    from .base import StreamingResponseHandler

    cls = PARSERS.load(name)
    handler = cls(**options)
    if not isinstance(handler, StreamingResponseHandler):
        raise UnknownParser(
            f"parser {name!r} ({cls.__module__}.{cls.__qualname__}) is not a "
            "StreamingResponseHandler"
        )
    return handler
