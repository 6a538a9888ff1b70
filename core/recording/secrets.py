"""Removing credentials from what a recording keeps (pure functions)."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

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
SECRET_QUERY = frozenset({"key", "api_key", "apikey", "access_token"})
_KEY_PATTERNS = (
    ("Anthropic key", re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}")),
    ("OpenAI-style key", re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}")),
    ("Google API key", re.compile(r"\bAIza[0-9A-Za-z_\-]{20,}")),
)


def redact_headers(headers: dict[str, Any]) -> dict[str, Any]:
    return {k: (REDACTED if k.lower() in SECRET_HEADERS else v) for k, v in headers.items()}


def secret_query_values(url: str) -> list[str]:
    """The values of the URL's query parameters that carry credentials (``key=``...)."""
    return [v for k, v in parse_qsl(urlsplit(url).query) if k.lower() in SECRET_QUERY]


def redact_url(url: str) -> str:
    parts = urlsplit(url)
    if not parts.query:
        return url
    query = [
        (k, REDACTED if k.lower() in SECRET_QUERY else v)
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
    ]
    return urlunsplit(parts._replace(query=urlencode(query, safe="[]")))


def redact_request(request: dict[str, Any]) -> dict[str, Any]:
    """A copy of a request description with credentials replaced by a marker."""
    out = dict(request)
    headers = out.get("headers")
    if isinstance(headers, dict):
        out["headers"] = redact_headers(headers)
    url = out.get("url")
    if isinstance(url, str):
        out["url"] = redact_url(url)
    return out


def find_secret(text: str) -> str | None:
    """The kind of the first known key pattern in ``text``, or ``None``."""
    for kind, pattern in _KEY_PATTERNS:
        if pattern.search(text):
            return kind
    return None


class SecretScrubber:
    """Replaces every occurrence of known credential values by the redaction marker."""

    MIN_LENGTH = 6  # shorter values would match ordinary text

    def __init__(self, secrets: tuple[str, ...] | list[str] = ()) -> None:
        values = sorted({s for s in secrets if s and len(s) >= self.MIN_LENGTH}, key=len)
        self.values = tuple(reversed(values))  # longest first: "Bearer sk-x" before "sk-x"
        self._bvalues = tuple(v.encode("utf-8") for v in self.values)
        self._marker = REDACTED.encode("utf-8")

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

    def deep(self, obj: Any) -> Any:
        """A copy of a JSON-like value with every string scrubbed."""
        if not self.values:
            return obj
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict):
            return {self.text(str(k)): self.deep(v) for k, v in obj.items()}
        if isinstance(obj, list | tuple):
            return [self.deep(v) for v in obj]
        return obj
