"""``api_tool_call``: tool calls from the provider's structured ``tool_calls``.

Each call becomes a ``tool_call`` segment whose id is the provider's call id; argument fragments
stream as CONTENT; the END metadata carries the parsed ``arguments``. Arguments that do not parse
give ``arguments: None`` with the raw text kept and an ``error`` (never ``{}``). A call the
provider never closed (the stream was cut) ends ``unclosed``; its arguments count only when they
form a whole JSON value, so a cut-off call never runs with repaired arguments.
"""

from __future__ import annotations

import json
from typing import Any

from ..model import ChunkResponse, SegmentEvent, SegmentType, ToolCallDelta
from .base import StreamingResponseHandler


class _ToolState:
    __slots__ = ("segment_id", "name", "parts", "metadata", "late", "done")

    def __init__(self, segment_id: str, name: str, metadata: dict[str, Any]) -> None:
        self.segment_id = segment_id
        self.name = name
        self.parts: list[str] = []
        self.metadata = metadata
        self.late: dict[str, Any] | None = None  # metadata of later deltas (a server tool's result)
        self.done = False


class ApiToolCallStreamingResponseHandler(StreamingResponseHandler):
    name = "api_tool_call"

    def reset(self) -> None:
        super().reset()
        self._tools: dict[int, _ToolState] = {}

    def feed(self, chunk: ChunkResponse) -> list[SegmentEvent]:
        self._check_open()
        out: list[SegmentEvent] = []
        if chunk.reasoning or chunk.reasoning_metadata:
            self._reasoning(chunk, out)
        if chunk.content or chunk.content_metadata:
            self._text(chunk.content, out, chunk.content_metadata)
        if chunk.tool_calls:
            for delta in chunk.tool_calls:
                self._tool_delta(delta, out)
        return out

    def _tool_delta(self, delta: ToolCallDelta, out: list[SegmentEvent]) -> None:
        state = self._tools.get(delta.index)
        if state is None:
            self._close_prose(out)
            segment_id = delta.call_id or f"{self._prefix}call_{delta.index}"
            metadata: dict[str, Any] = {"tool_name": delta.name or ""}
            if delta.metadata:
                metadata.update(delta.metadata)
            state = _ToolState(segment_id, delta.name or "", metadata)
            self._tools[delta.index] = state
            self._emit(SegmentEvent.start(segment_id, SegmentType.TOOL_CALL, dict(metadata)), out)
        elif state.done:
            return
        elif delta.metadata:
            if state.late is None:
                state.late = {}
            state.late.update(delta.metadata)
        if delta.arguments_delta:
            state.parts.append(delta.arguments_delta)
            self._emit(SegmentEvent.content(state.segment_id, delta.arguments_delta), out)
        if delta.is_complete:
            self._end_tool(state, out, closed=True)

    def _end_tool(self, state: _ToolState, out: list[SegmentEvent], *, closed: bool) -> None:
        state.done = True
        raw = "".join(state.parts)
        metadata: dict[str, Any] = dict(state.late) if state.late else {}
        metadata["tool_name"] = state.name
        arguments, error = parse_arguments(raw)
        if error is None and arguments == {} and not raw.strip():
            metadata["no_arguments"] = True
        metadata["arguments"] = arguments
        if not closed:
            # the provider never closed the call (the converter reports the truncation); the
            # arguments are kept only if they form a whole JSON value: nothing is repaired
            metadata["unclosed"] = True
        if error is not None:
            metadata["raw_arguments"] = raw
            metadata["error"] = f"tool call {state.segment_id} ({state.name or 'unnamed'}): {error}"
        self._emit(SegmentEvent.end(state.segment_id, metadata), out)

    def _finalize_segments(self, out: list[SegmentEvent]) -> None:
        for state in self._tools.values():
            if not state.done:
                self._end_tool(state, out, closed=False)


def parse_arguments(raw: str) -> tuple[Any, str | None]:
    """Parse a tool call's argument text: ``(arguments, None)`` or ``(None, reason)``.

    Empty text means a tool without parameters: ``{}``. A JSON string holding a JSON object
    (double-encoded arguments) is decoded once more.
    """
    text = raw.strip()
    if not text:
        return {}, None
    try:
        value = json.loads(text)
    except ValueError as exc:
        return None, f"arguments are not valid JSON ({exc})"
    if isinstance(value, str):
        inner = value.strip()
        if inner[:1] == "{":
            try:
                return json.loads(inner), None
            except ValueError:
                pass
    return value, None
