"""Mutations: a quirk of the catalogue applied to a real recorded stream, at the wire level.

A mutation is a function that declares the quirk of the catalogue
(:mod:`streamtool.core.model.quirks`) it applies (:attr:`Mutation.quirk`); a quirk that has one
is generatable. A mutation edits the
stream's events (:mod:`.stream`) and keeps everything else: the other events byte for byte, the read
boundaries and their times as far as the quirk allows. It returns whether it found something to
change; a quirk applies to a recording when it does and the recording does not show that quirk
already.

This package holds what every API shares: the SSE layer (:mod:`.sse_layer`), the model's faults
(:mod:`.faults`, each cut by its API's rules) and the reads (:mod:`.read_cuts`). Each API's own
mutations, and its rules for the shared ones, are the ``mutations`` part of its package
(:class:`ApiMutations` declares them): the APIs whose package has one are :func:`wire_apis`.

:func:`analyse` replays a recording once; :func:`applicable` lists the quirks that can be
applied to it; :func:`apply` makes the mutated reads; :func:`reported` is what a replay of them
reports (quirk ids, error kinds and wire notes), and :func:`meaning` the part of a transcript a
mutation promises to keep. Sans-IO.
"""

from __future__ import annotations

import copy
import enum
import functools
import importlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from ..engine.replay import ReplayEngine
from ..model.quirk_ids import QuirkId
from ..model.quirks import CATALOGUE, QuirkInfo, QuirkKind, entry
from ..model.records import Chunk, Control, End, Header, Message, chunk_from_read
from ..plugins import api_for_converter, api_table, part
from .session import Session
from .stream import Stream, parse

# what a mutation may change in a transcript (besides its quirks)
CHANGES = ("ids", "args_text", "finish", "errors", "usage", "all")
MutationFunc = Callable[[Stream], bool]
Decorator = Callable[[MutationFunc], MutationFunc]
# a WebSocket session's mutation edits a Session (declared with ``session=True``)
SessionMutationFunc = Callable[[Session], bool]


class Scope(enum.Enum):
    """What a mutation edits."""

    SSE = "sse"  # the SSE layer every API shares
    FAULT = "faults"  # the model's output, cut by the API's rules: into whole, clean streams
    READS = "wire"  # where the reads are cut
    API = "api"  # the events of one API's own shape (the mutations part of its package)
    # the exchanges of a recorded session (MCP), not one stream: its API's session_faults part
    # edits the tape; as a stream mutation it never applies
    SESSION = "session"


@dataclass(frozen=True, slots=True)
class Mutation:
    quirk: QuirkId  # the quirk it applies
    func: Any  # a MutationFunc, or a SessionMutationFunc for a session's (``session``)
    scope: Scope
    changes: frozenset[str]
    stage: int  # 0 events, 1 framing, 2-3 reads: mutations apply in this order
    api: str | None = None  # an API's own mutation: that API
    # a shared mutation some APIs have rules for: the name of the rule in their mutations part
    rule: str = ""
    reframes: bool = False  # it replaces the SSE framing (what the SSE layer's mutations did)
    # it edits a WebSocket session's messages (a :class:`.session.Session`), not a stream of
    # reads: it applies to sessions only, and the others never do
    session: bool = False

    @property
    def apis(self) -> tuple[str, ...]:
        """The APIs it applies to, in the table's order (a shared mutation edits streams of
        reads: the APIs whose clients send HTTP requests)."""
        if self.api is not None:
            return (self.api,)
        return tuple(
            api
            for api, rules in mutation_parts()
            if (not self.rule or hasattr(rules, self.rule)) and api in _http_apis()
        )


_REGISTRY: dict[QuirkId, Mutation] = {}


def _register(mut: Mutation) -> None:
    assert mut.changes <= set(CHANGES), mut.changes
    assert mut.quirk in CATALOGUE, mut.quirk
    other = _REGISTRY.setdefault(mut.quirk, mut)
    assert other is mut, f"{mut.quirk} has two mutations: {other.func} and {mut.func}"


def mutation(
    quirk: QuirkId, scope: Scope, *, rule: str = "", changes: Iterable[str] = (), stage: int = 0
) -> Decorator:
    """Declare a shared mutation: the quirk it applies, what it edits, the rule the APIs it
    applies to define (every API with mutations when none), what it may change in a
    transcript."""

    def register(func: MutationFunc) -> MutationFunc:
        _register(Mutation(quirk, func, scope, frozenset(changes), stage, rule=rule))
        return func

    return register


class ApiMutations:
    """The decorator an API's mutations part declares its own mutations with: each applies a
    quirk of the catalogue to ``api``'s streams."""

    __slots__ = ("api",)

    def __init__(self, api: str) -> None:
        self.api = api

    def __call__(
        self,
        quirk: QuirkId,
        changes: Iterable[str] = (),
        stage: int = 0,
        reframes: bool = False,
        session: bool = False,
    ) -> Callable[[Any], Any]:
        def register(func: Any) -> Any:
            wanted = frozenset(changes)
            _register(
                Mutation(
                    quirk,
                    func,
                    Scope.API,
                    wanted,
                    stage,
                    self.api,
                    reframes=reframes,
                    session=session,
                )
            )
            return func

        return register


@functools.cache
def mutation_parts() -> tuple[tuple[str, ModuleType], ...]:
    """(API id, its mutations part) of every API whose package has one, in the table's order."""
    found = []
    for api in api_table():
        module = part(api, "mutations")
        if module is not None:
            found.append((api.id, module))
    return tuple(found)


@functools.cache
def _http_apis() -> frozenset[str]:
    return frozenset(api.id for api in api_table() if api.http)


def wire_apis() -> tuple[str, ...]:
    """The APIs whose streams can be mutated, in the table's order."""
    return tuple(api for api, _ in mutation_parts())


def rules_of(api: str) -> ModuleType | None:
    """An API's mutations part: its own mutations and its rules for the shared ones."""
    return next((rules for name, rules in mutation_parts() if name == api), None)


def __getattr__(name: str) -> Any:
    if name == "WIRE_APIS":
        return wire_apis()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def _load() -> None:
    mutation_parts()
    for module in ("sse_layer", "faults", "read_cuts"):
        importlib.import_module(f"{__name__}.{module}")
    for qid, api in session_faults().items():
        _register(Mutation(qid, _never, Scope.SESSION, frozenset({"all"}), 0, api))


def _never(stream: Stream) -> bool:
    """A session's fault does not apply to one stream (it edits a tape)."""
    return False


def generatable() -> list[QuirkInfo]:
    """The catalogue's generatable entries (those a mutation applies), in its order."""
    _load()
    return [info for info in CATALOGUE.values() if info.id in _REGISTRY]


def mutation_of(quirk_id: str) -> Mutation:
    """The mutation of a generatable quirk (KeyError for any other id)."""
    _load()
    return _REGISTRY[quirk_id]  # type: ignore[index]  # a QuirkId is its text


def registered() -> dict[QuirkId, Mutation]:
    """Every mutation declared, by the quirk it applies, a session's faults among them
    (:func:`session_faults`)."""
    _load()
    return dict(_REGISTRY)


@functools.cache
def session_fault_parts() -> tuple[tuple[str, ModuleType], ...]:
    """(API id, its session_faults part) of every API whose package has one: the faults of a
    session (several exchanges: MCP), which edit a tape, not a stream."""
    found = []
    for api in api_table():
        module = part(api, "session_faults")
        if module is not None:
            found.append((api.id, module))
    return tuple(found)


def session_faults() -> dict[QuirkId, str]:
    """Every session fault's quirk (its part's ``FAULTS``, keyed by quirk id) and the API
    whose sessions it applies to."""
    out: dict[QuirkId, str] = {}
    for api, module in session_fault_parts():
        for quirk in module.FAULTS:
            out[QuirkId(quirk)] = api
    return out


def is_session_fault(quirk_id: str) -> bool:
    """A generatable quirk that is a session's fault (applied to a tape, not to a stream)."""
    info = entry(quirk_id)
    _load()
    return info is not None and info.kind == QuirkKind.SESSION and info.id in _REGISTRY


def session_faults_of(api: str) -> ModuleType | None:
    """An API's session_faults part (its sessions' faults), or None."""
    return next((rules for name, rules in session_fault_parts() if name == api), None)


def suggest(quirk_id: str) -> list[str]:
    """Generatable ids close to a mistyped one."""
    import difflib

    names = [info.id for info in generatable()]
    return difflib.get_close_matches(quirk_id, names, n=3, cutoff=0.5)


def not_generatable(quirk_id: str) -> str | None:
    """Why an id names no quirk streamtool can generate (with the closest ids that do), or None
    when it names one."""
    _load()
    info = entry(quirk_id)
    if info is not None and info.id in _REGISTRY:
        return None
    close = suggest(quirk_id)
    why = "not a quirk id" if info is None else "a quirk streamtool cannot generate"
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    return f"{quirk_id!r} is {why}{hint}"


# -- recordings --------------------------------------------------------------------------------
@dataclass(slots=True)
class Original:
    """A recording, replayed once: what mutations start from (a WebSocket session's: its
    ``records``, and no reads)."""

    header: Header
    reads: list[tuple[float | None, bytes]]
    end: End | None
    engine: ReplayEngine
    reported: set[str] = field(default_factory=set)
    records: list[Message | Control] | None = None

    def session(self) -> Session:
        """The session's records, copied for a mutation to edit."""
        assert self.records is not None
        return Session(copy.deepcopy(self.header), list(self.records), self.end)

    @property
    def converter(self) -> str | None:
        return self.engine.converter_name

    @property
    def api(self) -> str | None:
        name = self.converter
        if not name:
            return None
        api = api_for_converter(name)
        return api.id if api is not None else name

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


def replay_records(
    header: Header,
    records: Iterable[Message | Control],
    end: End | None,
    *,
    transcript: bool = False,
) -> ReplayEngine:
    """A finished replay of a WebSocket session's records (as a conformance check replays)."""
    engine = ReplayEngine(header, handler_options={"file_tools": {}}, transcript=transcript)
    for record in records:
        engine.feed_message(record)
    engine.finish(end)
    return engine


def analyse_session(
    header: Header, records: Iterable[Message | Control], end: End | None
) -> Original:
    """Replay a WebSocket session once."""
    records = list(records)
    engine = replay_records(header, records, end, transcript=True)
    return Original(header, [], end, engine, reported(engine), records)


def analyse(header: Header, chunks: Iterable[Chunk], end: End | None) -> Original:
    """Replay a recording once. Raises the replay's errors (``DetectionError``) as they come."""
    chunks = list(chunks)
    engine = replay(header, chunks, end, transcript=True)
    reads = [(c.t, _bytes(c.data)) for c in chunks]
    return Original(header, reads, end, engine, reported(engine))


def reported(engine: ReplayEngine) -> set[str]:
    """What a finished replay reports: its quirks, its error kinds and its wire notes."""
    found: set[str] = {q.id for q in engine.quirks}
    found.update(e.kind for e in engine.errors)
    found.update(engine.wire.found)
    return found


def applies(original: Original, quirk_id: str) -> bool:
    """Whether the quirk can be applied to the recording (and it does not show it already)."""
    if quirk_id in original.reported or original.api is None or is_session_fault(quirk_id):
        return False  # a session's faults edit a tape (session_faults), not one stream
    mut = mutation_of(quirk_id)
    if mut.session != (original.records is not None):
        return False  # a session's mutations edit messages, the others reads
    if mut.session:
        return original.api in mut.apis and bool(mut.func(original.session()))
    if original.header.response.get("status", 200) not in (200, None):
        return False
    if original.api not in mut.apis:
        return False
    if mut.scope is Scope.FAULT and original.engine.errors:
        return False  # faults are cut into streams that are whole and clean
    if mut.scope in (Scope.API, Scope.FAULT) and original.reported & _events_kept(original.api):
        # e.g. a call that is a wrapper whose arguments hold the real calls: the API's events
        # are left as they are (only the framing and the reads are mutated)
        return False
    stream = original.stream()
    if stream.events and stream.events[0].raw.lstrip()[:1] == b"[":
        return False  # a JSON array: mutations edit events (SSE events, or NDJSON's lines)
    return mut.func(stream)


def _events_kept(api: str) -> frozenset[str]:
    """The quirks whose recordings an API's rules keep the events of (``EVENTS_KEPT_WHEN``)."""
    rules = rules_of(api)
    kept: frozenset[str] = getattr(rules, "EVENTS_KEPT_WHEN", frozenset())
    return kept


def applicable(original: Original) -> list[QuirkInfo]:
    """The generatable quirks that apply to the recording, in the catalogue's order."""
    return [info for info in generatable() if applies(original, info.id)]


# cuts that compose
_ADDITIVE_CUTS = frozenset({QuirkId.READS_UTF8_SPLIT, QuirkId.READS_CRLF_SPLIT})


class NotApplicable(ValueError):
    """A quirk asked for cannot be applied to this recording."""


def apply_session(
    original: Original, quirk_ids: Sequence[str]
) -> tuple[Header, list[Message | Control], End | None]:
    """A session with every quirk of ``quirk_ids`` applied, in stage order. Raises
    :class:`NotApplicable` naming a quirk that does not apply."""
    muts = []
    for qid in dict.fromkeys(quirk_ids):
        if not applies(original, qid):
            raise NotApplicable(qid)
        muts.append((mutation_of(qid), qid))
    session = original.session()
    for mut, qid in sorted(muts, key=lambda m: m[0].stage):
        if not mut.func(session):
            raise NotApplicable(qid)
    return session.header, session.records, session.end


def apply(original: Original, quirk_ids: Sequence[str]) -> tuple[Header, list[Chunk], End | None]:
    """The recording with every quirk of ``quirk_ids`` applied (in stage order: events, then
    framing, then reads). Raises :class:`NotApplicable` naming a quirk that does not apply.
    (A WebSocket session's: :func:`apply_session`.)"""
    muts = []
    for qid in dict.fromkeys(quirk_ids):
        if not applies(original, qid):
            raise NotApplicable(qid)
        muts.append((mutation_of(qid), qid))
    if any(mut.reframes for mut, _ in muts):
        # e.g. a JSON array has no SSE events: what a mutation did to the SSE framing is gone
        sse = [qid for mut, qid in muts if mut.scope is Scope.SSE]
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
    # a WebSocket session's messages in order, and its closes: its wire, which its faults edit
    t.pop("events", None)
    t.pop("closes", None)
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
