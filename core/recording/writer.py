"""Writing a recording: one JSON line per record, flushed as it goes."""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any

import orjson

from ..model.records import (
    Chunk,
    End,
    Header,
    RecordingError,
    SessionRecord,
    chunk_from_read,
    os_error_text,
)
from .own_files import open_own
from .secrets import find_secret, find_secret_in, redact_headers, redact_request, with_article


def _dumps(record: dict[str, Any]) -> bytes:
    """One record as compact UTF-8 JSON: orjson's (a chunk record, once per read, is on the
    forwarding path), else the standard library's (an integer beyond 64 bits in a request body;
    text that is not UTF-8 fails there too, as it would in a text file)."""
    try:
        return orjson.dumps(record)
    except TypeError:
        return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def json_text(record: dict[str, Any]) -> str:
    """``record`` as JSON text to look for key patterns in: orjson's (a tenth of the standard
    library's time on a large request body, one call holding the interpreter's lock), else the
    standard library's (an integer beyond 64 bits, a lone surrogate). The two write every
    string alike but for escapes, which no key pattern holds."""
    try:
        return orjson.dumps(record).decode("utf-8")
    except TypeError:
        return json.dumps(record, ensure_ascii=False)


class RecordingWriter:
    """Writes a recording, flushing every record so a crash leaves every byte on disk.

    The file is created exclusively unless ``force`` is set: nothing a user had is overwritten
    by accident. ``claimed``: the file is the empty one a tape made when it named the
    recording (:meth:`~.tape_index.Tape.allocate`): opened, not created. Secrets are removed
    from the header before anything is written, and a header that still carries a known key
    pattern is refused.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        header: Header,
        *,
        force: bool = False,
        claimed: bool = False,
    ) -> None:
        import jsonlines

        self.path = str(path)
        header.request = redact_request(header.request)
        header.response = dict(header.response)
        if isinstance(header.response.get("headers"), dict):
            header.response["headers"] = redact_headers(header.response["headers"])
        record = header.to_record()
        try:
            line: bytes | None = _dumps(record)  # looked at, then written as it is
        except ValueError:  # text that is not UTF-8 (a lone surrogate): it fails when written
            line = None
        leaked = find_secret(json_text(record)) if line is None else find_secret_in(line)
        if leaked:
            raise RecordingError(
                self.path, None, f"refusing to write a recording holding {with_article(leaked)}"
            )
        # never written through a link (a link at the path is refused, even with ``force``)
        # ``claimed``: the empty file a tape made under this name (``Tape.allocate``) is
        # written, never created, and refused if it holds anything
        if claimed:
            flags, empty = os.O_WRONLY, True
        else:
            flags, empty = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if force else os.O_EXCL), False
        try:
            # a device named on purpose (``-o /dev/null --force``) is written as before
            fd = open_own(self.path, flags, regular=claimed, empty=empty)
            self._fh = open(fd, "wb")  # noqa: SIM115
        except FileExistsError:
            raise RecordingError(self.path, None, "exists (use --force to overwrite)") from None
        except OSError as exc:
            raise RecordingError(self.path, None, os_error_text(exc)) from None
        self.size = 0  # bytes written so far
        self._encoded: tuple[dict[str, Any], bytes] | None
        self._encoded = None if line is None else (record, line)
        self._writer = jsonlines.Writer(self._fh, flush=True, dumps=self._counted)
        self.closed = False
        try:
            self._put(record)
        except OSError:
            # not even the header fits (a full disk): no empty file is left behind
            with contextlib.suppress(OSError):
                os.unlink(self.path)
            raise

    def _counted(self, record: dict[str, Any]) -> bytes:
        encoded = self._encoded
        if encoded is not None and encoded[0] is record:  # the header, encoded when checked
            self._encoded = None
            line = encoded[1]
        else:
            line = _dumps(record)
        self.size += len(line) + 1  # and its line end
        return line

    def _put(self, record: dict[str, Any]) -> None:
        """Write one record; a write error (a full disk) closes the file and is raised."""
        try:
            self._writer.write(record)
        except OSError:
            self.abandon()
            raise

    def abandon(self) -> None:
        """Close without writing anything more (after a write error): every complete line
        written before stays, and the reader replays a last line cut mid-way up to it."""
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(OSError, ValueError):
            self._fh.close()

    def write_read(self, t: float | None, data: bytes) -> Chunk:
        """One read (``t`` None: its time is unknown, as in an imported recording)."""
        chunk = chunk_from_read(None if t is None else round(t, 6), data)
        self._put(chunk.to_record())
        return chunk

    def write_session_record(self, record: SessionRecord) -> None:
        """One message or control frame of a WebSocket session (its payload already scrubbed
        by the caller, which knows the session's credentials)."""
        self._put(record.to_record())

    def write_session_records(self, records: list[SessionRecord]) -> None:
        """Several records of a session in one write (and one flush): the messages that came
        in one turn of the caller's event loop."""
        data = b"".join([_dumps(r.to_record()) + b"\n" for r in records])
        try:
            self._fh.write(data)
            self._fh.flush()
        except OSError:
            self.abandon()
            raise

    def close(self, t: float | None, reason: str = "complete", error: Any = None) -> None:
        if self.closed:
            return
        self._put(End(None if t is None else round(t, 6), reason, error).to_record())
        self.closed = True
        self._writer.close()
        self._fh.close()

    def __enter__(self) -> RecordingWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close(None, "interrupted" if exc[0] else "complete")
