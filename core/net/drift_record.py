"""The network edge of ``streamtool drift --upstream``: send every recorded request of a tape
again and record the answers as a new tape (same sequence numbers, same file names).

The request is the recording's own (method, path and query, body, the headers that are not
credentials); the credential is the environment's, as ``record`` takes it (the API's key
variables: ``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``...), sent upstream and never written: the
recorder redacts it like any other. A request the upstream refuses or drops is recorded as what
happened (its status, its end), not a failure of the command.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from ..exchange.requests import PreparedRequest, RequestError, request_part
from ..model.records import RecordingError
from ..plugins import find_api
from ..recording.reader import Source
from ..recording.secrets import REDACTED, is_secret_header
from ..recording.tape_index import IndexEntry, Tape, read_index
from .http_capture import record_request

# headers of the recorded request that are not sent again: the connection's own (credentials,
# by name, are not sent either: the environment's is sent instead)
_NOT_SENT = frozenset(
    {"host", "content-length", "connection", "accept-encoding", "transfer-encoding"}
)


@dataclass(slots=True)
class Rerecorded:
    entry: IndexEntry  # the old tape's exchange
    path: Path | None  # its new recording (None: the request could not be sent)
    problem: str | None = None


def upstream_url(upstream: str, recorded: str) -> str:
    """The recorded URL's path and query on the upstream (whose own path, if any, is a prefix).
    Raises ``ValueError`` for an upstream that is not an http(s) URL."""
    up = urlsplit(upstream)
    if up.scheme not in ("http", "https") or not up.netloc:
        raise ValueError(f"--upstream {upstream!r}: expected an http:// or https:// URL")
    old = urlsplit(recorded)
    return urlunsplit((up.scheme, up.netloc, up.path.rstrip("/") + old.path, old.query, ""))


def prepared_from(path: Path, upstream: str, env: Mapping[str, str]) -> PreparedRequest:
    """The recorded request of ``path``, addressed to ``upstream``, with the environment's key."""
    header = Source(path).header
    request = header.request if isinstance(header.request, dict) else {}
    url = request.get("url")
    if not isinstance(url, str) or not url:
        raise RecordingError(str(path), 1, "the recording holds no request URL to send again")
    wire = find_api(header.api or "") if header.api else None
    headers: dict[str, str] = {}
    recorded = request.get("headers")
    key_header = None
    if wire is not None:
        try:
            key_header = request_part(wire).key_header.lower()
        except RequestError:
            key_header = None
    if isinstance(recorded, dict):
        for name, value in recorded.items():
            low = str(name).lower()
            if low in _NOT_SENT or low == key_header or is_secret_header(low):
                continue
            if REDACTED in str(value):
                continue
            headers[str(name)] = str(value)
    secrets: tuple[str, ...] = ()
    if wire is not None and key_header is not None:
        key = next((env[v] for v in wire.key_env if env.get(v)), None)
        if key:
            headers[key_header] = request_part(wire).key_prefix + key
            secrets = (key,)
    body = request.get("body")
    if isinstance(body, str):
        content = body.encode("utf-8")
    elif body is None:
        content = b""
    else:
        content = json.dumps(body, ensure_ascii=False).encode("utf-8")
        headers.setdefault("content-type", "application/json")
    return PreparedRequest(
        method=str(request.get("method") or "POST"),
        url=upstream_url(upstream, url),
        headers=headers,
        content=content,
        body=body,
        provider=header.provider or "",
        api=header.api or "",
        model=header.model,
        secrets=secrets,
    )


def rerecord(
    tape: str | os.PathLike[str],
    upstream: str,
    out: str | os.PathLike[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 120.0,
    on_done: Callable[[Rerecorded], None] | None = None,
) -> list[Rerecorded]:
    """Every exchange of ``tape`` sent again to ``upstream`` and recorded into the new tape
    ``out`` (which must hold no recording yet), under its own sequence number and file name.
    Raises ``ValueError`` for a bad upstream or an ``out`` that already holds a tape."""
    old = Path(tape)
    new = Path(out)
    upstream_url(upstream, "/")  # ValueError now, not once per exchange
    if new.exists() and (read_index(new) or any(new.glob("*.jsonl"))):
        raise ValueError(f"{new}: already holds recordings (drift writes a new tape)")
    writer = Tape(new)
    environ = os.environ if env is None else env
    done: list[Rerecorded] = []
    for entry in read_index(old):
        try:
            prepared = prepared_from(old / entry.file, upstream, environ)
        except (RecordingError, ValueError) as exc:
            result = Rerecorded(entry, None, str(exc))
        else:
            target = new / entry.file
            recorded = record_request(prepared, target, read_timeout=timeout)
            if recorded.write_failed:
                raise RecordingError(str(target), None, recorded.error or "could not be written")
            writer.append(_entry(entry, recorded, target))
            result = Rerecorded(entry, target)
        done.append(result)
        if on_done is not None:
            on_done(result)
    return done


def _entry(old: IndexEntry, result: object, path: Path) -> IndexEntry:
    ttft = next((c.t for c in Source(path).chunks()), None)
    return IndexEntry(
        seq=old.seq,
        file=old.file,
        recorded_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        api=old.api,
        provider=old.provider,
        method=old.method,
        path=old.path,
        model=old.model,
        status=getattr(result, "status", None),
        end=getattr(result, "reason", None),
        duration_s=round(getattr(result, "duration", 0.0), 6),
        ttft_s=None if ttft is None else round(ttft, 6),
        chunks=getattr(result, "chunks", None),
    )
