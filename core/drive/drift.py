"""Drift between two tapes: each exchange of one read against the same request in the other
(the edge between tape folders and :mod:`streamtool.core.outputs.drift`), and adopting the new
recordings into the old tape.

An exchange of the old tape is paired with the exchange of the new one that holds the same
request (method, path and body, as tapes match requests), else with the one of the same sequence
number; one the new tape lacks is reported (``break``: the request was not answered again).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..engine.replay import DetectionError
from ..model.quirks import entry
from ..model.records import Message, RecordingError
from ..mutations.stream import parse
from ..outputs.drift import Change, ExchangeDrift, Side, compare
from ..recording.reader import Source
from ..recording.tape_index import IndexEntry, read_index, rewrite_index, tape_lock
from ..wire import fastjson
from ..wire.fastjson import canonical
from .replay_file import replay_file


def event_type(name: str | None, payload: Any) -> str:
    """What kind of event a payload is: its ``type``, else the SSE event's name, else its
    ``object``, else ``data``."""
    if isinstance(payload, dict):
        kind = payload.get("type")
        if isinstance(kind, str) and kind:
            return kind
    if name:
        return name
    if isinstance(payload, dict):
        obj = payload.get("object")
        if isinstance(obj, str) and obj:
            return obj
    return "data"


def side_of(path: str | os.PathLike[str]) -> Side:
    """What a recording says, as drift compares it. Raises ``RecordingError`` for a file that
    is not a recording and ``DetectionError`` for a stream no converter reads."""
    source = Source(path)
    if source.websocket:
        return _session_side(path, source)
    reads = [
        (c.t, c.data if isinstance(c.data, bytes) else c.data.encode("utf-8"))
        for c in source.chunks()
    ]
    engine = replay_file(path)
    summary = engine.summary()
    header = source.header
    status = header.response.get("status") if isinstance(header.response, dict) else None
    stream = parse(reads, header, engine.converter_name or "", engine.converter_name or "")
    events = []
    for ev in stream.events:
        payload = ev.json()
        if payload is not None:
            events.append((event_type(ev.name, payload), payload))
    times = [t for t, _ in reads if t is not None]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    severities = _severities(summary)
    return Side(
        summary,
        events,
        status if isinstance(status, int) else None,
        times[0] if times else None,
        gaps,
        severities,
    )


def _session_side(path: str | os.PathLike[str], source: Source) -> Side:
    """A WebSocket session: its messages are its events (a client's typed ``client:...``), the
    server's times its timing."""
    summary = replay_file(path).summary()
    header = source.header
    status = header.response.get("status") if isinstance(header.response, dict) else None
    events: list[tuple[str, Any]] = []
    times: list[float] = []
    for record in Source(path).session_records():
        data = getattr(record, "data", None)
        if not isinstance(record, Message) or not isinstance(data, str):
            continue  # control frames and binary messages have no fields to compare
        try:
            payload = fastjson.loads(data)
        except ValueError:
            continue
        kind = event_type(None, payload)
        events.append((kind if record.direction == "server" else f"client:{kind}", payload))
        if record.direction == "server" and record.t is not None:
            times.append(record.t)
    return Side(
        summary,
        events,
        status if isinstance(status, int) else None,
        times[0] if times else None,
        [b - a for a, b in zip(times, times[1:], strict=False)],
        _severities(summary),
    )


def _severities(summary: dict[str, Any]) -> dict[str, str]:
    out = {}
    for q in summary.get("quirks") or []:
        info = entry(q["id"])
        if info is not None:
            out[str(q["id"])] = str(info.severity)
    return out


def request_key(path: str | os.PathLike[str]) -> tuple[str, str, str] | None:
    """The request a recording answers, as tapes match it (None: it holds none)."""
    try:
        request = Source(path).header.request
    except RecordingError:
        return None
    if not isinstance(request, dict):
        return None
    url = request.get("url")
    where = urlsplit(url).path if isinstance(url, str) else ""
    return str(request.get("method") or "POST"), where, canonical(request.get("body"))


def pair(
    old: Sequence[IndexEntry], new: Sequence[IndexEntry], old_dir: Path, new_dir: Path
) -> list[tuple[IndexEntry, IndexEntry | None]]:
    """Each exchange of the old tape and the new one answering the same request (else the one
    of the same sequence number; ``None`` when the new tape holds neither)."""
    by_key: dict[Any, list[IndexEntry]] = {}
    for e in new:
        by_key.setdefault(request_key(new_dir / e.file), []).append(e)
    by_seq = {e.seq: e for e in new}
    taken: set[int] = set()
    out: list[tuple[IndexEntry, IndexEntry | None]] = []
    for e in old:
        key = request_key(old_dir / e.file)
        found = None
        for candidate in by_key.get(key, []) if key is not None else []:
            if id(candidate) not in taken:
                found = candidate
                break
        if found is None:
            same = by_seq.get(e.seq)
            if same is not None and id(same) not in taken:
                found = same
        if found is not None:
            taken.add(id(found))
        out.append((e, found))
    return out


def drift_exchange(old: Path, new: Path | None, seq: int | None) -> ExchangeDrift:
    if new is None or not new.exists():
        why = "the new tape holds no answer to this request"
        return ExchangeDrift(old.name, seq, [], problem=why)
    try:
        before = side_of(old)
    except (RecordingError, DetectionError, ValueError) as exc:
        return ExchangeDrift(old.name, seq, [], problem=f"{old.name}: {exc}")
    try:
        after = side_of(new)
    except (RecordingError, DetectionError, ValueError) as exc:
        return ExchangeDrift(old.name, seq, [], problem=f"{new.name}: {exc}")
    return ExchangeDrift(old.name, seq, compare(before, after))


def drift_tapes(
    old_dir: str | os.PathLike[str], new_dir: str | os.PathLike[str]
) -> tuple[list[ExchangeDrift], list[tuple[IndexEntry, IndexEntry | None]]]:
    """Every exchange of the old tape against the new tape (and the pairs compared)."""
    old_path, new_path = Path(old_dir), Path(new_dir)
    pairs = pair(read_index(old_path), read_index(new_path), old_path, new_path)
    report = [
        drift_exchange(old_path / a.file, new_path / b.file if b is not None else None, a.seq)
        for a, b in pairs
    ]
    return report, pairs


def adopt(
    old_dir: str | os.PathLike[str],
    new_dir: str | os.PathLike[str],
    pairs: Sequence[tuple[IndexEntry, IndexEntry | None]],
    seqs: set[int] | None,
) -> list[int]:
    """Replace the old tape's recordings by the new ones for the exchanges ``seqs`` names
    (``None``: every exchange the new tape answered), each under its old name and in its old
    place in the index (the index entry takes the new one's status, end and timings). Returns the
    sequence numbers adopted. Each file is replaced at once (a reader sees the old recording or
    the new one); the index is rewritten once, under the tape's lock."""
    old_path, new_path = Path(old_dir), Path(new_dir)
    chosen = [(a, b) for a, b in pairs if b is not None and (seqs is None or a.seq in seqs)]
    if not chosen:
        return []
    replaced: dict[int, IndexEntry] = {}
    with tape_lock(old_path):
        for a, b in chosen:
            target = old_path / a.file
            temp = old_path / f".{a.file}.adopt"
            try:
                shutil.copyfile(new_path / b.file, temp)
                os.replace(temp, target)
            except OSError as exc:
                temp.unlink(missing_ok=True)
                raise RecordingError(str(target), None, str(exc.strerror or exc)) from None
            replaced[a.seq] = IndexEntry(
                **{
                    **b.to_record(),
                    "seq": a.seq,
                    "file": a.file,
                }
            )
        entries = [replaced.get(e.seq, e) for e in read_index(old_path)]
        rewrite_index(old_path, entries)
    return sorted(replaced)


__all__ = ["Change", "adopt", "drift_exchange", "drift_tapes", "pair", "side_of"]
