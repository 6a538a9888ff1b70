"""Converter ``cohere``: Cohere's v2 chat stream (``POST /v2/chat`` with ``stream: true``).

SSE events whose ``type`` (also the SSE event name) is one of:

- ``message-start`` (the message id); ``message-end``: ``delta.finish_reason`` (``COMPLETE``,
  ``TOOL_CALL``, ``MAX_TOKENS``, ``STOP_SEQUENCE``, ``ERROR``...), ``delta.usage``
  (``tokens`` and ``billed_units``) and, on a failure, ``delta.error`` (an ``errors`` entry and
  quirk ``cohere_error_in_message_end``);
- ``content-start`` / ``content-delta`` / ``content-end`` per content item:
  ``delta.message.content.text`` is text, ``.thinking`` (a ``thinking`` item) reasoning;
  ``logprobs`` on a delta are kept in the text segment's metadata;
- ``tool-plan-delta``: ``delta.message.tool_plan``, the model's plan before its calls, is a
  reasoning segment (metadata ``tool_plan: true``), never dropped;
- ``tool-call-start`` (``id``, ``function.name`` and the first ``arguments``), ``tool-call-delta``
  (argument pieces, appended as they are), ``tool-call-end`` per call index;
- ``citation-start`` (``start``, ``end``, ``text``, ``sources``) / ``citation-end``: kept in the
  text segment's ``citations`` (normalized) and ``raw_citations``;
- ``debug`` is ignored.
"""

from __future__ import annotations

from typing import Any

from ...converters.base import Converter
from ...converters.prose_runs import REASONING, TEXT, TOOL, ProseRuns
from ...model import ChunkResponse
from ...model.quirk_ids import QuirkId
from ...model.vocabulary import ErrorKind
from ...wire.sse import SSEEvent


def _message(obj: dict[str, Any]) -> dict[str, Any]:
    delta = obj.get("delta")
    message = delta.get("message") if isinstance(delta, dict) else None
    return message if isinstance(message, dict) else {}


def cohere_usage(raw: Any) -> dict[str, int] | None:
    """``usage.tokens`` (what the model read and wrote), else ``usage.billed_units``."""
    if not isinstance(raw, dict):
        return None
    for key in ("tokens", "billed_units"):
        counts = raw.get(key)
        if isinstance(counts, dict):
            out = {}
            for name in ("input_tokens", "output_tokens"):
                value = counts.get(name)
                if isinstance(value, int | float) and not isinstance(value, bool):
                    out[name] = int(value)
            if out:
                return out
    return None


class CohereConverter(Converter):
    name = "cohere"

    events = {
        "message-start": "_message_start",
        "content-start": "_content",
        "content-delta": "_content",
        "content-end": "_ignore",
        "tool-plan-delta": "_tool_plan",
        "tool-call-start": "_call_start",
        "tool-call-delta": "_call_delta",
        "tool-call-end": "_call_end",
        "citation-start": "_citation",
        "citation-end": "_ignore",
        "message-end": "_message_end",
    }
    ignored_events = frozenset({"debug"})

    def __init__(self) -> None:
        super().__init__()
        self._runs = ProseRuns()
        self.started = False
        self.ended = False
        self.failed = False

    def _ignore(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        return []

    def _message_start(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        self.started = True
        return []

    def _content(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        content = _message(obj).get("content")
        if not isinstance(content, dict):
            return []
        chunk = ChunkResponse()
        text = content.get("text")
        thinking = content.get("thinking")
        if isinstance(thinking, str) and thinking:
            self._runs.enter(REASONING)
            chunk.reasoning = thinking
        if isinstance(text, str) and text:
            self._runs.enter(TEXT)
            chunk.content = text
        logprobs = obj.get("logprobs")
        if logprobs is not None:
            chunk.content_metadata = {
                "logprobs": self._runs.collect(TEXT, "logprobs", logprobs),
            }
        if chunk.content or chunk.reasoning or chunk.content_metadata:
            return [chunk]
        return []

    def _tool_plan(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        plan = _message(obj).get("tool_plan")
        if not isinstance(plan, str) or not plan:
            return []
        self._runs.enter(REASONING)
        return [ChunkResponse(reasoning=plan, reasoning_metadata={"tool_plan": True})]

    def _call_start(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        index = obj.get("index")
        call_info = _message(obj).get("tool_calls")
        if type(index) is not int or not isinstance(call_info, dict):
            self.error(
                ErrorKind.BAD_PAYLOAD, "tool-call-start without an index or a tool call", obj
            )
            return []
        tracker = self.tracker
        call_id = call_info.get("id")
        call_id = call_id if isinstance(call_id, str) and call_id else None
        function = call_info.get("function")
        function = function if isinstance(function, dict) else {}
        name = function.get("name")
        deltas = []
        earlier = tracker.find(("call", index))
        if earlier is not None and not earlier.complete:
            closed = tracker.complete(earlier)  # the index is used again: the earlier call ended
            if closed is not None:
                deltas.append(closed)
        call = tracker.open(("call", index))
        if call_id is not None:
            tracker.alias(call_id, call)
        self._runs.enter(TOOL)
        first = tracker.update(
            call, call_id=call_id, name=name if isinstance(name, str) else None, announce=True
        )
        if first is not None:
            deltas.append(first)
        arguments = function.get("arguments")
        if isinstance(arguments, str) and arguments:
            more = tracker.append_exact(call, arguments)
            if more is not None:
                deltas.append(more)
        return [ChunkResponse(tool_calls=deltas)] if deltas else []

    def _call_delta(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        index = obj.get("index")
        call = self.tracker.find(("call", index)) if type(index) is int else None
        if call is None:
            self.quirk(
                QuirkId.COHERE_ORPHAN_TOOL_CALL_DELTA,
                f"tool-call-delta for index {index!r}, which no tool-call-start opened",
            )
            return []
        info = _message(obj).get("tool_calls")
        function = info.get("function") if isinstance(info, dict) else None
        piece = function.get("arguments") if isinstance(function, dict) else None
        if not isinstance(piece, str) or not piece:
            return []
        out = self.tracker.append_exact(call, piece)
        return [ChunkResponse(tool_calls=[out])] if out is not None else []

    def _call_end(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        index = obj.get("index")
        call = self.tracker.find(("call", index)) if type(index) is int else None
        if call is None or call.complete:
            return []
        deltas = []
        if not call.arguments:
            fill = self.tracker.append_exact(call, "{}")  # a call that takes no arguments
            if fill is not None:
                deltas.append(fill)
        done = self.tracker.complete(call)
        if done is not None:
            deltas.append(done)
        return [ChunkResponse(tool_calls=deltas)] if deltas else []

    def _citation(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        citation = _message(obj).get("citations")
        if not isinstance(citation, dict):
            return []
        meta = {"raw_citations": self._runs.collect(TEXT, "raw_citations", citation)}
        normalized = _normalize_citation(citation)
        for one in normalized:
            meta["citations"] = self._runs.collect(TEXT, "citations", one)
        return [ChunkResponse(content_metadata=meta)]

    def _message_end(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        self.ended = True
        delta = obj.get("delta")
        delta = delta if isinstance(delta, dict) else {}
        chunk = ChunkResponse(is_complete=True)
        reason = delta.get("finish_reason")
        if isinstance(reason, str) and reason:
            chunk.finish_reason = reason
        usage = cohere_usage(delta.get("usage"))
        if usage:
            chunk.usage = usage
        error = delta.get("error")
        if isinstance(error, str) and error:
            self.failed = True
            self.quirk(QuirkId.COHERE_ERROR_IN_MESSAGE_END, "delta.error in message-end")
            self.error(ErrorKind.PROVIDER_ERROR, f"error in message-end: {error}", delta)
        deltas = self.tracker.complete_all()
        if deltas:
            chunk.tool_calls = deltas
        return [chunk]

    def on_unparsed(self, event: SSEEvent) -> bool:
        return event.data.strip() == "[DONE]"

    def on_finish(self) -> list[ChunkResponse]:
        self.report_unknown_events()
        if not self.ended and self.started:
            self.truncated("message-end")
        return []


def _normalize_citation(citation: dict[str, Any]) -> list[dict[str, Any]]:
    """A Cohere citation as the normalized citations, one per source (core/model/citations.py)."""
    from ...model.citations import KEYS

    base: dict[str, Any] = {}
    for key, value in (
        ("start", citation.get("start")),
        ("end", citation.get("end")),
        ("cited_text", citation.get("text")),
    ):
        if value is not None and value != "":
            base[key] = value
    sources = citation.get("sources")
    out = []
    if isinstance(sources, list):
        for source in sources:
            if not isinstance(source, dict):
                continue
            one = dict(base)
            document = source.get("document")
            if isinstance(document, dict):
                for key in ("url", "title"):
                    if isinstance(document.get(key), str) and document[key]:
                        one[key] = document[key]
            out.append({k: one[k] for k in KEYS if k in one})
    if not out and base:
        out.append(base)
    return out
