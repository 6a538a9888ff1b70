"""Conformance: does what a client read from a stream match streamtool's replay of it? Sans-IO.

``streamtool conform`` serves a recording to a client program, cut into reads in several ways,
and the client prints what it understood as one JSON object::

    {"text": "...", "tool_calls": [{"name": "...", "arguments": {...} or "..."}],
     "finish_reason": "...", "refusal": "..."}   # finish_reason and refusal are optional

This module holds the two ends of that comparison: :func:`expected_from` (what the recording
means, from a finished :class:`~streamtool.core.engine.replay.ReplayEngine`) and :func:`judge` (the
differences between that and what the client did, each with the provider quirks of the recording
that plausibly explain it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..model.quirk_ids import QuirkId
from ..model.vocabulary import ErrorKind

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.replay import ReplayEngine

# error kinds after which a stream did not deliver a complete answer: a client must say so
# (exit non-zero, or an "error" key), not print a partial answer as if it were whole
FAILED_STREAM_KINDS = frozenset(
    {ErrorKind.PROVIDER_ERROR, ErrorKind.TRUNCATED, ErrorKind.PROMPT_BLOCKED}
)

# which part of a client's answer each quirk can spoil (by id, then by the id's prefix);
# "any" quirks can make a naive client crash or misread anything
_QUIRK_FIELDS: dict[str, tuple[str, ...]] = {
    QuirkId.FINISH_STOP_WITH_TOOLS: ("finish_reason",),
    QuirkId.FINISH_DOUBLE: ("finish_reason",),
    QuirkId.FINISH_EMPTY_STRING: ("finish_reason",),
    QuirkId.DONE_NO_FINISH_REASON: ("finish_reason", "error"),
    QuirkId.EOF_NO_DONE: ("error",),
    QuirkId.KIMI_TOKENS_IN_CONTENT: ("text", "tool_calls"),
    QuirkId.KIMI_TOKENS_IN_REASONING: ("tool_calls",),
    QuirkId.THINK_TAGS_IN_CONTENT: ("text",),
    QuirkId.MISTRAL_CONTENT_ARRAY: ("text",),
    QuirkId.RESPONSES_TEXT_DONE_ONLY: ("text",),
    QuirkId.RESPONSES_TEXT_SUFFIX_IN_DONE: ("text",),
    QuirkId.RESPONSES_TEXT_DONE_SHORTER: ("text",),
    QuirkId.USAGE_ONLY_CHUNK: ("crash",),
    QuirkId.USAGE_CHUNK_NO_CHOICES_KEY: ("crash",),
    QuirkId.AZURE_EMPTY_FIRST_CHUNK: ("crash",),
    QuirkId.N_CHOICES: ("text", "tool_calls"),
    QuirkId.LEGACY_FUNCTION_CALL: ("tool_calls",),
    # a client written for the step events reads nothing from the older content events
    QuirkId.INTERACTIONS_CONTENT_EVENTS: ("text", "tool_calls", "finish_reason", "crash"),
    QuirkId.INTERACTIONS_ERROR_EVENT: ("error",),
}
_PREFIX_FIELDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("oai_", ("tool_calls", "crash")),
    ("kimi_", ("tool_calls",)),
    ("gemini_", ("tool_calls",)),
    ("responses_", ("tool_calls",)),
    ("anthropic_", ("text", "tool_calls")),
    ("reasoning_field_", ("text",)),
    ("sse_", ("text", "tool_calls", "crash")),
    ("utf8_", ("text", "tool_calls")),
)


def quirk_fields(quirk_id: str) -> tuple[str, ...]:
    """The parts of a client's answer a quirk can spoil (``crash`` = the client may fail)."""
    found = _QUIRK_FIELDS.get(quirk_id)
    if found is not None:
        return found
    for prefix, fields in _PREFIX_FIELDS:
        if quirk_id.startswith(prefix):
            return fields
    return ("text", "tool_calls", "finish_reason", "crash")


@dataclass(slots=True)
class Expected:
    """What a recording means to a client: the answer, or the error it must report."""

    text: str
    tool_calls: list[dict[str, Any]]  # {"name", "arguments"} (+ "raw_arguments" when unparsable)
    finish_reason: str | None
    failure: str | None = None  # why the stream did not complete (the client must say so)
    quirks: list[str] = field(default_factory=list)
    refusal: str = ""  # the model's refusal (Chat delta.refusal), apart from the text

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "text": self.text,
            "refusal": self.refusal,
            "tool_calls": self.tool_calls,
            "finish_reason": self.finish_reason,
        }
        if self.failure is not None:
            out["failure"] = self.failure
        return out


def expected_from(engine: ReplayEngine) -> Expected:
    """The expected answer from a finished replay (``api_tool_call`` parser)."""
    if not engine.finished:
        raise ValueError("the replay has not finished: call engine.finish() first")
    text, _ = engine.texts()
    calls: list[dict[str, Any]] = []
    for inv in engine.invocations():
        call: dict[str, Any] = {"name": inv.name, "arguments": inv.arguments}
        if inv.arguments is None:
            call["raw_arguments"] = inv.raw_arguments
        calls.append(call)
    failure = None
    for err in engine.errors:
        if err.kind in FAILED_STREAM_KINDS or err.kind.startswith("recording_"):
            failure = f"{err.kind}: {err.message}"
            break
    return Expected(
        text=text,
        tool_calls=calls,
        finish_reason=engine.finish_reason,
        failure=failure,
        quirks=[q.id for q in engine.quirks],
        refusal=engine.refusal(),
    )


@dataclass(slots=True)
class ClientRun:
    """What a client run left: its exit status, its output, whether it was killed."""

    exit_code: int | None
    stdout: str
    stderr: str = ""
    timed_out: bool = False
    timeout: float = 0.0


@dataclass(slots=True)
class Difference:
    # text, refusal, tool_calls, finish_reason, error, crash (the client failed), request (it
    # sent none), output (it exited 0 without printing its answer)
    field: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"field": self.field, "message": self.message}


@dataclass(slots=True)
class Verdict:
    differences: list[Difference]
    quirks: list[str]  # quirk ids of the recording that plausibly explain the differences
    answer: dict[str, Any] | None = None  # the client's parsed JSON, when it printed one

    @property
    def passed(self) -> bool:
        return not self.differences

    def summary(self) -> str:
        """One line: ``pass`` or what differs, first difference first."""
        if self.passed:
            return "pass"
        return "; ".join(d.message for d in self.differences)


def parse_answer(stdout: str) -> dict[str, Any] | None:
    """The client's JSON object: its whole output, else its last non-empty line."""
    text = stdout.strip()
    if not text:
        return None
    candidates = [text]
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) > 1:
        candidates.append(lines[-1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return _clip(lines[-1], 160) if lines else ""


def _clip(text: str, size: int) -> str:
    return text if len(text) <= size else text[: size - 1] + "…"


def _where_text_differs(expected: str, got: str) -> str:
    i = 0
    limit = min(len(expected), len(got))
    while i < limit and expected[i] == got[i]:
        i += 1
    start = max(0, i - 12)
    want = json.dumps(expected[start : i + 24], ensure_ascii=False)
    have = json.dumps(got[start : i + 24], ensure_ascii=False)
    prefix = "…" if start else ""
    return (
        f"text differs at character {i} (expected {len(expected)} chars, got {len(got)}): "
        f"expected {prefix}{want}, got {prefix}{have}"
    )


def _arguments_of(value: Any) -> tuple[bool, Any]:
    """A client's arguments as a JSON value: ``(parsed, value)``; strings are parsed as JSON."""
    if isinstance(value, str):
        try:
            return True, json.loads(value)
        except ValueError:
            return False, value
    return True, value


def _compare_calls(expected: list[dict[str, Any]], got: Any) -> list[str]:
    if got is None:
        got = []
    if not isinstance(got, list):
        return [f"tool_calls is not a list but {type(got).__name__}"]
    problems: list[str] = []
    if len(got) != len(expected):
        want = ", ".join(str(c.get("name")) for c in expected) or "none"
        have = ", ".join(str(c.get("name")) if isinstance(c, dict) else "?" for c in got) or "none"
        problems.append(
            f"{len(got)} tool calls instead of {len(expected)} (expected {want}; got {have})"
        )
    for i, (want_call, have_call) in enumerate(zip(expected, got, strict=False)):
        if not isinstance(have_call, dict):
            problems.append(f"tool_calls[{i}] is not an object")
            continue
        if have_call.get("name") != want_call["name"]:
            problems.append(
                f"tool_calls[{i}].name is {json.dumps(have_call.get('name'))}, "
                f"expected {json.dumps(want_call['name'])}"
            )
        parsed, value = _arguments_of(have_call.get("arguments"))
        if want_call["arguments"] is None:  # the recorded arguments do not parse either
            same = not parsed or value == want_call["arguments"]
            same = same and have_call.get("arguments") == want_call.get("raw_arguments")
            wanted = json.dumps(want_call.get("raw_arguments"), ensure_ascii=False)
        else:
            same = parsed and value == want_call["arguments"]
            wanted = json.dumps(want_call["arguments"], ensure_ascii=False)
        if not same:
            shown = json.dumps(have_call.get("arguments"), ensure_ascii=False)
            what = "arguments" if parsed else "arguments (not JSON)"
            problems.append(
                f"tool_calls[{i}].{what} {_clip(shown, 80)}, expected {_clip(wanted, 80)}"
            )
    return problems


def _compare_refusal(expected: str, answer: dict[str, Any]) -> list[Difference]:
    """A refusal is its own field, as the SDKs keep it (``message.refusal``)."""
    if "refusal" not in answer:
        if not expected:
            return []
        return [
            Difference(
                "refusal",
                f"the model refused ({_clip(json.dumps(expected, ensure_ascii=False), 60)}, "
                'sent as delta.refusal) and the answer has no "refusal" key; the openai SDK '
                "gives it as message.refusal",
            )
        ]
    got = answer.get("refusal") or ""
    if not isinstance(got, str):
        return [Difference("refusal", f"refusal is not a string but {type(got).__name__}")]
    if got != expected:
        return [
            Difference(
                "refusal",
                f"refusal {_clip(json.dumps(got, ensure_ascii=False), 60)}, expected "
                f"{_clip(json.dumps(expected, ensure_ascii=False), 60)}",
            )
        ]
    return []


def judge(expected: Expected, run: ClientRun) -> Verdict:
    """Compare a client run with the expected answer."""
    diffs: list[Difference] = []
    answer = parse_answer(run.stdout)
    reported_error = answer.get("error") if answer is not None else None
    if run.timed_out:
        diffs.append(Difference("crash", f"the client did not finish within {run.timeout:g} s"))
    elif expected.failure is not None:
        if run.exit_code == 0 and not reported_error:
            diffs.append(
                Difference(
                    "error",
                    f"the stream did not complete ({_clip(expected.failure, 100)}) "
                    "but the client reported success",
                )
            )
    elif run.exit_code != 0:
        said = _last_line(run.stderr) or _last_line(run.stdout)
        diffs.append(
            Difference(
                "crash", f"the client exited {run.exit_code}" + (f": {said}" if said else "")
            )
        )
    elif answer is None:
        said = _last_line(run.stdout)
        diffs.append(
            Difference(
                "output",
                "the client exited 0 without printing a JSON object"
                + (f" (its last line: {said})" if said else " (it printed nothing)"),
            )
        )
    else:
        if reported_error:
            diffs.append(
                Difference(
                    "error", f"the client reported an error: {_clip(str(reported_error), 120)}"
                )
            )
        text = answer.get("text")
        if text is None:
            text = ""
        if not isinstance(text, str):
            diffs.append(Difference("text", f"text is not a string but {type(text).__name__}"))
        elif text != expected.text:
            message = _where_text_differs(expected.text, text)
            if expected.refusal and text == expected.text + expected.refusal:
                message += " (the stream's refusal, which is not text, went into the text)"
            diffs.append(Difference("text", message))
        diffs.extend(_compare_refusal(expected.refusal, answer))
        for problem in _compare_calls(expected.tool_calls, answer.get("tool_calls")):
            diffs.append(Difference("tool_calls", problem))
        finish = answer.get("finish_reason")
        if finish is not None and finish != expected.finish_reason:
            diffs.append(
                Difference(
                    "finish_reason",
                    f"finish_reason {json.dumps(finish)}, expected "
                    f"{json.dumps(expected.finish_reason)}",
                )
            )
    return Verdict(diffs, suspects(expected.quirks, (d.field for d in diffs)), answer)


def suspects(quirks: Iterable[str], fields: Iterable[str]) -> list[str]:
    """The quirks (in the recording's order) that can spoil any of ``fields``."""
    wanted = set(fields)
    if not wanted:
        return []
    if "crash" in wanted:  # a client that fell over may have tripped on anything
        return list(quirks)
    return [q for q in quirks if wanted & set(quirk_fields(q))]
