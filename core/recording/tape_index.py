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

import errno
import json
import logging
import os
import re
import stat
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Protocol

from ..model.records import INDEX_NAME, RecordingError, os_error_text
from ..wire import fastjson
from .own_files import LINK_REFUSED, open_own, refusal
from .tape_gitignore import is_fresh, write_gitignore

LOCK_NAME = ".lock"  # the tape's file lock (hidden: never an exchange)
# the highest sequence number handed out in the folder, by any writer (under the tape's lock)
COUNTER_NAME = ".seq"
LOCK_TIMEOUT = 60.0  # seconds a writer waits for the lock before it gives up with an error
# the files a tape serves (golden files and the index itself are not exchanges)
EXCHANGE_SUFFIXES = (".jsonl", ".sse", ".txt")
# a recording's sequence number (or a ``.NAME.reserved`` file's, left by an older streamtool)
_SEQ_PREFIX = re.compile(r"^\.?(\d+)-")
_log = logging.getLogger("streamtool.tape")
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
        # its fields are plain values: no deep copy (``asdict``) needed
        return {name: getattr(self, name) for name in _ENTRY_FIELDS}

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


_ENTRY_FIELDS = tuple(f.name for f in fields(IndexEntry))


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


@contextmanager
def tape_lock(folder: str | os.PathLike[str], held: Any = None) -> Iterator[None]:
    """Hold the tape's file lock (``folder/.lock``): one writer at a time, across threads and
    processes. Raises :class:`RecordingError` when it cannot be had in :data:`LOCK_TIMEOUT`.
    ``held``: the ``filelock.FileLock`` of that file to use (a writer's own, made once)."""
    from filelock import FileLock, Timeout

    path = os.path.join(folder, LOCK_NAME)
    lock = held if held is not None else FileLock(path, timeout=LOCK_TIMEOUT)
    try:
        lock.acquire()
    except Timeout:
        raise RecordingError(
            path, None, f"another writer has held the tape's lock for {LOCK_TIMEOUT:g} s"
        ) from None
    except OSError as exc:  # filelock opens the lock file without following a link
        raise RecordingError(path, None, _lock_error(Path(path), exc)) from None
    try:
        yield
    finally:
        lock.release()


def _lock_error(path: Path, exc: OSError) -> str:
    """An ``OSError`` of taking the lock as one line (a link put there meanwhile is named)."""
    if exc.errno == errno.ELOOP:
        return LINK_REFUSED
    return refusal(path) or os_error_text(exc)


def _whole_entry(raw: bytes) -> bool:
    """``raw`` (a line without its newline) is an index entry, not a fragment of one."""
    try:
        obj = fastjson.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(obj, dict) and isinstance(obj.get("seq"), int) and "file" in obj


def _append_line(fh: Any, line: bytes) -> None:
    """Append ``line`` (ending in a newline) to the index open in ``fh`` (``ab+``), as a line of
    its own. A last line without its newline is kept when it is a whole entry (it gets its
    newline); a fragment a crashed writer left is dropped: it names no exchange."""
    size = fh.seek(0, os.SEEK_END)
    prefix = b""
    if size > 0:
        fh.seek(size - 1)
        if fh.read(1) != b"\n":
            fh.seek(0)
            whole = fh.read()  # an index holds small lines: this is rare and cheap
            start = whole.rfind(b"\n") + 1
            if _whole_entry(whole[start:]):
                prefix = b"\n"
            else:
                fh.truncate(start)
    fh.write(prefix + line)  # one write of whole lines (the file is opened for appending)
    fh.flush()


def append_entries(
    folder: str | os.PathLike[str],
    entries: list[IndexEntry],
    *,
    locked: bool = False,
    lock: Callable[[], AbstractContextManager[None]] | None = None,
) -> None:
    """Append entries to ``folder/index.jsonl`` under the tape's lock (``locked``: the caller
    holds it already; ``lock``: how to take it, by default :func:`tape_lock`), then flush them
    to disk. An empty list makes an empty index."""
    index = os.path.join(folder, INDEX_NAME)
    data = b"".join(
        (json.dumps(e.to_record(), ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        for e in entries
    )
    if locked:
        held: AbstractContextManager[None] = nullcontext()
    else:
        held = lock() if lock is not None else tape_lock(folder)
    try:
        with held:
            # never through a link: opened as the tape's own regular file
            fd = open_own(index, os.O_RDWR | os.O_APPEND | os.O_CREAT)
            fh = open(fd, "ab+")  # noqa: SIM115 (closed below, after the lock is let go)
            try:
                if data:
                    _append_line(fh, data)
            except BaseException:
                fh.close()
                raise
        # the data is in the file: the fsync need not hold up the other writers
        with fh:
            os.fsync(fh.fileno())
    except OSError as exc:
        raise RecordingError(index, None, os_error_text(exc)) from None


def append_entry(folder: str | os.PathLike[str], entry: IndexEntry) -> None:
    """Append one entry to ``folder/index.jsonl`` (whole line, under the tape's lock) and flush
    it to disk. A last line without its newline is kept when it is an entry; a cut fragment of
    one (a crashed writer's) is dropped."""
    append_entries(folder, [entry])


def rewrite_index(folder: str | os.PathLike[str], entries: list[IndexEntry]) -> None:
    """Replace ``folder/index.jsonl`` by ``entries`` at once (a reader sees the old index or
    the new one, never a mix). The caller holds the tape's lock."""
    index = Path(folder) / INDEX_NAME
    temp = Path(folder) / f".{INDEX_NAME}.new"
    data = "".join(
        json.dumps(e.to_record(), ensure_ascii=False, separators=(",", ":")) + "\n" for e in entries
    )
    try:
        temp.unlink(missing_ok=True)  # a leftover (or a link put there) goes, never written through
        fd = open_own(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        with open(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temp, index)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise RecordingError(str(index), None, os_error_text(exc)) from None


@dataclass(slots=True)
class TapeFiles:
    """What a tape folder holds: its recordings in order and the files it refuses."""

    indexed: bool  # the folder has an index
    listed: list[Path] = field(default_factory=list)  # named by the index, in its order
    unlisted: list[Path] = field(default_factory=list)  # the others, by file name
    refused: list[tuple[str, str]] = field(default_factory=list)  # (file name, why)

    @property
    def all(self) -> list[Path]:
        return self.listed + self.unlisted


def _scan(folder: Path) -> tuple[list[Path], list[tuple[str, str]]]:
    """The folder's own regular recording files by name, and the recording-named entries that
    are not regular files (symbolic links, folders, FIFOs...), refused."""
    found: list[Path] = []
    refused: list[tuple[str, str]] = []
    try:
        with os.scandir(folder) as it:
            for f in it:
                name = f.name
                if (
                    name == INDEX_NAME
                    or name.startswith(".")
                    or not name.lower().endswith(EXCHANGE_SUFFIXES)
                ):
                    continue
                if f.is_symlink():
                    refused.append((name, "a symbolic link: a tape serves only its own files"))
                elif f.is_file(follow_symlinks=False):
                    found.append(folder / name)
                elif not f.is_dir(follow_symlinks=False):
                    refused.append((name, "not a regular file"))
    except OSError as exc:
        raise RecordingError(str(folder), None, os_error_text(exc)) from None
    return sorted(found, key=lambda f: f.name), sorted(refused)


def is_own_file(folder: str | os.PathLike[str], path: str | os.PathLike[str]) -> bool:
    """``path`` is a regular file directly inside ``folder`` (not a link, not elsewhere)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode):
        return False
    return os.path.realpath(os.path.dirname(os.path.abspath(path))) == os.path.realpath(folder)


def tape_files(folder: str | os.PathLike[str]) -> TapeFiles:
    """A tape's recordings: the index's in its order, then the others by file name.

    A file that is not one of the tape's own regular files is refused (one log line each) and
    left out. An index entry naming a file the tape does not hold at all is a
    :class:`RecordingError`; a file the index names twice is listed once.
    """
    root = Path(folder)
    if not root.is_dir():
        raise RecordingError(
            str(root), None, "no such folder" if not root.exists() else "is not a folder"
        )
    entries = read_index(root)
    on_disk, refused = _scan(root)
    for name, why in refused:
        _log.warning("%s: not served: %s", root / name, why)
    refused_names = {name for name, _ in refused}
    by_name = {f.name: f for f in on_disk}
    out = TapeFiles(indexed=(root / INDEX_NAME).is_file(), refused=refused)
    seen: set[str] = set()
    for entry in entries:
        if entry.file in seen or entry.file in refused_names:
            continue
        found = by_name.get(entry.file)
        if found is None:
            raise RecordingError(
                str(root / INDEX_NAME),
                None,
                f"names {entry.file!r} (seq {entry.seq}), which the tape does not hold",
            )
        seen.add(entry.file)
        out.listed.append(found)
    out.unlisted = [f for f in on_disk if f.name not in seen]
    return out


def list_exchanges(folder: str | os.PathLike[str]) -> list[Path]:
    """A tape's recordings in order: the index's, then any others by file name (see
    :func:`tape_files`)."""
    return tape_files(folder).all


def highest_seq(folder: str | os.PathLike[str]) -> int:
    """The highest sequence number the folder's files hold (0 for none)."""
    highest = 0
    try:
        with os.scandir(folder) as it:
            for f in it:
                m = _SEQ_PREFIX.match(f.name)
                if m:
                    highest = max(highest, int(m.group(1)))
    except FileNotFoundError:
        return 0
    except OSError as exc:
        raise RecordingError(str(folder), None, os_error_text(exc)) from None
    return highest


def read_counter(folder: str | os.PathLike[str]) -> int | None:
    """The folder's counter (:data:`COUNTER_NAME`): the highest sequence number handed out;
    ``None`` when there is none (or it does not hold a number)."""
    path = os.path.join(folder, COUNTER_NAME)
    try:
        fd = open_own(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise RecordingError(path, None, os_error_text(exc)) from None
    try:
        text = os.read(fd, 4096)
    except OSError as exc:
        raise RecordingError(path, None, os_error_text(exc)) from None
    finally:
        os.close(fd)
    text = text.strip()
    return int(text) if text.isdigit() else None


def _write_counter(folder: str | os.PathLike[str], seq: int, *, in_place: bool) -> None:
    """Leave the counter at ``seq``. ``in_place``: the counter held a smaller number, so the new
    one is written over it, not into a truncated file (ext4 pushes a file truncated and written
    again to the disk at its close: ~1 ms, several under load, on every exchange). The text
    written ends in a newline: whatever it does not cover is the old number's trailing space,
    or it reads as no number (then the folder is listed, and the next write truncates)."""
    flags = os.O_WRONLY | os.O_CREAT | (0 if in_place else os.O_TRUNC)
    fd = open_own(os.path.join(folder, COUNTER_NAME), flags)
    try:
        os.write(fd, b"%d\n" % seq)
    finally:
        os.close(fd)


def named_not_written(path: str | os.PathLike[str]) -> bool:
    """``path`` is an empty recording in a tape that writers number (its folder holds the
    counter or the index): an exchange named and not yet written (or cut off by a crash before
    its header), not a broken file."""
    folder, name = os.path.split(os.fspath(path))
    if not _SEQ_PREFIX.match(name) or name.startswith(".") or written(path):
        return False
    return any(os.path.exists(os.path.join(folder, f)) for f in (COUNTER_NAME, INDEX_NAME))


def written(path: str | os.PathLike[str]) -> bool:
    """Something was written to the file at ``path`` (a recording's file is made empty when
    its tape names it; its recorder writes the header first). False when it is not there."""
    try:
        return os.lstat(path).st_size > 0
    except OSError:
        return False


def renumbered(name: str, seq: int) -> str:
    """``renumbered("0003-openai-chat-gpt-4o.jsonl", 12)`` -> ``0012-openai-chat-gpt-4o.jsonl``."""
    m = _SEQ_PREFIX.match(name)
    rest = name[m.end() :] if m and not name.startswith(".") else name
    return f"{seq:04d}-{rest}"


def check_own_files(folder: str | os.PathLike[str]) -> None:
    """Refuse a tape whose lock, counter or index is a symbolic link (or not a regular file, or
    has another name): a writer would write through it, outside the tape. One
    :class:`RecordingError` naming the file. (Each write opens its file without following a
    link too: a link put there later is refused then.)"""
    for name in (LOCK_NAME, COUNTER_NAME, INDEX_NAME):
        path = Path(folder) / name
        why = refusal(path)
        if why is not None:
            raise RecordingError(str(path), None, why)


class TapeStorage(Protocol):
    """Where a tape's exchanges go besides its folder (a tape on object storage,
    :class:`streamtool.core.net.store.StorePublisher`): told of each exchange once its
    recording is complete and indexed in the folder."""

    def publish(self, folder: Path, entry: IndexEntry) -> None: ...


class Tape:
    """A tape folder being written to: allocates file names and appends index entries.

    Any number of instances, in any number of threads and processes, may write to one folder:
    names and index lines are handed out under the tape's file lock. ``after``: the first
    sequence number is above it (a staging folder continuing a tape's numbering).

    An instance's first allocation looks at every file the folder holds; the next ones read
    the folder's counter (:data:`COUNTER_NAME`), which every allocation leaves at the number it
    handed out: other writers' numbers are seen without listing a folder that grows with every
    exchange. (A numbered file put in by hand while an instance writes is not looked for.)
    """

    def __init__(
        self,
        folder: str | os.PathLike[str],
        *,
        create: bool = True,
        after: int = 0,
        storage: TapeStorage | None = None,
    ) -> None:
        self.folder = Path(folder)
        self._folder = str(self.folder)
        self.storage = storage  # each appended exchange is published there too
        if create:
            fresh = is_fresh(self.folder)
            try:
                self.folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise RecordingError(str(self.folder), None, os_error_text(exc)) from None
            if fresh:
                write_gitignore(self.folder)  # a new tape: what to commit of it
        elif not self.folder.is_dir():
            raise RecordingError(str(self.folder), None, "no such folder")
        check_own_files(self.folder)
        # this instance's threads queue here, woken as soon as the lock is free, before they
        # take the file lock (which another process may hold: its waiters poll)
        self._lock = threading.Lock()
        # the index may name numbers whose files are gone: never hand them out again
        self._last = max(after, max((e.seq for e in read_index(self.folder)), default=0))
        self._listed = False  # the folder's files were looked at (the first allocation)
        self._file_lock: Any = None

    def _held(self) -> Any:
        if self._file_lock is None:
            from filelock import FileLock

            self._file_lock = FileLock(os.path.join(self._folder, LOCK_NAME), timeout=LOCK_TIMEOUT)
        return self._file_lock

    @contextmanager
    def lock(self) -> Iterator[None]:
        """The tape's lock: this instance's threads one at a time, then the file lock."""
        with self._lock, tape_lock(self.folder, self._held()):
            yield

    def allocate(self, api: str | None, model: str | None) -> tuple[int, Path]:
        """The next sequence number and its recording's path: an empty file, made here (no
        other writer, in this process or another, gets the number). Its recorder writes it as
        is (``RecordingWriter(..., claimed=True)``); :meth:`append` indexes it once complete,
        :meth:`release` gives it up.

        The file is the name's only mark while its exchange runs: an exchange creates one file
        and deletes none (a hidden reservation beside each recording, created and deleted,
        cost a file's creation, and on ext4 without a journal, which passes over every inode
        freed in the last minute when it allocates one, the deletions made each creation
        slower)."""
        got = self.allocate_many([(api, model)])[0]
        if isinstance(got, RecordingError):
            raise got
        return got

    def allocate_many(
        self, wanted: list[tuple[str | None, str | None]]
    ) -> list[tuple[int, Path] | RecordingError]:
        """:meth:`allocate` for each ``(api, model)`` of ``wanted``, in order, under one hold of
        the tape's lock (the counter written once for them all): the next numbers, one after
        the other, as that many calls of :meth:`allocate` would give them. A name that cannot
        be had (its file cannot be made) is a :class:`RecordingError` in its place; a tape
        whose lock or counter cannot be used raises it. A name taken already (a file or a link
        placed by hand) is passed over for the next number."""
        out: list[tuple[int, Path] | RecordingError] = []
        if not wanted:
            return out
        with self.lock():
            counter = read_counter(self._folder)
            in_place = counter is not None
            if counter is None or not self._listed:
                counter = max(counter or 0, highest_seq(self.folder))
                self._listed = True
            seq = max(self._last, counter)
            # the counter first: a writer cut off after it leaves numbers unused, never one
            # that another writer could hand out again; written again only when names taken
            # by hand push the numbers past it
            written = seq + len(wanted)
            try:
                _write_counter(self._folder, written, in_place=in_place)
            except OSError as exc:
                first = self.folder / exchange_name(seq + 1, *wanted[0])
                raise RecordingError(str(first), None, os_error_text(exc)) from None
            folder = self._folder  # names as text: a path object each costs more than its file
            for api, model in wanted:
                while True:
                    seq += 1
                    name = exchange_name(seq, api, model)
                    path = os.path.join(folder, name)
                    try:
                        if seq > written:
                            _write_counter(folder, seq, in_place=True)
                            written = seq
                        # O_EXCL: a file or a link already there is passed over, never opened
                        fd = open_own(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                    except FileExistsError:
                        continue
                    except OSError as exc:
                        out.append(RecordingError(path, None, os_error_text(exc)))
                        break
                    os.close(fd)
                    self._last = seq
                    out.append((seq, Path(path)))
                    break
        return out

    def release(self, file: str | os.PathLike[str]) -> None:
        """The exchange named ``file`` (a name or path in the tape) ended and is not indexed:
        its file goes if nothing was written to it (its recorder never started); what was
        written stays, as it is. Its number is not handed out again."""
        path = os.path.join(self._folder, os.path.basename(file))
        with suppress(OSError):
            if not written(path):
                os.unlink(path)

    def append(self, entry: IndexEntry) -> None:
        """Add an exchange to the index once its recording is complete."""
        self.append_many([entry])

    def append_many(self, entries: list[IndexEntry]) -> None:
        """Add exchanges to the index once their recordings are complete, in order: one hold
        of the tape's lock, one write of whole lines and one flush to disk for them all (a
        crash leaves each entry whole or not there, as for one)."""
        if entries:
            append_entries(self._folder, entries, lock=self.lock)  # the fsync after the lock
        if self.storage is not None:
            for entry in entries:
                self.storage.publish(self.folder, entry)

    def exchanges(self) -> list[Path]:
        return list_exchanges(self.folder)

    def in_flight(self) -> list[str]:
        """The recordings the index does not list: their exchanges still running (or cut off
        by a crash, or written and not indexed), in name order."""
        try:
            names = os.listdir(self.folder)
            listed = {e.file for e in read_index(self.folder)}
        except (OSError, RecordingError):
            return []
        return sorted(
            n
            for n in names
            if _SEQ_PREFIX.match(n)
            and not n.startswith(".")
            and n.lower().endswith(EXCHANGE_SUFFIXES)
            and n not in listed
        )
