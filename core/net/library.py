"""The recordings a server answers with: loaded into memory, and chosen for a request.

:func:`load_recording` reads a recording (or a raw SSE body) and says what it answers: its API
(from its header, else sniffed from its first events), model, status, headers and endpoint.
:class:`Library` holds them and picks the one a request gets (:meth:`Library.select`). Plain
Python: the HTTP app that serves them is :mod:`.server`, tapes add request matching
(:mod:`.tape`).
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from ..converters import detect_from_event, detect_from_header
from ..exchange.playback import DROPPED_HEADERS
from ..exchange.tape_match import Exchange, endpoint_key
from ..model.records import INDEX_NAME, MISSING, RecordingError
from ..plugins import api_for_converter, model_in_path, served_api
from ..recording.reader import RAW_SUFFIXES, RECORDING_SUFFIXES, Source
from ..recording.secrets import REDACTED, credential_values, secret_query_values
from ..wire import fastjson
from ..wire.framing import PendingDecoder, sniff
from ..wire.sse import SSEEvent

SNIFF_BYTES = 64 * 1024


@dataclass(slots=True)
class Recording:
    """One recording (or raw SSE body) held in memory, ready to be served."""

    name: str
    path: str
    api: str | None  # converter name, or None when the stream does not say
    model: str | None
    status: int
    headers: list[tuple[str, str]]
    chunks: list[tuple[float | None, bytes]] = field(repr=False)
    size: int = 0
    # how the recorded stream ended: "complete", "error", "timeout", "interrupted", or
    # "cut off" (no end record)
    ended: str = "complete"
    # the request it answered: its JSON body (None when the recording holds none, as a raw
    # .sse body) and its endpoint suffix (``/chat/completions``, ...; None when unknown)
    request_body: Any = field(default=None, repr=False)
    endpoint: str | None = None
    # a stream made in memory (a script's turn, a translation): its recording as
    # (header, chunks, end), read instead of ``path`` by what needs the whole recording
    origin: Any = field(default=None, repr=False)
    # the recording answers a turn of a script (``tape build``): its header's turn and match
    turn: Any = field(default=None, repr=False)
    # a WebSocket session: its steps (``exchange.session_play``; ``chunks`` is empty), the
    # subprotocol its server chose, its records (what mutations start from)
    session: Any = field(default=None, repr=False)
    subprotocol: str | None = None
    records: Any = field(default=None, repr=False)

    @property
    def broken(self) -> bool:
        """The recorded stream did not end properly: it is served the same way, by dropping
        the connection after its last byte (HTTP error statuses are complete responses)."""
        return self.ended != "complete" and self.status < 400

    def describe(self) -> dict[str, Any]:
        api = api_for_converter(self.api)
        out = {
            "name": self.name,
            "api": api.label if api is not None else None,
            "endpoint": self.endpoint or (api.route if api is not None else None),
            "model": self.model,
            "status": self.status,
            "bytes": self.size,
            "chunks": len(self.chunks),
            "ended": self.ended,
        }
        if self.session is not None:
            out["websocket"] = True
            out["messages"] = len(self.records or ())
        return out


def expand_paths(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Files as given, and the recordings (``.jsonl``, ``.sse``, ``.txt``) inside folders."""
    out: list[Path] = []
    suffixes = RAW_SUFFIXES | (RECORDING_SUFFIXES - {".json"})
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = sorted(
                f
                for f in p.iterdir()
                if f.is_file() and f.suffix.lower() in suffixes and f.name != INDEX_NAME
            )
            if not found:
                raise RecordingError(str(p), None, _nothing_in(p))
            out.extend(found)
        elif p.exists():
            out.append(p)
        else:
            raise RecordingError(str(p), None, MISSING)
    return out


def _nothing_in(folder: Path) -> str:
    """Why a folder gives no recordings, and, when it holds tapes, which to give instead."""
    inside: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        if Path(dirpath) != folder and any(
            not f.startswith(".") and Path(f).suffix.lower() in (".jsonl", ".sse", ".txt")
            for f in filenames
        ):
            inside.append(Path(dirpath))
            if len(inside) > 5:
                break
    if not inside:
        return "holds no recordings (.jsonl, .sse, .txt)"
    shown = ", ".join(str(t) for t in inside[:5]) + (", ..." if len(inside) > 5 else "")
    return (
        f"holds no recordings of its own, only folders of them (tapes: {shown}); "
        f"give one of those, e.g. {inside[0]}"
    )


def _sniff(chunks: list[tuple[float | None, bytes]]) -> tuple[str | None, str | None]:
    """The API and model a body's first events show."""
    decoder = PendingDecoder()  # the framing decides: SSE, a JSON array or NDJSON
    api: str | None = None
    model: str | None = None
    seen = 0
    for _, data in chunks:
        for item in decoder.feed(data):
            if type(item) is not SSEEvent:
                continue
            if api is None:
                api = detect_from_event(item)
            if model is None:
                model = _model_of(item.data)
            if api is not None and model is not None:
                return api, model
        seen += len(data)
        if seen >= SNIFF_BYTES:
            break
    return api, model


def _model_of(data: str) -> str | None:
    try:
        obj: Any = fastjson.loads(data)
    except ValueError:
        return None
    if isinstance(obj, list) and obj:
        obj = obj[0]
    if not isinstance(obj, dict):
        return None
    for holder in (obj, obj.get("message"), obj.get("response")):
        if isinstance(holder, dict):
            for key in ("model", "modelVersion"):
                if isinstance(holder.get(key), str) and holder[key]:
                    return str(holder[key])
    return None


# RFC 9110 token characters for a name; a value is latin-1 without CR, LF or NUL
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEADER_VALUE = re.compile(r"[^\r\n\x00\u0100-\U0010ffff]*")
_log = logging.getLogger("streamtool.serve")


def load_session(path: str | os.PathLike[str], source: Source) -> Recording:
    """A WebSocket session's recording, ready to be served (:mod:`.ws_serve`)."""
    from ..exchange.session_play import script

    records = list(source.session_records())
    header = source.header
    api = detect_from_header(header)
    url = header.url or ""
    wire = served_api(unquote(urlsplit(url).path), "websocket") or api_for_converter(api)
    subprotocol = header.response.get("subprotocol")
    return Recording(
        name=Path(path).stem,
        path=str(path),
        api=api,
        model=header.model,
        status=101,
        headers=[],
        chunks=[],
        size=sum(len(r.data) for r in records if isinstance(r.data, str | bytes)),
        ended=source.end.reason if source.end is not None else "cut off",
        endpoint=wire.route if wire is not None else None,
        session=script(records),
        subprotocol=subprotocol if isinstance(subprotocol, str) else None,
        records=records,
    )


def load_recording(path: str | os.PathLike[str]) -> Recording:
    source = Source(path)
    if source.websocket:
        return load_session(path, source)
    chunks: list[tuple[float | None, bytes]] = []
    size = 0
    for chunk in source.chunks():
        data = chunk.data if isinstance(chunk.data, bytes) else chunk.data.encode("utf-8")
        chunks.append((chunk.t, data))
        size += len(data)
    header = source.header
    api = detect_from_header(header) if not header.raw_body else None
    model = header.model
    url = header.url
    if model is None and url:
        model = model_in_path(unquote(urlsplit(url).path))
    if api is None or model is None:
        sniffed_api, sniffed_model = _sniff(chunks)
        api = api or sniffed_api
        model = model or sniffed_model
    if api is None and header.raw_body:  # refused as replay refuses it, not served as a stream
        from ..engine.replay import binary_text, is_binary

        body = b"".join(data for _, data in chunks)
        if is_binary(body):
            raise RecordingError(str(path), None, binary_text(len(body), body[:4]))
    request_path = unquote(urlsplit(url).path) if url else ""
    endpoint = served_api(request_path) or api_for_converter(api)
    if model is None and endpoint is not None:  # its row's field (MCP: the request's method)
        model = endpoint.model_of(request_path, header.request.get("body"))
    suffix = endpoint.route if endpoint is not None else None
    status = header.response.get("status")
    if isinstance(status, int) and 100 <= status <= 199:
        # an informational status (101 Switching Protocols) is no answer to a request
        raise RecordingError(str(path), None, f"recorded status {status} cannot be served")
    # a status HTTP does not define (600-999, three digits still) is served as it was recorded
    if not isinstance(status, int) or not 100 <= status <= 999:
        status = 200
    recorded = header.response.get("headers")
    headers: list[tuple[str, str]] = []
    if isinstance(recorded, dict):
        for k, v in recorded.items():
            if k.lower() in DROPPED_HEADERS or not isinstance(v, str) or REDACTED in v:
                continue
            if not _HEADER_NAME.fullmatch(k) or not _HEADER_VALUE.fullmatch(v):
                _log.warning("%s: recorded header %r is not valid HTTP: not served", path, k)
                continue
            headers.append((k.lower(), v))
    if not any(k == "content-type" for k, _ in headers):
        head = b"".join(d for _, d in chunks[:8])
        json_body = sniff(head) in ("json-array", "ndjson") or status >= 400
        headers.append(("content-type", "application/json" if json_body else "text/event-stream"))
    from ..drive.script import turn_of

    return Recording(
        turn=turn_of(header.extra),
        name=Path(path).stem,
        path=str(path),
        api=api,
        model=model,
        status=status,
        headers=headers,
        chunks=chunks,
        size=size,
        ended=source.end.reason if source.end is not None else "cut off",
        request_body=header.request.get("body"),
        endpoint=suffix,
    )


def exchange_of(rec: Recording) -> Exchange:
    """A recording as a tape's matching sees it: its endpoint key (for an API that names the
    model in its path, with the model) and its request body."""
    api = served_api(rec.endpoint) if rec.endpoint is not None else None
    path_model = rec.model if api is not None and api.model_in_path else None
    body = rec.request_body
    return Exchange(
        name=rec.name,
        endpoint=endpoint_key(rec.endpoint or "?", path_model),
        # a turn of a script (tape build) holds no request to compare: its match answers
        body=body if rec.endpoint is not None and rec.turn is None else None,
    )


class SelectionError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class NoMatch(SelectionError):
    """Nothing recorded answers the request (a tape's miss): HTTP 404, or forwarded upstream
    when the server records what is missing."""

    def __init__(self, message: str) -> None:
        super().__init__(404, message)


@dataclass(slots=True)
class Incoming:
    """A request as the choice of a recording sees it."""

    path: str
    endpoint: str  # the endpoint suffix (a wire API's route)
    apis: tuple[str, ...]
    model: str | None
    name: str | None  # the X-Streamtool-Recording header
    body: Any  # parsed JSON, or None for an empty body
    path_model: str | None = None  # the model named in the path (an API that names it there)
    # the request's headers (a mapping) and query string: what its credentials are read from
    # (:meth:`secrets`, on a miss only), masked wherever a message would show them
    headers: Any = None
    query: str = ""
    websocket: bool = False  # an upgrade: a recorded session answers it

    def secrets(self) -> list[str]:
        """Every credential value the request carries (headers and query parameters)."""
        pairs = self.headers.items() if self.headers is not None else ()
        return credential_values(pairs) + secret_query_values(f"?{self.query}")


class Library:
    """The recordings a server answers with, and the rule that picks one for a request."""

    def __init__(self, recordings: Sequence[Recording]) -> None:
        self.recordings = list(recordings)
        # --mutate: the change made to each recording at its first request, and what it did
        self.mutated: dict[str, list[str]] = {}
        self._change: Callable[[Recording], list[str]] | None = None
        self._prepared: set[int] = set()  # id() of the recordings the change has seen
        self._change_lock = threading.Lock()
        # how many upgrades each (endpoint, model) got: the next session is the next in order
        self._session_turns: dict[tuple[str, str | None], int] = {}
        self.by_name: dict[str, Recording] = {}
        for rec in self.recordings:
            for key in (rec.name, Path(rec.path).name):
                other = self.by_name.get(key)
                if other is not None and other is not rec:
                    raise RecordingError(
                        rec.path, None, f"two recordings are named {key!r} (also {other.path})"
                    )
                self.by_name[key] = rec

    @classmethod
    def from_paths(cls, paths: Iterable[str | os.PathLike[str]]) -> Library:
        files = expand_paths(paths)
        if not files:
            raise RecordingError("serve", None, "no recordings given")
        if len(files) == 1:
            return cls([load_recording(files[0])])
        # among several, one that cannot be read or served is skipped with a warning
        loaded = []
        for p in files:
            try:
                loaded.append(load_recording(p))
            except RecordingError as exc:
                _log.warning("skipped: %s", exc)
        if not loaded:
            raise RecordingError("serve", None, "none of the recordings can be served")
        return cls(loaded)

    def names(self) -> list[str]:
        return [r.name for r in self.recordings]

    def transform(self, change: Callable[[Recording], list[str]]) -> dict[str, list[str]]:
        """Change each recording in place (``--mutate``) when it is first served (see
        :meth:`prepare`): a server of many recordings starts at once, and a recording nobody
        asks for is never changed. ``change`` says what it did (an empty list: nothing).
        Returns recording name -> what was done, filled as recordings are served."""
        self._change = change
        return self.mutated

    def prepare(self, rec: Recording) -> Recording:
        """``rec``, ready to be served: changed by :meth:`transform`'s change the first time
        (once, whichever requests ask for it at the same time). Blocks while it changes: call
        it from a worker thread."""
        change = self._change
        if change is None or id(rec) in self._prepared:
            return rec
        with self._change_lock:
            if id(rec) not in self._prepared:
                what = change(rec)
                if what:
                    self.mutated[rec.name] = what
                self._prepared.add(id(rec))
        return rec

    @property
    def needs_prepare(self) -> bool:
        """Whether :meth:`prepare` may still have work to do (a change is set)."""
        return self._change is not None

    def choose(self, request: Incoming) -> Recording:
        """The recording that answers ``request``; raises :class:`SelectionError`."""
        if request.websocket:
            return self.next_session(request)
        return self.select(request.apis, request.model, request.name)

    def next_session(self, request: Incoming) -> Recording:
        """The session that answers an upgrade: the one its header names, else the next of
        its API's sessions (for its model, when one is for it) in recorded order, the first
        again after the last (a session over several connections: each its recording)."""
        if request.name:
            rec = self.by_name.get(request.name)
            if rec is None or rec.session is None:
                raise SelectionError(404, f"no recorded WebSocket session named {request.name!r}")
            return rec
        sessions = [r for r in self.recordings if r.session is not None and r.api in request.apis]
        if request.model and any(r.model == request.model for r in sessions):
            sessions = [r for r in sessions if r.model == request.model]
        if not sessions:
            held = ", ".join(r.name for r in self.recordings if r.session is not None)
            raise SelectionError(
                404,
                f"no recorded WebSocket session answers {request.path}"
                + (f" (sessions: {held})" if held else " (no WebSocket session is served)"),
            )
        key = (request.endpoint, request.model)
        n = self._session_turns.get(key, 0)
        self._session_turns[key] = n + 1
        return sessions[n % len(sessions)]

    def select(self, apis: tuple[str, ...], model: str | None, name: str | None) -> Recording:
        """The recording for a request: by name (header), by model, else the only one."""
        if name:
            rec = self.by_name.get(name)
            if rec is None:
                raise SelectionError(
                    404, f"no recording named {name!r}; available: {', '.join(self.names())}"
                )
            return rec
        candidates = [r for r in self.recordings if r.api in apis and r.session is None]
        if model:
            matching = [r for r in candidates if r.model == model]
            if len(matching) == 1:
                return matching[0]
            if len(matching) > 1:
                raise SelectionError(
                    400,
                    f"{len(matching)} recordings are for model {model!r} "
                    f"({', '.join(r.name for r in matching)}); pick one with the "
                    f"X-Streamtool-Recording header",
                )
        if len(candidates) == 1:
            return candidates[0]
        if (
            len(self.recordings) == 1
            and self.recordings[0].api is None
            and self.recordings[0].session is None
        ):
            return self.recordings[0]
        if not candidates:
            available = ", ".join(f"{r.name} ({r.api or 'unknown API'})" for r in self.recordings)
            raise SelectionError(404, f"no recording speaks this API; available: {available}")
        wanted = f" and none is for model {model!r}" if model else ""
        raise SelectionError(
            400,
            f"{len(candidates)} recordings answer this endpoint{wanted} "
            f"({', '.join(r.name for r in candidates)}); pick one with the model name or the "
            "X-Streamtool-Recording header",
        )


class ServingLibrary(Library):
    """A library that picks under a lock (in :meth:`_choose`) and keeps the names of what it
    served, in order (``.served``), and of what it recorded on a miss (``.recorded``)."""

    def __init__(self, recordings: Sequence[Recording]) -> None:
        super().__init__(recordings)
        self.served: list[str] = []  # the recordings served, in order
        self.recorded: list[str] = []  # the recordings made on a miss, in order
        self._lock = threading.Lock()

    def choose(self, request: Incoming) -> Recording:
        with self._lock:
            rec = self.next_session(request) if request.websocket else self._choose(request)
            self.served.append(rec.name)
            return rec

    def mark_served(self, name: str) -> None:
        """A recording was served by another part of the server (a session's player)."""
        with self._lock:
            self.served.append(name)

    def _choose(self, request: Incoming) -> Recording:
        raise NotImplementedError
