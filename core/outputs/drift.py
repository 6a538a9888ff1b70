"""Drift: what changed in meaning between two recordings of the same request. Sans-IO.

A tape is true the day it is recorded; a provider changes its streams without notice. Two
recordings of one request (the tape's, and one made today or kept in another tape) are compared
for what a client would notice, in three tiers:

- ``break``: an event type or a field gone, a field's JSON type changed, the tool calls' names or
  their argument keys or types changed, the finish class changed, a new quirk of severity
  ``error``, an error (or an HTTP error status) where there was none;
- ``warn``: new event types or fields, the text changed beyond the wording threshold (with its
  similarity), the usage's shape changed, a new quirk of lower severity, the time to first byte or
  the inter-read gaps' p50 / p95 more than twice what they were (and 0.1 s longer);
- ``info``: ids and timestamps, wording within the threshold, quirks or errors that went away.

Field paths are normalised (``choices[].delta.content``: array indexes and id-like keys folded)
so that one change is reported once per event type, with an example value. A :class:`Side` is
what one recording says (its replay's summary, its events as ``(type, payload)``, its timing);
:func:`compare` gives the :class:`Change` list, :func:`exchange_tier` its tier; :func:`to_json`,
:func:`to_markdown` render a report of many exchanges.
"""

from __future__ import annotations

import difflib
import json
import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

TIERS = ("break", "warn", "info")  # most severe first
NONE = "none"  # an exchange where nothing changed
WORDING = 0.8  # text at least this similar (difflib's ratio) is a change of wording: info
SLOWER = 2.0  # a time this many times the old one is worth a warning...
SLOWER_BY = 0.1  # ...when it is also this many seconds longer (less is a busy machine's jitter)

_ID_KEY = re.compile(r"^(?:[A-Za-z]+[_-])?[A-Za-z0-9]{16,}$|^[0-9a-f-]{32,36}$")
_ID_LEAF = re.compile(r"(?:^|_)(?:id|ids|fingerprint)$|^(?:created|created_at|timestamp)$")


@dataclass(slots=True)
class Side:
    """One recording of the exchange, as drift reads it."""

    summary: dict[str, Any]  # the replay's summary (text, invocations, finish_class, ...)
    events: list[tuple[str, Any]] = field(default_factory=list)  # (event type, JSON payload)
    status: int | None = None
    ttfb: float | None = None  # the first read's time
    gaps: list[float] = field(default_factory=list)  # the times between reads
    severities: dict[str, str] = field(default_factory=dict)  # quirk id -> its severity


@dataclass(slots=True)
class Change:
    tier: str
    kind: str
    path: str = ""
    before: Any = None
    after: Any = None
    example: Any = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class ExchangeDrift:
    file: str
    seq: int | None
    changes: list[Change]
    problem: str | None = None  # the request could not be sent again, or read: why

    @property
    def tier(self) -> str:
        if self.problem is not None:
            return "break"
        return exchange_tier(self.changes)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "file": self.file,
            "seq": self.seq,
            "tier": self.tier,
            "changes": [c.to_dict() for c in self.changes],
        }
        if self.problem is not None:
            out["problem"] = self.problem
        return out


def exchange_tier(changes: Iterable[Change]) -> str:
    found = {c.tier for c in changes}
    return next((t for t in TIERS if t in found), NONE)


def worst(exchanges: Sequence[ExchangeDrift]) -> str:
    return exchange_tier(Change(e.tier, "") for e in exchanges if e.tier != NONE)


def fails(exchanges: Sequence[ExchangeDrift], fail_on: str) -> bool:
    """Whether the report fails at ``fail_on`` (``break`` or ``warn``)."""
    limit = TIERS.index(fail_on)
    return any(e.tier in TIERS[: limit + 1] for e in exchanges)


# -- the shape of the events --------------------------------------------------------------------
def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else type(value).__name__


def _paths(value: Any, prefix: str, out: dict[str, tuple[str, Any]]) -> None:
    out.setdefault(prefix or ".", (json_type(value), value))
    if isinstance(value, dict):
        for key, inner in value.items():
            name = "{id}" if isinstance(key, str) and _ID_KEY.match(key) else str(key)
            _paths(inner, f"{prefix}.{name}" if prefix else name, out)
    elif isinstance(value, list):
        for inner in value:
            _paths(inner, f"{prefix}[]", out)


def shapes(events: Iterable[tuple[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Event type -> normalised field path -> {JSON type: an example value}."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for kind, payload in events:
        fields: dict[str, tuple[str, Any]] = {}
        _paths(payload, "", fields)
        seen = out.setdefault(kind, {})
        for path, (jtype, example) in fields.items():
            seen.setdefault(path, {}).setdefault(jtype, example)
    return out


def _short(value: Any, limit: int = 80) -> Any:
    if isinstance(value, dict | list):
        text = json.dumps(value, ensure_ascii=False)
        return text if len(text) <= limit else text[: limit - 1] + "…"
    if isinstance(value, str) and len(value) > limit:
        return value[: limit - 1] + "…"
    return value


def _shape_changes(a: Side, b: Side) -> list[Change]:
    old, new = shapes(a.events), shapes(b.events)
    out: list[Change] = []
    for kind in old:
        if kind not in new:
            out.append(Change("break", "event_type_gone", kind, kind, None))
    for kind in new:
        if kind not in old:
            example = next((p for k, p in b.events if k == kind), None)
            out.append(Change("warn", "event_type_new", kind, None, kind, _short(example)))
    for kind, fields in old.items():
        now = new.get(kind)
        if now is None:
            continue
        for path, types in fields.items():
            where = f"{kind}: {path}"
            if path not in now:
                example = _short(next(iter(types.values())))
                out.append(Change("break", "field_gone", where, sorted(types), None, example))
                continue
            got = now[path]
            if set(got) != set(types):
                fresh = [v for t, v in got.items() if t not in types]
                example = _short(fresh[0] if fresh else next(iter(got.values())))
                gone = set(types) - set(got)
                tier = "break" if gone else "warn"
                out.append(Change(tier, "field_type", where, sorted(types), sorted(got), example))
            elif _ID_LEAF.search(path.rsplit(".", 1)[-1].rstrip("[]")):
                before = next(iter(types.values()))
                after = next(iter(got.values()))
                if before != after:
                    out.append(Change("info", "value", where, _short(before), _short(after)))
        for path, types in now.items():
            if path not in fields:
                example = _short(next(iter(types.values())))
                out.append(
                    Change("warn", "field_new", f"{kind}: {path}", None, sorted(types), example)
                )
    return out


# -- what the stream meant ----------------------------------------------------------------------
def _client_calls(summary: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in summary.get("invocations") or [] if not c.get("server_side")]


def _argument_shape(arguments: Any) -> Any:
    if isinstance(arguments, dict):
        return {k: json_type(v) for k, v in sorted(arguments.items())}
    return json_type(arguments)


def _call_changes(a: dict[str, Any], b: dict[str, Any]) -> list[Change]:
    old, new = _client_calls(a), _client_calls(b)
    names_a = [c.get("name") for c in old]
    names_b = [c.get("name") for c in new]
    if names_a != names_b:
        return [Change("break", "tool_calls", "invocations[].name", names_a, names_b)]
    out: list[Change] = []
    for n, (ca, cb) in enumerate(zip(old, new, strict=True)):
        sa, sb = _argument_shape(ca.get("arguments")), _argument_shape(cb.get("arguments"))
        if sa != sb:
            where = f"invocations[{n}].arguments ({ca.get('name')})"
            out.append(
                Change("break", "tool_arguments", where, sa, sb, _short(cb.get("arguments")))
            )
        elif ca.get("arguments") != cb.get("arguments"):
            where = f"invocations[{n}].arguments ({ca.get('name')})"
            before, after = _short(ca.get("arguments")), _short(cb.get("arguments"))
            out.append(Change("info", "tool_argument_values", where, before, after))
    ids_a = [c.get("id") for c in old]
    ids_b = [c.get("id") for c in new]
    if ids_a != ids_b:
        out.append(Change("info", "value", "invocations[].id", ids_a, ids_b))
    return out


def similarity(a: str, b: str) -> float:
    """How alike two texts are (difflib's ratio, 0 to 1; two empty texts are the same)."""
    if a == b:
        return 1.0
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def _text_changes(a: dict[str, Any], b: dict[str, Any]) -> list[Change]:
    out: list[Change] = []
    for key in ("text", "reasoning", "refusal"):
        ta, tb = a.get(key) or "", b.get(key) or ""
        if ta == tb:
            continue
        ratio = round(similarity(ta, tb), 3)
        tier = "info" if ratio >= WORDING else "warn"
        out.append(Change(tier, "text", key, _short(ta), _short(tb), {"similarity": ratio}))
    return out


def _quirk_changes(a: Side, b: Side) -> list[Change]:
    old = {q["id"] for q in a.summary.get("quirks") or []}
    new = {q["id"] for q in b.summary.get("quirks") or []}
    out: list[Change] = []
    for qid in sorted(new - old):
        tier = "break" if b.severities.get(qid) == "error" else "warn"
        detail = next((q.get("detail") for q in b.summary["quirks"] if q["id"] == qid), None)
        out.append(Change(tier, "quirk_new", qid, None, qid, _short(detail)))
    for qid in sorted(old - new):
        out.append(Change("info", "quirk_gone", qid, qid, None))
    return out


def _error_changes(a: Side, b: Side) -> list[Change]:
    out: list[Change] = []
    old = sorted({e.get("kind") for e in a.summary.get("errors") or []})
    new = sorted({e.get("kind") for e in b.summary.get("errors") or []})
    if new != old:
        added = [k for k in new if k not in old]
        tier = "break" if added else "info"
        example = next(
            (e.get("message") for e in b.summary.get("errors") or [] if e.get("kind") in added),
            None,
        )
        out.append(Change(tier, "errors", "errors[].kind", old, new, _short(example)))
    if a.status != b.status:
        failing = (b.status or 0) >= 400 and (a.status or 0) < 400
        out.append(Change("break" if failing else "warn", "status", "status", a.status, b.status))
    return out


def _usage_changes(a: dict[str, Any], b: dict[str, Any]) -> list[Change]:
    ua, ub = a.get("usage"), b.get("usage")
    ka = sorted(ua) if isinstance(ua, dict) else None
    kb = sorted(ub) if isinstance(ub, dict) else None
    if ka != kb:
        return [Change("warn", "usage_shape", "usage", ka, kb)]
    return []


def _percentile(values: list[float], q: int) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def _timing_changes(a: Side, b: Side) -> list[Change]:
    out: list[Change] = []
    pairs = [
        ("ttfb", a.ttfb, b.ttfb),
        ("gaps p50", _percentile(a.gaps, 50), _percentile(b.gaps, 50)),
        ("gaps p95", _percentile(a.gaps, 95), _percentile(b.gaps, 95)),
    ]
    for name, before, after in pairs:
        if before is None or after is None:
            continue
        if before > 0 and after > SLOWER * before and after - before > SLOWER_BY:
            ratio = round(after / before, 1)
            out.append(
                Change("warn", "timing", name, round(before, 4), round(after, 4), {"ratio": ratio})
            )
    return out


def _under(path: str, parent: str) -> bool:
    return path.startswith(parent + ".") or path.startswith(parent + "[]")


def _outermost(changes: list[Change]) -> list[Change]:
    """A field gone (or new) with everything under it is told once, at the field: the paths
    under a gone (new) field of the same event type are left out."""
    kinds = ("field_gone", "field_new")
    told = {(c.kind, c.path) for c in changes if c.kind in kinds}
    out = []
    for c in changes:
        if c.kind in kinds:
            kind_of, _, path = c.path.partition(": ")
            if any(
                k == c.kind
                and p != c.path
                and p.startswith(kind_of + ": ")
                and _under(path, p.partition(": ")[2])
                for k, p in told
            ):
                continue
        out.append(c)
    return out


def compare(a: Side, b: Side) -> list[Change]:
    """What changed from ``a`` (the tape's recording) to ``b`` (the new one), most severe
    first (in each tier, in the order: status and errors, finish, tool calls, events, text,
    quirks, usage, timing)."""
    changes = [
        *_error_changes(a, b),
        *_finish_changes(a.summary, b.summary),
        *_call_changes(a.summary, b.summary),
        *_outermost(_shape_changes(a, b)),
        *_text_changes(a.summary, b.summary),
        *_quirk_changes(a, b),
        *_usage_changes(a.summary, b.summary),
        *_timing_changes(a, b),
    ]
    return sorted(changes, key=lambda c: TIERS.index(c.tier))


def _finish_changes(a: dict[str, Any], b: dict[str, Any]) -> list[Change]:
    fa, fb = a.get("finish_class"), b.get("finish_class")
    out: list[Change] = []
    if fa != fb:
        out.append(Change("break", "finish_class", "finish_class", fa, fb, b.get("finish_reason")))
    elif a.get("finish_reason") != b.get("finish_reason"):
        before, after = a.get("finish_reason"), b.get("finish_reason")
        out.append(Change("info", "value", "finish_reason", before, after))
    return out


# -- reports ------------------------------------------------------------------------------------
def to_json(exchanges: Sequence[ExchangeDrift]) -> dict[str, Any]:
    """The JSON document: ``{"exchanges": [{"file", "seq", "tier", "changes": [...]}]}``."""
    return {"exchanges": [e.to_dict() for e in exchanges]}


def _cell(value: Any) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text.replace("|", "\\|").replace("\n", " ")


def counts(exchanges: Sequence[ExchangeDrift]) -> dict[str, int]:
    out = {t: 0 for t in (*TIERS, NONE)}
    for e in exchanges:
        out[e.tier] += 1
    return out


def headline(exchanges: Sequence[ExchangeDrift]) -> str:
    n = counts(exchanges)
    parts = [f"{n[t]} {t}" for t in TIERS if n[t]]
    same = f"{n[NONE]} unchanged" if n[NONE] else ""
    told = ", ".join([*parts, same] if same else parts) or "nothing"
    return f"{len(exchanges)} exchange{'s' if len(exchanges) != 1 else ''}: {told}"


def to_markdown(exchanges: Sequence[ExchangeDrift], *, title: str = "Stream drift") -> str:
    """A report for a pull request's body: a headline, then a table per exchange that moved."""
    lines = [f"## {title}", "", headline(exchanges), ""]
    for e in exchanges:
        if e.tier == NONE:
            continue
        seq = f"#{e.seq} " if e.seq is not None else ""
        lines += [f"### {seq}`{e.file}`: **{e.tier}**", ""]
        if e.problem is not None:
            lines += [f"- could not compare: {_cell(e.problem)}", ""]
            continue
        lines += ["| tier | what | where | before | after | example |", "|---|---|---|---|---|---|"]
        for c in e.changes:
            row = (c.tier, c.kind, c.path, c.before, c.after, c.example)
            lines.append("| " + " | ".join(_cell(v) for v in row) + " |")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
