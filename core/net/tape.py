"""Serving a tape: a recorded session answered request by request, in order.

:class:`TapeLibrary` is the :class:`~streamtool.core.net.library.Library` of a tape folder. A
request gets, in this order:

1. the recording named by the ``X-Streamtool-Recording`` header, when the tape holds it;
2. the next recorded exchange whose request matches (:mod:`..exchange.tape_match`);
3. among recordings that hold no request body (raw ``.sse`` files), the old rules: the one
   for the request's model, else the only one for the endpoint; a plain folder of recordings
   (no index, not asked to be strict) uses the old rules among all its recordings;
4. else a miss: HTTP 404 in the provider's error shape, naming the closest exchange and the
   first difference.

Only finished exchanges are ever served: a recording without its end record (a writer was
killed mid-stream) is left out, and so, in a tape with an index, is a recording the index does
not list (its writer never got to the end of the exchange). ``TapeLibrary.skipped`` says which,
and why. A tape serves only its own regular files (:func:`~..recording.tape_index.tape_files`).

:func:`serving_tape` runs it on 127.0.0.1 in a background thread, for tests and the pytest
plugin.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from ..drive.conversation import has_conversation, last_input, read_conversation
from ..drive.script import TurnPicker
from ..exchange.playback import Playback
from ..exchange.tape_match import Matcher, MatchRules, canonical, endpoint_key
from ..model.records import INDEX_NAME, RecordingError, os_error_text
from ..plugins import error_body, served_api
from ..recording.own_files import open_own
from ..recording.secrets import SecretScrubber, redact_keys, without_secrets
from ..recording.tape_gitignore import is_fresh, write_gitignore
from ..recording.tape_index import (
    EXCHANGE_SUFFIXES,
    IndexEntry,
    Tape,
    append_entries,
    highest_seq,
    is_own_file,
    named_not_written,
    read_index,
    renumbered,
    rewrite_index,
    tape_files,
    tape_lock,
    written,
)
from .library import (
    Incoming,
    Library,
    NoMatch,
    Recording,
    SelectionError,
    ServingLibrary,
    exchange_of,
    load_recording,
)
from .listen import LibraryServer
from .service import ServiceConfig, build_service

_log = logging.getLogger("streamtool.serve")


# what matching sees of a recording (its endpoint key and request body)
_exchange = exchange_of


class TapeLibrary(ServingLibrary):
    """A tape's recordings, answered by request matching (see the module's docstring).

    ``fallback``: a request no recording matches gets the old rules (the recording for its
    model, else the only one for the endpoint) among all recordings, instead of a miss: a
    plain folder of recordings, served as a tape.
    """

    def __init__(
        self,
        recordings: Sequence[Recording],
        folder: str | os.PathLike[str] | None = None,
        rules: MatchRules | None = None,
        *,
        fallback: bool = False,
    ) -> None:
        super().__init__(recordings)
        self.folder = Path(folder) if folder is not None else None
        self.rules = rules or MatchRules()
        self.fallback = fallback
        # a WebSocket session answers upgrades (next_session), never a request's match
        self.matcher = Matcher(
            [_exchange(r) for r in self.recordings if r.session is None], self.rules
        )
        self.skipped: list[tuple[str, str]] = []  # (file name, why) left out at load
        # a tape on object storage: where recorded exchanges are published (net.store)
        self.storage: Any = None
        self.source: str | None = None  # the tape as given (a folder, or a store URL)
        # expired exchanges (max_age): warned about, or left out and named by a miss
        self.expired: list[str] = []  # one message each
        self.expired_matcher = Matcher([], self.rules)
        self.record_hint: str | None = None  # how to record what a miss lacks
        # the turns of a script built into this tape (tape build), per endpoint, in order
        self._turns: dict[str, tuple[list[Recording], TurnPicker]] = {}
        for rec in self.recordings:
            if rec.turn is not None and rec.endpoint is not None:
                self._turns.setdefault(rec.endpoint, ([], TurnPicker([])))
                recs, picker = self._turns[rec.endpoint]
                recs.append(rec)
                picker.turns.append(rec.turn)

    @classmethod
    def from_folder(
        cls,
        folder: str | os.PathLike[str],
        rules: MatchRules | None = None,
        *,
        fallback: bool = False,
    ) -> TapeLibrary:
        """The tape in ``folder`` (an empty folder is an empty tape); unfinished exchanges and
        files that are not the tape's own are left out (``skipped``)."""
        recordings, skipped = load_exchanges(folder)
        library = cls(recordings, folder, rules, fallback=fallback)
        library.skipped = skipped
        return library

    def apply_expiry(self, expiry: Any, now: Any = None) -> None:
        """Enforce a tape's ``max_age`` (an :class:`~..exchange.store_layout.Expiry`): each
        expired exchange gets a message naming its age (``expired``); with ``fail`` or
        ``rerecord`` it is no longer served (a request for it is a miss that says why, or
        recorded again when the tape records misses)."""
        from datetime import UTC, datetime

        from ..exchange.store_layout import parse_time

        if expiry is None or expiry.max_age is None or self.folder is None:
            return
        now = now or datetime.now(UTC)
        recorded = {e.file: e.recorded_at for e in read_index(self.folder)}
        keep: list[Recording] = []
        for rec in self.recordings:
            when = parse_time(recorded.get(Path(rec.path).name))
            if when is None:
                with suppress(OSError):
                    when = datetime.fromtimestamp(os.stat(rec.path).st_mtime, UTC)
            age = expiry.expired(when, now)
            if age is None:
                keep.append(rec)
                continue
            self.expired.append(expiry.message(rec.name, age))
            if expiry.on_expiry == "warn":
                keep.append(rec)
            else:
                self.expired_matcher.add(_exchange(rec))
        if len(keep) != len(self.recordings):
            self.recordings = keep
            self.by_name = {}
            for rec in keep:
                for key in (rec.name, Path(rec.path).name):
                    self.by_name[key] = rec
            self.matcher = Matcher([_exchange(r) for r in keep], self.rules)

    def started(self, name: str) -> None:
        """An exchange recorded on a miss is being answered: it counts as served (and
        recorded) from now, so the client's call has it when it returns."""
        with self._lock:
            self.served.append(name)
            self.recorded.append(name)

    def forget(self, name: str) -> None:
        """An exchange recorded on a miss was not kept (it failed): no longer listed."""
        with self._lock:
            for names in (self.served, self.recorded):
                if name in names:
                    names.reverse()
                    names.remove(name)
                    names.reverse()

    def add(self, rec: Recording, *, served: bool = False) -> None:
        """A recording made on a miss joins the tape: later requests match it. ``served``: the
        client that caused it got it already (it counts as served once)."""
        with self._lock:
            self.recordings.append(rec)
            for key in (rec.name, Path(rec.path).name):
                self.by_name[key] = rec
            ex = _exchange(rec)
            ex.served = int(served)
            self.matcher.add(ex)

    def request_key(self, request: Incoming) -> str:
        return endpoint_key(request.endpoint, request.path_model)

    def _choose(self, request: Incoming) -> Recording:
        if request.name:
            named = self.by_name.get(request.name)
            if named is not None:
                return named
        secrets = request.secrets() if request.body is not None else ()
        found = self.matcher.match(self.request_key(request), request.body, secrets)
        if found is not None:
            return self.by_name[found.name]
        scripted = self._turns.get(request.endpoint)
        if scripted is not None:
            api = served_api(request.path)
            subject = ""
            if api is not None and has_conversation(api.id):
                subject = last_input(read_conversation(api.id, request.body))
            n = scripted[1].pick(subject)
            if n is not None:
                return scripted[0][n]
        if self.fallback and not request.name:
            return Library(self.recordings).select(request.apis, request.model, None)
        bodiless = [r for r in self.recordings if r.request_body is None or r.endpoint is None]
        if bodiless and not request.name:
            # recordings that cannot be matched by body: the old rules, among them only
            try:
                return Library(bodiless).select(request.apis, request.model, None)
            except SelectionError as exc:
                if exc.status != 404:
                    raise
        raise NoMatch(self.miss_message(request))

    def miss_message(self, request: Incoming) -> str:
        """Why nothing matched; the request's credentials and key-shaped strings masked
        before any part of a value is cut out to be shown."""
        secrets = request.secrets()
        miss = self.matcher.miss(self.request_key(request), request.body, request.path, secrets)
        message = miss.message
        if request.name:
            message = f"the tape holds no recording named {request.name!r}, and {message}"
        stale = self.expired_matcher.match(self.request_key(request), request.body)
        if stale is not None:
            why = next((m for m in self.expired if m.startswith(f"{stale.name} ")), None)
            message = f"{why}; not served" if why else message
        if self.record_hint:
            message += f"; record it with {self.record_hint}"
        return without_secrets(message, secrets)


def load_exchanges(
    folder: str | os.PathLike[str],
) -> tuple[list[Recording], list[tuple[str, str]]]:
    """The finished exchanges of a tape, in order, and the files left out with the reason:
    refused files (not the tape's own), unreadable ones, recordings without their end record
    and, in a tape with an index, recordings with a request that the index does not list."""
    files = tape_files(folder)
    skipped = list(files.refused)
    out: list[Recording] = []
    listed = {p.name for p in files.listed}
    for path in files.all:
        if not is_own_file(folder, path):  # replaced by a link since the folder was read
            skipped.append((path.name, "not one of the tape's own regular files"))
            _log.warning("%s: not served: not one of the tape's own regular files", path)
            continue
        if named_not_written(path):
            skipped.append((path.name, "empty: an exchange named and not written yet"))
            continue
        try:
            rec = load_recording(path)
        except RecordingError as exc:
            skipped.append((path.name, f"cannot be read: {exc.message}"))
            _log.warning("%s: not served: %s", path, exc.message)
            continue
        if rec.ended == "cut off":
            skipped.append((path.name, "cut off (no end record): an unfinished exchange"))
        elif files.indexed and path.name not in listed and rec.request_body is not None:
            skipped.append((path.name, "not in the index: an exchange that never finished"))
        else:
            out.append(rec)
    return out, skipped


def is_tape(path: str | os.PathLike[str]) -> bool:
    """A folder holding a tape index."""
    return (Path(path) / INDEX_NAME).is_file()


def holds_recordings(path: str | os.PathLike[str]) -> bool:
    """A folder with recording files of its own (not only in sub-folders)."""
    try:
        return any(
            f.name.lower().endswith(EXCHANGE_SUFFIXES) and not f.name.startswith(".")
            for f in Path(path).iterdir()
            if f.name != INDEX_NAME
        )
    except OSError:
        return False


def tapes_under(path: str | os.PathLike[str], limit: int = 50) -> list[Path]:
    """The folders under ``path`` (itself excluded) that are tapes or hold recordings, in name
    order (hidden folders skipped); at most ``limit``."""
    found: list[Path] = []
    for dirpath, dirnames, _ in os.walk(path):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        here = Path(dirpath)
        if here != Path(path) and (is_tape(here) or holds_recordings(here)):
            found.append(here)
            if len(found) >= limit:
                break
    return found


def load_tape(
    folder: str | os.PathLike[str],
    match_ignore: Sequence[str] = (),
    *,
    create: bool = False,
    fallback: bool = False,
    expiry: Any = None,
) -> TapeLibrary:
    """A tape folder, ready to serve. ``match_ignore`` adds fields (dotted paths) that matching
    ignores; ``create`` makes a missing folder (an empty tape, to be filled on misses);
    ``fallback``: see :class:`TapeLibrary`. Raises :class:`RecordingError` for unusable
    input, ``ValueError`` for a bad path.

    ``folder`` may be a store URL (``s3://BUCKET/PREFIX``...): the tape is fetched into a
    private folder of the cache (:func:`~.store.checkout`) and what is recorded on a miss is
    published to the store too. ``expiry``: the tape's max_age and on_expiry (else its
    ``tape.json``'s)."""
    from ..exchange.store_layout import is_store_url

    if is_store_url(str(folder)):
        library = _load_store_tape(str(folder), match_ignore, fallback=fallback, expiry=expiry)
    else:
        library = _load_folder_tape(Path(folder), match_ignore, create, fallback, expiry)
    library.record_hint = (
        f"streamtool serve {folder} --record-missing --upstream URL, or through "
        f"streamtool proxy --out {folder}"
    )
    return library


def _load_folder_tape(
    root: Path, match_ignore: Sequence[str], create: bool, fallback: bool, expiry: Any
) -> TapeLibrary:
    if create and not root.exists():
        try:
            root.mkdir(parents=True)
        except OSError as exc:
            raise RecordingError(str(root), None, os_error_text(exc)) from None
    if not root.is_dir():
        raise RecordingError(
            str(root), None, "no such folder" if not root.exists() else "is a file, not a tape"
        )
    library = TapeLibrary.from_folder(root, MatchRules.with_extra(match_ignore), fallback=fallback)
    library.source = str(root)
    if expiry is None:
        from .store import local_tape_settings

        expiry = local_tape_settings(root)
    library.apply_expiry(expiry)
    return library


def _load_store_tape(
    url: str, match_ignore: Sequence[str], *, fallback: bool, expiry: Any
) -> TapeLibrary:
    """A store tape, checked out into a private folder (removed when the process ends)."""
    import atexit

    from .store import StorePublisher, checkout, discard

    co = checkout(url)
    atexit.register(discard, co.folder)
    library = TapeLibrary.from_folder(
        co.folder, MatchRules.with_extra(match_ignore), fallback=fallback
    )
    library.source = url
    library.storage = StorePublisher(co.tape)
    library.apply_expiry(expiry if expiry is not None else co.expiry)
    return library


class MissRecorder:
    """Record on miss: a request the tape does not hold is forwarded to the upstream through the
    proxy's forwarding edge, streamed to the client as it arrives, recorded into the tape under
    the next sequence number and, once complete, added to the index and to what the server
    answers from. Only this class ever writes to a tape."""

    def __init__(
        self,
        library: TapeLibrary,
        upstream: str,
        *,
        timeout: float = 600.0,
        log: Callable[[str], None] | None = None,
        after: int = 0,
    ) -> None:
        from .proxy import parse_upstreams

        if library.folder is None:
            raise ValueError("record on miss needs a tape folder")
        self.library = library
        self.upstreams = parse_upstreams([upstream])  # ValueError for a bad URL
        self.tape = Tape(library.folder, after=after, storage=library.storage)
        self.timeout = timeout
        self.log = log
        self._forwarder: Any = None

    @property
    def forwarder(self) -> Any:
        if self._forwarder is None:
            from .forward import Forwarder

            self._forwarder = Forwarder(timeout=self.timeout)
        return self._forwarder

    def __call__(self, request: Any, raw: bytes, incoming: Incoming, style: str) -> Any:
        from .bodies import refusal
        from .forward import Exchange as Forwarded
        from .forward import recorder_for, request_secrets
        from .proxy import NoUpstream, route

        r = route(request.method, request.url.path, request.headers, incoming.body)
        scope = request.scope
        raw_path = (scope.get("raw_path") or scope["path"].encode("utf-8")).decode("latin-1")
        query = scope.get("query_string", b"").decode("latin-1")
        try:
            url = self.upstreams.url(r, raw_path, query)
        except NoUpstream as exc:  # an API without an official host (MCP): no upstream given
            if self.log is not None:
                self.log(f"{request.method} {redact_keys(request.url.path)} -> 502: {exc}")
            return refusal(502, error_body(r.style, 502, f"streamtool: {exc}"))
        # the model and path name the file, the index entry and the log: a credential the
        # request carries (a model set to the key) reaches none of them (the proxy's rule)
        secrets = request_secrets(request.headers.items(), url)
        scrub = SecretScrubber(secrets)
        model = None if r.model is None else redact_keys(scrub.text(r.model))
        path = redact_keys(scrub.text(request.url.path))
        ex = Forwarded(
            method=request.method, path=path, provider=r.provider, api=r.api, model=model
        )
        recorder: Any = None
        try:
            ex.seq, file = self.tape.allocate(f"{r.provider}-{r.api or 'http'}", model)
            ex.file = str(file)
            recorder = recorder_for(
                request, raw, str(file), provider=r.provider, api=r.api, url=url, secrets=secrets
            )
            recorder.preflight()
            recorder.claimed = True  # the tape made its file: written as is
        except RecordingError as exc:
            # a tape file that is a link, a request holding a key: forwarded, not recorded
            ex.record_error = str(exc) if ex.file is None else exc.message
            recorder = None
        if recorder is not None:
            self.library.started(Path(ex.file or "").stem)
        if self.log is not None:
            what = (
                f"recording {Path(ex.file or '').name}"
                if recorder
                else f"not recorded ({ex.record_error})"
            )
            self.log(f"{request.method} {path} -> no match: forwarded, {what}")
        elif recorder is None:
            self._problem(
                f"{request.method} {path} -> no match: forwarded, not recorded ({ex.record_error})"
            )
        return self.forwarder.forward(
            request,
            url,
            body=raw,
            recorder=recorder,
            exchange=ex,
            error_style=style,
            on_end=partial(self._ended, recorder=recorder),
        )

    def _problem(self, line: str) -> None:
        """A line that is always shown: in the log, else on stderr (``serve --quiet``)."""
        if self.log is not None:
            self.log(line)
        else:
            sys.stderr.write(f"streamtool: {line}\n")
            sys.stderr.flush()

    def _ended(self, ex: Any, *, recorder: Any = None) -> None:
        """Keep a complete exchange (indexed, and answered from now on). A failed one (an HTTP
        error, a dropped or stalled stream) is not kept: pinned in the tape, it would answer
        the client's retry with the same failure forever. A recording that could not be
        written (a full disk) is removed, not indexed, and said in one line."""
        from .proxy import index_entry

        if ex.file is None:  # no name was had: said when the request came
            return
        path = Path(ex.file)
        if ex.record_error is not None or not written(path):
            if recorder is not None and ex.record_error is not None:
                if recorder.writer is not None:  # its file, made by this recorder: it goes
                    path.unlink(missing_ok=True)
                why = recorder.write_problem or ex.record_error
                self._problem(f"not kept on the tape: {path.name} ({why})")
            self.library.forget(path.stem)
            self.tape.release(path)
            return
        ok = ex.end == "complete" and ex.status is not None and ex.status < 400
        if not ok:
            path.unlink(missing_ok=True)
            self.tape.release(path)
            self.library.forget(path.stem)
            if self.log is not None:
                why = f"HTTP {ex.status}" if ex.status and ex.status >= 400 else ex.end
                self.log(f"not kept on the tape: {path.name} ({why}: {ex.error})")
            return
        # answered from now on: in the library before the index names it (any later request
        # of this server matches it; a reader of the tape finds it once it is indexed)
        self.library.add(load_recording(path), served=True)
        try:
            self.tape.append(IndexEntry(**{**index_entry(ex), "file": path.name}))
        except RecordingError as exc:  # an index put in as a link meanwhile, a full disk
            self.tape.release(path)
            self._problem(f"not indexed: {path.name} ({exc})")
            return
        if self.log is not None:
            self.log(f"recorded {path.name} ({ex.status}, complete)")


def _request_key(path: Path, rules: MatchRules) -> tuple[str, str] | None:
    """What matching compares for the recording at ``path`` (None: it holds no request)."""
    try:
        ex = _exchange(load_recording(path))
    except RecordingError:
        return None
    if ex.body is None:
        return None
    return ex.endpoint, canonical(rules.normalize(ex.body))


def merge_into(
    folder: str | os.PathLike[str],
    staging: str | os.PathLike[str],
    *,
    drop: str = "none",
    note: tuple[str, str] | None = None,
    rules: MatchRules | None = None,
) -> dict[str, str]:
    """Move the finished exchanges recorded in the tape ``staging`` into the tape ``folder``,
    in their order, under the tape's lock: each gets the tape's next sequence number (its file
    renamed to match) and its index entry. Other writers may be adding to the tape meanwhile.

    ``drop``: ``"none"`` adds them; ``"same"`` first drops the tape's exchanges whose request
    one of them records again; ``"all"`` drops every recording the tape held (its index's and
    the others' ``.jsonl``). ``rules``: what "the same request" ignores (the default fields
    when not given). ``note``: ``(name, text)`` of a hidden file written into the tape in the
    same step. Returns ``{staged name: name in the tape}`` (file stems).
    """
    root = Path(folder)
    entries = read_index(staging)
    fresh = is_fresh(root)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RecordingError(str(root), None, os_error_text(exc)) from None
    if fresh:
        write_gitignore(root)  # a new tape: what to commit of it
    renamed: dict[str, str] = {}
    with tape_lock(root):
        old = read_index(root)
        gone: set[str] = set()
        if drop == "all":
            files = tape_files(root)
            gone = {e.file for e in old}
            gone |= {p.name for p in files.unlisted if p.suffix.lower() == ".jsonl"}
        elif drop == "same":
            rules = rules or MatchRules()
            keys = {_request_key(Path(staging) / e.file, rules) for e in entries} - {None}
            gone = {e.file for e in old if _request_key(root / e.file, rules) in keys}
        seq = max(highest_seq(root), max((e.seq for e in old), default=0))
        added: list[IndexEntry] = []
        for entry in entries:
            source = Path(staging) / entry.file
            if not source.is_file():
                continue
            seq += 1
            while (root / renumbered(entry.file, seq)).exists():
                seq += 1
            name = renumbered(entry.file, seq)
            try:
                os.rename(source, root / name)
            except OSError as exc:
                raise RecordingError(str(root / name), None, os_error_text(exc)) from None
            renamed[Path(entry.file).stem] = Path(name).stem
            added.append(replace(entry, seq=seq, file=name))
        if gone:
            # the index without them first: it never names a file that is gone
            rewrite_index(root, [e for e in old if e.file not in gone] + added)
            for name in gone:
                (root / name).unlink(missing_ok=True)
        else:
            append_entries(root, added, locked=True)
        if note is not None:
            try:
                fd = open_own(root / note[0], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
                with open(fd, "w", encoding="utf-8") as fh:
                    fh.write(note[1])
            except OSError as exc:
                raise RecordingError(str(root / note[0]), None, os_error_text(exc)) from None
    return renamed


def discard_staging(staging: str | os.PathLike[str]) -> None:
    shutil.rmtree(staging, ignore_errors=True)


class TapeServer(LibraryServer[TapeLibrary]):
    """A tape served from a background thread: ``.url``, ``.library`` and ``.served``."""

    @property
    def recorded(self) -> list[str]:
        """The names of the recordings added to the tape on a miss, in order."""
        return list(self.library.recorded)


def serving_tape(
    folder: str | os.PathLike[str],
    *,
    record_missing: bool = False,
    upstream: str | None = None,
    speed: float | None = None,
    max_gap: float | None = None,
    rechunk: int | None = None,
    match_ignore: Sequence[str] = (),
    log: Callable[[str], None] | None = None,
    port: int = 0,
    faults: Sequence[str] = (),
) -> TapeServer:
    """Serve a tape on 127.0.0.1 from a background thread.

    ``with serving_tape("tapes/session") as server:`` then point an SDK at ``server.url +
    "/v1"`` (OpenAI) or ``server.url`` (Anthropic, Gemini). ``speed=None`` sends at once;
    ``1.0`` keeps the recorded gaps, each capped at ``max_gap`` seconds. With
    ``record_missing`` a request the tape does not hold goes to ``upstream`` and is added to
    the tape (``server.recorded`` names what was added); without it the tape is only read.
    ``server.served`` names the recordings served, in order. ``faults``: the session faults
    (quirk ids: ``mcp_session_expired``...) applied to the recorded sessions it serves.
    """
    if record_missing and not upstream:
        raise ValueError("record on miss needs an upstream URL")
    library = load_tape(folder, match_ignore, create=record_missing)
    playback = Playback(speed=speed, rechunk=rechunk, max_gap=max_gap)
    on_miss = MissRecorder(library, upstream, log=log) if record_missing and upstream else None
    config = ServiceConfig(playback=playback, log=log, on_miss=on_miss, faults=tuple(faults))
    return TapeServer(library, build_service(library, config).app, port=port)
