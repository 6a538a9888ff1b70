"""Mutations: a quirk of the catalogue applied to a real recorded stream, at the wire level.

The catalogue (:mod:`streamtool.core.quirks`) names, beside each generatable quirk, the function
that applies it (``QuirkInfo.mutation``: ``module.function`` in this package). A mutation edits
the stream's events (:mod:`.stream`) and keeps everything else: the other events byte for byte,
the read boundaries and their times as far as the quirk allows. It returns whether it found
something to change; a quirk applies to a recording when it does and the recording does not show
that quirk already.

:func:`analyse` replays a recording once; :func:`applicable` lists the quirks that can be
applied to it; :func:`apply` makes the mutated reads; :func:`reported` is what a replay of them
reports (quirk ids, error kinds and wire notes), and :func:`meaning` the part of a transcript a
mutation promises to keep. Sans-IO.
"""

from __future__ import annotations

import copy
import importlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..quirks import CATALOGUE, QuirkInfo
from ..records import Chunk, End, Header, chunk_from_read
from ..replay import ReplayEngine
from .stream import Stream, parse

# what a mutation may change in a transcript (besides its quirks)
CHANGES = ("ids", "args_text", "finish", "errors", "usage", "all")
WIRE_APIS = ("openai-chat", "openai-responses", "anthropic", "gemini")
_WIRE_OF = {"kimi-k2": "openai-chat"}


@dataclass(frozen=True, slots=True)
class Mutation:
    name: str  # module.function
    apis: tuple[str, ...]
    changes: frozenset[str]
    stage: int  # 0 events, 1 framing, 2-3 reads: mutations apply in this order
    func: Callable[[Stream], bool]


_REGISTRY: dict[str, Mutation] = {}


def mutation(
    apis: Sequence[str] = WIRE_APIS, changes: Iterable[str] = (), stage: int = 0
) -> Callable[[Callable[[Stream], bool]], Callable[[Stream], bool]]:
    """Declare a mutation function: the APIs it applies to, what it may change in a transcript."""
    wanted = frozenset(changes)
    assert wanted <= set(CHANGES), wanted

    def register(func: Callable[[Stream], bool]) -> Callable[[Stream], bool]:
        name = f"{func.__module__.rpartition('.')[2]}.{func.__name__}"
        _REGISTRY[name] = Mutation(name, tuple(apis), wanted, stage, func)
        return func

    return register


def _load() -> None:
    if not _REGISTRY:
        for module in ("sse", "chat", "anthropic", "responses", "gemini", "faults", "wire"):
            importlib.import_module(f"{__name__}.{module}")


def generatable() -> list[QuirkInfo]:
    """The catalogue's generatable entries, in its order."""
    return [info for info in CATALOGUE.values() if info.mutation]


def mutation_of(quirk_id: str) -> Mutation:
    """The mutation of a generatable quirk (KeyError for any other id)."""
    _load()
    info = CATALOGUE[quirk_id]
    if not info.mutation:
        raise KeyError(quirk_id)
    return _REGISTRY[info.mutation]


def registered() -> set[str]:
    """Every mutation function defined in this package (``module.function``)."""
    _load()
    return set(_REGISTRY)


def suggest(quirk_id: str) -> list[str]:
    """Generatable ids close to a mistyped one."""
    import difflib

    names = [info.id for info in generatable()]
    return difflib.get_close_matches(quirk_id, names, n=3, cutoff=0.5)


# -- recordings --------------------------------------------------------------------------------
@dataclass(slots=True)
class Original:
    """A recording, replayed once: what mutations start from."""

    header: Header
    reads: list[tuple[float | None, bytes]]
    end: End | None
    engine: ReplayEngine
    reported: set[str] = field(default_factory=set)

    @property
    def converter(self) -> str | None:
        return self.engine.converter_name

    @property
    def api(self) -> str | None:
        name = self.converter
        return _WIRE_OF.get(name, name) if name else None

    def stream(self) -> Stream:
        return parse(self.reads, copy.deepcopy(self.header), self.api or "", self.converter or "")


def _bytes(data: str | bytes) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else data


def replay(
    header: Header, chunks: Iterable[Chunk], end: End | None, *, transcript: bool = False
) -> ReplayEngine:
    """A finished replay of reads (as a conformance check replays: no file tools)."""
    engine = ReplayEngine(header, handler_options={"file_tools": {}}, transcript=transcript)
    engine.feed_chunks(chunks)
    engine.finish(end)
    return engine


def analyse(header: Header, chunks: Iterable[Chunk], end: End | None) -> Original:
    """Replay a recording once. Raises the replay's errors (``DetectionError``) as they come."""
    chunks = list(chunks)
    engine = replay(header, chunks, end, transcript=True)
    reads = [(c.t, _bytes(c.data)) for c in chunks]
    return Original(header, reads, end, engine, reported(engine))


def reported(engine: ReplayEngine) -> set[str]:
    """What a finished replay reports: its quirks, its error kinds and its wire notes."""
    found = {q.id for q in engine.quirks}
    found.update(e.kind for e in engine.errors)
    found.update(engine.wire.found)
    return found


def applies(original: Original, quirk_id: str) -> bool:
    """Whether the quirk can be applied to the recording (and it does not show it already)."""
    if quirk_id in original.reported or original.api is None:
        return False
    if original.header.response.get("status", 200) not in (200, None):
        return False
    mut = mutation_of(quirk_id)
    if original.api not in mut.apis:
        return False
    if mut.name.startswith("faults.") and original.engine.errors:
        return False  # faults are cut into streams that are whole and clean
    if "oai_multi_tool_use_parallel" in original.reported and mut.name.startswith(
        ("chat.", "faults.")
    ):
        # its one tool call is a wrapper whose arguments hold the real calls: quirks of the
        # calls' deltas are not generated on it (only the framing and the reads are)
        return False
    stream = original.stream()
    if stream.events and stream.events[0].raw.lstrip()[:1] in (b"[", b"{"):
        return False  # not SSE (a JSON array, NDJSON): mutations edit SSE events
    return mut.func(stream)


def applicable(original: Original) -> list[QuirkInfo]:
    """The generatable quirks that apply to the recording, in the catalogue's order."""
    return [info for info in generatable() if applies(original, info.id)]


_ADDITIVE_CUTS = frozenset({"reads_utf8_split", "reads_crlf_split"})  # cuts that compose


class NotApplicable(ValueError):
    """A quirk asked for cannot be applied to this recording."""


def apply(original: Original, quirk_ids: Sequence[str]) -> tuple[Header, list[Chunk], End | None]:
    """The recording with every quirk of ``quirk_ids`` applied (in stage order: events, then
    framing, then reads). Raises :class:`NotApplicable` naming a quirk that does not apply."""
    muts = []
    for qid in dict.fromkeys(quirk_ids):
        if not applies(original, qid):
            raise NotApplicable(qid)
        muts.append((mutation_of(qid), qid))
    if any(mut.name == "gemini.json_array" for mut, _ in muts):
        # a JSON array has no SSE events: what a mutation did to the SSE framing is gone
        sse = [qid for mut, qid in muts if mut.name.startswith("sse.")]
        if sse:
            raise NotApplicable(sse[0])
    recuts = [qid for mut, qid in muts if mut.stage >= 2]
    if len(recuts) > 1 and not set(recuts) <= _ADDITIVE_CUTS:
        # a single read, or one event per read, leaves no room for another cut
        raise NotApplicable(recuts[1])
    stream = original.stream()
    for mut, qid in sorted(muts, key=lambda m: m[0].stage):
        if not mut.func(stream):
            raise NotApplicable(qid)  # an earlier mutation took away what this one needs
    chunks = [chunk_from_read(t, data) for t, data in stream.reads()]
    return stream.header, chunks, original.end


def changes_of(quirk_ids: Iterable[str]) -> frozenset[str]:
    out: set[str] = set()
    for qid in quirk_ids:
        out |= mutation_of(qid).changes
    return frozenset(out)


def meaning(transcript: dict[str, Any], changes: frozenset[str]) -> dict[str, Any]:
    """The part of a transcript that mutations with ``changes`` keep."""
    if "all" in changes:
        return {}
    t = copy.deepcopy(transcript)
    t.pop("quirks", None)
    if "finish" in changes:
        t.pop("finish_reason", None)
        t.pop("finish_class", None)
    if "errors" in changes:
        t.pop("errors", None)
    if "usage" in changes:
        t.pop("usage", None)
    segments = t.get("segments") or []
    if "ids" in changes:
        ids = {s.get("id"): f"#{i}" for i, s in enumerate(segments)}
        for s in segments:
            s["id"] = ids.get(s.get("id"))
        for inv in t.get("invocations") or []:
            inv["id"] = ids.get(inv.get("id"), "?")
    if "args_text" in changes:
        for s in segments:
            if s.get("type") != "text" and s.get("type") != "reasoning":
                s.pop("content", None)
    return t
