"""``streamtool check``: golden files on disk (the edge: finding, reading and writing files).

Each recording is replayed with the converter and parser its golden file names and the result is
compared with the golden file (:mod:`streamtool.core.outputs.golden` holds the format and the
comparison).

- A folder is searched recursively (hidden folders skipped) for recordings (``*.jsonl``) and raw
  bodies (``*.sse``); golden files themselves are never taken for recordings. Other files
  (``.json``, ``.txt``) are checked when they are named on the command line.
- A golden file named on the command line stands for the recording beside it.
- Statuses: ``match``, ``drift`` (with a unified diff), ``missing`` (no golden file), ``orphan``
  (a golden file whose recording is gone), ``created`` / ``updated`` (``update=True``) and
  ``error`` (unusable input: a one-line message naming the file and line).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import stat
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..converters import check_converter_name
from ..engine.replay import DetectionError
from ..handlers import check_parser_name, default_parser
from ..model.records import INDEX_NAME, RecordingError, missing_text, os_error_text
from ..outputs.golden import (
    DEFAULT_CONVERTER,
    Golden,
    ReplayOptions,
    golden_diff,
    golden_name,
    is_golden_name,
    make_golden,
    parse_golden,
    recording_stem,
)
from ..outputs.transcript import build_transcript, render
from .replay_file import replay_file

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

SCAN_SUFFIXES = (".jsonl", ".sse")  # what a folder search picks up
RECORDING_SUFFIXES = (".jsonl", ".sse", ".txt", ".json")  # what a golden file's recording may be
STATUSES = ("match", "drift", "missing", "orphan", "created", "updated", "error")
FAILING = frozenset({"drift", "missing", "orphan"})


@dataclass(slots=True)
class FileResult:
    status: str
    golden: str | None
    recording: str | None = None
    diff: str | None = None
    message: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "status": self.status,
            "recording": self.recording,
            "golden": self.golden,
        }
        if self.message is not None:
            out["message"] = self.message
        if self.diff is not None:
            out["diff"] = self.diff
        return out


@dataclass(slots=True)
class CheckReport:
    results: list[FileResult] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(STATUSES, 0)
        for r in self.results:
            counts[r.status] += 1
        return counts

    @property
    def exit_code(self) -> int:
        """0 all match (or were written); 1 drift, missing or orphan; 2 unusable input."""
        statuses = {r.status for r in self.results}
        if "error" in statuses:
            return 2
        return 1 if statuses & FAILING else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.exit_code == 0,
            "exit_code": self.exit_code,
            "counts": self.counts(),
            "files": [r.to_dict() for r in self.results],
        }


# what to check: (recording, golden file), paths as given or found (strings: a check of
# thousands of files makes no Path objects for them); recording None: an orphan golden file
_Pair = tuple[str | None, str]


def check_paths(
    paths: Sequence[str | os.PathLike[str]],
    *,
    update: bool = False,
    create_missing: bool = True,
    converter: str | None = None,
    parser: str | None = None,
    stdin_golden: str | os.PathLike[str] | None = None,
    jobs: int | None = 1,
    shard: tuple[int, int] | None = None,
    on_start: Callable[[int], None] | None = None,
    on_done: Callable[[], None] | None = None,
) -> CheckReport:
    """Check (or, with ``update``, write) the golden files of every recording under ``paths``.

    ``create_missing=False`` makes ``update`` refresh existing golden files only (a missing one
    stays ``missing``). ``converter`` / ``parser`` (only with ``update``) replace the replay
    options a golden file is written with; new golden files otherwise get ``auto`` and the
    default parser. ``-`` in ``paths`` is the recording on standard input, checked against
    ``stdin_golden``.

    ``on_start(n)`` is told how many recordings will be replayed, ``on_done()`` after each (a
    progress display).

    ``jobs`` > 1 replays in that many processes (this one and ``jobs - 1`` workers, see
    :func:`_in_processes`); the report is the same as with one, in the same order.
    ``jobs=None``: one process per core when the recordings add up to :data:`POOL_MIN_BYTES`
    or more (below that, starting processes costs more than it saves).
    ``shard=(i, n)`` (1 <= i <= n) takes only the golden files of shard ``i`` of ``n``,
    chosen by a hash of each golden file's path, so ``n`` machines given the same paths check
    every golden file exactly once between them (see :func:`shard_of`).
    """
    if not update and (converter or parser):
        raise ValueError("converter and parser choices apply only when updating golden files")
    if converter:
        check_converter_name(converter)
    if parser:
        check_parser_name(parser)
    if shard is not None and not 1 <= shard[0] <= shard[1]:
        raise ValueError(f"shard {shard[0]}/{shard[1]}: the first number goes from 1 to the second")
    options = (update, create_missing, converter, parser)
    with contextlib.ExitStack() as stack, _temporaries_listed_once():
        # with -j N, the workers start (and warm up) while this process finds the files
        pool = stack.enter_context(_pool(jobs - 1)) if jobs and _start_early(paths, jobs) else None
        report = CheckReport()
        pairs = _find_targets(paths, report.results, stdin_golden)
        if shard is not None:
            pairs = [p for p in pairs if shard_of(p[1], shard[1]) == shard[0]]
        sizes: list[int] | None = None
        if jobs is None:
            sizes = _sizes(pairs)
            jobs = default_jobs() if sum(sizes) >= POOL_MIN_BYTES else 1
        if on_start is not None:
            on_start(len(pairs))
        # standard input can be read once, here: a pool only for files
        if jobs > 1 and len(pairs) > 1 and all(rec != "-" for rec, _ in pairs):
            results: Iterable[FileResult] = _in_processes(options, pairs, jobs, sizes, pool)
        else:
            results = (_check_target(rec, gold, *options) for rec, gold in pairs)
        for result in results:
            report.results.append(result)
            if on_done is not None:
                on_done()
    return report


POOL_MIN_BYTES = 2_000_000
# what checking a file costs beyond its bytes (opening it and its golden file, parsing and
# comparing), in bytes of recording: the weight batches are balanced by
FILE_WEIGHT = 4096
LARGEST_BATCH = 8  # the largest batch is 1 / (jobs * LARGEST_BATCH) of the work ...
SMALLEST_BATCH = 256  # ... the smallest (but one recording) 1 / (jobs * SMALLEST_BATCH) ...
GUIDED = 6  # ... and in between, 1 / (jobs * GUIDED) of what remains
SWITCH_INTERVAL = 0.0002  # seconds: see _in_processes


def shard_of(golden: str | os.PathLike[str], shards: int) -> int:
    """The shard (1..``shards``) a golden file belongs to: a hash of its path relative to the
    current folder (``/`` separators), the same on every machine and every run."""
    try:
        where = Path(os.path.relpath(golden))
    except ValueError:  # another drive (Windows)
        where = Path(golden)
    key = where.as_posix().encode("utf-8", "surrogateescape")
    import hashlib  # here: only --shard needs it, and it costs every check's start-up

    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") % shards + 1


def _check_target(
    recording: str | None,
    golden: str,
    update: bool,
    create_missing: bool,
    converter: str | None,
    parser: str | None,
) -> FileResult:
    if recording is None:
        return _orphan(golden)
    return _check_one(recording, golden, update, create_missing, converter, parser)


# a result as a process hands it back: (status, golden, recording, diff, message)
_Row = tuple[str, str | None, str | None, str | None, str | None]


def _check_batch(options: tuple[Any, ...], pairs: list[_Pair]) -> list[_Row]:
    """Check the ``(recording, golden)`` pairs of one batch (in a worker process): results come
    back as plain tuples, which cost far less to pass between processes than
    :class:`FileResult` objects."""
    global _checking
    rows: list[_Row] = []
    _checking = True
    try:
        with _temporaries_listed_once():
            for recording, golden in pairs:
                r = _check_target(recording, golden, *options)
                rows.append((r.status, r.golden, r.recording, r.diff, r.message))
    finally:
        _checking = False
    return rows


def batches(weights: Sequence[int], jobs: int) -> list[tuple[int, int]]:
    """``(start, stop)`` of consecutive batches of work items of these ``weights`` for
    ``jobs`` processes that each take the next batch when done with one: a batch is a
    share of what remains (1 / (``jobs`` * :data:`GUIDED`): guided scheduling), so that the
    processes finish together even though a worker of a pool holds a batch or two ahead, yet
    no more than 1 / (``jobs`` * :data:`LARGEST_BATCH`) of the whole (results come back in
    steady steps) and no less than 1 / (``jobs`` * :data:`SMALLEST_BATCH`) of it (few
    messages between processes), nor less than one item."""
    total = sum(weights)
    largest = total / (jobs * LARGEST_BATCH)
    smallest = total / (jobs * SMALLEST_BATCH)
    out: list[tuple[int, int]] = []
    start, remaining = 0, total
    while start < len(weights):
        target = min(largest, max(smallest, remaining / (GUIDED * jobs)))
        stop, weight = start, 0
        while stop < len(weights) and (stop == start or weight + weights[stop] <= target):
            weight += weights[stop]
            stop += 1
        out.append((start, stop))
        start, remaining = stop, remaining - weight
    return out


def _sizes(pairs: list[_Pair]) -> list[int]:
    """The size of each pair's recording (0 for none, or one that cannot be read)."""
    return [0 if rec is None or rec == "-" else _size(rec) for rec, _ in pairs]


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:  # reported when it is checked
        return 0


def _in_processes(
    options: tuple[Any, ...],
    pairs: list[_Pair],
    jobs: int,
    sizes: list[int] | None = None,
    pool: ProcessPoolExecutor | None = None,
) -> Iterator[FileResult]:
    """The results of ``pairs`` checked by ``jobs`` processes (this one and ``jobs - 1``
    workers: those of ``pool`` when given, see :func:`_pool`), in order, each as soon as it
    and those before it are done.

    The work is cut into :func:`batches`, all handed to the pool of workers, which take them
    in order; while the batch due next is not done, this process takes the first batch no
    worker has started (it cancels it in the pool) and checks it itself: it is warm (its
    modules loaded and its caches full, where a new process starts cold), what it checks
    needs no passing between processes, and the workers never wait for it."""
    if sizes is None:
        sizes = _sizes(pairs)
    spans = batches([size + FILE_WEIGHT for size in sizes], jobs)
    workers = min(jobs - 1, len(spans) - 1)
    if workers < 1:
        yield from (FileResult(*row) for row in _check_batch(options, pairs))
        return
    futures: list[Future[list[_Row]]] = []
    with contextlib.ExitStack() as stack:
        if pool is None:
            pool = stack.enter_context(_pool(workers))
        try:
            for start, stop in spans:
                futures.append(pool.submit(_check_batch, options, pairs[start:stop]))
            mine: dict[int, list[_Row]] = {}  # the batches checked here
            free = 0  # batches before it are started (by a worker) or checked here
            for index, future in enumerate(futures):
                while not future.done():
                    free = max(free, index)
                    while free < len(futures) and not futures[free].cancel():
                        free += 1  # a worker has it
                    if free == len(futures):
                        break  # nothing left to take: wait for the workers
                    start, stop = spans[free]
                    mine[free] = _check_batch(options, pairs[start:stop])
                    free += 1
                rows = mine.pop(index) if index in mine else future.result()
                for row in rows:
                    yield FileResult(*row)
        except BaseException:  # Ctrl-C, or the caller stopped early: no batch more
            for future in futures:
                future.cancel()
            raise


@contextlib.contextmanager
def _pool(workers: int) -> Iterator[ProcessPoolExecutor]:
    """A pool of ``workers`` processes, started now and warming up (see :func:`_warm_up`)
    while this process finds the files to check; they end with it (see
    :func:`_end_with_parent`)."""
    import gc
    from concurrent.futures import ProcessPoolExecutor

    # the pool's threads here (taking the workers' results, handing them their next batch)
    # get their turn within a fraction of a millisecond while this thread replays, instead of
    # the default 5 ms, which a worker would spend waiting for its next batch
    switch = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL)
    try:
        with ProcessPoolExecutor(max_workers=workers, initializer=_end_with_parent) as pool:
            # what this process holds is frozen while the first submit forks the workers:
            # their garbage collector then never walks (and so never copies) its objects
            # (see the gc module's freeze)
            gc.freeze()
            try:
                for _ in range(workers):
                    pool.submit(_warm_up)
                yield pool
            finally:
                gc.unfreeze()
    finally:
        sys.setswitchinterval(switch)


def _warm_up() -> None:
    """In a worker, before its first batch: import the built-in converters and handlers (what
    a first replay of each kind of recording would import, some milliseconds), while ``check``
    finds the files. Imported in ``check`` before the fork instead, they would delay the
    worker's first batch by as much (measured: 1% slower on 2,000 small files); imported
    here, they cost only the worker's wait."""
    from ..converters import CONVERTERS
    from ..handlers import PARSERS

    for registry in (CONVERTERS, PARSERS):
        for name in registry.builtins:
            registry.load(name)


def _start_early(paths: Sequence[str | os.PathLike[str]], jobs: int | None) -> bool:
    """Whether to start the workers before the files are found: ``jobs`` is given (more than
    one) and there will be files to share (a folder, or several files), none of them standard
    input (read here only)."""
    if jobs is None or jobs < 2 or any(str(p) == "-" for p in paths):
        return False
    return len(paths) > 1 or any(os.path.isdir(p) for p in paths)


def _end_with_parent() -> None:
    """In a worker: end when the process that started it is gone (killed with -9, it cannot
    stop its workers, which would otherwise wait for work for ever); and take Ctrl-C (which the
    terminal sends to every process of the job) only while it checks a batch (see
    :func:`_interrupted`)."""
    import multiprocessing
    import signal
    import threading
    from multiprocessing.connection import wait

    signal.signal(signal.SIGINT, _interrupted)

    parent = multiprocessing.parent_process()
    if parent is not None:
        sentinel = parent.sentinel

        def watch() -> None:
            wait([sentinel])
            os._exit(1)

        threading.Thread(target=watch, name="end-with-parent", daemon=True).start()


def _interrupted(signum: int, frame: Any) -> None:
    """A worker's Ctrl-C: the batch it is checking stops (the pool hands the interruption back
    to ``check``, which stops the whole run and says so in one line); a worker waiting for its
    next batch goes on waiting, for the pool's word to end (a ``KeyboardInterrupt`` there would
    end the process with a traceback on the terminal)."""
    if _checking:
        raise KeyboardInterrupt


_checking = False  # a worker is checking a batch (see _interrupted)


def default_jobs() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


# -- finding the files ---------------------------------------------------------------------
def _find_targets(
    paths: Sequence[str | os.PathLike[str]],
    errors: list[FileResult],
    stdin_golden: str | os.PathLike[str] | None = None,
) -> list[_Pair]:
    targets: list[_Pair] = []
    seen: set[_Key] = set()  # golden files already taken (resolved)
    folders: dict[str, str] = {}  # each folder resolved once

    def real(folder: str) -> str:
        found = folders.get(folder)
        if found is None:
            found = folders[folder] = os.path.normcase(os.path.realpath(folder))
        return found

    def add(recording: str | None, golden: str, key: _Key) -> None:
        if key not in seen:
            seen.add(key)
            targets.append((recording, golden))

    def add_file(recording: str | None, golden: str) -> None:
        if os.path.islink(golden):
            add(recording, golden, _link_key(golden))
        else:
            folder, name = os.path.split(golden)
            add(recording, golden, (real(folder), os.path.normcase(name)))

    for raw in paths:
        path = Path(raw)
        if str(raw) == "-":
            if stdin_golden is None:
                errors.append(_error(None, "- (standard input) needs --golden FILE"))
            else:
                add_file("-", str(Path(stdin_golden)))
        elif path.is_dir():
            found = _scan_folder(str(path), errors, real)
            if not found:
                errors.append(
                    _error(None, f"{path}: no recordings (*.jsonl, *.sse) or golden files in it")
                )
            for recording, golden, key in found:
                add(recording, golden, key)
        elif path.is_file():
            name = str(path)
            if is_golden_name(path.name):
                add_file(_recording_beside(name), name)
            else:
                add_file(name, str(path.with_name(golden_name(path.name))))
        elif path.exists():  # a FIFO or a device: reading it would block or never end
            errors.append(_error(None, f"{path}: is not a regular file"))
        else:
            errors.append(_error(None, missing_text(str(path))))
    return targets


# a golden file as itself, however it is reached: (its real folder, its name), case-folded
# where the file system folds case
_Key = tuple[str, str]


def _link_key(golden: str) -> _Key:
    """The key of a golden file that is a link: where the link leads."""
    folder, name = os.path.split(os.path.realpath(golden))
    return os.path.normcase(folder), os.path.normcase(name)


def _scan_folder(
    top: str, errors: list[FileResult], real: Callable[[str], str]
) -> list[tuple[str | None, str, _Key]]:
    """``(recording, golden, key)`` under the folder ``top`` as :func:`os.walk` goes (hidden
    folders and links to folders skipped, a folder that cannot be listed left out);
    ``recording`` is ``None`` for orphans; ``key`` is the golden file's key (``real`` gives a
    folder's real path). One :func:`os.scandir` per folder: whether a golden file is a link
    is known from it, without a call per file."""
    found: list[tuple[str | None, str, _Key]] = []
    normcase = os.path.normcase
    folders = [top]  # to list, the next one last
    while folders:
        where = folders.pop()
        try:
            with os.scandir(where) as listing:
                entries = {entry.name: entry for entry in listing}
        except OSError:
            continue
        # names as pathlib writes them (``./a`` is ``a``), for the report
        prefix = "" if where == "." else os.path.join(where, "")
        subfolders: list[str] = []
        names: list[str] = []
        for name, entry in entries.items():
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if not is_dir:
                names.append(name)
            elif not name.startswith("."):
                subfolders.append(name)
        names.sort()
        goldens = {name for name in names if is_golden_name(name)}
        claimed: dict[str, str] = {}
        here = real(where) if names else ""
        for name in names:
            if name in goldens or name == INDEX_NAME or not name.endswith(SCAN_SUFFIXES):
                continue
            gname = golden_name(name)
            if gname in claimed:
                errors.append(
                    _error(
                        prefix + name,
                        f"{prefix + name}: its golden file name {gname} is taken by "
                        f"{claimed[gname]}; rename one of the two recordings",
                    )
                )
                continue
            claimed[gname] = name
            golden = prefix + gname
            link = gname in entries and _is_link(entries[gname])
            key = _link_key(golden) if link else (here, normcase(gname))
            found.append((prefix + name, golden, key))
        for gname in sorted(goldens - claimed.keys()):
            golden = prefix + gname
            key = _link_key(golden) if _is_link(entries[gname]) else (here, normcase(gname))
            found.append((_recording_beside(golden), golden, key))
        subfolders.sort(reverse=True)
        folders.extend(prefix + name for name in subfolders if not _is_link(entries[name]))
    return found


def _is_link(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_symlink()
    except OSError:
        return False


def _recording_beside(golden: str) -> str | None:
    folder, name = os.path.split(golden)
    stem = recording_stem(name)
    for suffix in RECORDING_SUFFIXES:
        candidate = stem + suffix
        if not is_golden_name(candidate) and os.path.isfile(os.path.join(folder, candidate)):
            return os.path.join(folder, candidate)
    return None


# -- checking one file ---------------------------------------------------------------------
def _check_one(
    rec: str,
    gold: str,
    update: bool,
    create_missing: bool,
    converter: str | None,
    parser: str | None,
) -> FileResult:
    stored: Golden | None = None
    clean_stale_temporaries(gold)  # left by a check --update that was killed
    try:
        with open(gold, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        text = None
    except (OSError, UnicodeDecodeError) as exc:
        return _error(rec, f"{gold}: cannot read the golden file ({_reason(exc)})", gold)
    # a missing golden file is reported after the replay, so that an unusable recording is
    # reported as what it is (exit 2), not as a golden file to create
    missing: FileResult | None = None
    if text is None and not update:
        missing = FileResult(
            "missing",
            gold,
            rec,
            # with CI set, --update alone refreshes existing golden files only
            message=f"no golden file ({os.path.basename(gold)}); create it with: "
            + update_command(rec, gold, "" if create_missing else " --create-missing"),
        )
    elif text is None and not create_missing:
        missing = FileResult(
            "missing",
            gold,
            rec,
            message=f"no golden file ({os.path.basename(gold)}); not created because CI is set "
            f"(add --create-missing to create it there)",
        )
    if text is not None:
        try:
            stored = parse_golden(text, gold)
        except RecordingError as exc:
            hint = "; --update leaves it alone: fix or delete it" if update else ""
            return _error(rec, f"{exc}{hint}", gold)

    if stored is not None:
        options = ReplayOptions(
            converter or stored.options.converter, parser or stored.options.parser
        )
    else:
        options = ReplayOptions(converter or DEFAULT_CONVERTER, parser or default_parser())
    try:
        # a golden file holds the transcript alone: the replay may be batched
        engine = replay_file(
            rec,
            converter=options.converter,
            parser=options.parser,
            batched=True,
            transcript=True,
        )
    except RecordingError as exc:
        return _error(rec, str(exc), gold)
    except DetectionError as exc:
        return _error(rec, f"{rec}: {exc}", gold)
    if missing is not None:
        return missing
    name = os.path.basename(rec)
    if rec == "-":  # standard input: the golden file names its recording
        name = str((stored.document if stored else {}).get("recording") or name)
    actual = make_golden(name, options, build_transcript(engine))

    if stored is None:
        return _write(gold, actual, FileResult("created", gold, rec))
    diff = golden_diff(stored.document, actual, f"{gold} (golden)", f"{rec} (replayed now)")
    if diff is None:
        return FileResult("match", gold, rec)
    if update:
        return _write(gold, actual, FileResult("updated", gold, rec, diff=diff))
    return FileResult(
        "drift",
        gold,
        rec,
        diff=diff,
        message=f"if the change is intended, run: {update_command(rec, gold)}",
    )


def update_command(rec: str, gold: str, flags: str = "") -> str:
    """The command that writes ``gold`` from ``rec`` (standard input: the recording piped in
    again, the golden file named)."""
    if rec == "-":
        return (
            f"streamtool check --update{flags} --golden {shlex.quote(gold)} - "
            "(with the recording on standard input again)"
        )
    return f"streamtool check --update{flags} {shlex.quote(rec)}"


def _orphan(golden: str) -> FileResult:
    stem = recording_stem(os.path.basename(golden))
    return FileResult(
        "orphan",
        golden,
        None,
        message=f"its recording is gone (no {stem}.jsonl or {stem}.sse beside it); "
        "delete the golden file or restore the recording",
    )


def _error(recording: str | None, message: str, golden: str | None = None) -> FileResult:
    return FileResult("error", golden, recording, message=message)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return os_error_text(exc)
    return "not UTF-8 text"


def _write(path: str, document: dict[str, Any], result: FileResult) -> FileResult:
    """Write a golden file atomically (a crash never leaves half a file); ``result`` on success."""
    try:
        _write_atomic(Path(path), render(document))
    except OSError as exc:
        message = f"{path}: cannot write the golden file ({_reason(exc)})"
        return _error(result.recording, message, result.golden)
    return result


def _write_atomic(path: Path, data: str) -> None:
    """Write ``data`` to ``path`` through a temporary file beside it, synced before the rename:
    a crash leaves the old file or the new one, never half of one. A symlinked golden file is
    written through to its target (the link stays a link), and the file keeps its mode."""
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    clean_stale_temporaries(str(target))
    try:
        mode: int | None = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = None
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(data)
            fh.flush()
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    # the rename itself is on disk once the folder is synced (best effort: not every file
    # system lets a folder be opened)
    with contextlib.suppress(OSError):
        fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def clean_stale_temporaries(golden: str) -> list[str]:
    """Remove the temporaries a killed ``check --update`` left beside ``golden``
    (``.NAME.PID.tmp`` of a process that is gone); a live process's file is left alone."""
    removed: list[str] = []
    folder, name = os.path.split(golden)
    prefix = f".{name}."
    try:
        names = [n for n in _temporaries(folder) if n.startswith(prefix)]
    except OSError:
        return removed
    for name in names:
        pid_text = name[len(prefix) :].removesuffix(".tmp")
        if not name.endswith(".tmp") or not pid_text.isdigit():
            continue
        pid = int(pid_text)
        if pid != os.getpid() and _alive(pid):
            continue
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(folder, name))
            removed.append(os.path.join(folder, name))
    return removed


# folder -> its temporaries' names, while check_paths runs (None otherwise: listed each time)
_listed: dict[str, list[str]] | None = None


@contextlib.contextmanager
def _temporaries_listed_once() -> Iterator[None]:
    """Within: each folder's temporaries are listed once (a run looks for them afresh)."""
    global _listed
    if _listed is not None:  # within a run already
        yield
        return
    _listed = {}
    try:
        yield
    finally:
        _listed = None


def _temporaries(folder: str) -> list[str]:
    """The names of ``.NAME.PID.tmp`` files in ``folder``, listed once per check run (a check
    of a folder of many golden files lists it once, not once per file)."""
    listed = _listed
    names = None if listed is None else listed.get(folder)
    if names is None:
        names = [n for n in os.listdir(folder or ".") if n[:1] == "." and n.endswith(".tmp")]
        if listed is not None:
            listed[folder] = names
    return names


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists, owned by someone else
        return True
    return True
