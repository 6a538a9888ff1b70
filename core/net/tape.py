"""Serving a tape: a recorded session answered request by request, in order.

:class:`TapeLibrary` is the :class:`~streamtool.core.net.library.Library` of a tape folder. A
request gets, in this order:

1. the recording named by the ``X-Streamtool-Recording`` header, when the tape holds it;
2. the next recorded exchange whose request matches (:mod:`.tape_match`);
3. among recordings that hold no request body (raw ``.sse`` files), the old rules: the one
   for the request's model, else the only one for the endpoint;
4. else a miss: HTTP 404 in the provider's error shape, naming the closest exchange and the
   first difference.

:func:`serving_tape` runs it on 127.0.0.1 in a background thread, for tests and the pytest
plugin.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..apis import served_api
from ..recording.tape_index import INDEX_NAME, IndexEntry, Tape, list_exchanges
from ..records import RecordingError, os_error_text
from .library import (
    Incoming,
    Library,
    NoMatch,
    Recording,
    SelectionError,
    load_recording,
)
from .listen import ServerThread
from .playback import Playback
from .server import create_app
from .tape_match import Exchange, Matcher, MatchRules, endpoint_key


def _exchange(rec: Recording) -> Exchange:
    api = served_api(rec.endpoint) if rec.endpoint is not None else None
    gemini_model = rec.model if api is not None and api.model_in_path else None
    body = rec.request_body
    return Exchange(
        name=rec.name,
        endpoint=endpoint_key(rec.endpoint or "?", gemini_model),
        body=body if rec.endpoint is not None else None,
    )


class TapeLibrary(Library):
    """A tape's recordings, answered by request matching (see the module's docstring)."""

    def __init__(
        self,
        recordings: Sequence[Recording],
        folder: str | os.PathLike[str] | None = None,
        rules: MatchRules | None = None,
    ) -> None:
        super().__init__(recordings)
        self.folder = Path(folder) if folder is not None else None
        self.rules = rules or MatchRules()
        self.matcher = Matcher([_exchange(r) for r in self.recordings], self.rules)
        self.served: list[str] = []  # the recordings served, in order
        self.recorded: list[str] = []  # the recordings made on a miss, in order
        self._lock = threading.Lock()

    @classmethod
    def from_folder(
        cls, folder: str | os.PathLike[str], rules: MatchRules | None = None
    ) -> TapeLibrary:
        """The tape in ``folder`` (an empty folder is an empty tape)."""
        files = list_exchanges(folder)
        return cls([load_recording(p) for p in files], folder, rules)

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
            if served:
                self.served.append(rec.name)
                self.recorded.append(rec.name)

    def request_key(self, request: Incoming) -> str:
        return endpoint_key(request.endpoint, request.gemini_model)

    def choose(self, request: Incoming) -> Recording:
        with self._lock:
            rec = self._choose(request)
            self.served.append(rec.name)
            return rec

    def _choose(self, request: Incoming) -> Recording:
        if request.name:
            named = self.by_name.get(request.name)
            if named is not None:
                return named
        found = self.matcher.match(self.request_key(request), request.body)
        if found is not None:
            return self.by_name[found.name]
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
        miss = self.matcher.miss(self.request_key(request), request.body, request.path)
        if request.name:
            return f"the tape holds no recording named {request.name!r}, and {miss.message}"
        return miss.message


def is_tape(path: str | os.PathLike[str]) -> bool:
    """A folder holding a tape index."""
    return (Path(path) / INDEX_NAME).is_file()


def load_tape(
    folder: str | os.PathLike[str], match_ignore: Sequence[str] = (), *, create: bool = False
) -> TapeLibrary:
    """A tape folder, ready to serve. ``match_ignore`` adds fields (dotted paths) that matching
    ignores; ``create`` makes a missing folder (an empty tape, to be filled on misses). Raises
    :class:`RecordingError` for unusable input, ``ValueError`` for a bad path."""
    root = Path(folder)
    if create and not root.exists():
        try:
            root.mkdir(parents=True)
        except OSError as exc:
            raise RecordingError(str(root), None, os_error_text(exc)) from None
    if not root.is_dir():
        raise RecordingError(
            str(root), None, "no such folder" if not root.exists() else "is a file, not a tape"
        )
    return TapeLibrary.from_folder(root, MatchRules.with_extra(match_ignore))


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
    ) -> None:
        from .proxy import parse_upstreams

        if library.folder is None:
            raise ValueError("record on miss needs a tape folder")
        self.library = library
        self.upstreams = parse_upstreams([upstream])  # ValueError for a bad URL
        self.tape = Tape(library.folder)
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
        from .forward import Exchange as Forwarded
        from .forward import recorder_for
        from .proxy import route

        r = route(request.method, request.url.path, request.headers, incoming.body)
        scope = request.scope
        raw_path = (scope.get("raw_path") or scope["path"].encode("utf-8")).decode("latin-1")
        url = self.upstreams.url(r, raw_path, scope.get("query_string", b"").decode("latin-1"))
        seq, file = self.tape.allocate(f"{r.provider}-{r.api or 'http'}", r.model)
        ex = Forwarded(
            method=request.method,
            path=request.url.path,
            provider=r.provider,
            api=r.api,
            model=r.model,
            file=str(file),
            seq=seq,
        )
        recorder: Any = None
        try:
            recorder = recorder_for(
                request, raw, str(file), provider=r.provider, api=r.api, url=url
            )
            recorder.preflight()
        except RecordingError as exc:
            ex.record_error = exc.message
            recorder = None
        if self.log is not None:
            what = f"recording {file.name}" if recorder else f"not recorded ({ex.record_error})"
            self.log(f"{request.method} {request.url.path} -> no match: forwarded, {what}")
        return self.forwarder.forward(
            request,
            url,
            body=raw,
            recorder=recorder,
            exchange=ex,
            error_style=style,
            on_end=self._ended,
        )

    def _ended(self, ex: Any) -> None:
        """Keep a complete exchange (indexed, and answered from now on). A failed one (an HTTP
        error, a dropped or stalled stream) is not kept: pinned in the tape, it would answer
        the client's retry with the same failure forever."""
        from .proxy import index_entry

        path = Path(ex.file)
        if ex.record_error is not None or not path.exists():
            return
        ok = ex.end == "complete" and ex.status is not None and ex.status < 400
        if not ok:
            path.unlink(missing_ok=True)
            if self.log is not None:
                why = f"HTTP {ex.status}" if ex.status and ex.status >= 400 else ex.end
                self.log(f"not kept on the tape: {path.name} ({why}: {ex.error})")
            return
        self.tape.append(IndexEntry(**{**index_entry(ex), "file": path.name}))
        if self.log is not None:
            self.log(f"recorded {path.name} ({ex.status}, complete)")
        self.library.add(load_recording(path), served=True)


class TapeServer(ServerThread):
    """A tape served from a background thread: ``.url``, ``.library`` and ``.served``."""

    def __init__(self, library: TapeLibrary, app: Any, port: int = 0) -> None:
        super().__init__(app, port=port)
        self.library = library

    @property
    def served(self) -> list[str]:
        """The names of the recordings served so far, in order."""
        return list(self.library.served)

    @property
    def recorded(self) -> list[str]:
        """The names of the recordings added to the tape on a miss, in order."""
        return list(self.library.recorded)

    def __enter__(self) -> TapeServer:
        super().__enter__()
        return self


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
) -> TapeServer:
    """Serve a tape on 127.0.0.1 from a background thread.

    ``with serving_tape("tapes/session") as server:`` then point an SDK at ``server.url +
    "/v1"`` (OpenAI) or ``server.url`` (Anthropic, Gemini). ``speed=None`` sends at once;
    ``1.0`` keeps the recorded gaps, each capped at ``max_gap`` seconds. With
    ``record_missing`` a request the tape does not hold goes to ``upstream`` and is added to
    the tape (``server.recorded`` names what was added); without it the tape is only read.
    ``server.served`` names the recordings served, in order.
    """
    if record_missing and not upstream:
        raise ValueError("record on miss needs an upstream URL")
    library = load_tape(folder, match_ignore, create=record_missing)
    playback = Playback(speed=speed, rechunk=rechunk, max_gap=max_gap)
    on_miss = MissRecorder(library, upstream, log=log) if record_missing and upstream else None
    return TapeServer(library, create_app(library, playback, log, on_miss), port=port)
