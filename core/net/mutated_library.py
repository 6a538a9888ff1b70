"""Quirks on demand wherever a stream is served: ``conform --mutate``, ``serve --mutate`` and
the pytest plugin's ``--stream-tape-mutate`` (the mutations: :mod:`streamtool.core.mutations`).

:func:`parse_mutate` reads the option (``all`` or ``ID,ID``; a bad id is a ``ValueError`` naming
the closest generatable ids). :func:`mutated_cases` turns each conformance case into one case per
applicable quirk, whose expected answer is streamtool's replay of the mutated stream.
:func:`mutate_library` applies the quirks to every recording a server holds (each recording gets
those that apply to it) and says which.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..engine.replay import DetectionError
from ..exchange.session_play import script
from ..model.records import Chunk, End, Header, RecordedExchange, RecordingError
from ..mutations import (
    Original,
    analyse,
    analyse_session,
    applicable,
    apply,
    apply_session,
    generatable,
    is_session_fault,
    not_generatable,
    replay,
    replay_records,
    session_faults_of,
)
from ..outputs.conformance import expected_from
from ..plugins import part
from ..recording.reader import Source
from .sessions import session_part

if TYPE_CHECKING:
    from .conform import Case, Result
    from .library import Library, Recording

ALL = "all"
MARK = " +"  # a mutated case's name: "<recording> +<quirk id>"


def parse_mutate(value: str | Sequence[str] | None) -> list[str] | None:
    """The quirk ids of a ``--mutate`` option: None when not given, every generatable id for
    ``all``. Raises ``ValueError`` for an id that is not generatable."""
    if value is None:
        return None
    items = [value] if isinstance(value, str) else list(value)
    ids = [v.strip() for item in items for v in item.split(",") if v.strip()]
    if not ids:
        return None
    if ALL in ids:
        return [info.id for info in generatable()]
    for qid in ids:
        refusal = not_generatable(qid)
        if refusal is not None:
            raise ValueError(f"--mutate: {refusal}")
    return list(dict.fromkeys(ids))


def _original(
    path: str, origin: tuple[Header, list[Chunk], End | None] | None = None
) -> Original | None:
    try:
        if origin is not None:
            return analyse(*origin)
        source = Source(path)
        if source.websocket:
            return analyse_session(source.header, list(source.session_records()), source.end)
        return analyse(source.header, list(source.chunks()), source.end)
    except DetectionError:
        return None


def _served(rec: Recording, name: str, header: Header, chunks: list[Chunk]) -> Recording:
    reads = [(c.t, c.data.encode("utf-8") if isinstance(c.data, str) else c.data) for c in chunks]
    headers = list(rec.headers)
    wanted = header.response.get("headers")
    if isinstance(wanted, dict):
        types = {k.lower(): v for k, v in wanted.items() if k.lower() == "content-type"}
        if types:
            headers = [(k, types.get(k.lower(), v)) for k, v in headers]
    return dataclasses.replace(
        rec, name=name, chunks=reads, size=sum(len(d) for _, d in reads), headers=headers
    )


def quirk_of(case_name: str) -> str | None:
    """The quirk a mutated case carries (None for a recording as it was)."""
    _, mark, qid = case_name.rpartition(MARK)
    return qid if mark else None


def mutated_cases(cases: Sequence[Case], ids: Sequence[str]) -> list[Case]:
    """Each case as it is (the baseline a quirk is judged against), then once per quirk of
    ``ids`` that applies to it, in the catalogue's order. Recordings no quirk applies to are
    left out."""
    from .conform import Case

    out: list[Case] = []
    wanted = set(ids)
    for case in cases:
        if case.session is not None:
            out += _session_cases(case, ids)
            continue
        original = _original(case.path)
        if original is None:
            continue
        if any(info.id in wanted for info in applicable(original)):
            out.append(case)
        for info in applicable(original):
            if info.id not in wanted:
                continue
            name = f"{case.name}{MARK}{info.id}"
            if original.records is not None:
                header, records, end = apply_session(original, [info.id])
                engine = replay_records(header, records, end)
                served = _served_session(case.served, name, records)
            else:
                header, chunks, end = apply(original, [info.id])
                engine = replay(header, chunks, end)
                served = _served(case.served, name, header, chunks)
            out.append(Case(name, case.path, served, expected_from(engine)))
    return out


def _served_session(rec: Recording, name: str, records: list[Any]) -> Recording:
    """A session's recording, served with its mutated records."""
    return dataclasses.replace(rec, name=name, session=script(records), records=records)


def _session_cases(case: Case, ids: Sequence[str]) -> list[Case]:
    """A recorded session as it is, then once per session fault of ``ids`` of its API: applied
    (what the client should understand from the faulty server), or listed as not applicable
    with the reason (a fault of the other protocol generation)."""
    from .conform import Case, session_api

    api = session_api(case.served)
    rules = part(api, "session_faults") if api is not None else None
    if api is None or rules is None or case.session is None:
        return []
    faults = [qid for qid in rules.FAULTS if qid in ids]
    if not faults:
        return []
    out = [case]
    for qid in faults:
        name = f"{case.name}{MARK}{qid}"
        why = rules.not_applicable(case.session, qid)
        if why is not None:
            out.append(Case(name, case.path, case.served, case.expected, case.session, skip=why))
            continue
        mutated = rules.apply(case.session, qid)
        expected = session_part(api).expected(mutated)
        out.append(Case(name, case.path, case.served, expected, session=mutated))
    return out


# -- a recorded session (a tape) ---------------------------------------------------------------
def tape_session(folder: str | os.PathLike[str]) -> tuple[str, list[RecordedExchange]]:
    """The recorded session of a tape: its API's id and its exchanges. Raises
    :class:`RecordingError` when the folder holds none."""
    from .sessions import exchanges_of, session_groups
    from .tape import load_tape

    try:
        library = load_tape(folder)
    except ValueError as exc:
        raise RecordingError(str(folder), None, str(exc)) from None
    groups = session_groups(library)
    if not groups:
        raise RecordingError(
            str(folder), None, "holds no recorded session (MCP exchanges): give a recording"
        )
    api, recordings = next(iter(groups.items()))
    return api, exchanges_of(recordings)


def session_fault_list(api: str, exchanges: list[RecordedExchange]) -> list[tuple[str, str | None]]:
    """Each fault of a session of ``api``: its id, and why it does not apply (None: it does)."""
    rules = session_faults_of(api)
    if rules is None:
        return []
    return [(qid, rules.not_applicable(exchanges, qid)) for qid in rules.FAULTS]


def mutate_tape(
    folder: str | os.PathLike[str], ids: Sequence[str], output: str | os.PathLike[str], force: bool
) -> list[RecordedExchange]:
    """Write the recorded session of ``folder`` with the faults ``ids`` applied, in the order
    given, as the tape ``output``; returns its exchanges. Raises ``ValueError`` naming a fault
    that does not apply (and why), :class:`RecordingError` for unusable input or output."""
    from ..recording.tape_write import write_tape

    api, exchanges = tape_session(folder)
    rules = session_faults_of(api)
    for qid in ids:
        if rules is None or qid not in rules.FAULTS:
            raise ValueError(f"{folder}: quirk {qid} is not a fault of {api} sessions")
        why = rules.not_applicable(exchanges, qid)
        if why is not None:
            raise ValueError(f"{folder}: quirk {qid} does not apply to it ({why})")
        exchanges = rules.apply(exchanges, qid)
    write_tape(output, exchanges, force=force)
    return exchanges


def mutate_recording(rec: Recording, ids: Sequence[str]) -> list[str]:
    """Apply to ``rec`` (in place) the quirks of ``ids`` that apply to it and compose; returns
    them (empty: the recording is left as it was)."""
    original = _original(rec.path, rec.origin)
    if original is None:
        return []
    wanted = set(ids)
    chosen = [info.id for info in applicable(original) if info.id in wanted]
    # one of each kind of change at a time: mutations of the same events stay separate
    picked: list[str] = []
    compose = apply_session if original.records is not None else apply
    for qid in chosen:
        try:
            compose(original, [*picked, qid])
        except (ValueError, LookupError, AssertionError):
            continue  # it does not compose with those picked before
        picked.append(qid)
    if not picked:
        return []
    if original.records is not None:
        _header, records, _end = apply_session(original, picked)
        rec.session = script(records)
        rec.records = records
        return picked
    header, chunks, _end = apply(original, picked)
    served = _served(rec, rec.name, header, chunks)
    rec.chunks = served.chunks
    rec.size = served.size
    rec.headers = served.headers
    return picked


def mutate_library(library: Library, ids: Sequence[str]) -> dict[str, list[str]]:
    """Apply to every recording of ``library`` the quirks of ``ids`` that apply to it (in
    place: the server then serves the mutated streams). Returns recording name -> quirks (for
    a library that makes its streams on demand, a dict filled as they are made)."""
    wanted = list(ids)
    return library.transform(lambda rec: mutate_recording(rec, wanted))


def by_quirk(results: Sequence[Result]) -> dict[str, dict[str, object]]:
    """Per quirk: the runs that passed and failed, and what differed in the failures
    (``{"passed": n, "failed": n, "differs": [field, ...], "recordings": n, "unmutated_fails":
    n}``). A run counts against a quirk only when the client passed the same recording,
    unmutated, cut the same way; runs whose baseline failed too are counted apart."""
    baseline = {(r.case.name, r.chunking): r.status for r in results if not quirk_of(r.case.name)}
    out: dict[str, dict[str, object]] = {}
    for r in results:
        qid = quirk_of(r.case.name)
        if qid is None or r.status == "not applicable":
            continue
        row = out.setdefault(
            qid,
            {"passed": 0, "failed": 0, "differs": [], "recordings": set(), "unmutated_fails": 0},
        )
        row["recordings"].add(r.case.name)  # type: ignore[attr-defined]
        base = baseline.get((r.case.name.rpartition(MARK)[0], r.chunking))
        if base == "fail":
            row["unmutated_fails"] += 1  # type: ignore[operator]
        elif r.status == "pass":
            row["passed"] += 1  # type: ignore[operator]
        else:
            row["failed"] += 1  # type: ignore[operator]
            fields = row["differs"]
            assert isinstance(fields, list) and r.verdict is not None
            for d in r.verdict.differences:
                if d.field not in fields:
                    fields.append(d.field)
    for row in out.values():
        row["recordings"] = len(row["recordings"])  # type: ignore[arg-type]
    order = {info.id: n for n, info in enumerate(generatable())}
    return dict(sorted(out.items(), key=lambda kv: order.get(kv[0], len(order))))


__all__ = [
    "End",
    "by_quirk",
    "mutate_library",
    "mutate_recording",
    "mutated_cases",
    "parse_mutate",
    "quirk_of",
]


@dataclasses.dataclass(frozen=True, slots=True)
class Mutator:
    """A ``--mutate`` option's quirks: applied to each stream of a library they apply to
    (called with the library), and, for the recorded sessions it serves, the session's faults
    among them (:attr:`session_ids`, applied by the service to the sessions' tapes)."""

    ids: tuple[str, ...]

    def __call__(self, library: Library) -> dict[str, list[str]]:
        return mutate_library(library, self.ids)

    @property
    def session_ids(self) -> tuple[str, ...]:
        return tuple(q for q in self.ids if is_session_fault(q))


def mutator(value: str | Sequence[str] | None) -> Mutator | None:
    """What applies a ``--mutate`` option's quirks to a library (a service's ``mutate``):
    ``None`` when not given. Raises ``ValueError`` for an id that is not generatable."""
    ids = parse_mutate(value)
    if ids is None:
        return None
    return Mutator(tuple(ids))
