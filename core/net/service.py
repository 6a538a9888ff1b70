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
from .sessions import SessionEdge, players


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
    # the faults of a session (quirk ids) applied to the recorded sessions it serves (MCP:
    # ``--mutate``), each where it applies
    faults: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Service:
    """The ASGI app that serves a library, and the quirks it applied."""

    app: Any
    mutated: dict[str, list[str]]  # recording -> the quirks applied to it
    sessions: SessionEdge | None = None  # what answers the recorded sessions, if any


def build_service(library: Library, config: ServiceConfig) -> Service:
    """The app answering requests from ``library`` as ``config`` says (its quirks applied
    first). The recordings of APIs served as sessions (MCP) are answered by their players
    (:mod:`.sessions`), in front of the rest."""
    mutated = config.mutate(library) if config.mutate is not None else {}
    # --mutate (a mutated_library.Mutator): the quirks of its that are sessions' faults too
    faults = config.faults or tuple(getattr(config.mutate, "session_ids", ()))
    found, faulted = players(library, faults)
    mutated.update(faulted)
    edge = None
    if found or config.on_miss is not None:  # (recording: a new session is forwarded whole)
        edge = SessionEdge(
            None,
            found,
            playback=config.playback,
            log=config.log,
            on_served=getattr(library, "mark_served", None),
            max_body=config.max_body,
            body_timeout=config.body_timeout,
            forward=config.on_miss,
            on_no_match=config.on_no_match,
        )
    app = create_app(
        library,
        config.playback,
        config.log,
        config.on_miss,
        max_body=config.max_body,
        body_timeout=config.body_timeout,
        on_no_match=config.on_no_match,
        edge=edge.wrap if edge is not None else None,
    )
    return Service(app, mutated, edge)
