"""Inspecting a recording file (the edge between files and the sans-IO inspector)."""

from __future__ import annotations

import os
from typing import Any

from ..outputs.inspect import DEFAULT_STALL, Inspector
from ..recording.reader import Source


def inspect_file(
    path: str | os.PathLike[str],
    *,
    converter: str = "auto",
    parser: str = "api_tool_call",
    stall: float = DEFAULT_STALL,
    handler_options: dict[str, Any] | None = None,
    keep_items: bool = False,
) -> Inspector:
    """Read a whole recording (or raw body; ``-`` is standard input) into a finished Inspector."""
    source = Source(path)
    inspector = Inspector(
        source.header,
        converter=converter,
        parser=parser,
        source=source.path,
        stall=stall,
        handler_options=handler_options,
        keep_items=keep_items,
    )
    feed = inspector.feed
    for chunk in source.chunks():
        feed(chunk)
    inspector.finish(source.end)
    return inspector
