"""Re-encode a replayed stream as a standard OpenAI chat-completions SSE stream. Sans-IO.

:class:`OpenAISSEEmitter` is a sink for the replay engine's items (segment events and tool
invocations), so it works behind any converter and any parser:

- text segments become ``content`` deltas, reasoning segments ``reasoning_content`` deltas (the
  field vLLM, DeepSeek and others use);
- each tool invocation becomes a ``tool_calls`` delta (``index``, ``id``, ``type``,
  ``function``), sent when the call is whole;
- ``finish()`` adds the finish chunk (``"tool_calls"`` when calls were sent), a usage chunk when
  usage is known (``choices: []``, as with ``stream_options.include_usage``) and ``data: [DONE]``.

The completion id and ``created`` are given by the caller: nothing random. Quirks and errors are
not part of the emitted stream (an OpenAI stream has no place for them). Server-side tool
invocations (run by the provider, not the client) are not sent as tool calls.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from ..model import SegmentEvent, SegmentEventType, SegmentType, ToolInvocation
from ..recording.format import Header

# finish reasons of other APIs, as an OpenAI client knows them; others pass through unchanged
FINISH_REASONS = {
    "stop": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "STOP": "stop",
    "completed": "stop",
    "length": "length",
    "max_tokens": "length",
    "MAX_TOKENS": "length",
    "incomplete": "length",
    "tool_calls": "tool_calls",
    "tool_use": "tool_calls",
    "function_call": "function_call",
    "content_filter": "content_filter",
    "refusal": "content_filter",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "BLOCKLIST": "content_filter",
    "SPII": "content_filter",
}


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
        self.finished = False
        self._started = False
        self._kinds: dict[str, SegmentType] = {}

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
                        self._delta(parts, {"content": item.delta})
                    elif kind is SegmentType.REASONING:
                        self._delta(parts, {"reasoning_content": item.delta})
                elif event_type is SegmentEventType.START:
                    assert item.segment_type is not None
                    kinds[item.segment_id] = item.segment_type
                else:
                    kinds.pop(item.segment_id, None)
            elif isinstance(item, ToolInvocation) and not item.server_side:
                self._tool_call(parts, item)
        return "".join(parts)

    def finish(
        self, *, finish_reason: str | None = None, usage: dict[str, int] | None = None
    ) -> str:
        """The closing chunks: finish reason, usage (when known), ``data: [DONE]``."""
        if self.finished:
            return ""
        self.finished = True
        parts: list[str] = []
        self._start(parts)
        reason = "tool_calls" if self.tool_calls else None
        if reason is None and finish_reason is not None:
            reason = FINISH_REASONS.get(finish_reason, finish_reason)
        if reason is not None:
            parts.append(self._event([{"index": 0, "delta": {}, "finish_reason": reason}]))
        if usage:
            mapped = openai_usage(usage)
            if mapped:
                parts.append(self._event([], usage=mapped))
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
