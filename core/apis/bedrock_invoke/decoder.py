"""Converter ``bedrock-invoke``: Amazon Bedrock's ``InvokeModelWithResponseStream``
(``/model/{id}/invoke-with-response-stream``), in AWS's binary event-stream framing
(:mod:`streamtool.core.wire.eventstream`).

``chunk`` frames whose ``bytes`` field is the base64 of one event of the model's own streaming
API. Claude's are Anthropic Messages events, read by the ``anthropic`` converter; Amazon Nova's
are ``{"contentBlockDelta": {...}}``-style objects, read as Converse events
(:class:`~streamtool.core.apis.bedrock_converse.decoder.ConverseEvents`). The event after the
last (``amazon-bedrock-invocationMetrics``) holds Bedrock's token counts.
"""

import base64
import binascii
from typing import Any

from ...converters.base import Converter
from ...model import ChunkResponse
from ...model.quirk_ids import QuirkId
from ...model.records import Header
from ...model.vocabulary import ErrorKind
from ...wire import fastjson
from ...wire.sse import SSEEvent
from ..bedrock_converse.decoder import (
    ConverseEvents,
    bedrock_usage,
    exception_message,
    path_model,
)
from ..bedrock_converse.detect import CONVERSE_EVENTS


class BedrockInvokeConverter(Converter):
    """``chunk`` frames carrying the model's native events, read by the converter of that API."""

    name = "bedrock-invoke"

    def __init__(self) -> None:
        super().__init__()
        self.inner: Converter | None = None
        self.inner_name: str | None = None
        self.converse: ConverseEvents | None = None
        self.failed = False
        self.header: Header | None = None

    def use_header(self, header: Header) -> None:
        super().use_header(header)
        self.header = header
        self.path_model = path_model(header)

    def on_event(self, event: SSEEvent) -> list[ChunkResponse]:
        kind = event.event or ""
        if kind.startswith(("exception:", "error:")):
            self.failed = True
            message, payload = exception_message(kind, event.data)
            self.error(ErrorKind.PROVIDER_ERROR, f"exception in the stream: {message}", payload)
            return []
        if kind != "chunk":
            return super().on_event(event)
        try:
            part = fastjson.loads(event.data)
        except ValueError as exc:
            self.error(
                ErrorKind.BAD_JSON, f"chunk frame payload is not JSON: {exc}", event.data[:200]
            )
            return []
        raw = part.get("bytes") if isinstance(part, dict) else None
        if not isinstance(raw, str):
            self.error(ErrorKind.BAD_PAYLOAD, "a chunk frame without bytes", part)
            return []
        try:
            text = base64.b64decode(raw, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError) as exc:
            self.error(
                ErrorKind.BAD_PAYLOAD, f"a chunk frame's bytes are not base64 of UTF-8: {exc}"
            )
            return []
        return self.native(text)

    def on_payload(self, obj: dict[str, Any], event: SSEEvent) -> list[ChunkResponse]:
        return self.other_event(event.event, obj)

    def native(self, text: str) -> list[ChunkResponse]:
        """One event of the model's own API."""
        try:
            obj: Any = fastjson.loads(text)
        except ValueError as exc:
            self.error(ErrorKind.BAD_JSON, f"a chunk's event is not JSON: {exc}", text[:200])
            return []
        if not isinstance(obj, dict):
            self.error(ErrorKind.BAD_PAYLOAD, "a chunk's event is not a JSON object", obj)
            return []
        out: list[ChunkResponse] = []
        metrics = obj.get("amazon-bedrock-invocationMetrics")
        if self.inner is None and self.converse is None:
            self._choose(obj, text)
        if self.inner is not None:
            name = obj.get("type")
            out = self.inner.feed(SSEEvent(text, name if isinstance(name, str) else None))
        elif self.converse is not None:
            kinds = [k for k in obj if k in CONVERSE_EVENTS]
            for kind in kinds:
                if isinstance(obj[kind], dict):
                    out.extend(self.converse.feed(kind, obj[kind]))
            if not kinds and metrics is None:
                self.unknown_event(",".join(sorted(obj)) or "{}")
        if isinstance(metrics, dict):
            usage = bedrock_usage(metrics)
            if usage and self.inner_name != "anthropic":
                out.append(ChunkResponse(usage=usage))
        return out

    def _choose(self, obj: dict[str, Any], text: str) -> None:
        from ...converters import detect_from_event, make_converter

        if any(k in CONVERSE_EVENTS for k in obj):
            self.converse = ConverseEvents(self)
            self.inner_name = "converse"
            return
        name = detect_from_event(SSEEvent(text, None))
        if name is None or name.startswith("bedrock"):
            self.quirk(
                QuirkId.BEDROCK_INVOKE_UNKNOWN_MODEL_EVENTS,
                f"chunks whose events this converter cannot read (keys {sorted(obj)[:5]})",
            )
            self.converse = ConverseEvents(self)  # nothing in them will be read
            self.inner_name = "unknown"
            return
        self.inner = make_converter(name)
        if self.header is not None:
            self.inner.use_header(self.header)
        self.inner_name = name

    def on_finish(self) -> list[ChunkResponse]:
        self.report_unknown_events()
        if self.inner is not None:
            if self.failed:
                self.inner.http_error = True  # the exception said why it ended: no truncation
            return self.inner.finish()
        if self.converse is not None and self.inner_name == "converse":
            if not self.converse.stopped and not self.failed and not self.http_error:
                self.truncated("messageStop")
        elif self.converse is None and not self.failed and not self.http_error:
            self.truncated("a chunk")
        return []
