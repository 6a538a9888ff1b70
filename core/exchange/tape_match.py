"""Matching requests to the exchanges of a tape (sans-IO: plain data in, decisions out).

A request matches a recorded exchange when both go to the same endpoint and their JSON bodies are
equal after normalization: key order and whitespace never count, and the fields in
:data:`DEFAULT_IGNORED` (plus any ``--match-ignore`` paths) are dropped first. Exchanges with the
same request are consumed in recorded order (a retried turn gets the retry's recording); once all
of them were served, they are served again from the first, so a client that runs its session
twice against one server sees the same answers twice.

On a miss, :func:`closest` finds the recorded exchange most like the request and
:func:`first_difference` names where they part: ``messages[3].content differs: "...result:
21°C" vs "...result: 19°C"``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..recording.secrets import SecretScrubber, redact_keys, without_secrets
from ..wire.fastjson import canonical

# top-level request fields that change nothing about the conversation a recording answers
DEFAULT_IGNORED: tuple[str, ...] = (
    "stream",
    "stream_options",
    "metadata",
    "user",
    "store",
    "service_tier",
    "seed",
    "prompt_cache_key",
    "prompt_cache_retention",
    "safety_identifier",
)
CONTEXT = 24  # characters of a differing string shown on each side of the difference
VALUE_WIDTH = 60  # longest rendering of a non-string value in a difference

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")
_STEP = re.compile(r"\[(\d+|\*)\]|([^.\[\]]+)")
_ABSENT: Any = object()


# -- ignored fields ----------------------------------------------------------------------------
def parse_ignore_path(text: str) -> tuple[str | int, ...]:
    """``messages[*].cache_control`` / ``messages.*.cache_control`` / ``metadata`` -> steps.

    A step is a key, an index, or ``"*"`` (every key or item at that level). Raises
    ``ValueError`` for an empty path.
    """
    steps: list[str | int] = []
    for part in text.strip().split("."):
        if not part:
            raise ValueError(f"--match-ignore: {text!r} is not a field path (e.g. metadata)")
        pos = 0
        for m in _STEP.finditer(part):
            if m.start() != pos:
                raise ValueError(f"--match-ignore: {text!r} is not a field path")
            pos = m.end()
            index, key = m.group(1), m.group(2)
            if index is not None:
                steps.append("*" if index == "*" else int(index))
            else:
                steps.append(key)
        if pos != len(part):
            raise ValueError(f"--match-ignore: {text!r} is not a field path")
    if not steps:
        raise ValueError(f"--match-ignore: {text!r} is not a field path (e.g. metadata)")
    return tuple(steps)


def _drop(value: Any, steps: tuple[str | int, ...]) -> Any:
    """A copy of ``value`` without what ``steps`` points at (values not on the path are shared)."""
    if not steps:
        return value
    head, rest = steps[0], steps[1:]
    if isinstance(value, dict):
        if head == "*":
            keys = list(value)
        elif isinstance(head, str) and head in value:
            keys = [head]
        else:
            return value
        out = dict(value)
        for k in keys:
            if rest:
                out[k] = _drop(out[k], rest)
            else:
                del out[k]
        return out
    if isinstance(value, list):
        if head == "*":
            idx = list(range(len(value)))
        elif isinstance(head, int) and 0 <= head < len(value):
            idx = [head]
        elif isinstance(head, str) and head.isdigit() and int(head) < len(value):
            idx = [int(head)]
        else:
            return value
        if not rest:
            drop = set(idx)
            return [v for i, v in enumerate(value) if i not in drop]
        out_list = list(value)
        for i in idx:
            out_list[i] = _drop(out_list[i], rest)
        return out_list
    return value


@dataclass(frozen=True, slots=True)
class MatchRules:
    """What normalization drops: the default fields and any ``--match-ignore`` paths."""

    ignore: tuple[tuple[str | int, ...], ...] = tuple((f,) for f in DEFAULT_IGNORED)

    @classmethod
    def with_extra(cls, extra: Sequence[str] = (), *, defaults: bool = True) -> MatchRules:
        base = [(f,) for f in DEFAULT_IGNORED] if defaults else []
        return cls(tuple(base) + tuple(parse_ignore_path(p) for p in extra))

    def normalize(self, body: Any) -> Any:
        """The body as matching sees it (a new object; ``body`` is not changed)."""
        for steps in self.ignore:
            body = _drop(body, steps)
        return body


# -- differences -------------------------------------------------------------------------------
def _key_step(key: str) -> str:
    return f".{key}" if _IDENT.match(key) else f"[{json.dumps(key, ensure_ascii=False)}]"


def _join(path: str, step: str) -> str:
    if step.startswith("."):
        return step[1:] if not path else path + step
    return path + step


def _show(value: Any, mask: SecretScrubber) -> str:
    if value is _ABSENT:
        return "(absent)"
    text = redact_keys(mask.text(json.dumps(value, ensure_ascii=False, sort_keys=True)))
    return text if len(text) <= VALUE_WIDTH else text[: VALUE_WIDTH - 3] + "..."


def _show_strings(a: str, b: str) -> tuple[str, str]:
    """Both strings cut to a window around where they first differ."""
    p = 0
    limit = min(len(a), len(b))
    while p < limit and a[p] == b[p]:
        p += 1
    start = max(0, p - CONTEXT)
    if start:  # begin at a word where there is one
        space = a.find(" ", start, p)
        if space >= 0:
            start = space + 1

    def cut(s: str) -> str:
        end = min(len(s), p + CONTEXT)
        piece = json.dumps(s[start:end], ensure_ascii=False)[1:-1]
        return f'"{"..." if start else ""}{piece}{"..." if end < len(s) else ""}"'

    return cut(a), cut(b)


@dataclass(frozen=True, slots=True)
class Difference:
    """Where two bodies first part. ``same`` counts the leaf values equal before it (how close
    the two are: more is closer)."""

    path: str
    ours: Any
    theirs: Any
    same: int

    def describe(self, secrets: Sequence[str] = ()) -> str:
        """Where and how the bodies differ, in one line. Key-shaped strings and ``secrets``
        (the request's credentials) are masked before any window of a value is cut: no part
        of a key is ever shown (logs and the client's error keep these lines)."""
        mask = SecretScrubber(secrets)
        where = redact_keys(mask.text(self.path or "body"))
        if isinstance(self.ours, list) and isinstance(self.theirs, list):
            # only reached when every shared item is equal: the lengths differ
            n, m = len(self.ours), len(self.theirs)
            return f"{where} has {n} item{'s' * (n != 1)} vs {m}"
        if isinstance(self.ours, str) and isinstance(self.theirs, str):
            a, b = _show_strings(
                redact_keys(mask.text(self.ours)), redact_keys(mask.text(self.theirs))
            )
        else:
            a, b = _show(self.ours, mask), _show(self.theirs, mask)
        return f"{where} differs: {a} vs {b}"


def _leaves(value: Any) -> int:
    if isinstance(value, dict):
        return sum(_leaves(v) for v in value.values())
    if isinstance(value, list):
        return sum(_leaves(v) for v in value)
    return 1


def _walk(a: Any, b: Any, path: str, same: list[int]) -> Difference | None:
    if type(a) is not type(b) and not (
        isinstance(a, int | float)
        and isinstance(b, int | float)
        and not isinstance(a, bool)
        and not isinstance(b, bool)
    ):
        return Difference(path, a, b, same[0])
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b)):
            sub = _join(path, _key_step(key))
            if key not in a or key not in b:
                return Difference(sub, a.get(key, _ABSENT), b.get(key, _ABSENT), same[0])
            found = _walk(a[key], b[key], sub, same)
            if found is not None:
                return found
        return None
    if isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            found = _walk(x, y, _join(path, f"[{i}]"), same)
            if found is not None:
                return found
        if len(a) != len(b):
            return Difference(path, a, b, same[0])
        return None
    if a != b:
        return Difference(path, a, b, same[0])
    same[0] += 1
    return None


def first_difference(ours: Any, theirs: Any) -> Difference | None:
    """The first place (keys in sorted order, items in order) where two normalized bodies
    differ, or ``None`` when they are equal."""
    return _walk(ours, theirs, "", [0])


# -- the matcher -------------------------------------------------------------------------------
@dataclass(slots=True)
class Exchange:
    """A recorded exchange as matching sees it: where it went and what it sent."""

    name: str
    endpoint: str  # see :func:`endpoint_key`
    body: Any  # the recorded request body, normalized; None when the recording holds none
    key: str | None = None  # canonical(body)
    served: int = 0
    # the recorded request asked for a stream (``stream`` is not matched on, but of two
    # exchanges that differ only there, the one that answers the same way is taken)
    streamed: bool = False


def _asks_stream(body: Any) -> bool:
    return isinstance(body, dict) and body.get("stream") is True


def endpoint_key(suffix: str, model_in_path: str | None = None) -> str:
    """The endpoint part of a match: the API path suffix (``/chat/completions``), and for
    Gemini the model named in the path (``:streamGenerateContent@gemini-2.5-flash``)."""
    return f"{suffix}@{model_in_path}" if model_in_path else suffix


@dataclass(frozen=True, slots=True)
class Miss:
    """No exchange matched. ``message`` says which exchange is closest and where it differs."""

    message: str
    closest: str | None = None
    difference: Difference | None = None


@dataclass(slots=True)
class Matcher:
    """Consumes a tape's exchanges in order as requests arrive (one per tape server).

    Not thread-safe on its own: the server calls it from one event loop.
    """

    exchanges: list[Exchange]
    rules: MatchRules = field(default_factory=MatchRules)
    _by_key: dict[tuple[str, str], list[Exchange]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._by_key = {}
        for ex in self.exchanges:
            if ex.body is None:
                continue
            ex.streamed = _asks_stream(ex.body)
            ex.body = self.rules.normalize(ex.body)
            ex.key = canonical(ex.body)
            self._by_key.setdefault((ex.endpoint, ex.key), []).append(ex)

    def add(self, ex: Exchange) -> None:
        """A newly recorded exchange (record on miss) joins the tape."""
        self.exchanges.append(ex)
        if ex.body is not None:
            ex.streamed = _asks_stream(ex.body)
            ex.body = self.rules.normalize(ex.body)
            ex.key = canonical(ex.body)
            self._by_key.setdefault((ex.endpoint, ex.key), []).append(ex)

    def match(self, endpoint: str, body: Any, secrets: Sequence[str] = ()) -> Exchange | None:
        """The next exchange recorded for this request (counted as served), or ``None``.

        ``secrets``: the request's credentials. A recording keeps its request with them
        scrubbed (a model set to the key reads ``[redacted]``): the request is compared with
        them scrubbed too, so a request with a key in its body finds its own recording."""
        if body is None:
            return None
        key = canonical(self.rules.normalize(body))
        if secrets:
            key = SecretScrubber(secrets).text(key)
        same = self._by_key.get((endpoint, key))
        if not same:
            return None
        wants = _asks_stream(body)
        same = [ex for ex in same if ex.streamed == wants] or same
        fewest = min(ex.served for ex in same)
        chosen = next(ex for ex in same if ex.served == fewest)
        chosen.served += 1
        return chosen

    def with_bodies(self, endpoint: str) -> Iterator[Exchange]:
        return (ex for ex in self.exchanges if ex.body is not None and ex.endpoint == endpoint)

    def miss(
        self,
        endpoint: str,
        body: Any,
        shown_endpoint: str | None = None,
        secrets: Sequence[str] = (),
    ) -> Miss:
        """Why nothing matched: the closest exchange and the first difference. ``secrets``:
        the request's credentials, masked wherever the message would show them."""
        where = without_secrets(shown_endpoint or endpoint.split("@")[0], secrets)
        candidates = list(self.with_bodies(endpoint))
        if body is None:
            return Miss(f"no recorded exchange matches a request without a JSON body on {where}")
        if not candidates:
            others = sorted({ex.endpoint.split("@")[0] for ex in self.exchanges if ex.body})
            also = f" (it holds {', '.join(others)})" if others else ""
            return Miss(f"the tape holds no exchange for {where}{also}")
        normalized = self.rules.normalize(body)
        if secrets:  # compared as :meth:`match` compares it
            normalized = SecretScrubber(secrets).deep(normalized)
        best: tuple[int, int, Exchange, Difference] | None = None
        for order, ex in enumerate(candidates):
            diff = first_difference(normalized, ex.body)
            if diff is None:  # equal, so it was served already: not a miss (cannot happen)
                continue
            rank = (diff.same, -order)
            if best is None or rank > (best[0], best[1]):
                best = (diff.same, -order, ex, diff)
        if best is None:
            return Miss(f"no recorded exchange matches this request on {where}")
        ex, diff = best[2], best[3]
        return Miss(
            f"no recorded exchange matches this request on {where}; closest is {ex.name} "
            f"(request vs recording): {diff.describe(secrets)}",
            closest=ex.name,
            difference=diff,
        )
