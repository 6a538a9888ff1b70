"""Turning one HTTP exchange into a recording, whatever HTTP client drives it.

:class:`ResponseRecorder` is told what happens (``start`` with the status and headers, ``feed``
with every network read, ``close`` or ``fail``) and writes the recording as it goes through
:class:`~streamtool.core.recording.reader.RecordingWriter`: one flushed chunk record per read, so a
crash or Ctrl-C leaves every received byte on disk, and an end record that says why it stopped.
It is used by ``streamtool record`` (httpx), by the SDK capture transports (httpx2) and by the
forwarding edge of the proxy and of tapes (httpx, :mod:`streamtool.core.net.forward`).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

from ..model.records import Chunk, Header, RecordingError
from ..wire.http_body import BodyDecoder, DecodeLimit, provider_error_message
from .own_files import refusal
from .secrets import (
    SecretScrubber,
    find_secret,
    redact_keys,
    redact_request,
    request_secrets,
    with_article,
)
from .writer import RecordingWriter, json_text

ERROR_BODY_LIMIT = 64 * 1024  # bytes of an HTTP error body kept for its message
MAX_RECORDING_BYTES = 1024**3  # the default of --max-recording-bytes (decoded body bytes)


def check_output(path: str | os.PathLike[str], force: bool) -> None:
    """Fail early (before any network traffic) when ``path`` cannot be written."""
    p = Path(path)
    if p.is_dir():
        raise RecordingError(str(path), None, "is a folder, not a file")
    why = refusal(p, regular=False)
    if why is not None:  # never written through a link, even with --force
        raise RecordingError(str(path), None, why)
    if p.exists() and not force:
        raise RecordingError(str(path), None, "exists (use --force to overwrite)")
    if not p.parent.is_dir():
        raise RecordingError(str(path), None, "its folder does not exist")


@dataclass(slots=True)
class RecordResult:
    path: str
    status: int | None
    reason: str  # the end record's reason
    error: str | None
    chunks: int
    bytes: int
    duration: float
    write_failed: bool = False  # the file could not be written (``error`` says why)


def _client_error_kind(exc: BaseException) -> str | None:
    """``timeout``, ``connect`` or ``dropped`` for an HTTP client's own exception types, told
    apart with ``isinstance``: httpx's (``streamtool record``), aiohttp's (the proxy and tapes)
    and httpx2's (the SDK capture transports). The recording layer imports none of them: an
    exception of one can only exist once its module is imported, so the modules already
    imported are asked."""
    for name in ("httpx", "httpx2"):
        client = sys.modules.get(name)
        if client is None:
            continue
        if isinstance(exc, client.TimeoutException):
            return "timeout"
        if isinstance(exc, client.ConnectError):
            return "connect"
        if isinstance(exc, client.NetworkError | client.ProtocolError):
            return "dropped"
    aiohttp = sys.modules.get("aiohttp")
    if aiohttp is not None and isinstance(exc, aiohttp.ClientError):
        if isinstance(exc, TimeoutError):
            return "timeout"
        if isinstance(exc, aiohttp.ClientConnectorError):
            return "connect"
        if isinstance(exc, aiohttp.ClientPayloadError | aiohttp.ClientConnectionError):
            return "dropped"
    return None


def origin(url: str) -> str:
    """``scheme://host:port`` of ``url`` (never its path or query, which may hold a key)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:
        port = ""
    return f"{parts.scheme}://{host}{port}" if parts.scheme else url


def _to(exc: BaseException) -> str:
    """`` to ORIGIN`` of the request an HTTP client's error belongs to, when it says."""
    try:
        url = exc.request.url  # type: ignore[attr-defined]  # httpx's, httpx2's errors
    except (AttributeError, RuntimeError):  # RuntimeError: an error without its request
        return ""
    return f" to {origin(str(url))}"


def classify(exc: BaseException, received: int) -> tuple[str, str]:
    """The end reason and message for an exception that stopped a stream: by the HTTP client's
    exception types (httpx, httpx2), else by the built-in an exception derives from."""
    kind = _client_error_kind(exc)
    detail = str(exc) or type(exc).__name__
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted", f"interrupted by the user after {received} bytes"
    if kind == "timeout" or isinstance(exc, TimeoutError):
        return "timeout", f"{type(exc).__name__} after {received} bytes: {detail}"
    if kind == "connect":
        return "error", f"could not connect{_to(exc)}: {detail}"
    if kind == "dropped" or isinstance(exc, ConnectionError):
        return "error", f"connection dropped after {received} bytes: {detail}"
    if isinstance(exc, GeneratorExit):
        return "interrupted", f"the client closed the stream after {received} bytes"
    return "error", f"{type(exc).__name__} after {received} bytes: {detail}"


class RecordingLimit(Exception):
    """The response went past a limit (``--max-recording-bytes``, or a compressed body that
    decodes to too much): the recording has ended with reason ``limit``; stop reading."""


class ResponseRecorder:
    """Writes one response as a recording. ``t`` values are seconds since ``t0``."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        request: dict[str, Any],
        provider: str | None,
        api: str | None,
        secrets: Iterable[str] = (),
        secrets_complete: bool = False,
        force: bool = False,
        t0: float | None = None,
        max_bytes: int | None = MAX_RECORDING_BYTES,
    ) -> None:
        self.path = str(path)
        self.request = request
        self.provider = provider
        self.api = api
        self.force = force
        # the path is a file its tape made for this recording (``Tape.allocate``), written as is
        self.claimed = False
        # body bytes (decoded) the recording may hold: past them it ends with reason "limit"
        self.max_bytes = max_bytes
        # the caller's values, and whatever credential the request itself carries (unless the
        # caller's are all of them: ``secrets_complete``, read from the headers and URL the
        # request's description was made of)
        found = () if secrets_complete else request_secrets(request)
        self.scrubber = SecretScrubber((*secrets, *found))
        self.stream = self.scrubber.stream()
        self.t0 = time.monotonic() if t0 is None else t0
        self.status: int | None = None
        self.writer: RecordingWriter | None = None
        self.decoder = BodyDecoder(None)
        self.chunks = 0
        self.bytes = 0
        self.last_t = 0.0
        self._error_body = bytearray()
        self.reason: str | None = None
        self.error: str | None = None
        self.end_t: float | None = None
        # set when the file could not be written (a full disk): recording stopped there;
        # ``write_problem`` says it without the file's name and without what is kept
        self.write_error: str | None = None
        self.write_problem: str | None = None
        self._checked_request: dict[str, Any] | None = None  # by :meth:`preflight`

    def now(self) -> float:
        return time.monotonic() - self.t0

    def preflight(self) -> None:
        """Refuse before any traffic when the request would put a known key pattern on disk.

        (``RecordingWriter`` refuses such a header too, but by then the request was sent.)
        """
        request = redact_request(self.scrubber.deep(self.request))
        leaked = find_secret(json_text(request))
        if leaked:
            raise RecordingError(
                self.path, None, f"refusing to record: the request holds {with_article(leaked)}"
            )
        self._checked_request = request  # the header's request, ready for :meth:`start`

    # -- events ----------------------------------------------------------------------------
    def start(self, status: int | None, headers: Iterable[tuple[str, str]]) -> None:
        """The response head arrived: write the header record."""
        self.status = status
        merged: dict[str, str] = {}
        encoding = None
        for name, value in headers:
            key = name.lower()
            merged[key] = f"{merged[key]}, {value}" if key in merged else value
            if key == "content-encoding":
                encoding = value
        self.decoder = BodyDecoder(encoding, max_output=self.max_bytes)
        response: dict[str, Any] = {"status": status, "headers": merged}
        if self.decoder.decoded:
            response["decoded"] = self.decoder.encoding
        response = self.scrubber.deep(response, keys=True)
        request = self._checked_request
        header = Header(
            provider=self.provider,
            api=self.api,
            recorded_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            request=self.scrubber.deep(self.request) if request is None else request,
            response=response,
        )
        try:
            self.writer = RecordingWriter(self.path, header, force=self.force, claimed=self.claimed)
        except OSError as exc:
            self._broken(exc)

    def feed(self, data: bytes) -> Chunk | None:
        """One network read, as received. Returns the chunk written (``None`` if empty).

        Raises :class:`RecordingLimit`, the recording ended with reason ``limit``, when the
        read would take the recording past :attr:`max_bytes` or its compressed body decodes to
        more than the decoder allows; nothing of that read is written."""
        t = self.now()
        try:
            decoded = self.decoder.feed(data)
        except DecodeLimit as exc:
            self._over_limit(str(exc))
        if self.max_bytes is not None and self.bytes + len(decoded) > self.max_bytes:
            self._over_limit(f"the recording reached its limit of {self.max_bytes} bytes")
        return self._write(t, self.stream.feed(decoded))

    def _over_limit(self, why: str) -> NoReturn:
        if self.reason is None:
            self._write(self.now(), self.stream.finish())
            self._end("limit", f"{why}; the stream was cut after {self.bytes} bytes")
        raise RecordingLimit(self.error or why)

    def _write(self, t: float, data: bytes) -> Chunk | None:
        if not data or self.write_error is not None:
            return None
        if self.writer is None:
            self.start(None, ())
        if self.writer is None:  # the header could not be written
            return None
        if self.status is not None and self.status >= 400:
            room = ERROR_BODY_LIMIT - len(self._error_body)
            if room > 0:
                self._error_body += data[:room]
        self.chunks += 1
        self.bytes += len(data)
        self.last_t = t
        try:
            return self.writer.write_read(t, data)
        except OSError as exc:
            self._broken(exc)
            return None

    def _broken(self, exc: OSError) -> None:
        """The file cannot be written (a full disk, a file size limit): stop recording."""
        why = exc.strerror or str(exc)
        if self.writer is not None:
            self.writer.abandon()
            self.write_problem = f"cannot write the recording after {self.bytes} bytes: {why}"
            self.write_error = f"{self.path}: {self.write_problem}; what was written before is kept"
        else:  # not even its header: the writer removed the file it made
            self.write_problem = f"cannot write the recording: {why}"
            self.write_error = f"{self.path}: {self.write_problem}"
        self.reason = "error"
        self.error = self.write_error
        self.end_t = self.now()

    def close(self, reason: str | None = None, error: str | None = None) -> Chunk | None:
        """The body ended. HTTP error statuses end with reason ``error`` and their message."""
        if self.reason is not None:
            return None
        try:
            flushed = self.decoder.flush()
        except DecodeLimit as exc:
            flushed = b""
            reason, error = "limit", f"{exc}; the stream was cut after {self.bytes} bytes"
        tail = self.stream.feed(flushed) + self.stream.finish()
        chunk = self._write(self.now(), tail)
        if reason is None:
            if self.status is not None and self.status >= 400:
                reason = "error"
                error = provider_error_message(self.status, bytes(self._error_body))
            else:
                reason = "complete"
        if self.undecoded is not None:
            # the body was kept as it came, not as the recording's header says: not complete
            error = f"{error}; {self.undecoded}" if error else self.undecoded
            reason = "error" if reason == "complete" else reason
        self._end(reason, error)
        return chunk

    @property
    def undecoded(self) -> str | None:
        """Why the body is kept as it came from some read on (it does not decode as its
        ``Content-Encoding`` says), or ``None``."""
        return self.decoder.failed

    def fail(self, exc: BaseException) -> tuple[str, str]:
        """The stream stopped on ``exc``: end the recording with the reason it gives."""
        reason, message = classify(exc, self.bytes)
        if self.status is not None and self.status >= 400 and self._error_body:
            message = f"{provider_error_message(self.status, bytes(self._error_body))}; {message}"
        if self.reason is None:
            try:
                tail = self.stream.feed(self.decoder.flush())
            except Exception:  # a truncated compressed body: keep what was decoded
                tail = b""
            self._write(self.now(), tail + self.stream.finish())
            if self.undecoded is not None:
                message = f"{message}; {self.undecoded}"
            self._end(reason, message)
        return reason, redact_keys(self.scrubber.text(message))

    def _end(self, reason: str, error: str | None) -> None:
        if self.write_error is not None:
            return
        if self.writer is None:
            self.start(self.status, ())
        if self.writer is None:
            return
        self.reason = reason
        self.error = redact_keys(self.scrubber.text(error)) if error else error
        self.end_t = self.now()
        try:
            self.writer.close(self.end_t, reason, self.error)
        except OSError as exc:
            self._broken(exc)

    def result(self) -> RecordResult:
        return RecordResult(
            path=self.path,
            status=self.status,
            reason=self.reason or "interrupted",
            error=self.error,
            chunks=self.chunks,
            bytes=self.bytes,
            duration=round(self.end_t if self.end_t is not None else self.now(), 6),
            write_failed=self.write_error is not None,
        )
