"""Tapes on disk: a folder of recordings of one session plus its ordered index.

``TAPE/index.jsonl`` holds one JSON object per exchange, appended and flushed when the exchange
ends (see :class:`IndexEntry`). A tape is read in index order, then any recordings the index does
not name, by file name; a folder without an index is its recordings by file name. A crash while an
entry was being written leaves a cut last line: it is ignored when the index is read.

New recordings are named ``0001-anthropic-messages-claude-sonnet-4-6.jsonl`` (a 4-digit
sequence number, the API, the model) by :meth:`Tape.allocate`, which is safe for exchanges that
run at the same time in one process.
"""

from __future__ import annotations

import json
import os
import re
import threading
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from ..records import RecordingError, os_error_text
from ..wire import fastjson

INDEX_NAME = "index.jsonl"
# the files a tape serves (golden files and the index itself are not exchanges)
EXCHANGE_SUFFIXES = (".jsonl", ".sse", ".txt")
_SEQ_PREFIX = re.compile(r"^(\d+)-")
_SLUG_DROP = re.compile(r"[^a-z0-9]+")


@dataclass(slots=True)
class IndexEntry:
    """One exchange of a tape, as the index records it."""

    seq: int
    file: str  # the recording's file name inside the tape folder
    recorded_at: str | None = None
    api: str | None = None  # e.g. "chat.completions", "messages", "responses", "gemini"
    provider: str | None = None
    method: str | None = "POST"
    path: str | None = None  # the request's URL path, e.g. "/v1/chat/completions"
    model: str | None = None
    status: int | None = None
    end: str | None = None  # the recording's end reason ("complete", "error", ...)
    duration_s: float | None = None
    ttft_s: float | None = None
    chunks: int | None = None

    def to_record(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_obj(cls, obj: Any, path: str, line: int) -> IndexEntry:
        if not isinstance(obj, dict):
            raise RecordingError(path, line, "an index entry must be a JSON object")
        seq = obj.get("seq")
        name = obj.get("file")
        if not isinstance(seq, int) or isinstance(seq, bool):
            raise RecordingError(path, line, "an index entry needs an integer 'seq'")
        if not isinstance(name, str) or not name or _escapes(name):
            raise RecordingError(
                path, line, "an index entry needs a 'file' naming a recording in the tape"
            )
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in obj.items() if k in known})


def _escapes(name: str) -> bool:
    """A file name that is not a plain name inside the tape folder."""
    return name in (".", "..") or "/" in name or "\\" in name or name == INDEX_NAME


def slug(text: str | None, default: str = "unknown") -> str:
    """``claude-sonnet-4.6`` -> ``claude-sonnet-4-6``; ``accounts/x/models/y`` -> ``accounts-x-
    models-y``: lower case letters, digits and single dashes only."""
    out = _SLUG_DROP.sub("-", (text or "").lower()).strip("-")
    return out[:80].rstrip("-") or default


def exchange_name(seq: int, api: str | None, model: str | None) -> str:
    """``exchange_name(1, "anthropic-messages", "claude-sonnet-4-6")`` ->
    ``0001-anthropic-messages-claude-sonnet-4-6.jsonl``."""
    return f"{seq:04d}-{slug(api, 'api')}-{slug(model, 'model')}.jsonl"


def read_index(folder: str | os.PathLike[str]) -> list[IndexEntry]:
    """The entries of ``folder/index.jsonl`` in order (``[]`` when there is no index).

    A last line cut off by a crash (not JSON, or not ended by a newline and not JSON) is
    ignored; any other broken line is a :class:`RecordingError` naming the index and the line.
    """
    index = Path(folder) / INDEX_NAME
    where = str(index)
    try:
        data = index.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise RecordingError(where, None, os_error_text(exc)) from None
    lines = data.split(b"\n")
    last = max((i for i, raw in enumerate(lines) if raw.strip()), default=-1)
    entries: list[IndexEntry] = []
    for i, raw in enumerate(lines):
        if not raw.strip():
            continue
        lineno = i + 1
        try:
            obj = fastjson.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            if i == last:
                break  # cut off while it was being written
            raise RecordingError(where, lineno, "not JSON") from None
        if i == last and not isinstance(obj, dict):
            break
        entries.append(IndexEntry.from_obj(obj, where, lineno))
    return entries


def append_entry(folder: str | os.PathLike[str], entry: IndexEntry) -> None:
    """Append one entry to ``folder/index.jsonl`` and flush it to disk.

    A previous writer that crashed mid-line left a cut line behind: it is dropped first (it
    names no complete exchange), so the new entry starts on its own line.
    """
    index = Path(folder) / INDEX_NAME
    line = json.dumps(entry.to_record(), ensure_ascii=False, separators=(",", ":")) + "\n"
    try:
        with open(index, "ab+") as fh:
            size = fh.tell()
            if size > 0:
                fh.seek(size - 1)
                if fh.read(1) != b"\n":
                    fh.seek(0)
                    whole = fh.read()  # an index holds small lines: this is rare and cheap
                    fh.truncate(whole.rfind(b"\n") + 1)
            fh.seek(0, os.SEEK_END)
            fh.write(line.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        raise RecordingError(str(index), None, os_error_text(exc)) from None


def _recordings_in(folder: Path) -> list[Path]:
    try:
        found = [
            f
            for f in folder.iterdir()
            if f.name != INDEX_NAME
            and f.suffix.lower() in EXCHANGE_SUFFIXES
            and not f.name.startswith(".")
            and f.is_file()
        ]
    except OSError as exc:
        raise RecordingError(str(folder), None, os_error_text(exc)) from None
    return sorted(found, key=lambda f: f.name)


def list_exchanges(folder: str | os.PathLike[str]) -> list[Path]:
    """A tape's recordings in order: the index's, then any others by file name.

    An index entry naming a file the tape does not hold is a :class:`RecordingError`; a file
    the index names twice is listed once.
    """
    root = Path(folder)
    if not root.is_dir():
        raise RecordingError(
            str(root), None, "no such folder" if not root.exists() else "is not a folder"
        )
    entries = read_index(root)
    on_disk = _recordings_in(root)
    by_name = {f.name: f for f in on_disk}
    ordered: list[Path] = []
    seen: set[str] = set()
    for entry in entries:
        if entry.file in seen:
            continue
        found = by_name.get(entry.file)
        if found is None:
            raise RecordingError(
                str(root / INDEX_NAME),
                None,
                f"names {entry.file!r} (seq {entry.seq}), which the tape does not hold",
            )
        seen.add(entry.file)
        ordered.append(found)
    ordered.extend(f for f in on_disk if f.name not in seen)
    return ordered


class Tape:
    """A tape folder being written to: allocates file names and appends index entries.

    One instance per folder and process; :meth:`allocate` and :meth:`append` may be called
    from several threads at once.
    """

    def __init__(self, folder: str | os.PathLike[str], *, create: bool = True) -> None:
        self.folder = Path(folder)
        if create:
            try:
                self.folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise RecordingError(str(self.folder), None, os_error_text(exc)) from None
        elif not self.folder.is_dir():
            raise RecordingError(str(self.folder), None, "no such folder")
        # two locks: a name is allocated (on the server's event loop) while another thread
        # appends to the index, whose fsync takes milliseconds
        self._lock = threading.Lock()  # the next sequence number
        self._index_lock = threading.Lock()  # the index file
        self._next = self._first_free_seq()

    def _first_free_seq(self) -> int:
        highest = 0
        for entry in read_index(self.folder):
            highest = max(highest, entry.seq)
        for f in _recordings_in(self.folder):
            m = _SEQ_PREFIX.match(f.name)
            if m:
                highest = max(highest, int(m.group(1)))
        return highest + 1

    def allocate(self, api: str | None, model: str | None) -> tuple[int, Path]:
        """The next sequence number and the path of a recording that does not exist yet."""
        with self._lock:
            while True:
                seq = self._next
                self._next += 1
                path = self.folder / exchange_name(seq, api, model)
                if not path.exists():
                    return seq, path

    def append(self, entry: IndexEntry) -> None:
        """Add an exchange to the index once its recording is complete."""
        with self._index_lock:
            append_entry(self.folder, entry)

    def exchanges(self) -> list[Path]:
        return list_exchanges(self.folder)
