"""Inspecting a recording file (the edge between files and the sans-IO inspector)."""

from __future__ import annotations

import os
from collections.abc import Callable
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
    on_chunk: Callable[[], None] | None = None,
) -> Inspector:
    """Read a whole recording (or raw body; ``-`` is standard input) into a finished Inspector.

    ``on_chunk`` is called after each read is fed (a progress display)."""
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
    if on_chunk is None:
        for chunk in source.chunks():
            feed(chunk)
    else:
        for chunk in source.chunks():
            feed(chunk)
            on_chunk()
    inspector.finish(source.end)
    return inspector
