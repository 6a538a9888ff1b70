"""ToolInvocationAdapter: segment events in, tool invocations out. Invocation id = segment id.

Arguments are built per segment type (reference/text-formats.md): ``write_file`` gives
``{path, content}``, ``patch_file`` ``{path, patch}`` (or, for API file tools, the END metadata's
pre-parsed ``arguments``), ``run_bash`` ``{command}``, ``tool_call`` the END metadata's pre-parsed
``arguments`` when present, else the content parsed as JSON (when it
starts with ``{`` or ``[``) or by the text-argument parser the handler supplies. A segment whose
END metadata says ``incomplete`` produces no invocation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..model import SegmentEvent, SegmentEventType, SegmentType, ToolInvocation
from ..model.textbuf import TextBuffer
from ..wire import fastjson

TextArgumentParser = Callable[[str], Any]

_TOOL_TYPES = frozenset(
    {SegmentType.TOOL_CALL, SegmentType.WRITE_FILE, SegmentType.PATCH_FILE, SegmentType.RUN_BASH}
)


# segment metadata that an invocation carries on: provider signatures to send back, and the
# result a server-side tool returned inside the same response
_INVOCATION_METADATA = ("thought_signature", "extra_content", "result")
# END metadata of a call whose id the provider changed after its START: the id it gave last
RENAMED = "call_id"


class _Open:
    __slots__ = ("type", "metadata", "content")

    def __init__(self, segment_type: SegmentType, metadata: dict[str, Any] | None) -> None:
        self.type = segment_type
        # the START event's own metadata, read (copied) at the END: an event is a value that
        # nobody changes, and an open call keeps no copy of its own
        self.metadata = metadata
        self.content: TextBuffer | None = TextBuffer()  # None: the END metadata has the arguments


class ToolInvocationAdapter:
    def __init__(self, text_argument_parser: TextArgumentParser | None = None) -> None:
        self._parse_text_args = text_argument_parser
        self._open: dict[str, _Open] = {}

    def reset(self) -> None:
        self._open.clear()

    def arguments_at_end(self, segment_id: str) -> None:
        """The handler puts the whole parsed ``arguments`` of this open segment in its END
        metadata (API tool calls): its content is not needed for the invocation, nor kept."""
        state = self._open.get(segment_id)
        if state is not None:
            state.content = None

    def process_event(self, event: SegmentEvent) -> ToolInvocation | None:
        kind = event.event_type
        if kind is SegmentEventType.CONTENT:
            state = self._open.get(event.segment_id)
            if state is not None and event.delta:
                buffer = state.content
                if buffer is not None:
                    buffer.append(event.delta)
            return None
        if kind is SegmentEventType.START:
            assert event.segment_type is not None
            if event.segment_type in _TOOL_TYPES:
                self._open[event.segment_id] = _Open(event.segment_type, event.metadata)
            return None
        state = self._open.pop(event.segment_id, None)
        if state is None:
            return None
        metadata = dict(state.metadata or {})
        end_metadata = event.metadata or {}
        metadata.update(end_metadata)
        if metadata.get("incomplete"):
            return None
        content = "" if state.content is None else state.content.text()
        invocation = self._build(event.segment_id, state.type, metadata, content, end_metadata)
        renamed = end_metadata.get(RENAMED)
        if type(renamed) is str and renamed and renamed != event.segment_id:
            invocation.call_id = renamed  # the provider changed the call's id after its START
        return invocation

    def _build(
        self,
        segment_id: str,
        segment_type: SegmentType,
        metadata: dict[str, Any],
        content: str,
        end_metadata: dict[str, Any],
    ) -> ToolInvocation:
        extra = {k: v for k, v in metadata.items() if k in _INVOCATION_METADATA}
        server_side = bool(metadata.get("server_side"))
        is_call = segment_type is SegmentType.TOOL_CALL
        if "arguments" in end_metadata or (is_call and "arguments" in metadata):
            # the handler parsed the whole argument object (API tool calls, API file tools); the
            # raw text is kept when it did not parse
            arguments = metadata.get("arguments")
            raw = metadata.get("raw_arguments") if arguments is None else None
            name = str(metadata.get("tool_name") or ("" if is_call else segment_type.value))
            return ToolInvocation(segment_id, name, arguments, raw, server_side, extra)
        if segment_type is SegmentType.WRITE_FILE:
            args: Any = {"path": metadata.get("path"), "content": content}
            return ToolInvocation(
                segment_id, metadata.get("tool_name") or "write_file", args, metadata=extra
            )
        if segment_type is SegmentType.PATCH_FILE:
            args = {"path": metadata.get("path"), "patch": content}
            return ToolInvocation(
                segment_id, metadata.get("tool_name") or "patch_file", args, metadata=extra
            )
        if segment_type is SegmentType.RUN_BASH:
            command = metadata.get("command") or content
            return ToolInvocation(segment_id, "run_bash", {"command": command}, metadata=extra)
        name = str(metadata.get("tool_name") or "")
        text = content.strip()
        if text[:1] in ("{", "["):
            try:
                return ToolInvocation(
                    segment_id, name, fastjson.loads(text), None, server_side, extra
                )
            except ValueError:
                return ToolInvocation(segment_id, name, None, content, server_side, extra)
        if not text:
            return ToolInvocation(segment_id, name, {}, None, server_side, extra)
        if self._parse_text_args is not None:
            try:
                return ToolInvocation(
                    segment_id, name, self._parse_text_args(content), None, server_side, extra
                )
            except ValueError:
                pass
        return ToolInvocation(segment_id, name, None, content, server_side, extra)
