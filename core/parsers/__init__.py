"""Sans-IO parsers of tool calls embedded in text (``xml``, ``json``, ``sentinel``).

Each is ``feed(text) -> list[SegmentEvent]`` plus ``finish()``; see reference/text-formats.md.
"""

from __future__ import annotations

import importlib
from typing import Any

from .base import TextParser

TEXT_PARSERS: dict[str, str] = {
    "xml": "streamtool.core.parsers.xml:XmlParser",
    "json": "streamtool.core.parsers.json:JsonParser",
    "sentinel": "streamtool.core.parsers.sentinel:SentinelParser",
}


def make_text_parser(name: str, **options: Any) -> TextParser:
    target = TEXT_PARSERS.get(name)
    if target is None:
        raise ValueError(f"unknown text parser {name!r}; valid: {', '.join(TEXT_PARSERS)}")
    module_name, _, class_name = target.partition(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    parser: TextParser = cls(**options)
    return parser


__all__ = ["TEXT_PARSERS", "TextParser", "make_text_parser"]
