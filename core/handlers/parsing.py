"""``xml``, ``json``, ``sentinel``: tool calls embedded in the model's text (``chunk.content``).

``ParsingStreamingResponseHandler`` feeds the text of every chunk to one of the sans-IO text
parsers (``core/parsers``) and passes their segment events on; reasoning is a ``reasoning``
segment as in every mode. The parser resolves a finished call's arguments into its END metadata
(an ``error`` there when they do not parse); the same text-argument parser (XML arguments by
default) is given to the invocation adapter. A call left open at the end of the stream ends
``incomplete`` with an ``error`` and produces no invocation. API ``tool_calls`` in the stream
are not read by a text parser: that is reported as a quirk, not dropped silently.
"""

from __future__ import annotations

from ..model import ChunkResponse, SegmentEvent, SegmentEventType
from ..model.quirk_ids import QuirkId
from ..parsers import make_text_parser
from ..parsers.xml_args import parse_xml_arguments
from ..pipeline.adapter import TextArgumentParser
from .base import SegmentCallback, StreamingResponseHandler


class ParsingStreamingResponseHandler(StreamingResponseHandler):
    name = "parsing"
    parser_name = "xml"

    def __init__(
        self,
        on_segment_event: SegmentCallback | None = None,
        segment_id_prefix: str = "",
        text_argument_parser: TextArgumentParser | None = None,
        parser_name: str | None = None,
        keep_events: bool = False,
    ) -> None:
        if parser_name is not None:
            self.parser_name = parser_name  # an unknown name fails in reset(): make_text_parser
        self.name = self.parser_name
        super().__init__(
            on_segment_event,
            segment_id_prefix,
            text_argument_parser or parse_xml_arguments,
            keep_events,
        )

    def reset(self) -> None:
        super().reset()
        self._parser = make_text_parser(
            self.parser_name,
            new_id=self._new_id,
            text_argument_parser=self._text_argument_parser,
        )

    def feed(self, chunk: ChunkResponse) -> list[SegmentEvent]:
        self._check_open()
        out: list[SegmentEvent] = []
        if chunk.reasoning or chunk.reasoning_metadata:
            self._reasoning(chunk, out)
        if chunk.content:
            self._pass(self._parser.feed(chunk.content), out)
        if chunk.content_metadata:
            self._pass(self._parser.add_text_metadata(chunk.content_metadata), out)
        if chunk.messages:
            self._messages(chunk, out)
        if chunk.tool_calls:
            names = sorted({d.name for d in chunk.tool_calls if d.name})
            detail = f" ({', '.join(names)})" if names else ""
            self.note_quirk(
                QuirkId.TOOL_CALLS_IGNORED_BY_PARSER,
                f"the stream carries API tool_calls{detail}, which the {self.name} parser does "
                "not read (it reads tool calls written in the text); replay with "
                "--parser api_tool_call to see them",
            )
        return out

    def _pass(self, events: list[SegmentEvent], out: list[SegmentEvent]) -> None:
        for event in events:
            if event.event_type is SegmentEventType.START and self._reasoning_id is not None:
                self._close_reasoning(out)
            self._emit(event, out)

    def _close_text(self, out: list[SegmentEvent]) -> None:
        # reasoning starting (or the end of the stream) closes the parser's text segment
        super()._close_text(out)
        self._pass(self._parser.close_text(), out)

    def _finalize_segments(self, out: list[SegmentEvent]) -> None:
        self._pass(self._parser.finish(), out)


class XmlStreamingResponseHandler(ParsingStreamingResponseHandler):
    name = "xml"
    parser_name = "xml"


class JsonStreamingResponseHandler(ParsingStreamingResponseHandler):
    name = "json"
    parser_name = "json"


class SentinelStreamingResponseHandler(ParsingStreamingResponseHandler):
    name = "sentinel"
    parser_name = "sentinel"


__all__ = [
    "JsonStreamingResponseHandler",
    "ParsingStreamingResponseHandler",
    "SentinelStreamingResponseHandler",
    "XmlStreamingResponseHandler",
]
