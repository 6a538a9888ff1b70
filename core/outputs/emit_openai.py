"""Re-encode a replayed stream as a standard OpenAI chat-completions SSE stream. Sans-IO.

:class:`OpenAISSEEmitter` is a sink for the replay engine's items (segment events and tool
invocations), so it works behind any converter and any parser:

- text segments become ``content`` deltas (a refusal: ``refusal`` deltas), reasoning segments
  ``reasoning_content`` deltas (the field vLLM, DeepSeek and others use);
- each tool invocation becomes a ``tool_calls`` delta (``index``, ``id``, ``type``,
  ``function``), sent when the call is whole;
- an error the provider reported in the stream (``provider_error``) becomes an ``error`` object
  in its own chunk, where it happened (as OpenAI and OpenRouter send them inside a 200 stream);
- ``finish()`` adds the finish chunk (the finish class of :mod:`streamtool.core.finish` as an
  OpenAI finish reason: ``tool_calls`` when the client has calls to run), a usage chunk when usage
  is known (``choices: []``, as with ``stream_options.include_usage``) and ``data: [DONE]``. A
  stream that was cut off (``truncated``) stays cut off: no finish chunk and no ``[DONE]``; a
  stream that ended on an error without a finish reason gets no finish chunk.

The completion id and ``created`` are given by the caller: nothing random. Quirks and other errors
are not part of the emitted stream (an OpenAI stream has no place for them). Server-side tool
invocations (run by the provider, not the client) are not sent as tool calls.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from ..finish import OPENAI_CHAT_REASONS, finish_class
from ..model import SegmentEvent, SegmentEventType, SegmentType, StreamError, ToolInvocation
from ..records import Header


def openai_usage(usage: dict[str, int]) -> dict[str, Any]:
    """Normalized usage (core/usage.py keys) as an OpenAI chat-completions usage object."""
    out: dict[str, Any] = {}
    if "input_tokens" in usage:
        out["prompt_tokens"] = usage["input_tokens"]
    if "output_tokens" in usage:
        out["completion_tokens"] = usage["output_tokens"]
    if "total_tokens" in usage:
        out["total_tokens"] = usage["total_tokens"]
    elif "input_tokens" in usage and "output_tokens" in usage:
        out["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
    if "cached_input_tokens" in usage:
        out["prompt_tokens_details"] = {"cached_tokens": usage["cached_input_tokens"]}
    if "reasoning_tokens" in usage:
        out["completion_tokens_details"] = {"reasoning_tokens": usage["reasoning_tokens"]}
    return out


def stream_identity(header: Header | None) -> tuple[str, int]:
    """A deterministic completion id and ``created`` time for a recording.

    The id hashes the header (the same recording always gets the same id); ``created`` is the
    header's ``recorded_at`` as Unix seconds, or 0 when unknown.
    """
    record = header.to_record() if header is not None else {}
    digest = hashlib.sha256(
        json.dumps(record, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8")
    ).hexdigest()
    created = 0
    recorded_at = header.recorded_at if header is not None else None
    if isinstance(recorded_at, str):
        try:
            created = int(datetime.fromisoformat(recorded_at.replace("Z", "+00:00")).timestamp())
        except ValueError:
            created = 0
    return f"chatcmpl-st{digest[:24]}", created


class OpenAISSEEmitter:
    """Engine items in, OpenAI chat-completions SSE text out: ``feed(items)``, ``finish()``."""

    def __init__(
        self, *, completion_id: str = "chatcmpl-streamtool", created: int = 0, model: str = ""
    ) -> None:
        self.completion_id = completion_id
        self.created = created
        self.model = model
        self.tool_calls = 0  # tool calls sent so far
        self.errors_sent = 0  # provider errors sent as error chunks
        self.truncated = False  # the replayed stream was cut off
        self.finished = False
        self._started = False
        self._kinds: dict[str, SegmentType] = {}
        self._refusals: set[str] = set()  # text segments that are a refusal (sent as refusal)

    # -- input -----------------------------------------------------------------------------
    def feed(self, items: Iterable[object]) -> str:
        """SSE text for these engine items (``""`` when they add nothing to an OpenAI stream)."""
        parts: list[str] = []
        kinds = self._kinds
        for item in items:
            if isinstance(item, SegmentEvent):
                event_type = item.event_type
                if event_type is SegmentEventType.CONTENT:
                    if not item.delta:
                        continue
                    kind = kinds.get(item.segment_id)
                    if kind is SegmentType.TEXT:
                        field = "refusal" if item.segment_id in self._refusals else "content"
                        self._delta(parts, {field: item.delta})
                    elif kind is SegmentType.REASONING:
                        self._delta(parts, {"reasoning_content": item.delta})
                elif event_type is SegmentEventType.START:
                    assert item.segment_type is not None
                    kinds[item.segment_id] = item.segment_type
                    if item.metadata and item.metadata.get("refusal") is True:
                        self._refusals.add(item.segment_id)
                else:
                    kinds.pop(item.segment_id, None)
            elif isinstance(item, ToolInvocation):
                if not item.server_side:
                    self._tool_call(parts, item)
            elif isinstance(item, StreamError):
                if item.kind == "provider_error":
                    self._error(parts, item)
                elif item.kind == "truncated":
                    self.truncated = True
        return "".join(parts)

    def finish(
        self,
        *,
        finish_reason: str | None = None,
        usage: dict[str, int] | None = None,
        finish_class: str | None = None,
    ) -> str:
        """The closing chunks: finish reason, usage (when known), ``data: [DONE]``.

        ``finish_class`` is the replay's (computed from ``finish_reason`` and the calls sent when
        not given)."""
        if self.finished:
            return ""
        self.finished = True
        parts: list[str] = []
        self._start(parts)
        cls = finish_class or _class_of(finish_reason, self.tool_calls > 0, self.errors_sent > 0)
        reason: str | None = None
        if not self.truncated and (finish_reason is not None or cls == "tool_calls"):
            reason = OPENAI_CHAT_REASONS.get(cls)
            if reason is None and cls == "unknown":
                reason = finish_reason  # a reason no table knows passes through unchanged
        if reason is not None:
            parts.append(self._event([{"index": 0, "delta": {}, "finish_reason": reason}]))
        if usage:
            mapped = openai_usage(usage)
            if mapped:
                parts.append(self._event([], usage=mapped))
        if not self.truncated:
            parts.append("data: [DONE]\n\n")
        return "".join(parts)

    # -- output ----------------------------------------------------------------------------
    def _event(self, choices: list[dict[str, Any]], usage: dict[str, Any] | None = None) -> str:
        chunk: dict[str, Any] = {
            "id": self.completion_id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": choices,
        }
        if usage is not None:
            chunk["usage"] = usage
        return "data: " + json.dumps(chunk, ensure_ascii=False, separators=(",", ":")) + "\n\n"

    def _start(self, parts: list[str]) -> None:
        if not self._started:
            self._started = True
            parts.append(self._choice({"role": "assistant", "content": ""}))

    def _choice(self, delta: dict[str, Any]) -> str:
        return self._event([{"index": 0, "delta": delta, "finish_reason": None}])

    def _delta(self, parts: list[str], delta: dict[str, Any]) -> None:
        self._start(parts)
        parts.append(self._choice(delta))

    def _error(self, parts: list[str], error: StreamError) -> None:
        detail = error.detail
        if isinstance(detail, dict) and isinstance(detail.get("message"), str):
            body = {k: v for k, v in detail.items() if k in ("message", "type", "code", "param")}
        else:
            body = {"message": error.message}
        self.errors_sent += 1
        self._start(parts)
        parts.append("data: " + json.dumps({"error": body}, ensure_ascii=False) + "\n\n")

    def _tool_call(self, parts: list[str], invocation: ToolInvocation) -> None:
        if invocation.arguments is not None:
            arguments = json.dumps(invocation.arguments, ensure_ascii=False)
        else:
            arguments = invocation.raw_arguments or ""
        index = self.tool_calls
        self.tool_calls += 1
        head = {
            "index": index,
            "id": invocation.id,
            "type": "function",
            "function": {"name": invocation.name, "arguments": ""},
        }
        self._delta(parts, {"tool_calls": [head]})
        if arguments:
            self._delta(
                parts, {"tool_calls": [{"index": index, "function": {"arguments": arguments}}]}
            )


def _class_of(finish_reason: str | None, client_calls: bool, errors: bool) -> str:
    return finish_class(finish_reason, client_calls=client_calls, errors=errors)
