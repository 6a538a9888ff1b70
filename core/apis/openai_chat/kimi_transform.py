"""Kimi K2 tool calls rewritten into standard OpenAI ``tool_calls`` in a live Chat Completions
stream (``streamtool proxy --transform kimi-k2``). Sans-IO: ``feed(read) -> bytes`` per upstream
read, ``finish() -> bytes`` at the end.

Nothing is parsed twice: the reads go through the replay engine with the ``kimi-k2`` converter
(which finds the special-token sections in ``content`` and in the reasoning text, markers split
across reads included) and the ``api_tool_call`` handler, and the engine's items are written by
the OpenAI-SSE emitter.

A stream without Kimi tokens reaches the client byte for byte: complete SSE events are passed on
as they came, and only held back while the converter holds back text that may be the start of a
marker (until the next read says what it was). From the first tool-call section on, the stream
is the emitter's: content, reasoning (``reasoning_content``) and each call, whole, as a
``tool_calls`` delta (name without ``functions.``, id as the model wrote it, arguments as sent),
then ``finish_reason: "tool_calls"``, usage when known and ``data: [DONE]``. The completion id,
``created`` and model are the upstream's.
"""

from __future__ import annotations

import re
from typing import Any

from ...engine.replay import ReplayEngine
from ...model import SegmentEvent, SegmentEventType
from ...model.records import Chunk, End, Header
from ...pipeline.segment_log import Segment, SegmentLog
from . import API
from .encoder import OpenAISSEEmitter

# a blank line ends an event; line ends are CRLF, LF or CR (each taken whole: atomic groups)
_EVENT_END = re.compile(rb"(?>\r\n|\n|\r)(?>\r\n|\n|\r)")
_ID = re.compile(rb'"id"\s*:\s*"([^"\\]{1,200})"')
_CREATED = re.compile(rb'"created"\s*:\s*(\d{1,12})')
_MODEL = re.compile(rb'"model"\s*:\s*"([^"\\]{1,200})"')


def complete_events_end(data: bytes | bytearray) -> int:
    """Where the last complete SSE event of ``data`` ends (0 when there is none)."""
    end = 0
    for m in _EVENT_END.finditer(data):
        if m.end() == len(data) and data.endswith(b"\r"):
            break  # a CR at the very end may be the start of a CRLF
        end = m.end()
    return end


class KimiTransform:
    """One Chat Completions response, rewritten as it streams."""

    api = API.name  # the API whose responses it rewrites (the proxy applies it to those only)

    def __init__(self, request_body: Any = None) -> None:
        header = Header(
            provider=API.compatible_provider,
            api=API.name,
            request={"body": request_body if isinstance(request_body, dict) else {}},
        )
        self.engine = ReplayEngine(
            header,
            converter="kimi-k2",
            parser="api_tool_call",
            segments=SegmentLog(keep_content=False),  # which segments are open
        )
        converter: Any = self.engine.converter
        self._scanners = (converter.content_scanner, converter.reasoning_scanner)
        self.rewriting = False
        self.emitter: OpenAISSEEmitter | None = None
        self._held = bytearray()  # upstream bytes not sent yet (pass-through mode)
        self._items: list[Any] = []  # the engine's items for the events held back
        # the segments open at the end of what was passed on: the emitter must know their
        # starts to write their text when rewriting starts in the middle of one
        self._open: list[Segment] = []
        self._ident = bytearray()  # the start of the stream, for the completion id and model

    def _kimi_seen(self) -> bool:
        return any(s.sections or s.calls for s in self._scanners)

    def _holding(self) -> bool:
        return any(s.tail for s in self._scanners)

    def _start_rewriting(self) -> OpenAISSEEmitter:
        source = bytes(self._ident)
        found_id = _ID.search(source)
        found_created = _CREATED.search(source)
        found_model = _MODEL.search(source)
        self.emitter = OpenAISSEEmitter(
            completion_id=found_id.group(1).decode("utf-8", "replace")
            if found_id
            else "chatcmpl-streamtool",
            created=int(found_created.group(1)) if found_created else 0,
            model=found_model.group(1).decode("utf-8", "replace") if found_model else "",
        )
        self.rewriting = True
        self._ident.clear()
        # the segments the passed-on events left open: their starts (which write nothing)
        starts = {
            seg.id: SegmentEvent(SegmentEventType.START, seg.id, seg.type, None, seg.start_metadata)
            for seg in self._open
        }
        self.emitter.feed(list(starts.values()))
        self._open = []
        return self.emitter

    def _passed_on(self) -> None:
        """The held items' events went to the client as they came: keep only which segments
        they left open (the engine's segments say)."""
        log = self.engine.segments
        assert log is not None  # made in __init__
        self._open = log.open_segments()
        self._items.clear()

    def feed(self, data: bytes) -> bytes:
        """One upstream read in; the bytes to send to the client now out."""
        if not data:
            return b""
        items = self.engine.feed_chunk(Chunk(None, data))
        if self.rewriting:
            assert self.emitter is not None
            return self.emitter.feed(items).encode("utf-8")
        if len(self._ident) < 4096:
            self._ident += data[: 4096 - len(self._ident)]
        self._held += data
        self._items.extend(items)
        if self._kimi_seen():
            emitter = self._start_rewriting()
            out = emitter.feed(self._items)
            self._held.clear()
            self._items.clear()
            return out.encode("utf-8")
        if self._holding():
            return b""
        cut = complete_events_end(self._held)
        if not cut:
            return b""
        out_bytes = bytes(self._held[:cut])
        del self._held[:cut]
        self._passed_on()  # the items all came from the complete events just passed on
        return out_bytes

    def finish(self) -> bytes:
        """The upstream body ended: what is left to send."""
        items = self.engine.finish(End(None, "complete", None))
        if not self.rewriting and self._kimi_seen():
            emitter = self._start_rewriting()
            text = emitter.feed([*self._items, *items])
            self._held.clear()
            self._items.clear()
        elif not self.rewriting:
            rest = bytes(self._held)
            self._held.clear()
            return rest
        else:
            assert self.emitter is not None
            emitter = self.emitter
            text = emitter.feed(items)
        engine = self.engine
        text += emitter.finish(finish_reason=engine.finish_reason, usage=engine.usage)
        return text.encode("utf-8")
