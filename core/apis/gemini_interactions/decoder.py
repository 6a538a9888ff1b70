"""Converter ``gemini-interactions``: Google's Interactions API (``POST /v1beta/interactions``
with ``stream: true``).

Each SSE event's data is a JSON object named by its ``event_type`` (also the SSE event name). Two
generations of events are read, as the API reference documents them:

- the step events (current): ``interaction.created`` (the interaction's id, model, status),
  ``interaction.status_update`` (``status``, ``usage``), ``step.start`` (``index`` and the
  ``step``, typed), ``step.delta`` (``index`` and a typed ``delta``), ``step.stop`` (``index``,
  optional ``usage``), ``interaction.completed`` (the final status and ``usage``);
- the content events (older, used when steps are disabled): ``interaction.start``,
  ``content.start`` (``index`` and a typed ``content``), ``content.delta``, ``content.stop``,
  ``interaction.complete``.

Steps and contents map alike:

- ``model_output`` / ``text``: ``text`` deltas are text; ``text_annotation_delta`` (and a text
  delta's ``annotations``) are the text segment's ``citations`` (normalized) and
  ``raw_citations`` (as sent);
- ``thought``: ``thought_summary`` deltas (``content.text``) are reasoning, a
  ``thought_signature`` is kept in the reasoning segment's metadata (``signature``);
- ``function_call``: a tool call keyed in the shared tracker by its index and its ``id``; the
  ``arguments_delta`` pieces are appended as they are; a call that got no pieces has the
  ``arguments`` object of its start (or of an older ``function_call`` delta, which carries the
  whole call), else ``{}``. Its ``step.stop`` / ``content.stop`` closes it;
- built-in tools the API runs itself (``google_search_call``, ``code_execution_call``,
  ``url_context_call``, ``google_maps_call``, ``file_search_call``, ``mcp_server_tool_call``...):
  an invocation named by the tool (an MCP call by its ``name``) with ``server_side`` metadata and
  its ``arguments`` object as arguments, closed when its ``*_result`` arrives (matched by
  ``call_id``), whose result is the invocation's ``result`` metadata;
- ``function_result`` (a result the stream carries for a call of an earlier turn, or a built-in
  result whose call is unknown) is kept in the text segment's ``tool_results`` metadata;
- media (``image``, ``audio``, ``video``, ``document``): their metadata, never their data.

The interaction's final status is the finish reason (``completed``, ``requires_action`` when the
client must run function calls, ``failed``, ``incomplete``, ``cancelled``); a ``failed`` status
with its ``errors`` and a mid-stream ``error`` event are ``errors`` entries. Usage
(``total_input_tokens``, ``total_output_tokens``, ``total_thought_tokens``...) is normalized, the
output counting the thoughts as for ``gemini``; the latest value wins.
"""

from __future__ import annotations

import json
from typing import Any

from ...converters.base import Converter
from ...converters.prose_runs import REASONING, TEXT, TOOL, ProseRuns
from ...model import ChunkResponse, ToolCallDelta
from ...model.quirk_ids import QuirkId
from ...model.usage import normalize_usage
from ...model.vocabulary import ErrorKind
from ...pipeline.tracker import TrackedCall
from ...wire.sse import SSEEvent
from ..openai_chat.citations import from_openai_annotation

_MEDIA = frozenset({"image", "audio", "video", "document"})


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _builtin_name(item: dict[str, Any], kind: str) -> str:
    if kind == "mcp_server_tool_call":
        name = _str(item.get("name"))
        server = _str(item.get("server_name"))
        if name:
            return f"{server}.{name}" if server else name
    return kind.removesuffix("_call")


class _Block:
    """What one step (or content) index holds."""

    __slots__ = ("kind", "call", "arguments", "result", "got_pieces")

    def __init__(self, kind: str) -> None:
        self.kind = kind  # the step's or content's type
        self.call: TrackedCall | None = None  # a function or built-in call
        self.arguments: Any = None  # a function call's arguments object (a start or a delta)
        self.result: dict[str, Any] | None = None  # a result step, completed by its deltas
        self.got_pieces = False  # arguments_delta pieces came


class GeminiInteractionsConverter(Converter):
    name = "gemini-interactions"
    # events are named by ``event_type`` (their data has no ``type``), else by the SSE event name
    type_key = "event_type"

    events = {
        "interaction.created": "_interaction_start",
        "interaction.start": ("_interaction_start", True),
        "interaction.status_update": "_status_update",
        "interaction.completed": "_interaction_end",
        "interaction.complete": ("_interaction_end", True),
        "step.start": ("_start", "step"),
        "content.start": ("_start", "content"),
        "step.delta": "_delta",
        "content.delta": "_delta",
        "step.stop": "_stop",
        "content.stop": "_stop",
        "error": "_error_event",
    }

    def __init__(self) -> None:
        super().__init__()
        self._runs = ProseRuns()
        self._blocks: dict[int, _Block] = {}
        self.started = False
        self.ended = False
        self.failed = False  # an error event came
        self.status: str | None = None
        self.interaction_id: str | None = None
        self._legacy_noted = False

    # -- dispatch ------------------------------------------------------------------------------
    def on_unparsed(self, event: SSEEvent) -> bool:
        return event.data.strip() == "[DONE]"

    # -- the interaction -------------------------------------------------------------------------
    def _legacy(self) -> None:
        if not self._legacy_noted:
            self._legacy_noted = True
            self.quirk(
                QuirkId.INTERACTIONS_CONTENT_EVENTS,
                "the stream uses the older content events (content.*, interaction.start)",
            )

    def _interaction_start(self, obj: dict[str, Any], legacy: bool = False) -> list[ChunkResponse]:
        if legacy:
            self._legacy()
        self.started = True
        interaction = obj.get("interaction")
        chunk = ChunkResponse()
        if isinstance(interaction, dict):
            self.interaction_id = _str(interaction.get("id")) or self.interaction_id
            self.status = _str(interaction.get("status")) or self.status
            model = _str(interaction.get("model"))
            if model:
                chunk.model = model
            chunk.usage = normalize_usage(interaction.get("usage"))
        return [chunk] if chunk.model or chunk.usage else []

    def _status_update(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        self.status = _str(obj.get("status")) or self.status
        usage = normalize_usage(obj.get("usage"))
        return [ChunkResponse(usage=usage)] if usage else []

    def _interaction_end(self, obj: dict[str, Any], legacy: bool = False) -> list[ChunkResponse]:
        if legacy:
            self._legacy()
        self.ended = True
        interaction = obj.get("interaction")
        interaction = interaction if isinstance(interaction, dict) else {}
        status = _str(interaction.get("status")) or self.status
        self.status = status
        chunk = ChunkResponse(is_complete=True, finish_reason=status)
        chunk.usage = normalize_usage(interaction.get("usage"))
        model = _str(interaction.get("model"))
        if model:
            chunk.model = model
        if status == "failed":
            errors = interaction.get("errors")
            messages = [
                f"{e.get('code')}: {e.get('message')}" if e.get("code") else str(e.get("message"))
                for e in (errors if isinstance(errors, list) else [])
                if isinstance(e, dict)
            ]
            detail = "; ".join(messages) or "no error given"
            self.error(ErrorKind.PROVIDER_ERROR, f"the interaction failed: {detail}", errors)
        if any(b.call is not None and not b.call.complete for b in self._blocks.values()):
            self.quirk(
                QuirkId.INTERACTIONS_STEP_NOT_STOPPED,
                "the interaction completed while a call step was still open",
            )
        deltas = self.tracker.complete_all()
        if deltas:
            chunk.tool_calls = deltas
        return [chunk]

    def _error_event(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        error = obj.get("error")
        error = error if isinstance(error, dict) else {}
        code = _str(error.get("code"))
        message = _str(error.get("message")) or "no message"
        self.failed = True
        self.quirk(QuirkId.INTERACTIONS_ERROR_EVENT, f"an error event: {code or message}")
        self.error(ErrorKind.PROVIDER_ERROR, f"{code}: {message}" if code else message, error)
        return []

    # -- steps and contents ----------------------------------------------------------------------
    def _index(self, obj: dict[str, Any], what: str) -> int | None:
        index = obj.get("index")
        if type(index) is int:
            return index
        self.error(ErrorKind.BAD_PAYLOAD, f"{what} without an index", obj)
        return None

    def _start(self, obj: dict[str, Any], field: str) -> list[ChunkResponse]:
        if field == "content":
            self._legacy()
        index = self._index(obj, f"{field} start")
        item = obj.get(field)
        if index is None:
            return []
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            self.error(ErrorKind.BAD_PAYLOAD, f"{field} start without a typed {field}", obj)
            return []
        kind = item["type"]
        block = _Block(kind)
        self._blocks[index] = block
        out: list[ChunkResponse] = []
        if kind == "model_output":
            contents = item.get("content")
            for content in contents if isinstance(contents, list) else []:
                if isinstance(content, dict):
                    out += self._text_like(content)
        elif kind == "text":
            out += self._text_like(item)
        elif kind == "thought":
            out += self._thought(item)
        elif kind.endswith("_call"):
            # an older content start may hold only the type: its delta brings the whole call
            if field == "step" or _str(item.get("id")) or _str(item.get("name")):
                out += self._open_call(index, block, item, server_side=kind != "function_call")
        elif kind.endswith("_result"):
            block.result = dict(item)
        elif kind in _MEDIA:
            out += self._media(item)
        elif kind != "user_input":
            self.unknown_event(f"{field}:{kind}")
        return out

    def _delta(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        index = self._index(obj, "delta")
        delta = obj.get("delta")
        if index is None:
            return []
        if not isinstance(delta, dict) or not isinstance(delta.get("type"), str):
            self.error(ErrorKind.BAD_PAYLOAD, "a delta without a type", obj)
            return []
        kind = delta["type"]
        block = self._blocks.get(index)
        if kind == "text" or kind == "text_annotation_delta":
            return self._text_like(delta)
        if kind == "thought_summary":
            content = delta.get("content")
            return self._text_like(content, reasoning=True) if isinstance(content, dict) else []
        if kind == "thought_signature":
            return self._signature(delta)
        if kind == "arguments_delta":
            return self._arguments_piece(index, block, delta)
        if kind.endswith("_call"):
            return self._call_delta(index, block, delta)
        if kind.endswith("_result"):
            if block is not None and block.result is not None:
                _merge_result(block.result, delta)
                return []
            return self._whole_result(delta)
        if kind in _MEDIA:
            return self._media(delta)
        self.unknown_event(f"delta:{kind}")
        return []

    def _stop(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        index = self._index(obj, "stop")
        if index is None:
            return []
        chunk = ChunkResponse()
        usage = normalize_usage(obj.get("usage"))
        if usage:
            chunk.usage = usage
        block = self._blocks.get(index)
        deltas: list[ToolCallDelta] = []
        if block is not None:
            call = block.call
            if call is not None and not call.complete and block.kind == "function_call":
                self._fill_arguments(block, call, deltas)
                done = self.tracker.complete(call)
                if done is not None:
                    deltas.append(done)
            elif block.result is not None:
                result, block.result = block.result, None
                out = self._whole_result(result)
                if out:
                    out[0].usage = chunk.usage
                    return out
        if deltas:
            chunk.tool_calls = deltas
        return [chunk] if deltas or chunk.usage else []

    # -- pieces ----------------------------------------------------------------------------------
    def _text_like(self, item: dict[str, Any], reasoning: bool = False) -> list[ChunkResponse]:
        chunk = ChunkResponse()
        text = item.get("text")
        if isinstance(text, str) and text:
            if reasoning:
                self._runs.enter(REASONING)
                chunk.reasoning = text
            else:
                self._runs.enter(TEXT)
                chunk.content = text
        annotations = item.get("annotations")
        if isinstance(annotations, list) and annotations and not reasoning:
            meta: dict[str, Any] = {}
            for one in annotations:
                meta["raw_citations"] = self._runs.collect(TEXT, "raw_citations", one)
                citation = _citation(one)
                if citation is not None:
                    meta["citations"] = self._runs.collect(TEXT, "citations", citation)
            chunk.content_metadata = meta
        if chunk.content or chunk.reasoning or chunk.content_metadata:
            return [chunk]
        return []

    def _thought(self, item: dict[str, Any]) -> list[ChunkResponse]:
        out: list[ChunkResponse] = []
        summary = item.get("summary")
        for content in summary if isinstance(summary, list) else []:
            if isinstance(content, dict):
                out += self._text_like(content, reasoning=True)
        if _str(item.get("signature")):
            out += self._signature(item)
        return out

    def _signature(self, item: dict[str, Any]) -> list[ChunkResponse]:
        signature = _str(item.get("signature"))
        if signature is None:
            return []
        meta = self._runs.one_or_many(REASONING, "signature", signature)
        return [ChunkResponse(reasoning_metadata=meta)]

    def _media(self, item: dict[str, Any]) -> list[ChunkResponse]:
        meta = {k: v for k, v in item.items() if k != "data"}
        if isinstance(item.get("data"), str):
            meta["data_chars"] = len(item["data"])
        if item.get("type") == "image":
            return [ChunkResponse(images=[meta])]
        return [ChunkResponse(content_metadata={"media": self._runs.collect(TEXT, "media", meta)})]

    def _open_call(
        self, index: int, block: _Block, item: dict[str, Any], server_side: bool
    ) -> list[ChunkResponse]:
        tracker = self.tracker
        earlier = tracker.find(("index", index))
        deltas: list[ToolCallDelta] = []
        if earlier is not None and not earlier.complete and not server_side:
            closed = tracker.complete(earlier)  # the index is used again: the earlier call ended
            if closed is not None:
                deltas.append(closed)
        call = tracker.open(("index", index))
        block.call = call
        call_id = _str(item.get("id"))
        if call_id is not None:
            tracker.alias(("id", call_id), call)
        self._runs.enter(TOOL)
        kind = block.kind
        if server_side:
            arguments = item.get("arguments")
            first = tracker.update(
                call,
                call_id=call_id,
                name=_builtin_name(item, kind),
                arguments=json.dumps(arguments, ensure_ascii=False)
                if isinstance(arguments, dict)
                else None,
                metadata={"server_side": True, "tool": kind},
                announce=True,
                raw=True,
            )
        else:
            block.arguments = item.get("arguments")
            first = tracker.update(
                call, call_id=call_id, name=_str(item.get("name")), announce=True
            )
        if first is not None:
            deltas.append(first)
        return [ChunkResponse(tool_calls=deltas)] if deltas else []

    def _call_delta(
        self, index: int, block: _Block | None, delta: dict[str, Any]
    ) -> list[ChunkResponse]:
        """A ``function_call`` or built-in call delta: the older events carry the whole call in
        one delta (``id``, ``name``, ``arguments`` as an object)."""
        kind = delta["type"]
        server_side = kind != "function_call"
        out: list[ChunkResponse] = []
        if block is None or block.call is None or block.call.complete:
            block = _Block(kind)
            self._blocks[index] = block
            out += self._open_call(index, block, delta, server_side)
            if server_side:
                return out
        call = block.call
        assert call is not None
        deltas: list[ToolCallDelta] = []
        call_id = _str(delta.get("id"))
        if call_id is not None:
            self.tracker.alias(("id", call_id), call)
        first = self.tracker.update(
            call,
            call_id=call_id,
            name=None if server_side else _str(delta.get("name")),
        )
        if first is not None:
            deltas.append(first)
        arguments = delta.get("arguments")
        if isinstance(arguments, dict) and not call.arguments:
            if server_side:
                more = self.tracker.append_exact(call, json.dumps(arguments, ensure_ascii=False))
                if more is not None:
                    deltas.append(more)
            else:
                block.arguments = arguments
        if deltas:
            out.append(ChunkResponse(tool_calls=deltas))
        return out

    def _arguments_piece(
        self, index: int, block: _Block | None, delta: dict[str, Any]
    ) -> list[ChunkResponse]:
        piece = delta.get("arguments")
        call = block.call if block is not None else None
        if call is None or call.complete:
            self.quirk(
                QuirkId.INTERACTIONS_ORPHAN_ARGUMENTS_DELTA,
                f"arguments_delta for step {index}, which is not an open function call",
            )
            return []
        assert block is not None
        if not isinstance(piece, str) or not piece:
            return []
        block.got_pieces = True
        out = self.tracker.append_exact(call, piece)
        return [ChunkResponse(tool_calls=[out])] if out is not None else []

    def _fill_arguments(
        self, block: _Block, call: TrackedCall, deltas: list[ToolCallDelta]
    ) -> None:
        if block.got_pieces or call.arguments:
            return
        arguments = block.arguments
        text = json.dumps(arguments, ensure_ascii=False) if isinstance(arguments, dict) else "{}"
        fill = self.tracker.append_exact(call, text)
        if fill is not None:
            deltas.append(fill)

    def _whole_result(self, result: dict[str, Any]) -> list[ChunkResponse]:
        call_id = _str(result.get("call_id"))
        call = self.tracker.find(("id", call_id)) if call_id is not None else None
        if call is not None and not call.complete:
            done = self.tracker.complete(call)
            if done is not None:
                done.metadata = {"result": result}
                return [ChunkResponse(tool_calls=[done])]
        if call is None and result.get("type") != "function_result":
            self.quirk(
                QuirkId.INTERACTIONS_ORPHAN_RESULT,
                f"a {result.get('type')} whose call_id {call_id!r} no call step had",
            )
        values = self._runs.collect(TEXT, "tool_results", result)
        return [ChunkResponse(content_metadata={"tool_results": values})]

    # -- the end ---------------------------------------------------------------------------------
    def on_finish(self) -> list[ChunkResponse]:
        self.report_unknown_events()
        if self.started and not self.ended and not self.failed:
            self.truncated(
                "interaction.complete" if self._legacy_noted else "interaction.completed"
            )
        return []


def _citation(annotation: Any) -> dict[str, Any] | None:
    """An annotation as a normalized citation: a ``url_citation`` reads as OpenAI's does; a
    ``file_citation`` or ``place_citation`` by its own field names."""
    if not isinstance(annotation, dict):
        return None
    kind = annotation.get("type")
    if kind == "file_citation":
        annotation = {
            "type": "container_file_citation",
            "file_id": annotation.get("document_uri") or annotation.get("media_id"),
            "filename": annotation.get("file_name"),
            "start_index": annotation.get("start_index"),
            "end_index": annotation.get("end_index"),
        }
    elif kind == "place_citation":
        annotation = {**annotation, "type": "url_citation", "title": annotation.get("name")}
    return from_openai_annotation(annotation)


def _merge_result(result: dict[str, Any], delta: dict[str, Any]) -> None:
    """A result step's delta into the step: list results are extended, text results appended,
    anything else replaces."""
    for key, value in delta.items():
        if key == "type":
            continue
        have = result.get(key)
        joined: Any = value
        if isinstance(have, list) and isinstance(value, list):
            joined = [*have, *value]
        elif key == "result" and isinstance(have, str) and isinstance(value, str):
            joined = have + value
        result[key] = joined
