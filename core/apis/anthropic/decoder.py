"""Converter ``anthropic``: the Anthropic Messages streaming API.

Events: ``message_start`` (model, usage), ``content_block_start`` / ``content_block_delta`` /
``content_block_stop`` per block, ``message_delta`` (stop reason, usage), ``message_stop``,
``ping`` and a mid-stream ``error``. Blocks map as follows:

- ``text``: ``text_delta`` is content; ``citations_delta`` are collected into the text segment's
  ``citations`` metadata (normalized, :mod:`streamtool.core.model.citations`; as sent in
  ``raw_citations``).
- ``thinking``: ``thinking_delta`` is reasoning; the ``signature_delta`` is kept in the reasoning
  segment's metadata (``signature``; ``signatures`` as well when one segment holds several
  thinking blocks). ``redacted_thinking`` blocks (opaque ``data``, no deltas) give a reasoning
  segment whose metadata ``redacted_thinking`` lists the data.
- ``tool_use``: a tool call keyed in the shared tracker by its block index and its ``toolu_`` id;
  ``input_json_delta`` fragments are appended as they are (an empty first fragment and fragments
  cut mid-token included); a call that got no input fragments has the start block's ``input``
  (``{}``) as its arguments. ``content_block_stop`` closes it.
- ``server_tool_use`` / ``mcp_tool_use``: the same, with ``server_side`` metadata. The call is
  closed when its result block arrives: result blocks (``web_search_tool_result``,
  ``bash_code_execution_tool_result``... any block with a ``tool_use_id``) come whole in their
  ``content_block_start`` and are kept, unchanged, as the ``result`` metadata of the server tool's
  invocation. A result whose tool use is unknown is kept in the text segment's ``tool_results``.

Blocks delivered whole inside ``message_start.message.content`` (text, tool_use... with no
content_block events, as with programmatic tool calling) become segments and invocations like
streamed ones (quirk ``anthropic_content_in_message_start``).

Usage in ``message_start`` and ``message_delta`` is cumulative: each is passed on normalized and
the engine keeps the latest value per field (never a sum).
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from typing import Any, Literal

import msgspec

from ...converters.base import Converter
from ...converters.prose_runs import REASONING, TEXT, TOOL, ProseRuns
from ...converters.stream_head import take_head
from ...model import ChunkResponse, ToolCallDelta
from ...model.quirk_ids import QuirkId
from ...model.usage import normalize_usage
from ...model.vocabulary import ErrorKind
from ...pipeline.tracker import TrackedCall
from ...wire.sse import SSEEvent
from .citations import from_anthropic

_TOOL_BLOCKS = {"tool_use": False, "server_tool_use": True, "mcp_tool_use": True}

# the deltas of the hot path: delta type -> the field of its text
_HOT_FIELDS = {
    "input_json_delta": "partial_json",
    "text_delta": "text",
    "thinking_delta": "thinking",
}


class _Block:
    __slots__ = ("type", "server_side", "tool_input", "stopped")

    def __init__(self, block_type: str) -> None:
        self.type = block_type
        self.server_side = False
        self.tool_input: Any = None  # the ``input`` of a tool block's start event
        self.stopped = False


class AnthropicConverter(Converter):
    name = "anthropic"
    defers_takes = True  # the hot path checks that a call is announced and open: no length

    def __init__(self) -> None:
        super().__init__()
        # block index (or ("message_start", i) for blocks inside message_start) -> the block
        self._blocks: dict[Hashable, _Block] = {}
        self._runs = ProseRuns()
        self.started = False
        self.stopped = False  # message_stop seen
        self.failed = False  # an error event seen
        self.finish_reason: str | None = None
        self._model: str | None = None

    # -- events ----------------------------------------------------------------------------
    events = {
        "content_block_delta": "_block_delta",
        "content_block_start": "_block_start",
        "content_block_stop": "_block_stop",
        "message_start": "_message_start",
        "message_delta": "_message_delta",
        "message_stop": "_message_stop",
        "error": "_error_event",
        "message": "_whole_message",
    }
    ignored_events = frozenset({"ping"})

    def hot_event(self, obj: Any) -> tuple[Any, ...] | list[ChunkResponse] | None:
        """:meth:`hot_struct` of a ``content_block_delta`` read as a dict, whose delta's text,
        input fragment or thinking is a string (any other is left to :meth:`_block_delta`)."""
        if type(obj) is not dict or obj.get("type") != "content_block_delta":
            return None
        delta = obj.get("delta")
        if type(delta) is not dict:
            return None
        kind = delta.get("type")
        if type(kind) is not str:
            return None
        field = _HOT_FIELDS.get(kind)
        if field is None:
            return None
        text = delta.get(field)
        if type(text) is not str:
            return None
        index = obj.get("index")
        shaped = _HotBlockDelta(
            "content_block_delta",
            _HotDelta(kind, **{field: text}),
            index if type(index) is int else None,  # no block: no call's fragment
        )
        return self.hot_struct(shaped)

    def hot_struct(self, shaped: Any) -> tuple[Any, ...] | list[ChunkResponse] | None:
        """A ``content_block_delta`` read as a :class:`_HotBlockDelta` (decoded so, or made so by
        :meth:`hot_event`): an input fragment for an open tool block, or text or thinking, as
        ``(key, text)`` (what :meth:`_block_delta` does with them, without a chunk each: see
        :meth:`Converter.hot_event`); ``None`` having changed nothing for any other."""
        delta = shaped.delta
        kind = delta.type
        if kind == "input_json_delta":
            fragment = delta.partial_json
            index = shaped.index
            if not fragment or index is None:
                return None
            tracker = self.tracker
            call = tracker.find(index)
            if call is None or not call.announced or call.complete:
                return None
            return call, fragment
        if kind == "text_delta":
            text, run = delta.text, TEXT
        elif kind == "thinking_delta":
            text, run = delta.thinking, REASONING
        else:
            return None
        if not text:
            return None
        self._runs.enter(run)
        return run, text

    def on_object(self, obj: Any, event: SSEEvent) -> list[ChunkResponse]:
        if type(obj) is dict and obj.get("type") == "content_block_delta":
            return self._block_delta(obj)  # the commonest event, without the dispatch
        return super().on_object(obj, event)

    def _message_stop(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        self.stopped = True
        chunk = ChunkResponse(is_complete=True)
        deltas = self.tracker.complete_all()
        if deltas:
            chunk.tool_calls = deltas
        return [chunk]

    def _error_event(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        self.failed = True
        err = obj.get("error")
        if isinstance(err, dict):
            message = f"{err.get('type', 'error')}: {err.get('message', '')}"
        else:
            message = str(err if err is not None else obj)
        self.error(ErrorKind.PROVIDER_ERROR, f"error event in the stream: {message}", err)
        return []

    def _message_start(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        if self.started:
            self.quirk(
                QuirkId.ANTHROPIC_SECOND_MESSAGE_START, "a second message_start in one stream"
            )
        self.started = True
        message = obj.get("message")
        if not isinstance(message, dict):
            return []
        chunk = ChunkResponse()
        self._model = take_head(chunk, message.get("model"), message.get("usage"), self._model)
        content = message.get("content")
        if isinstance(content, list) and content:
            return [chunk, *self._whole_blocks(content)]
        return [chunk]

    def _whole_message(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        """An answer that was not streamed (``"type": "message"``, a JSON body): its blocks
        whole, in order, then its stop reason and its end."""
        self.started = True
        chunk = ChunkResponse()
        self._model = take_head(chunk, obj.get("model"), obj.get("usage"), self._model)
        out = [chunk]
        content = obj.get("content")
        for i, block in enumerate(content if isinstance(content, list) else []):
            if not isinstance(block, dict):
                self.error(
                    ErrorKind.BAD_PAYLOAD, "a message's content block is not an object", block
                )
                continue
            out.extend(self._start_block(("message", i), block))
            out.extend(self._stop_block(("message", i), whole=True))
        out.extend(self._message_delta({"delta": {"stop_reason": obj.get("stop_reason")}}))
        out.extend(self._message_stop(obj))
        return out

    def _message_delta(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        chunk = ChunkResponse()
        delta = obj.get("delta")
        if isinstance(delta, dict):
            reason = delta.get("stop_reason")
            if isinstance(reason, str) and reason:
                if self.finish_reason is None:
                    self.finish_reason = chunk.finish_reason = reason
                elif reason != self.finish_reason:
                    self.quirk(QuirkId.FINISH_DOUBLE, f"a second stop_reason {reason!r}")
        usage = normalize_usage(obj.get("usage"))
        if usage:
            chunk.usage = usage
        return [chunk]

    # -- blocks ----------------------------------------------------------------------------
    def _block_start(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        index = obj.get("index")
        block = obj.get("content_block")
        if not isinstance(block, dict) or type(index) is not int:
            self.error(
                ErrorKind.BAD_PAYLOAD, "content_block_start without a block or an index", obj
            )
            return []
        return self._start_block(index, block)

    def _whole_blocks(self, content: list[Any]) -> list[ChunkResponse]:
        """Blocks delivered whole inside ``message_start`` (no content_block events follow for
        them): each is started and stopped at once, under its own key."""
        self.quirk(
            QuirkId.ANTHROPIC_CONTENT_IN_MESSAGE_START,
            f"{len(content)} content block(s) delivered whole in message_start.message.content",
        )
        out: list[ChunkResponse] = []
        for i, block in enumerate(content):
            if not isinstance(block, dict):
                self.error(
                    ErrorKind.BAD_PAYLOAD, "a message_start content block is not an object", block
                )
                continue
            key = ("message_start", i)
            out.extend(self._start_block(key, block))
            out.extend(self._stop_block(key, whole=True))
        return out

    def _start_block(self, index: Hashable, block: dict[str, Any]) -> list[ChunkResponse]:
        block_type = str(block.get("type"))
        info = _Block(block_type)
        if index in self._blocks:
            self.quirk(
                QuirkId.ANTHROPIC_BLOCK_INDEX_REUSED, f"content block index {index} started twice"
            )
        self._blocks[index] = info
        if block_type == "text" or block_type == "thinking":
            return self._prose_start(block_type, block)
        if block_type == "redacted_thinking":
            values = self._runs.collect(REASONING, "redacted_thinking", block.get("data"))
            return [ChunkResponse(reasoning_metadata={"redacted_thinking": values})]
        if block_type in _TOOL_BLOCKS:
            return self._tool_start(index, info, block)
        if isinstance(block.get("tool_use_id"), str):
            return self._tool_result(block)
        self.quirk(QuirkId.ANTHROPIC_UNKNOWN_BLOCK, f"a content block of type {block_type!r}")
        values = self._runs.collect(TEXT, "blocks", block)
        return [ChunkResponse(content_metadata={"blocks": values})]

    def _prose_start(self, block_type: str, block: dict[str, Any]) -> list[ChunkResponse]:
        """A ``text`` or ``thinking`` block's start: the text (or thinking) it opens with, and
        its metadata (the text's citations, the thinking's signature)."""
        text = block.get(block_type)
        text = text if isinstance(text, str) else ""
        if block_type == "text":
            run = TEXT
            citations = block.get("citations")
            meta: dict[str, Any] | None = None
            if isinstance(citations, list) and citations:
                for citation in citations:
                    meta = self._citation(citation)
        else:
            run = REASONING
            signature = block.get("signature")
            meta = None
            if isinstance(signature, str) and signature:
                meta = self._runs.one_or_many(REASONING, "signature", signature)
        if text:
            self._runs.enter(run)
        elif not meta:
            return []
        if run is TEXT:
            return [ChunkResponse(content=text, content_metadata=meta)]
        return [ChunkResponse(reasoning=text or None, reasoning_metadata=meta)]

    def _tool_start(
        self, index: Hashable, info: _Block, block: dict[str, Any]
    ) -> list[ChunkResponse]:
        tracker = self.tracker
        call_id = block.get("id")
        call_id = call_id if isinstance(call_id, str) and call_id else None
        name = block.get("name")
        name = name if isinstance(name, str) else None
        info.server_side = _TOOL_BLOCKS[info.type]
        info.tool_input = block.get("input")
        call = tracker.open(index)
        if call_id is not None:
            tracker.alias(call_id, call)
        metadata: dict[str, Any] | None = None
        if info.server_side:
            metadata = {"server_side": True}
            server_name = block.get("server_name")
            if isinstance(server_name, str):
                metadata["server_name"] = server_name
        self._runs.enter(TOOL)
        delta = tracker.update(call, call_id=call_id, name=name, metadata=metadata, announce=True)
        return [ChunkResponse(tool_calls=[delta])] if delta is not None else []

    def _tool_result(self, block: dict[str, Any]) -> list[ChunkResponse]:
        call = self.tracker.find(block["tool_use_id"])
        if call is not None and not call.complete:
            delta = self.tracker.complete(call)
            if delta is not None:
                delta.metadata = {"result": block}
                return [ChunkResponse(tool_calls=[delta])]
        self.quirk(
            QuirkId.ANTHROPIC_ORPHAN_TOOL_RESULT,
            f"a {block.get('type')} block for tool use {block['tool_use_id']!r}, "
            "which is unknown or already closed",
        )
        values = self._runs.collect(TEXT, "tool_results", block)
        return [ChunkResponse(content_metadata={"tool_results": values})]

    def _block_delta(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        delta = obj.get("delta")
        if not isinstance(delta, dict):
            self.error(ErrorKind.BAD_PAYLOAD, "content_block_delta without a delta", obj)
            return []
        kind = delta.get("type")
        index = obj.get("index")
        # the hot path (hot_event, read first) took every input fragment for an announced,
        # open call and every text and thinking that is a string: what is left of them here
        if kind == "input_json_delta":
            call = self.tracker.find(index) if type(index) is int else None
            if call is None:
                self.quirk(
                    QuirkId.ANTHROPIC_ORPHAN_INPUT_JSON,
                    f"input_json_delta for block {index!r}, which is not a tool block",
                )
                return []
            fragment = delta.get("partial_json")
            if type(fragment) is not str or not fragment:
                return []
            out = self.tracker.append_exact(call, fragment)  # a call not announced, or closed
            return [ChunkResponse(tool_calls=[out])] if out is not None else []
        if kind == "text_delta" or kind == "thinking_delta":
            return []  # no text, or no string
        if kind == "signature_delta":
            signature = delta.get("signature")
            if not isinstance(signature, str):
                return []
            info = self._blocks.get(index) if type(index) is int else None
            if info is not None and info.type != "thinking":
                self.quirk(
                    QuirkId.ANTHROPIC_SIGNATURE_ON_OTHER_BLOCK,
                    f"a signature_delta on a {info.type} block",
                )
            meta = self._runs.one_or_many(REASONING, "signature", signature)
            return [ChunkResponse(reasoning_metadata=meta)]
        if kind == "citations_delta":
            return [ChunkResponse(content_metadata=self._citation(delta.get("citation")))]
        self.quirk(QuirkId.ANTHROPIC_UNKNOWN_DELTA, f"a content_block_delta of type {kind!r}")
        return []

    def _citation(self, citation: Any) -> dict[str, Any]:
        """The text segment's citations so far: normalized, and as the provider sent them."""
        meta = {"raw_citations": self._runs.collect(TEXT, "raw_citations", citation)}
        normalized = from_anthropic(citation)
        if normalized is not None:
            meta["citations"] = self._runs.collect(TEXT, "citations", normalized)
        return meta

    def _block_stop(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        index = obj.get("index")
        if type(index) is not int or index not in self._blocks:
            self.quirk(
                QuirkId.ANTHROPIC_ORPHAN_BLOCK_STOP,
                f"content_block_stop for unknown block {index!r}",
            )
            return []
        return self._stop_block(index)

    def _stop_block(self, index: Hashable, whole: bool = False) -> list[ChunkResponse]:
        info = self._blocks[index]
        info.stopped = True
        if info.type not in _TOOL_BLOCKS:
            return []
        call = self.tracker.find(index)
        if call is None or call.complete:
            return []
        deltas: list[ToolCallDelta] = []
        fill = self._input_fallback(call, info, quiet=whole)
        if fill is not None:
            deltas.append(fill)
        if not info.server_side:  # a server tool stays open until its result block
            done = self.tracker.complete(call)
            if done is not None:
                deltas.append(done)
        return [ChunkResponse(tool_calls=deltas)] if deltas else []

    def _input_fallback(
        self, call: TrackedCall, info: _Block, quiet: bool = False
    ) -> ToolCallDelta | None:
        """A tool block that got no input fragments: its arguments are the start's ``input``."""
        if call.arguments or info.tool_input is None:
            return None
        if info.tool_input != {} and not quiet:
            self.quirk(
                QuirkId.ANTHROPIC_TOOL_INPUT_IN_START,
                "tool input given whole in content_block_start, without input_json_delta",
            )
        text = json.dumps(info.tool_input, ensure_ascii=False)
        return self.tracker.append_exact(call, text)

    # -- end -------------------------------------------------------------------------------
    def on_finish(self) -> list[ChunkResponse]:
        self.report_unknown_events()
        deltas: list[ToolCallDelta] = []
        if not self.stopped:
            # server tools whose block was closed but whose result never came are still closed
            for index, info in self._blocks.items():
                if info.server_side and info.stopped:
                    call = self.tracker.find(index)
                    if call is not None and not call.complete:
                        done = self.tracker.complete(call)
                        if done is not None:
                            deltas.append(done)
            if not self.failed and self.started:
                self.truncated("message_stop")
        return [ChunkResponse(tool_calls=deltas)] if deltas else []


# The hot shape of feed_many (AnthropicConverter.hot_struct): a content_block_delta whose index
# is an integer (or absent) and whose delta's text fields are strings; other fields are skipped.
# hot_event makes one of a dict of that shape.
class _HotDelta(msgspec.Struct):
    type: str
    text: str = ""
    thinking: str = ""
    partial_json: str = ""


class _HotBlockDelta(msgspec.Struct):
    type: Literal["content_block_delta"]
    delta: _HotDelta
    index: int | None = None


AnthropicConverter.hot_decoder = msgspec.json.Decoder(_HotBlockDelta)
