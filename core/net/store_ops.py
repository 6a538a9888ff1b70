"""What ``streamtool tape push|pull|ls|verify|gc`` do to a tape on object storage (the store
access is :mod:`.store`'s; the commands are ``cli/tape.py``)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ..exchange.store_layout import (
    SETTINGS,
    EntryRef,
    golden_key,
    recording_key,
    view_name,
)
from ..model.records import RecordingError, os_error_text
from ..recording.tape_index import IndexEntry, read_index
from .store import (
    PULLED_NOTE,
    StoreError,
    StoreTape,
    entry_fields,
    header_fields,
    local_tape_settings,
    now,
    run_sync,
    write_folder,
)

Progress = Callable[[int], None]
# a recording no entry names is left alone this long: its writer may be about to name it
ORPHAN_GRACE = timedelta(hours=1)


@dataclass(slots=True)
class PushResult:
    added: int = 0  # exchanges the store did not hold
    present: int = 0  # exchanges it held already (the same recording, the same request)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (file, why) not pushed


def push(
    folder: str | os.PathLike[str],
    url: str,
    *,
    on_total: Callable[[int], None] | None = None,
    progress: Progress | None = None,
) -> PushResult:
    """Publish every finished exchange of the tape folder ``folder`` to the store tape ``url``
    (its recording, then its entry; an exchange the store holds already is left as it is),
    many at once."""
    from .tape import load_exchanges

    root = Path(folder)
    tape = StoreTape(url)
    before = {(r.key, r.recording) for r in tape.listing(offline_ok=False).refs}
    recordings, skipped = load_exchanges(root)
    entries = {e.file: e for e in read_index(root)}
    result = PushResult(skipped=list(skipped))
    if on_total is not None:
        on_total(len(recordings))

    def one(path: Path) -> EntryRef:
        entry = entries.get(path.name)
        fields = header_fields(path)
        if entry is not None:
            fields.update({k: v for k, v in entry_fields(entry).items() if v is not None})
        ref = tape.publish_file(path, fields)
        if progress is not None:
            progress(1)
        return ref

    settings = root / SETTINGS
    if settings.is_file():  # the tape's max_age and on_expiry go with it (checked first)
        local_tape_settings(root)
        write_settings(url, json.loads(settings.read_bytes()))
    with ThreadPoolExecutor(tape.parallel) as pool:
        refs = list(pool.map(one, [Path(r.path) for r in recordings]))
    for ref in refs:
        if (ref.key, ref.recording) in before:
            result.present += 1
        else:
            result.added += 1
    return result


def pull(
    url: str,
    folder: str | os.PathLike[str],
    *,
    on_total: Callable[[int], None] | None = None,
    progress: Progress | None = None,
) -> list[IndexEntry]:
    """Make ``folder`` the store tape ``url``: every recording (byte for byte, through the
    verified cache, many at once) and the index, golden files beside their recordings.
    ``folder`` is new, empty, or one an earlier pull of the same URL made (updated: the
    recordings the tape no longer names are removed). Nothing is written to it before every
    recording is fetched and checked."""
    root = Path(folder)
    _check_pull_target(root, url)
    tape = StoreTape(url)
    listing = tape.listing(offline_ok=False)
    if on_total is not None:
        on_total(len(listing.refs))
    paths = tape.fetch([r.recording for r in listing.refs], progress)
    goldens = tape.goldens({r.recording for r in listing.refs})
    old = {e.file for e in read_index(root)} if root.is_dir() else set()
    entries = write_folder(root, listing.refs, paths, goldens=goldens)
    for name in old - {e.file for e in entries}:
        (root / name).unlink(missing_ok=True)
        (root / (Path(name).stem + ".golden.json")).unlink(missing_ok=True)
    settings = tape.get_bytes(SETTINGS)
    try:
        if settings is not None:
            (root / SETTINGS).write_bytes(settings)
        (root / PULLED_NOTE).write_text(url + "\n", encoding="utf-8")
    except OSError as exc:
        raise RecordingError(str(root / PULLED_NOTE), None, os_error_text(exc)) from None
    return entries


def _check_pull_target(root: Path, url: str) -> None:
    if not root.exists():
        return
    if not root.is_dir():
        raise RecordingError(str(root), None, "is a file, not a folder to pull a tape into")
    try:
        note = (root / PULLED_NOTE).read_text(encoding="utf-8").strip()
    except OSError:
        note = None
    if note == url.rstrip("/") or note == url:
        return
    if any(root.iterdir()):
        raise RecordingError(
            str(root),
            None,
            "exists and is not empty (a tape is pulled into a new folder, or one an earlier "
            f"pull of {url} made)",
        )


def rows(url: str, progress: Progress | None = None) -> list[dict[str, Any]]:
    """One row per exchange of the store tape ``url``, in the tape's order: its name (as a
    pulled folder names it), when it was recorded, what it was, its recording's hash and
    size, and the request's match key."""
    tape = StoreTape(url)
    listing = tape.listing()
    records = tape.entry_records(listing.refs, progress)
    out = []
    for seq, (ref, rec) in enumerate(zip(listing.refs, records, strict=True), start=1):
        f = rec.fields
        out.append(
            {
                "file": view_name(seq, rec.name),
                "recorded_at": f.get("recorded_at")
                or ref.recorded_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "provider": f.get("provider"),
                "api": f.get("api"),
                "model": f.get("model"),
                "status": f.get("status"),
                "end": f.get("end"),
                "duration_s": f.get("duration_s"),
                "ttft_s": f.get("ttft_s"),
                "chunks": f.get("chunks"),
                "bytes": rec.size,
                "recording": ref.recording,
                "match_key": ref.key,
            }
        )
    return out


def verify(url: str, progress: Progress | None = None) -> tuple[int, list[str]]:
    """Fetch every exchange's recording from the store itself (not the cache) and check it
    against its hash: the number checked and one message per exchange that does not match
    (or whose recording is missing)."""
    import obstore

    tape = StoreTape(url)
    refs = tape.listing(offline_ok=False).refs

    async def run() -> list[str]:
        gate = asyncio.Semaphore(tape.parallel)

        async def one(seq: int, ref: EntryRef) -> str | None:
            async with gate:
                try:
                    got = await obstore.get_async(
                        tape.store, tape.key(recording_key(ref.recording))
                    )
                    h = hashlib.sha256()
                    async for block in got:
                        h.update(block)
                except FileNotFoundError:
                    return f"{_named(seq, ref)}: its recording {ref.recording[:12]} is missing"
                except Exception as exc:
                    raise tape.fail(exc) from None
            if progress is not None:
                progress(1)
            if h.hexdigest() != ref.recording:
                return (
                    f"{_named(seq, ref)}: its recording does not match its hash "
                    f"(named {ref.recording[:12]}, holds {h.hexdigest()[:12]})"
                )
            return None

        found = await asyncio.gather(*(one(i, r) for i, r in enumerate(refs, start=1)))
        return [m for m in found if m is not None]

    return len(refs), run_sync(run())


def _named(seq: int, ref: EntryRef) -> str:
    return f"exchange {seq} ({ref.path})"


@dataclass(slots=True)
class Collected:
    entries: list[EntryRef]  # entries recorded before the cut-off
    orphans: list[str]  # recordings no entry names (a killed writer's, or the entries')
    deleted: bool


def gc(url: str, older_than_days: float, *, delete: bool = False) -> Collected:
    """The exchanges recorded more than ``older_than_days`` ago, and the recordings that no
    entry left names (written before the same cut-off, and at least an hour ago); removed
    with ``delete`` (entries first: a reader never finds an entry whose recording is gone)."""
    if older_than_days < 0:
        raise ValueError("--older-than is a number of days, 0 or more")
    tape = StoreTape(url)
    cutoff = now() - timedelta(days=older_than_days)
    refs = tape.listing(offline_ok=False).refs
    old = [r for r in refs if r.recorded_at < cutoff]
    named = {r.recording for r in refs if r.recorded_at >= cutoff}
    grace = min(cutoff, now() - ORPHAN_GRACE)
    orphans = sorted(
        d for d, written in tape.recordings().items() if d not in named and _before(written, grace)
    )
    if delete:
        tape.delete([r.path for r in old])
        tape.delete([recording_key(d) for d in orphans] + [golden_key(d) for d in orphans])
    return Collected(old, orphans, delete)


def _before(when: datetime, cutoff: datetime) -> bool:
    return when < cutoff


def write_settings(url: str, settings: dict[str, Any]) -> None:
    """Set a store tape's ``tape.json`` (max_age, on_expiry)."""
    tape = StoreTape(url)
    import obstore

    try:
        obstore.put(tape.store, tape.key("tape.json"), json.dumps(settings).encode())
    except Exception as exc:
        raise tape.fail(exc) from None


__all__ = ["Collected", "PushResult", "StoreError", "gc", "pull", "push", "rows", "verify"]
