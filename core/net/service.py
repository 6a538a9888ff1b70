"""What answers requests with recordings: a library and the app serving it.

:func:`build_service` makes the app for a library and a :class:`ServiceConfig` (its quirks
applied, its pacing, its request log, what a request nothing matches gets). ``serve``, the
``stream_tape`` fixture, ``conform``, ``demo`` and the ``serving_*`` helpers serve through it;
:mod:`.serve_choice` picks the library ``serve PATH...`` answers with.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..exchange.playback import Playback
from .bodies import BODY_TIMEOUT, MAX_BODY
from .library import Incoming, Library
from .server import create_app


@dataclass(frozen=True, slots=True)
class ServiceConfig:
    """How a library is served."""

    playback: Playback = field(default_factory=Playback)
    log: Callable[[str], None] | None = None  # one line per request
    # answers a request nothing matched instead of the 404 (record on miss)
    on_miss: Callable[[Any, bytes, Incoming, str], Any] | None = None
    # told why, for each request nothing matched that gets the 404
    on_no_match: Callable[[str], None] | None = None
    # applies quirks to the library's recordings (``--mutate``), says which went where
    mutate: Callable[[Library], dict[str, list[str]]] | None = None
    max_body: int = MAX_BODY
    body_timeout: float = BODY_TIMEOUT


@dataclass(frozen=True, slots=True)
class Service:
    """The ASGI app that serves a library, and the quirks it applied."""

    app: Any
    mutated: dict[str, list[str]]  # recording -> the quirks applied to it


def build_service(library: Library, config: ServiceConfig) -> Service:
    """The app answering requests from ``library`` as ``config`` says (its quirks applied
    first)."""
    mutated = config.mutate(library) if config.mutate is not None else {}
    app = create_app(
        library,
        config.playback,
        config.log,
        config.on_miss,
        max_body=config.max_body,
        body_timeout=config.body_timeout,
        on_no_match=config.on_no_match,
    )
    return Service(app, mutated)
