"""The normalized data model every pipeline stage speaks.

Names follow the design documents streamtool grew from (``ToolCallDelta``, ``ChunkResponse``,
``SegmentEvent``, ``ToolInvocation``) so that readers of those documents find their way.
All classes are small and slotted: millions of them are made while replaying a large recording.
They are msgspec Structs (quick to create, and to define at import), ``ToolCallDelta`` a slotted
dataclass (one of its fields is outside equality and repr): made with keywords or positions,
compared with ``==``; a copy with a field changed is ``msgspec.structs.replace(obj, ...)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec

from .quirk_ids import QuirkId
from .vocabulary import ErrorKind, SegmentEventType, SegmentType


class Quirk(msgspec.Struct):
    """A provider behaviour that deviates from the reference wire format.

    ``id`` is an id of the quirk catalogue (``QuirkId.OAI_TOOL_INDEX_MISSING``...).
    """

    id: QuirkId
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "detail": self.detail}


class StreamError(msgspec.Struct):
    """Something that went wrong in the stream: an in-band error, a truncation, bad arguments."""

    kind: ErrorKind
    message: str
    detail: Any = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "message": self.message}
        if self.detail is not None:
            out["detail"] = self.detail
        return out


@dataclass(slots=True)
class ToolCallDelta:
    """A provider-agnostic update of one tool call.

    ``index`` is the canonical index given by the shared tracker (0, 1, 2... in order of
    appearance), never a raw provider index. ``call_id`` and ``name`` are set on the first delta
    of a call. ``arguments_delta`` is a fragment of the JSON argument text to append.
    ``is_complete`` says the provider has closed the call (no further fragments will come).

    ``arguments_source``, on the first delta of a call only, is whoever keeps the call's whole
    argument text (the shared tracker): its ``arguments`` is, at any later delta, every
    ``arguments_delta`` of the call joined. A handler that needs the whole text when the call ends
    reads it there instead of keeping a second copy, then calls ``release_arguments()``. It is not
    part of the delta's value (equality, repr).
    """

    index: int
    call_id: str | None = None
    name: str | None = None
    arguments_delta: str | None = None
    is_complete: bool = False
    metadata: dict[str, Any] | None = None
    arguments_source: ArgumentsSource | None = field(default=None, compare=False, repr=False)


class ArgumentsSource(Protocol):
    """Keeps a tool call's argument text (see ``ToolCallDelta.arguments_source``)."""

    @property
    def arguments(self) -> str: ...

    def argument_blocks(self) -> list[str]:
        """The same text as the blocks it is kept in (a list of one's own; joined, they are
        ``arguments``)."""
        ...

    def release_arguments(self) -> None:
        """The reader has taken the whole text of the finished call: the keeper may drop it."""


class ChunkResponse(msgspec.Struct):
    """Everything one provider event contributed, normalized."""

    content: str = ""
    reasoning: str | None = None
    tool_calls: list[ToolCallDelta] | None = None
    usage: dict[str, int] | None = None
    finish_reason: str | None = None
    is_complete: bool = False
    model: str | None = None
    content_metadata: dict[str, Any] | None = None
    reasoning_metadata: dict[str, Any] | None = None
    errors: list[StreamError] | None = None
    quirks: list[Quirk] | None = None
    images: list[dict[str, Any]] | None = None  # generated images: metadata only, never the data
    # protocol messages carried whole (MCP's JSON-RPC): each a dict of what names it
    # (``label``, ``kind``, ``method``, ``id``, ``from``) and its JSON as ``text``; one
    # ``message`` segment each
    messages: list[dict[str, Any]] | None = None


class SegmentEvent(msgspec.Struct):
    """One handler output event (see reference/text-formats.md, "Segment events")."""

    event_type: SegmentEventType
    segment_id: str
    segment_type: SegmentType | None = None
    delta: str | None = None
    metadata: dict[str, Any] | None = None

    @classmethod
    def start(
        cls, segment_id: str, segment_type: SegmentType, metadata: dict[str, Any] | None = None
    ) -> SegmentEvent:
        return cls(SegmentEventType.START, segment_id, segment_type, None, metadata or {})

    @classmethod
    def content(cls, segment_id: str, delta: str) -> SegmentEvent:
        return cls(SegmentEventType.CONTENT, segment_id, None, delta, None)

    @classmethod
    def end(cls, segment_id: str, metadata: dict[str, Any] | None = None) -> SegmentEvent:
        return cls(SegmentEventType.END, segment_id, None, None, metadata or {})

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"event": self.event_type.value, "segment_id": self.segment_id}
        if self.event_type is SegmentEventType.START:
            assert self.segment_type is not None
            out["segment_type"] = self.segment_type.value
            out["metadata"] = self.metadata or {}
        elif self.event_type is SegmentEventType.CONTENT:
            out["delta"] = self.delta
            if self.metadata:  # what the segment learnt with this delta (a file call's path)
                out["metadata"] = self.metadata
        else:
            out["metadata"] = self.metadata or {}
        return out


class ToolInvocation(msgspec.Struct):
    """A tool call ready to run. Its id is the id of the segment that produced it.

    ``arguments`` is ``None`` when the argument text could not be parsed; ``raw_arguments``
    then holds the text exactly as received (never replaced by ``{}``). ``call_id`` is the id
    the provider gave the call last, when it changed it after the call's segment began (the id
    a client answers with): the summary's ``id`` (and ``segment_id`` the segment's).
    """

    id: str
    name: str
    arguments: Any
    raw_arguments: str | None = None
    server_side: bool = False
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    call_id: str | None = None

    @property
    def answer_id(self) -> str:
        """The id a client answers the call with: the provider's last."""
        return self.call_id or self.id

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.answer_id, "name": self.name, "arguments": self.arguments}
        if self.call_id:
            out["segment_id"] = self.id
        if self.arguments is None:
            out["raw_arguments"] = self.raw_arguments
        if self.server_side:
            out["server_side"] = True
        if self.metadata:
            out["metadata"] = self.metadata
        return out
