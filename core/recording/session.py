"""Turning one WebSocket session into a recording (the proxy's relay drives it).

:class:`SessionRecorder` is told what happens (``start`` with the upgrade's answer, then every
``message`` and ``close`` in either direction, then ``finish``) and writes the recording as it
goes: the upgrade request and response in the header (``transport: websocket``), one flushed record
per message. Credentials are removed wherever they travel: the request's secret headers and
query parameters (the writer's rules), a subprotocol that carries a key
(``openai-insecure-api-key.KEY``: :func:`subprotocol_secrets`), and every one of those values,
and every key-shaped string (API keys, ephemeral client secrets), in the messages.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from ..model.records import WEBSOCKET, Control, Header, Message, RecordingError, SessionRecord
from .secrets import (
    REDACTED,
    SECRET_HEADER_WORDS,
    SecretScrubber,
    find_secret,
    key_spans,
    redact_keys,
    redact_request,
    request_secrets,
    with_article,
)
from .writer import RecordingWriter, json_text

SUBPROTOCOL_HEADER = "sec-websocket-protocol"
# request headers a recording leaves out: the proxy's own address, the handshake's nonce
NOT_KEPT = frozenset({"host", "sec-websocket-key"})


def _secret_token(token: str) -> tuple[str, str] | None:
    """``(name, credential)`` of a subprotocol token that carries one: a name that speaks of a
    key, token, secret... then a dot and the value (``openai-insecure-api-key.sk-...``)."""
    name, dot, value = token.strip().partition(".")
    if dot and value and any(word in name.lower() for word in SECRET_HEADER_WORDS):
        return name, value
    return None


def subprotocol_secrets(values: Iterable[str]) -> list[str]:
    """The credentials the subprotocols a client offers carry."""
    out = []
    for value in values:
        for token in value.split(","):
            found = _secret_token(token)
            if found is not None:
                out.append(found[1])
    return out


def redact_subprotocols(value: str) -> str:
    """A ``Sec-WebSocket-Protocol`` value with every credential a token carries redacted."""
    tokens = []
    for token in value.split(","):
        found = _secret_token(token)
        tokens.append(f"{found[0]}.{REDACTED}" if found is not None else token.strip())
    return ", ".join(tokens)


def session_request(
    url: str, headers: Iterable[tuple[str, str]]
) -> tuple[dict[str, Any], list[str]]:
    """The upgrade request as a recording header keeps it (subprotocol credentials redacted;
    the writer redacts the rest), and every credential it carries."""
    pairs = list(headers)
    kept: dict[str, str] = {}
    for name, value in pairs:
        key = name.lower()
        if key in NOT_KEPT:
            continue
        if key == SUBPROTOCOL_HEADER:
            value = redact_subprotocols(value)
        kept[key] = f"{kept[key]}, {value}" if key in kept else value
    # the handshake's nonce (Sec-WebSocket-Key) is public, no credential: not looked for in
    # every message
    handshake = {k: v for k, v in pairs if k.lower() not in NOT_KEPT}
    secrets = request_secrets({"url": url, "headers": handshake})
    secrets += subprotocol_secrets(v for k, v in pairs if k.lower() == SUBPROTOCOL_HEADER)
    return {"method": "GET", "url": url, "headers": kept, "body": None}, secrets


class SessionRecorder:
    """Writes one WebSocket session as a recording. ``t`` values are seconds since ``t0`` (the
    upgrade request was sent)."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        *,
        url: str,
        headers: Iterable[tuple[str, str]],
        provider: str | None,
        api: str | None,
        t0: float | None = None,
        force: bool = False,
        max_bytes: int | None = None,
    ) -> None:
        self.path = str(path) if path is not None else ""
        # message bytes the recording may hold: past them it ends with reason "limit"
        self.max_bytes = max_bytes
        self.request, secrets = session_request(url, headers)
        self.scrubber = SecretScrubber(secrets)
        self.provider = provider
        self.api = api
        self.force = force
        # the path is a file its tape made for this recording (``Tape.allocate``), written as is
        self.claimed = False
        self.t0 = time.monotonic() if t0 is None else t0
        self.writer: RecordingWriter | None = None
        self.status: int | None = None  # the upgrade's answer (101, or a refusal's status)
        self.messages = 0
        self.bytes = 0
        self.first_server: float | None = None  # when the server's first message came
        self.reason: str | None = None
        self.end_t: float | None = None
        self.write_error: str | None = None
        # records held until flush() (a caller that gathers a turn of its event loop sets
        # ``gather``; otherwise every record is written and flushed as it comes)
        self.gather = False
        self._held: list[SessionRecord] = []

    def now(self) -> float:
        """Seconds since ``t0``, to the microsecond (the nearest float to a whole number of
        microseconds: a third of ``round``'s time, once a message)."""
        return int((time.monotonic() - self.t0) * 1e6 + 0.5) / 1e6

    def preflight(self) -> None:
        """Refuse before any traffic when the request would put a key pattern on disk."""
        leaked = find_secret(json_text(redact_request(self.scrubber.deep(self.request))))
        if leaked:
            raise RecordingError(
                self.path, None, f"refusing to record: the request holds {with_article(leaked)}"
            )

    def start(
        self, status: int, headers: Iterable[tuple[str, str]], subprotocol: str | None = None
    ) -> None:
        """The upgrade's answer: write the header record."""
        self.status = status
        merged: dict[str, str] = {}
        for name, value in headers:
            key = name.lower()
            merged[key] = f"{merged[key]}, {value}" if key in merged else value
        response: dict[str, Any] = {"status": status, "headers": merged}
        if subprotocol:
            response["subprotocol"] = redact_subprotocols(subprotocol)
        header = Header(
            provider=self.provider,
            api=self.api,
            recorded_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            request=self.scrubber.deep(self.request, keys=True),
            response=self.scrubber.deep(response, keys=True),
            extra={"transport": WEBSOCKET},
        )
        try:
            self.writer = RecordingWriter(self.path, header, force=self.force, claimed=self.claimed)
        except OSError as exc:
            self._broken(exc)

    def scrub(self, data: str | bytes) -> str | bytes:
        """A message with every credential of the session and every key-shaped string
        redacted. (Looking for the shapes by their literal starts first, ``key_spans``: a
        message that holds none, nearly every one, is not run through the expression.)"""
        if isinstance(data, str):
            text = self.scrubber.text(data) if self.scrubber else data
            if text.isascii() and not key_spans(text.encode("ascii")):
                return text
            return redact_keys(text)
        scrubbed = self.scrubber.data(data) if self.scrubber else data
        if not key_spans(scrubbed):
            return scrubbed
        return redact_keys(scrubbed.decode("latin-1")).encode("latin-1")

    @property
    def over_limit(self) -> bool:
        """The recording ended at its limit (``max_bytes``): the session is to end too."""
        return self.reason == "limit"

    def message(self, direction: str, data: str | bytes) -> Message | None:
        """One message, as sent; returns the record written (``None``: not written, or held
        until :meth:`flush`, which scrubs what it holds at once). A message that would take the
        recording past ``max_bytes`` ends it there (reason ``limit``)."""
        if self.max_bytes is not None and self.bytes + len(data) > self.max_bytes:
            if self.reason is None and self.writer is not None:
                self.finish(
                    "limit",
                    f"the recording reached its limit of {self.max_bytes} bytes after "
                    f"{self.messages} messages",
                )
            return None
        t = self.now()
        if direction == "server" and self.first_server is None:
            self.first_server = t
        self.messages += 1
        self.bytes += len(data)
        if self.gather:  # scrubbed with the others held, at flush()
            self._put(Message(t, direction, data))
            return None
        record = Message(t, direction, self.scrub(data))
        return record if self._put(record) else None

    def hold(self, direction: str, data: str | bytes) -> bool:
        """:meth:`message` for a caller that gathers (``gather``), in one call: the message
        held for :meth:`flush`. True when it is the first one held (the caller schedules the
        flush). A message past ``max_bytes``, or one that cannot be written, takes the way of
        :meth:`message`."""
        n = len(data)
        max_bytes = self.max_bytes
        if (
            (max_bytes is not None and self.bytes + n > max_bytes)
            or self.writer is None
            or self.write_error is not None
            or self.reason is not None
        ):
            self.message(direction, data)
            return False
        t = self.now()
        if self.first_server is None and direction == "server":
            self.first_server = t
        self.messages += 1
        self.bytes += n
        held = self._held
        held.append(Message(t, direction, data))
        return len(held) == 1

    def control(self, direction: str, kind: str, code: int | None = None, reason: str = "") -> None:
        """A close (``code`` ``None``: the connection ended without a close frame), a ping or
        a pong."""
        text = self.scrub(reason) if reason else ""
        self._put(Control(self.now(), direction, kind, code=code, reason=str(text)))

    def _put(self, record: SessionRecord) -> bool:
        if self.writer is None or self.write_error is not None or self.reason is not None:
            return False
        if self.gather:
            self._held.append(record)
            return True
        try:
            self.writer.write_session_record(record)
        except OSError as exc:
            self._broken(exc)
            return False
        return True

    def _scrubbed(self, held: list[SessionRecord]) -> list[SessionRecord]:
        """``held`` with every message scrubbed. :meth:`scrub` looks in all of them at once
        first (the texts joined by a line break, which no credential or key shape holds, so
        nothing is found across two): a burst that holds none, nearly every one, costs one
        search instead of one a message."""
        texts: list[str] = []
        blobs: list[bytes] = []
        for r in held:
            if isinstance(r, Message):
                (texts if isinstance(r.data, str) else blobs).append(r.data)  # type: ignore[arg-type]
        text = "\n".join(texts)
        blob = b"\n".join(blobs)
        if (not texts or self.scrub(text) == text) and (not blobs or self.scrub(blob) == blob):
            return held
        return [
            Message(r.t, r.direction, self.scrub(r.data)) if isinstance(r, Message) else r
            for r in held
        ]

    @property
    def holding(self) -> bool:
        """Records wait for :meth:`flush`."""
        return bool(self._held)

    def flush(self) -> None:
        """Write the records held, in one write, their messages scrubbed."""
        held, self._held = self._held, []
        if not held or self.writer is None or self.write_error is not None:
            return
        try:
            self.writer.write_session_records(self._scrubbed(held))
        except OSError as exc:
            self._broken(exc)

    def _broken(self, exc: OSError) -> None:
        if self.writer is not None:
            self.writer.abandon()
        self.write_error = (
            f"{self.path}: cannot write the recording after {self.messages} messages: "
            f"{exc.strerror or exc}; what was written before is kept"
        )
        self.reason = "error"
        self.end_t = self.now()

    def finish(self, reason: str = "complete", error: str | None = None) -> None:
        """The session ended: the end record (``error`` scrubbed)."""
        self.flush()
        if self.reason is not None or self.writer is None:
            return
        self.end_t = self.now()
        message = str(self.scrub(error)) if error else None
        try:
            self.writer.close(self.end_t, reason, message)
        except OSError as exc:
            self._broken(exc)
            return
        self.reason = reason
