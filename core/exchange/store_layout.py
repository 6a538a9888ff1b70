"""Tapes on object storage: where each part of a tape lives in a store, sans-IO (plain data in,
keys and decisions out). The store access is :mod:`streamtool.core.net.store`'s.

A tape at ``s3://BUCKET/PREFIX`` (or ``gs://``, ``az://``, ``file://``, ``memory://``) holds::

    PREFIX/recordings/<sha256>.jsonl            a recording's bytes, once per content
    PREFIX/index/<kk>/<match key>/<stamp>-<sha256>.json
                                               one object per exchange (its index entry)
    PREFIX/golden/<sha256>.golden.json          a recording's golden file (``check``)
    PREFIX/tape.json                            the tape's settings (``max_age``, ``on_expiry``)

- A recording is named by the SHA-256 of its bytes: stored once, whoever records it; a reader
  checks what it gets against its name.
- An index entry is an object of its own, named by the request's **match key** (the SHA-256 of
  its endpoint and its normalized body, as :mod:`.tape_match` compares them), the time it was
  recorded and its recording's hash; ``kk`` (the key's first two hex digits) spreads the
  entries so that a listing runs as many parallel listings. Entries are created with a
  conditional write (if-none-match): no writer ever overwrites another's, and nothing is ever
  read, changed and written back. The same recording published twice (two pushes of one
  folder) is the same entry: the second write is refused and nothing is duplicated.
- An entry is written after its recording: an exchange is visible once both are complete; a
  writer killed before it leaves at most a recording no entry names (``tape gc`` removes it).

The listing alone says, for every exchange, its match key, when it was recorded and which
recording answers it: a lookup needs no other request.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from .tape_match import MatchRules, canonical

SCHEMES = ("s3", "gs", "az", "file", "memory")
RECORDINGS = "recordings"
INDEX = "index"
GOLDEN = "golden"
SETTINGS = "tape.json"
ENTRY_FORMAT = "streamtool-tape-entry"
# the hex digits an entry's folder starts with: one listing each, run at once
SHARDS = tuple(f"{i:x}" for i in range(16))
ON_EXPIRY = ("warn", "fail", "rerecord")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_STAMP = re.compile(r"^\d{8}T\d{6}Z$")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")
_UNITS = {"": 86400.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


def is_store_url(text: object) -> bool:
    """``text`` names a tape on object storage (``s3://...``, ``gs://``, ``az://``,
    ``file://``, ``memory://``), not a folder."""
    if not isinstance(text, str):
        return False
    scheme, sep, _ = text.partition("://")
    return bool(sep) and scheme.lower() in SCHEMES


def split_url(url: str) -> tuple[str, str]:
    """``s3://bucket/a/b/`` -> (``s3://bucket``, ``a/b``): the store's root and the tape's
    prefix in it (``memory://`` and ``file://`` keep the whole path as their root)."""
    scheme, _, rest = url.partition("://")
    scheme = scheme.lower()
    if scheme in ("file", "memory"):
        return f"{scheme}://{rest.rstrip('/') or '/'}", ""
    bucket, _, prefix = rest.partition("/")
    if not bucket:
        raise ValueError(f"{url}: a store URL names its bucket: {scheme}://BUCKET/PREFIX")
    return f"{scheme}://{bucket}", prefix.strip("/")


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def match_key(endpoint: str | None, body: Any, rules: MatchRules | None = None) -> str:
    """The SHA-256 of what matching compares for a request: its endpoint key and its body,
    normalized (:class:`~.tape_match.MatchRules`, the defaults unless given). A request
    without a JSON body (a raw SSE recording) has the key of its endpoint alone."""
    if body is None:
        text = f"raw\n{endpoint or ''}"
    else:
        text = f"{endpoint or ''}\n{canonical((rules or MatchRules()).normalize(body))}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def stamp(recorded_at: str | None) -> str:
    """``2026-11-22T14:41:10Z`` -> ``20261122T144110Z`` (sorts as the time does); an
    unreadable or missing time gives the epoch, so the entry sorts first."""
    when = parse_time(recorded_at)
    return (when or datetime(1970, 1, 1, tzinfo=UTC)).strftime("%Y%m%dT%H%M%SZ")


def parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def recording_key(digest: str) -> str:
    return f"{RECORDINGS}/{digest}.jsonl"


def golden_key(digest: str) -> str:
    return f"{GOLDEN}/{digest}.golden.json"


def entry_key(key: str, when: str, digest: str) -> str:
    return f"{INDEX}/{key[:2]}/{key}/{when}-{digest}.json"


@dataclass(frozen=True, slots=True, order=True)
class EntryRef:
    """An index entry as its name tells it: sorted by time, then recording (the tape's
    order)."""

    stamp: str  # when it was recorded, ``20261122T144110Z``
    recording: str  # the SHA-256 of its recording
    key: str  # the request's match key

    @property
    def path(self) -> str:
        return entry_key(self.key, self.stamp, self.recording)

    @property
    def recorded_at(self) -> datetime:
        return datetime.strptime(self.stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)


def parse_entry_key(path: str) -> EntryRef | None:
    """The entry an index object's key names (relative to the tape's prefix), or ``None`` for
    any other object (one a person put there)."""
    parts = path.split("/")
    if len(parts) != 4 or parts[0] != INDEX or not parts[3].endswith(".json"):
        return None
    _, shard, key, name = parts
    when, _, digest = name[: -len(".json")].partition("-")
    if not (_HEX64.match(key) and key[:2] == shard and _STAMP.match(when) and _HEX64.match(digest)):
        return None
    return EntryRef(when, digest, key)


def parse_recording_key(path: str) -> str | None:
    """The hash a recording object's key names, or ``None``."""
    parts = path.split("/")
    if len(parts) != 2 or parts[0] != RECORDINGS or not parts[1].endswith(".jsonl"):
        return None
    digest = parts[1][: -len(".jsonl")]
    return digest if _HEX64.match(digest) else None


@dataclass(slots=True)
class EntryRecord:
    """What an index entry object holds: its recording's hash and size, the request's match
    key, and the fields of the folder index (:class:`~..recording.tape_index.IndexEntry`)."""

    recording: str
    size: int
    key: str
    name: str  # the recording's file name where it was recorded, ``0003-openai-...jsonl``
    fields: dict[str, Any] = field(default_factory=dict)

    def to_bytes(self) -> bytes:
        obj = {
            "format": ENTRY_FORMAT,
            "version": 1,
            "recording": self.recording,
            "size": self.size,
            "match_key": self.key,
            "name": self.name,
            **{k: v for k, v in self.fields.items() if k not in ("seq", "file")},
        }
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    @classmethod
    def from_bytes(cls, data: bytes, where: str) -> EntryRecord:
        try:
            obj = json.loads(data)
        except (ValueError, UnicodeDecodeError):
            raise ValueError(f"{where}: not a tape entry (not JSON)") from None
        if not isinstance(obj, dict) or obj.get("format") != ENTRY_FORMAT:
            raise ValueError(f"{where}: not a tape entry")
        digest, size, key = obj.get("recording"), obj.get("size"), obj.get("match_key")
        if not (isinstance(digest, str) and _HEX64.match(digest) and isinstance(size, int)):
            raise ValueError(f"{where}: a tape entry names its recording's hash and size")
        named = obj.get("name")
        name = named if isinstance(named, str) else f"{digest[:12]}.jsonl"
        skip = {"format", "version", "recording", "size", "match_key", "name"}
        return cls(digest, size, str(key), name, {k: v for k, v in obj.items() if k not in skip})


def view_name(seq: int, name: str) -> str:
    """The file name of the ``seq``-th exchange in a folder made from a store tape: its
    recorded name with the tape's number (``0007-openai-chat-gpt-4o.jsonl``)."""
    base = name.rsplit("/", 1)[-1]
    m = re.match(r"^\d+-(.+)$", base)
    rest = m.group(1) if m else base
    rest = re.sub(r"[^A-Za-z0-9._-]+", "-", rest).lstrip(".") or "exchange.jsonl"
    if not rest.endswith((".jsonl", ".sse", ".txt")):
        rest += ".jsonl"
    return f"{seq:04d}-{rest}"


# -- expiry ------------------------------------------------------------------------------------
def parse_duration(text: str) -> float:
    """``7d``, ``12h``, ``90m``, ``30s``, ``2w``, or a number of days -> seconds."""
    m = _DURATION.match(str(text))
    if not m:
        raise ValueError(f"{text!r} is not a duration (e.g. 7d, 12h, 30m)")
    return float(m.group(1)) * _UNITS[m.group(2)]


def describe_age(seconds: float) -> str:
    """``describe_age(3 * 86400 + 7200)`` -> ``3 days``; under a day in hours, minutes."""
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n != 1 else ''}"
    return f"{int(seconds)} second{'s' if int(seconds) != 1 else ''}"


@dataclass(frozen=True, slots=True)
class Expiry:
    """A tape's ``max_age`` (seconds; ``None``: exchanges never expire) and what an expired
    exchange does: ``warn`` (served, with a warning), ``fail`` (not served: the request fails
    as a miss does) or ``rerecord`` (treated as missing: recorded again where recording is
    on, else a miss)."""

    max_age: float | None = None
    on_expiry: str = "warn"

    def __post_init__(self) -> None:
        if self.on_expiry not in ON_EXPIRY:
            raise ValueError(f"on_expiry {self.on_expiry!r}: use one of {', '.join(ON_EXPIRY)}")

    @classmethod
    def from_settings(cls, obj: Any, where: str) -> Expiry:
        """A tape's settings object (``{"max_age": "7d", "on_expiry": "fail"}``)."""
        if not isinstance(obj, dict):
            raise ValueError(f"{where}: the tape's settings are a JSON object")
        raw = obj.get("max_age")
        try:
            age = None if raw is None else parse_duration(str(raw))
            return cls(age, str(obj.get("on_expiry", "warn")))
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None

    def expired(self, recorded: datetime | None, now: datetime) -> float | None:
        """The exchange's age in seconds when it is past ``max_age``, else ``None``."""
        if self.max_age is None or recorded is None:
            return None
        age = (now - recorded).total_seconds()
        return age if age > self.max_age else None

    def message(self, name: str, age: float) -> str:
        assert self.max_age is not None
        return (
            f"{name} was recorded {describe_age(age)} ago, past the tape's max_age of "
            f"{describe_age(self.max_age)} (on_expiry={self.on_expiry})"
        )
