"""Converter ``bedrock-converse``: Amazon Bedrock's ``ConverseStream``
(``/model/{id}/converse-stream``), in AWS's binary event-stream framing
(:mod:`streamtool.core.wire.eventstream`): each frame is an event named by its ``:event-type``
header with a JSON payload, or an exception (``exception:throttlingException``...) whose payload
holds its ``message``.

- ``messageStart`` (role); ``contentBlockStart`` names a tool use (``toolUseId``, ``name``) at
  a ``contentBlockIndex``; text blocks have no start event (quirk
  ``bedrock_text_block_without_start``);
- ``contentBlockDelta``: ``text``, ``toolUse.input`` (argument pieces, appended as they are),
  ``reasoningContent`` (``text``; ``signature`` and ``redactedContent`` kept in the reasoning
  segment's metadata), ``citation`` (kept in the text segment's ``raw_citations``);
- ``contentBlockStop`` closes a tool use; ``messageStop`` gives the ``stopReason``;
- ``metadata`` (after ``messageStop``) gives ``usage`` (its ``metrics``, the latency Bedrock
  measured, are not part of the answer: not shown);
- exception frames mid-stream (``throttlingException``, ``modelStreamErrorException``,
  ``validationException``, ``internalServerException``, ``serviceUnavailableException``) are
  ``provider_error`` entries.

Every payload carries a ``p`` field of padding (letters of a random length, so that the size of
an event does not tell its content): it is ignored.

The events are read by :class:`ConverseEvents`, which ``bedrock-invoke``
(:mod:`streamtool.core.apis.bedrock_invoke.decoder`) shares for Amazon Nova's events; so are
:func:`bedrock_usage` (with InvokeModel's ``amazon-bedrock-invocationMetrics``),
:func:`exception_message` and :func:`path_model`.
"""

from __future__ import annotations

import json
from typing import Any

from ...converters.base import Converter
from ...converters.prose_runs import REASONING, TEXT, TOOL, ProseRuns
from ...model import ChunkResponse, ToolCallDelta
from ...model.quirk_ids import QuirkId
from ...model.records import Header
from ...model.vocabulary import ErrorKind
from ...wire.sse import SSEEvent

_USAGE = {
    "inputTokens": "input_tokens",
    "outputTokens": "output_tokens",
    "totalTokens": "total_tokens",
    "cacheReadInputTokens": "cached_input_tokens",
    "cacheWriteInputTokens": "cache_creation_input_tokens",
    # InvokeModelWithResponseStream's amazon-bedrock-invocationMetrics
    "inputTokenCount": "input_tokens",
    "outputTokenCount": "output_tokens",
}


def bedrock_usage(raw: Any) -> dict[str, int] | None:
    """Bedrock's usage (``TokenUsage`` or invocation metrics) as the normalized keys."""
    if not isinstance(raw, dict):
        return None
    out = {_USAGE[k]: v for k, v in raw.items() if k in _USAGE and type(v) is int}
    return out or None


def exception_message(kind: str, data: str) -> tuple[str, Any]:
    """The message of an exception frame (``exception:TYPE`` / ``error:CODE``) and its payload."""
    try:
        payload: Any = json.loads(data) if data.strip() else None
    except ValueError:
        payload = data
    message = payload.get("message") if isinstance(payload, dict) else None
    if not isinstance(message, str):
        message = data
    name = kind.partition(":")[2]
    return f"{name}: {message}", payload


class ConverseEvents:
    """The reading of Converse events, shared by ``bedrock-converse`` and the Nova events of
    ``bedrock-invoke``: each method takes one event's payload and gives its chunks."""

    def __init__(self, converter: Converter) -> None:
        self.c = converter
        self.runs = ProseRuns()
        self.started = False
        self.stopped = False
        self.finish_reason: str | None = None
        self.tool_blocks: set[int] = set()
        self.seen_blocks: set[int] = set()
        self.padded = False

    def feed(self, kind: str, obj: dict[str, Any]) -> list[ChunkResponse]:
        if "p" in obj and not self.padded:
            self.padded = True
            self.c.quirk(
                QuirkId.BEDROCK_PADDING_FIELD,
                "events carry a 'p' field of padding beside their members",
            )
        if kind == "contentBlockDelta":
            return self.delta(obj)
        if kind == "contentBlockStart":
            return self.start(obj)
        if kind == "contentBlockStop":
            return self.stop(obj)
        if kind == "messageStart":
            self.started = True
            model = self.c.path_model
            return [ChunkResponse(model=model)] if model else []
        if kind == "messageStop":
            return self.message_stop(obj)
        if kind == "metadata":
            return self.metadata(obj)
        self.c.unknown_event(kind)
        return []

    def _index(self, obj: dict[str, Any]) -> int | None:
        index = obj.get("contentBlockIndex")
        if type(index) is not int:
            self.c.error(
                ErrorKind.BAD_PAYLOAD, "a content block event without contentBlockIndex", obj
            )
            return None
        return index

    def start(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        index = self._index(obj)
        start = obj.get("start")
        if index is None or not isinstance(start, dict):
            return []
        self.seen_blocks.add(index)
        tool = start.get("toolUse")
        if not isinstance(tool, dict):
            # toolResult or image starts: kept in the text segment, as sent
            values = self.runs.collect(TEXT, "blocks", start)
            return [ChunkResponse(content_metadata={"blocks": values})]
        tracker = self.c.tracker
        call_id = tool.get("toolUseId")
        call_id = call_id if isinstance(call_id, str) and call_id else None
        name = tool.get("name")
        call = tracker.open(index)
        if call_id is not None:
            tracker.alias(call_id, call)
        self.tool_blocks.add(index)
        self.runs.enter(TOOL)
        metadata = {"server_side": True} if tool.get("type") == "server_tool_use" else None
        delta = tracker.update(
            call,
            call_id=call_id,
            name=name if isinstance(name, str) else None,
            metadata=metadata,
            announce=True,
        )
        return [ChunkResponse(tool_calls=[delta])] if delta is not None else []

    def delta(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        index = self._index(obj)
        delta = obj.get("delta")
        if index is None or not isinstance(delta, dict):
            return []
        if index not in self.seen_blocks:
            self.seen_blocks.add(index)
            if "text" in delta or "reasoningContent" in delta:
                self.c.quirk(
                    QuirkId.BEDROCK_TEXT_BLOCK_WITHOUT_START,
                    "text and reasoning blocks begin with contentBlockDelta, without "
                    "contentBlockStart",
                )
        text = delta.get("text")
        if isinstance(text, str):
            if not text:
                return []
            self.runs.enter(TEXT)
            return [ChunkResponse(content=text)]
        tool = delta.get("toolUse")
        if isinstance(tool, dict):
            call = self.c.tracker.find(index)
            if call is None:
                self.c.quirk(
                    QuirkId.BEDROCK_ORPHAN_TOOL_INPUT,
                    f"toolUse input for content block {index}, which no toolUse started",
                )
                return []
            piece = tool.get("input")
            if not isinstance(piece, str) or not piece:
                return []
            out = self.c.tracker.append_exact(call, piece)
            return [ChunkResponse(tool_calls=[out])] if out is not None else []
        reasoning = delta.get("reasoningContent")
        if isinstance(reasoning, dict):
            return self.reasoning(reasoning)
        citation = delta.get("citation")
        if citation is not None:
            values = self.runs.collect(TEXT, "raw_citations", citation)
            return [ChunkResponse(content_metadata={"raw_citations": values})]
        self.c.quirk(
            QuirkId.BEDROCK_UNKNOWN_DELTA,
            f"a contentBlockDelta holding {', '.join(sorted(delta)) or 'nothing'}",
        )
        return []

    def reasoning(self, reasoning: dict[str, Any]) -> list[ChunkResponse]:
        text = reasoning.get("text")
        if isinstance(text, str) and text:
            self.runs.enter(REASONING)
            return [ChunkResponse(reasoning=text)]
        signature = reasoning.get("signature")
        if isinstance(signature, str) and signature:
            meta = self.runs.one_or_many(REASONING, "signature", signature)
            return [ChunkResponse(reasoning_metadata=meta)]
        redacted = reasoning.get("redactedContent")
        if isinstance(redacted, str) and redacted:
            values = self.runs.collect(REASONING, "redacted_content", redacted)
            return [ChunkResponse(reasoning_metadata={"redacted_content": values})]
        return []

    def stop(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        index = self._index(obj)
        if index is None or index not in self.tool_blocks:
            return []
        call = self.c.tracker.find(index)
        if call is None or call.complete:
            return []
        deltas: list[ToolCallDelta] = []
        if not call.arguments:
            # a tool use without input pieces takes no arguments: "{}" as Converse returns it
            fill = self.c.tracker.append_exact(call, "{}")
            if fill is not None:
                deltas.append(fill)
        done = self.c.tracker.complete(call)
        if done is not None:
            deltas.append(done)
        return [ChunkResponse(tool_calls=deltas)] if deltas else []

    def message_stop(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        self.stopped = True
        chunk = ChunkResponse(is_complete=True)
        reason = obj.get("stopReason")
        if isinstance(reason, str) and reason:
            self.finish_reason = chunk.finish_reason = reason
        extra = obj.get("additionalModelResponseFields")
        if extra:
            chunk.content_metadata = {"additional_model_response_fields": extra}
        deltas = self.c.tracker.complete_all()
        if deltas:
            chunk.tool_calls = deltas
        return [chunk]

    def metadata(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        chunk = ChunkResponse()
        usage = bedrock_usage(obj.get("usage"))
        if usage:
            chunk.usage = usage
        if not self.stopped:
            self.c.quirk(
                QuirkId.BEDROCK_METADATA_BEFORE_STOP, "a metadata event before messageStop"
            )
        return [chunk]


def path_model(header: Header) -> str | None:
    """The model a Bedrock request names in its path (``/model/{id}/converse-stream``)."""
    from urllib.parse import unquote, urlsplit

    from ...plugins import model_in_path

    url = header.url
    return model_in_path(unquote(urlsplit(url).path)) if url else None


class BedrockConverseConverter(Converter):
    name = "bedrock-converse"

    def __init__(self) -> None:
        super().__init__()
        self.converse = ConverseEvents(self)
        self.failed = False

    def use_header(self, header: Header) -> None:
        super().use_header(header)
        self.path_model = path_model(header)

    def on_payload(self, obj: dict[str, Any], event: SSEEvent) -> list[ChunkResponse]:
        kind = event.event
        if kind is None:
            kind = next(iter(obj), None) if len(obj) == 1 else None
            if kind is None or not isinstance(obj.get(kind), dict):
                return self.other_event(None, obj)
            obj = obj[kind]  # an event as JSON, {"contentBlockDelta": {...}}
        if kind.startswith(("exception:", "error:")):
            return self.exception(kind, event.data)
        return self.converse.feed(kind, obj)

    def on_event(self, event: SSEEvent) -> list[ChunkResponse]:
        kind = event.event or ""
        if kind.startswith(("exception:", "error:")):
            return self.exception(kind, event.data)
        return super().on_event(event)

    def exception(self, kind: str, data: str) -> list[ChunkResponse]:
        self.failed = True
        message, payload = exception_message(kind, data)
        self.error(ErrorKind.PROVIDER_ERROR, f"exception in the stream: {message}", payload)
        return []

    def on_finish(self) -> list[ChunkResponse]:
        self.report_unknown_events()
        if not self.converse.stopped and not self.failed and not self.http_error:
            self.truncated("messageStop")
        return []
