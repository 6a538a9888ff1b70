"""Removing credentials from what a recording keeps (pure functions, sans-IO).

Three things are removed before anything is written:

- credentials the client sent: secret request headers (any name that speaks of a key, token,
  secret, auth, password, credential or cookie), secret query parameters (``key=``,
  ``api-key=``, ``token=``, ``access_token=``...) and ``user:password@`` in URLs; their values
  are also scrubbed from everything else the recording keeps (a server that echoes them),
  and so are the parts a server may echo alone: each cookie's value, the decoded user and
  password of Basic authentication;
- key-shaped strings (``sk-...``, ``sk-ant-...``, ``sk-proj-...``, ``AIza...``, ``xai-...``,
  ``gsk_...``, AWS access key ids ``AKIA...``/``ASIA...``, a SigV4 ``Signature=<hex>``)
  anywhere in a response, which the client never sent;
- both across network reads: :class:`StreamScrubber` holds back the tail of a read that could be
  the start of a secret until the next read (or the end) decides.
"""

from __future__ import annotations

import base64
import re
import threading
from collections.abc import Iterable
from functools import lru_cache
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

import orjson

REDACTED = "[redacted]"
SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "cookie",
        "set-cookie",
    }
)
# a request header whose name holds one of these words carries a credential
SECRET_HEADER_WORDS = ("key", "token", "secret", "auth", "password", "credential", "cookie")
_SECRET_WORD_RE = re.compile("|".join(SECRET_HEADER_WORDS))
SECRET_QUERY = frozenset(
    {
        "key",
        "api_key",
        "api-key",
        "apikey",
        "x-api-key",
        "access_token",
        "token",
        "auth",
        "password",
        "secret",
        "client_secret",
        "sig",
        "signature",
    }
)
_SECRET_QUERY_ENDINGS = (
    "key",
    "token",
    "secret",
    "password",
    "credential",
    "credentials",
    "signature",  # X-Amz-Signature: a SigV4 pre-signed URL's
)

# (kind, literal prefix, body character class, minimum body length, needs a word boundary).
# A key starts a word: "task-..." and "disk-..." are no keys, and a read that ends in a word's
# "s" or "A" is not held back for it.
_KEY_SHAPES = (
    ("Anthropic key", "sk-ant-", "A-Za-z0-9_\\-", 8, True),
    ("OpenAI-style key", "sk-", "A-Za-z0-9_\\-", 16, True),
    ("Google API key", "AIza", "0-9A-Za-z_\\-", 20, True),
    ("xAI key", "xai-", "A-Za-z0-9", 20, True),
    ("Groq key", "gsk_", "A-Za-z0-9", 20, True),
    # AWS access key ids (long-term AKIA..., temporary ASIA...), as a SigV4 ``Credential=``
    # names them, and the SigV4 ``Signature=`` value (an upstream may echo either)
    ("AWS access key id", "AKIA", "A-Z0-9", 16, True),
    ("AWS access key id", "ASIA", "A-Z0-9", 16, True),
    # (anywhere: "X-Amz-Signature=", glued to what comes before)
    ("SigV4 signature", "Signature", "=0-9a-f", 65, False),  # Signature=<64 hex digits>
    ("OpenAI ephemeral client secret", "ek_", "A-Za-z0-9", 20, True),
)
_WORD = "A-Za-z0-9_"


def with_article(kind: str) -> str:
    """``an Anthropic key``, ``an OpenAI-style key``, ``an xAI key``, ``a Google API key``."""
    return ("an " if kind[:1].lower() in "aeiox" else "a ") + kind


def _shape_re(lit: str, cls: str, n: int, bounded: bool) -> str:
    # The literal comes first and the word boundary is checked behind it: a pattern that starts
    # with a literal is searched for by that literal, one that starts with a look-behind is
    # tried at every position (35x slower on a 10 MB request body).
    escaped = re.escape(lit)
    boundary = f"(?<![{_WORD}]{escaped})" if bounded else ""
    return f"{escaped}{boundary}[{cls}]{{{n},}}"


_KEY_PATTERNS = tuple((shape[0], re.compile(_shape_re(*shape[1:]))) for shape in _KEY_SHAPES)
_KEY_RE = re.compile("|".join(_shape_re(*shape[1:]) for shape in _KEY_SHAPES))
_KEY_RE_BYTES = re.compile(_KEY_RE.pattern.encode("ascii"))
# every character a key's body may hold ("=": a SigV4 signature's "Signature=<hex>")
_KEY_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-="
_WORD_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
# (literal, its body's characters, needs a word boundary)
_BYTE_SHAPES = tuple(
    (lit.encode("ascii"), re.sub(rb"[^" + cls.encode() + rb"]", b"", _KEY_CHARS), bounded)
    for _, lit, cls, _n, bounded in _KEY_SHAPES
)
# the literals a key can start with, none the start of another ("sk-" covers "sk-ant-")
_KEY_STARTS = tuple(
    lit
    for lit, _, _ in _BYTE_SHAPES
    if not any(other != lit and lit.startswith(other) for other, _, _ in _BYTE_SHAPES)
)

_KEY_STARTS_TEXT = tuple(lit.decode("ascii") for lit in _KEY_STARTS)
# any of them, in one search (a short text: a header's value, a path, a model name)
_KEY_START_RE = re.compile("|".join(re.escape(lit) for lit in _KEY_STARTS_TEXT))
# characters JSON writes escaped: a credential holding one is not in a value's JSON as it is
_JSON_ESCAPED = re.compile(r'["\\\x00-\x1f]')


# texts at least this long are searched for the literals in one pass of hyperscan, where it is
# installed; shorter ones by a ``bytes.find`` a literal (below it, a call into the matcher costs
# about what the finds do)
SCAN_MIN = 256
_KEY_LENGTHS = tuple(len(lit) for lit in _KEY_STARTS)
_matcher: Any = None  # (the hyperscan module, its database of the literals); False: not installed
_scratch = threading.local()  # each thread's scratch space for the matcher


def _hyperscan() -> Any:
    global _matcher
    if _matcher is None:
        try:
            import hyperscan
        except ImportError:
            _matcher = False
        else:
            db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
            db.compile(
                expressions=[re.escape(lit) for lit in _KEY_STARTS],
                ids=list(range(len(_KEY_STARTS))),
                elements=len(_KEY_STARTS),
                flags=0,
            )
            _matcher = (hyperscan, db)
    return _matcher


def _hit(ident: int, _start: int, end: int, _flags: int, starts: list[int]) -> None:
    starts.append(end - _KEY_LENGTHS[ident])


def literal_starts(text: bytes) -> list[int] | None:
    """Every offset of ``text`` where a key's literal starts, in order, found in one pass by
    hyperscan's multi-literal matcher (Intel's, SIMD) instead of one ``bytes.find`` pass a
    literal (eight passes: on prose about 4.5 µs a kilobyte, against 0.5 µs for the matcher).
    ``None`` where hyperscan is not installed (a dependency only where it ships wheels). The
    matcher lets go of the interpreter's lock while it scans, so each thread has its own
    scratch space."""
    found = _hyperscan()
    if not found:
        return None
    hyperscan, db = found
    scratch = getattr(_scratch, "space", None)
    if scratch is None:
        scratch = _scratch.space = hyperscan.Scratch(db)
    starts: list[int] = []
    db.scan(text, match_event_handler=_hit, context=starts, scratch=scratch)
    if len(starts) > 1:
        starts = sorted(set(starts))  # reported by where they end: literals differ in length
    return starts


def key_spans(text: bytes, pos: int = 0) -> list[tuple[int, int]]:
    """Where the key-shaped runs of ``text[pos:]`` are: the spans of
    ``_KEY_RE_BYTES.finditer(text, pos)``, found at a fraction of its cost. A key starts with
    one of a few literals, which :func:`literal_starts` (or ``bytes.find``, for a short text)
    locates at memory speed; the expression is tried only there (its look-behind still sees
    the bytes before ``pos``), not at every byte."""
    starts = literal_starts(text) if len(text) - pos >= SCAN_MIN else None
    if starts is None:
        return spans_by_find(text, pos)
    return spans_at(text, pos, starts)


def spans_at(text: bytes, pos: int, starts: Iterable[int]) -> list[tuple[int, int]]:
    """:func:`key_spans`, the literals' starts given in order."""
    spans: list[tuple[int, int]] = []
    for i in starts:
        if i < pos:
            continue  # before ``pos``, or inside the key found last
        found = _KEY_RE_BYTES.match(text, i)
        if found is not None:
            spans.append(found.span())
            pos = found.end()
    return spans


def spans_by_find(text: bytes, pos: int = 0) -> list[tuple[int, int]]:
    """:func:`key_spans`, each literal looked for by ``bytes.find``."""
    nexts = [text.find(lit, pos) for lit in _KEY_STARTS]  # -1: no more of that literal
    spans: list[tuple[int, int]] = []
    while True:
        live = [j for j in nexts if j >= 0]
        if not live:
            return spans
        i = min(live)
        found = _KEY_RE_BYTES.match(text, i)
        if found is not None:
            spans.append(found.span())
            pos = found.end()
        else:
            pos = i + 1
        nexts = [
            j if j < 0 or j >= pos else text.find(lit, pos)
            for lit, j in zip(_KEY_STARTS, nexts, strict=True)
        ]


@lru_cache(maxsize=4096)  # header names repeat from request to request; a bounded cache
def is_secret_header(name: str) -> bool:
    """A request header that carries a credential (by its name)."""
    lowered = name.lower()
    return lowered in SECRET_HEADERS or _SECRET_WORD_RE.search(lowered) is not None


def is_secret_query(name: str) -> bool:
    lowered = name.lower()
    return lowered in SECRET_QUERY or lowered.endswith(_SECRET_QUERY_ENDINGS)


def redact_headers(headers: dict[str, Any], *, request: bool = False) -> dict[str, Any]:
    """Secret headers replaced by the marker: by name for a request (any name that speaks of a
    credential), the known names for a response (``x-ratelimit-remaining-tokens`` stays)."""
    secret = is_secret_header if request else (lambda k: k.lower() in SECRET_HEADERS)
    return {k: (REDACTED if secret(k) else v) for k, v in headers.items()}


def secret_query_values(url: str) -> list[str]:
    """The credentials a URL carries: secret query values and ``user:password@``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    out = [v for k, v in parse_qsl(parts.query) if is_secret_query(k)]
    raw = [v for k, v in _raw_query(parts.query) if is_secret_query(unquote(k))]
    userinfo = parts.netloc.rpartition("@")[0] if "@" in parts.netloc else ""
    if userinfo:
        user, _, password = userinfo.partition(":")
        out += [userinfo, user, password, unquote(user), unquote(password)]
    return [v for v in dict.fromkeys(out + raw) if v]


def _raw_query(query: str) -> list[tuple[str, str]]:
    pairs = []
    for part in query.split("&"):
        name, _, value = part.partition("=")
        pairs.append((name, value))
    return pairs


def credential_values(headers: Iterable[tuple[str, str]]) -> list[str]:
    """The values of headers that carry credentials: the whole value, the token of
    ``Bearer <token>``, the decoded user, password and ``user:password`` of ``Basic``, and each
    ``name=value`` of a ``Cookie`` and its value (a server may echo any one of them alone)."""
    out: list[str] = []
    for name, value in headers:
        if not (is_secret_header(name) and isinstance(value, str)):
            continue
        out.append(value)
        scheme, _, token = value.strip().partition(" ")
        token = token.strip()
        if token and scheme.lower() in ("bearer", "basic", "token"):
            out.append(token)
        if token and scheme.lower() == "basic":
            out += basic_credentials(token)
        if token and scheme.upper().startswith("AWS4-"):
            out += sigv4_parts(token)
        if "cookie" in name.lower():
            out += cookie_values(value)
    return [v for v in dict.fromkeys(out) if v]


def sigv4_parts(params: str) -> list[str]:
    """The parts of a SigV4 ``Authorization`` value (``Credential=AKID/20250101/us-east-1/
    bedrock/aws4_request, SignedHeaders=..., Signature=<hex>``) a server may echo alone: the
    credential, its access key id and the signature."""
    out: list[str] = []
    for part in params.split(","):
        name, _, value = part.strip().partition("=")
        value = value.strip()
        if name.strip().lower() == "credential" and value:
            out += [value, value.split("/", 1)[0]]
        elif name.strip().lower() == "signature" and value:
            out.append(value)
    return out


def basic_credentials(token: str) -> list[str]:
    """``user:password``, the user and the password of a Basic token (none when it is not
    base64)."""
    try:
        decoded = base64.b64decode(token, validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return []
    user, _, password = decoded.partition(":")
    return [decoded, user, password]


def cookie_values(header: str) -> list[str]:
    """Each ``name=value`` of a ``Cookie`` header and each value (quotes removed too)."""
    out: list[str] = []
    for pair in header.split(";"):
        pair = pair.strip()
        _, eq, value = pair.partition("=")
        if not eq:
            continue
        out += [pair, value, value.strip('"')]
    return out


def request_secrets(request: dict[str, Any]) -> list[str]:
    """Every credential value a request description carries (headers and URL)."""
    out: list[str] = []
    headers = request.get("headers")
    if isinstance(headers, dict):
        out += credential_values(headers.items())
    url = request.get("url")
    if isinstance(url, str):
        out += secret_query_values(url)
    return out


def redact_url(url: str) -> str:
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact_keys(url)
    if "@" in parts.netloc:
        parts = parts._replace(netloc=f"{REDACTED}@{parts.netloc.rpartition('@')[2]}")
    if parts.query:
        query = [
            (k, REDACTED if is_secret_query(k) else v)
            for k, v in parse_qsl(parts.query, keep_blank_values=True)
        ]
        parts = parts._replace(query=urlencode(query, safe="[]"))
    return urlunsplit(parts)


def redact_request(request: dict[str, Any]) -> dict[str, Any]:
    """A copy of a request description with credentials replaced by a marker."""
    out = dict(request)
    headers = out.get("headers")
    if isinstance(headers, dict):
        out["headers"] = redact_headers(headers, request=True)
    url = out.get("url")
    if isinstance(url, str):
        out["url"] = redact_url(url)
    return out


def find_secret(text: str) -> str | None:
    """The kind of the first known key pattern in ``text``, or ``None``."""
    if _KEY_START_RE.search(text) is None:  # every key starts with one of the literals
        return None
    for kind, pattern in _KEY_PATTERNS:
        if pattern.search(text):
            return kind
    return None


def redact_keys(text: str) -> str:
    """``text`` with every key-shaped string replaced by the marker."""
    # every key starts with one of a few literals: a text holding none (most header values,
    # paths and model names) is returned as it is, without trying the expression at each
    # character (a recording's header has some twenty such strings)
    if _KEY_START_RE.search(text) is None:
        return text
    return _KEY_RE.sub(REDACTED, text)


def find_secret_in(data: bytes) -> str | None:
    """:func:`find_secret` of UTF-8 ``data`` (a record's JSON line), its expressions tried only
    when one of the literals every key starts with is there (nearly never)."""
    return find_secret(data.decode("utf-8", "replace")) if holds_key_start(data) else None


def holds_key_start(data: bytes) -> bool:
    """``data`` holds one of the literals a key starts with (no key-shaped run without one)."""
    if len(data) >= SCAN_MIN:
        starts = literal_starts(data)
        if starts is not None:
            return bool(starts)
    return any(lit in data for lit in _KEY_STARTS)


def without_secrets(text: str, secrets: Iterable[str]) -> str:
    """``text`` with the credential values ``secrets`` and anything key-shaped redacted: what a
    log line or an error answer may show of a request's words."""
    return redact_keys(SecretScrubber(secrets).text(text))


class SecretScrubber:
    """Replaces every occurrence of known credential values by the redaction marker."""

    MIN_LENGTH = 6  # shorter values would match ordinary text

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values = sorted({s for s in secrets if s and len(s) >= self.MIN_LENGTH}, key=len)
        self.values = tuple(reversed(values))  # longest first: "Bearer sk-x" before "sk-x"
        self._bvalues = tuple(v.encode("utf-8") for v in self.values)
        self._marker = REDACTED.encode("utf-8")
        # every value is in a JSON text as it is (see :meth:`_nothing_in`)
        self._json_plain = not any(_JSON_ESCAPED.search(v) for v in self.values)

    def __bool__(self) -> bool:
        return bool(self.values)

    def text(self, value: str) -> str:
        for secret in self.values:
            value = value.replace(secret, REDACTED)
        return value

    def data(self, value: bytes) -> bytes:
        for secret in self._bvalues:
            value = value.replace(secret, self._marker)
        return value

    def deep(self, obj: Any, *, keys: bool = False) -> Any:
        """A copy of a JSON-like value with every string scrubbed (and, with ``keys``, every
        key-shaped string too); ``obj`` itself when it holds nothing to scrub."""
        if not self.values and not keys:
            return obj
        if self._nothing_in(obj, keys):
            return obj
        return self._deep(obj, keys)

    def _nothing_in(self, obj: Any, keys: bool) -> bool:
        """No string of ``obj`` (keys included) holds a credential value, nor, with ``keys``,
        a key's literal start: looked for in one JSON encoding of it, where every string is
        written as it is but for the characters JSON escapes, which no literal holds (a value
        holding one is not looked for this way). False when it cannot be told so."""
        if not self._json_plain or not isinstance(obj, dict | list):
            return False
        try:
            blob = orjson.dumps(obj)
        except TypeError:  # a key that is not a string, a value JSON has no form for
            return False
        if any(value in blob for value in self._bvalues):
            return False
        return not (keys and holds_key_start(blob))

    def _deep(self, obj: Any, keys: bool) -> Any:
        if isinstance(obj, str):
            obj = self.text(obj)
            return redact_keys(obj) if keys else obj
        if isinstance(obj, dict):
            return {self._deep(str(k), keys): self._deep(v, keys) for k, v in obj.items()}
        if isinstance(obj, list | tuple):
            return [self._deep(v, keys) for v in obj]
        return obj

    def stream(self) -> StreamScrubber:
        return StreamScrubber(self)


class StreamScrubber:
    """Scrubs a byte stream cut into reads, as if the whole stream were scrubbed at once.

    ``feed(read)`` returns the bytes that can be written now: the read (with the tail held back
    last time in front), scrubbed, minus the tail that could still become a secret: the longest
    suffix that is the start of a known value, and a key-shaped run that the next read may
    continue. ``finish()`` returns what is held at the end. Only such a tail moves from one read
    to the next; a held key-shaped run longer than ``MAX_HOLD`` is settled (redacted) at once.
    """

    MAX_HOLD = 1024

    def __init__(self, values: SecretScrubber) -> None:
        self.values = values
        self._longest = max((len(v) for v in values._bvalues), default=0)
        self._held = b""
        self._before = b""  # the last byte written: the boundary before a key

    @property
    def held(self) -> int:
        return len(self._held)

    @property
    def pending(self) -> bytes:
        """The scrubbed tail that waits for the next read."""
        return self._held

    def feed(self, data: bytes) -> bytes:
        buf = self.values.data(self._held + data) if self.values else self._held + data
        cut = len(buf) - self._value_hold(buf)
        cut = self._key_hold(buf, cut)
        if len(buf) - cut > self.MAX_HOLD + self._longest:
            cut = len(buf) - self._value_hold(buf)
        self._held = buf[cut:]
        return self._emit(buf[:cut])

    def finish(self) -> bytes:
        buf, self._held = self._held, b""
        return self._emit(buf)

    def _emit(self, out: bytes) -> bytes:
        if not out:
            return out
        before, self._before = self._before, out[-1:]
        text = before + out
        pieces: list[bytes] = []
        pos = len(before)
        for start, end in key_spans(text, pos):
            pieces += (text[pos:start], self.values._marker)
            pos = end
        if not pieces:
            return out
        pieces.append(text[pos:])
        return b"".join(pieces)

    def _value_hold(self, buf: bytes) -> int:
        """The length of the longest suffix of ``buf`` that starts a known value."""
        best = 0
        for value in self.values._bvalues:
            k = min(len(value) - 1, len(buf))
            if k <= best:
                continue
            i = buf.find(value[:1], len(buf) - k)
            while i >= 0 and len(buf) - i > best:
                if value.startswith(buf[i:]):
                    best = len(buf) - i  # the earliest start is the longest suffix
                    break
                i = buf.find(value[:1], i + 1)
        return best

    def _key_hold(self, buf: bytes, cut: int) -> int:
        """Where a key-shaped run that may go on after ``cut`` starts (else ``cut``): a key's
        literal start cut short, or a literal followed only by key characters. Holding it may
        leave an earlier key touching the new cut: repeat until nothing touches."""
        while True:
            start = self._touching(buf[:cut])
            if start == cut:
                return cut
            cut = start

    def _touching(self, head: bytes) -> int:
        cut = len(head)
        run = len(head.rstrip(_KEY_CHARS))
        best = cut
        if run == cut:
            return cut
        for literal, chars, bounded in _BYTE_SHAPES:
            i = head.find(literal, run)
            while 0 <= i < best:
                if (not bounded or self._starts_word(head, i)) and not head[
                    i + len(literal) :
                ].lstrip(chars):
                    best = i
                    break
                i = head.find(literal, i + 1)
            # the literal's start, cut short by the end of the read: looked for by its first
            # byte (one search per shape, not one comparison per possible length)
            i = head.find(literal[:1], max(run, cut - len(literal) + 1))
            while 0 <= i < best:
                if literal.startswith(head[i:]) and (not bounded or self._starts_word(head, i)):
                    best = i
                    break
                i = head.find(literal[:1], i + 1)
        return best

    def _starts_word(self, head: bytes, i: int) -> bool:
        prev = head[i - 1] if i else (self._before[0] if self._before else None)
        return prev is None or prev not in _WORD_CHARS
