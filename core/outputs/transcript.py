"""The transcript of a replay: what a stream meant, as a readable, deterministic JSON document.

A transcript is built from a finished :class:`~streamtool.core.engine.replay.ReplayEngine` that kept
its segments (``transcript=True``: ``replay_file(path, transcript=True)``). It holds the converter
and parser used, the model, every segment in order with its content coalesced and its START and END
metadata merged, the invocations, the finish reason, the usage, the errors and the quirks. It holds
nothing that depends on how the bytes were cut into reads or when they came (no chunk counts, no
times): the same bytes cut at any points give the same transcript. Golden files
(:mod:`streamtool.core.outputs.golden`) and ``streamtool diff`` are built on it. Sans-IO.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from ..model import SegmentEvent
from ..pipeline.segment_log import SegmentLog

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.replay import ReplayEngine

_SURROGATE = re.compile("[\ud800-\udfff]")


def build_transcript(engine: ReplayEngine) -> dict[str, Any]:
    """The transcript of a finished replay (see the module docstring)."""
    if not engine.finished:
        raise ValueError("the replay has not finished: call engine.finish() first")
    if engine.segments is None:
        raise ValueError(
            "the replay kept no segments: replay with transcript=True "
            "(replay_file(path, transcript=True) or ReplayEngine(..., transcript=True))"
        )
    out: dict[str, Any] = {
        "converter": engine.converter_name,
        "parser": engine.parser,
        "model": engine.model,
        "segments": engine.segments.coalesced(),
        "invocations": [inv.to_dict() for inv in engine.invocations()],
        "finish_reason": engine.finish_reason,
        "finish_class": engine.finish_class(),
        "usage": engine.usage,
        "errors": [e.to_dict() for e in engine.errors],
        "quirks": [q.to_dict() for q in engine.quirks],
    }
    if engine.session is not None:
        # a WebSocket session: the order of its messages, each side's (and how it closed)
        summary = engine.session.summary()
        out["events"] = [f"{e['direction']} {e['type']}" for e in summary["events"]]
        out["closes"] = summary["closes"]
    return out


def coalesce_segments(events: list[SegmentEvent]) -> list[dict[str, Any]]:
    """Segments in order of their START: ``{type, id, content, metadata}``.

    ``content`` is every CONTENT delta joined; ``metadata`` is the START metadata updated by the
    END metadata (the END value of a key wins). A segment that never got its END event carries
    ``"ended": false``. (A replay builds the same list as its events pass: ``engine.segments``.)
    """
    log = SegmentLog()
    for ev in events:
        log.add(ev)
    return log.coalesced()


def render(document: Any) -> str:
    """A transcript (or any JSON document) as text: 2-space indent, keys in their given order.

    Non-ASCII text is written as is, for readability; lone UTF-16 surrogates (which a provider's
    JSON escapes can produce) are written as ``\\uXXXX`` escapes, so the text is valid UTF-8 and
    reads back to the same value.
    """
    text = json.dumps(document, ensure_ascii=False, indent=2)
    if _SURROGATE.search(text):
        text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text + "\n"
