"""The handler contract (``StreamingResponseHandler``) and the segment bookkeeping all share.

A handler takes ``ChunkResponse``s and emits ``SegmentEvent``s; its internal
``ToolInvocationAdapter`` turns those events into invocations, so ``get_all_invocations()`` is
the same for every handler. The events are returned as they come; a handler keeps them all
(``get_all_events()``) only when made with ``keep_events=True``. Segment ids are deterministic
(``seg_1``, ``seg_2``...; API tool calls use the provider's call id). Reasoning becomes a
``reasoning`` segment in every mode.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

from ..model import ChunkResponse, Quirk, SegmentEvent, SegmentType, ToolInvocation
from ..model.quirk_ids import QuirkId
from ..pipeline.adapter import TextArgumentParser, ToolInvocationAdapter

SegmentCallback = Callable[[SegmentEvent], None]


class StreamingResponseHandler(ABC):
    """Base: ``feed(ChunkResponse) -> list[SegmentEvent]``, ``finalize()``, invocations, reset."""

    name = "base"
    _finalized: bool
    # a long string in the parsed arguments of a finished tool call may be a ``TextPieces``
    # (its text in pieces, never joined), for a caller that only writes the invocations with
    # ``iter_json`` (the summary of ``replay --format json``); handlers may ignore it
    string_pieces = False

    def __init__(
        self,
        on_segment_event: SegmentCallback | None = None,
        segment_id_prefix: str = "",
        text_argument_parser: TextArgumentParser | None = None,
        keep_events: bool = False,
    ) -> None:
        self._on_segment_event = on_segment_event
        self._keep_events = keep_events
        self._prefix = segment_id_prefix
        self._text_argument_parser = text_argument_parser
        self._adapter = ToolInvocationAdapter(text_argument_parser)
        self.reset()

    # -- the contract ----------------------------------------------------------------------
    @abstractmethod
    def feed(self, chunk: ChunkResponse) -> list[SegmentEvent]: ...

    def finalize(self) -> list[SegmentEvent]:
        if self._finalized:
            return []
        self._finalized = True
        out: list[SegmentEvent] = []
        self._finalize_segments(out)
        self._close_text(out)
        self._close_reasoning(out)
        return out

    def get_all_invocations(self) -> list[ToolInvocation]:
        return list(self._invocations)

    @property
    def invocations(self) -> Sequence[ToolInvocation]:
        """The invocations so far, in order, without a copy (read, do not keep: the handler goes
        on appending to it); :meth:`get_all_invocations` is a list of one's own."""
        return self._invocations

    def get_all_events(self) -> list[SegmentEvent]:
        """Every event so far: only for a handler made with ``keep_events=True`` (a long stream's
        events outweigh everything else it produces; ``feed()`` returns them as they come)."""
        if self._events is None:
            raise RuntimeError(
                "this handler keeps no event log: make it with keep_events=True, or collect "
                "the events feed() and finalize() return"
            )
        return list(self._events)

    def reset(self) -> None:
        self._events: list[SegmentEvent] | None = [] if self._keep_events else None
        self._invocations: list[ToolInvocation] = []
        self._counter = 0
        self._text_id: str | None = None
        self._text_metadata: dict[str, Any] | None = None
        self._reasoning_id: str | None = None
        self._reasoning_metadata: dict[str, Any] | None = None
        self._finalized = False
        self.quirks: list[Quirk] = []
        self._adapter.reset()

    # -- hooks for subclasses --------------------------------------------------------------
    def _finalize_segments(self, out: list[SegmentEvent]) -> None:
        """Close the handler's own open structured segments at the end of the stream."""

    # -- shared bookkeeping ----------------------------------------------------------------
    def note_quirk(self, quirk_id: QuirkId, detail: str) -> None:
        if all(q.id != quirk_id for q in self.quirks):
            self.quirks.append(Quirk(quirk_id, detail))

    def take_quirks(self) -> list[Quirk]:
        """The quirks noted since the last call, handed over: the handler lets go of them."""
        quirks = self.quirks
        if not quirks:
            return []
        self.quirks = []
        return quirks

    def _new_id(self) -> str:
        self._counter += 1
        return f"{self._prefix}seg_{self._counter}"

    def _emit(self, event: SegmentEvent, out: list[SegmentEvent]) -> None:
        if self._events is not None:
            self._events.append(event)
        out.append(event)
        if self._on_segment_event is not None:
            self._on_segment_event(event)
        invocation = self._adapter.process_event(event)
        if invocation is not None:
            self._invocations.append(invocation)

    def _check_open(self) -> None:
        if self._finalized:
            raise RuntimeError("handler has been finalized; call reset() to reuse it")

    def _prose(self, chunk: ChunkResponse, out: list[SegmentEvent]) -> None:
        """Route all of a chunk but its tool calls: reasoning, text, images and messages."""
        if chunk.reasoning or chunk.reasoning_metadata:
            self._reasoning(chunk, out)
        if chunk.content or chunk.content_metadata:
            self._text(chunk.content, out, chunk.content_metadata)
        if chunk.images:
            self._images(chunk, out)
        if chunk.messages:
            self._messages(chunk, out)

    def _reasoning(self, chunk: ChunkResponse, out: list[SegmentEvent]) -> None:
        """Route ``chunk.reasoning`` (and its metadata) into the reasoning segment."""
        if self._reasoning_id is None:
            self._close_text(out)
            self._reasoning_id = self._new_id()
            self._reasoning_metadata = {}
            self._emit(SegmentEvent.start(self._reasoning_id, SegmentType.REASONING), out)
        if chunk.reasoning:
            self._emit(SegmentEvent.content(self._reasoning_id, chunk.reasoning), out)
        if chunk.reasoning_metadata:
            assert self._reasoning_metadata is not None
            _merge_metadata(self._reasoning_metadata, chunk.reasoning_metadata)

    def _images(self, chunk: ChunkResponse, out: list[SegmentEvent]) -> None:
        """Each generated image is a segment of its own: START with its metadata, then END."""
        for image in chunk.images or ():
            self._close_prose(out)
            segment_id = self._new_id()
            self._emit(SegmentEvent.start(segment_id, SegmentType.IMAGE, dict(image)), out)
            self._emit(SegmentEvent.end(segment_id), out)

    def _messages(self, chunk: ChunkResponse, out: list[SegmentEvent]) -> None:
        """Each protocol message is a segment of its own: START with what names it (every key
        of the entry but ``text``), its JSON (``text``) as the content, then END."""
        for entry in chunk.messages or ():
            self._close_prose(out)
            segment_id = self._new_id()
            metadata = {k: v for k, v in entry.items() if k != "text"}
            self._emit(SegmentEvent.start(segment_id, SegmentType.MESSAGE, metadata), out)
            text = entry.get("text")
            if isinstance(text, str) and text:
                self._emit(SegmentEvent.content(segment_id, text), out)
            self._emit(SegmentEvent.end(segment_id), out)

    def _text(
        self, text: str, out: list[SegmentEvent], metadata: dict[str, Any] | None = None
    ) -> None:
        """Append ``text`` to the open text segment (opening one if needed)."""
        if self._text_id is None:
            self._close_reasoning(out)
            self._text_id = self._new_id()
            self._text_metadata = {}
            # a refusal is known from its first chunk: sinks that stream it (the OpenAI emitter)
            # need it at the start
            start = {"refusal": True} if metadata and metadata.get("refusal") is True else None
            self._emit(SegmentEvent.start(self._text_id, SegmentType.TEXT, start), out)
        if text:
            self._emit(SegmentEvent.content(self._text_id, text), out)
        if metadata:
            assert self._text_metadata is not None
            _merge_metadata(self._text_metadata, metadata)

    def _close_text(self, out: list[SegmentEvent]) -> None:
        if self._text_id is not None:
            seg_id, self._text_id = self._text_id, None
            self._emit(SegmentEvent.end(seg_id, self._text_metadata), out)
            self._text_metadata = None

    def _close_reasoning(self, out: list[SegmentEvent]) -> None:
        if self._reasoning_id is not None:
            seg_id, self._reasoning_id = self._reasoning_id, None
            self._emit(SegmentEvent.end(seg_id, self._reasoning_metadata), out)
            self._reasoning_metadata = None

    def _close_prose(self, out: list[SegmentEvent]) -> None:
        self._close_text(out)
        self._close_reasoning(out)


def _merge_metadata(target: dict[str, Any], update: dict[str, Any]) -> None:
    """Merge metadata into a segment's: the latest value of a key wins."""
    target.update(update)
