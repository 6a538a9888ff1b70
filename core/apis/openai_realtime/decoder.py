"""Converter ``openai-realtime``: the server's events of an OpenAI Realtime session.

A session holds many responses, one after the other (``response.created`` ... ``response.done``).
Text: ``response.output_text.delta`` and the transcript of the spoken answer,
``response.output_audio_transcript.delta`` (the audio itself, ``response.output_audio.delta``, is
counted by the session's outline, never read as text); a ``.done`` event fills in text that was
never streamed. Function calls: a ``function_call`` output item is a tool call keyed by its item
id, its arguments streamed by ``response.function_call_arguments.delta`` and restated by
``.done`` (a missing suffix is added, a contradiction noted); MCP calls (``mcp_call`` items, their
``response.mcp_call_arguments.*``) are calls the server runs (``server_side``), an
``mcp_approval_request`` one the client answers. Usage is summed over the session's responses
(each ``response.done`` has its own); the finish reason is the last response's status (or its
``status_details.reason`` when it did not complete).

The retired beta names (``response.text.*``, ``response.audio.*``,
``response.audio_transcript.*``, ``conversation.item.created``) are read as their GA names and
noted (``realtime_beta_event_names``). An ``error`` event is told when what follows it is known:
more events, and it was one the session went on from (``provider_error_recovered``; while a
response streamed, the ``realtime_error_not_fatal`` quirk); a close or the end of the session,
and it was the end (``provider_error``). Beside the
events the engine tells the converter of the client's messages (a ``function_call_output`` item
answers a call: the client is no longer asked to run it) and of the control frames: a close with
code 4000 or 3000 is an error and a quirk, a connection that ends without a close frame while a
response streams is ``ws_dropped_mid_response``, and a long pause with pings mid-response is
``ws_long_pause_pings``.
"""

from __future__ import annotations

from typing import Any

from ...converters.base import Converter
from ...model import ChunkResponse, ToolCallDelta
from ...model.quirk_ids import QuirkId
from ...model.usage import add_up, normalize_usage
from ...model.vocabulary import ErrorKind
from ...pipeline.tracker import TrackedCall

# the beta names of events that the GA renamed
BETA_NAMES = {
    "response.text.delta": "response.output_text.delta",
    "response.text.done": "response.output_text.done",
    "response.audio.delta": "response.output_audio.delta",
    "response.audio.done": "response.output_audio.done",
    "response.audio_transcript.delta": "response.output_audio_transcript.delta",
    "response.audio_transcript.done": "response.output_audio_transcript.done",
    "conversation.item.created": "conversation.item.added",
}
# a pause between two server messages of a response at least this long, with pings in it, is
# the long-pause quirk (the server pings about every 20 s; a client's read timeout is often
# shorter than a pause of that length)
LONG_PAUSE = 5.0
# close codes the server closes a session with after an error it cannot go on from
CLOSE_QUIRKS = {4000: QuirkId.REALTIME_CLOSE_REQUEST_SHAPE, 3000: QuirkId.REALTIME_CLOSE_AUTH}
NORMAL_CLOSES = frozenset({1000, 1001, 1005})
_SERVER_ITEMS = frozenset({"mcp_call"})
_IGNORED = frozenset(
    {
        "session.created",
        "session.updated",
        "conversation.created",
        "conversation.item.added",
        "conversation.item.done",
        "conversation.item.retrieved",
        "conversation.item.truncated",
        "conversation.item.deleted",
        "conversation.item.input_audio_transcription.delta",
        "conversation.item.input_audio_transcription.completed",
        "conversation.item.input_audio_transcription.failed",
        "conversation.item.input_audio_transcription.segment",
        "input_audio_buffer.committed",
        "input_audio_buffer.cleared",
        "input_audio_buffer.speech_started",
        "input_audio_buffer.speech_stopped",
        "input_audio_buffer.timeout_triggered",
        "input_audio_buffer.dtmf_event_received",
        "output_audio_buffer.started",
        "output_audio_buffer.stopped",
        "output_audio_buffer.cleared",
        "response.content_part.added",
        "response.content_part.done",
        "response.output_audio.delta",
        "response.output_audio.done",
        "response.mcp_call.in_progress",
        "response.mcp_call.completed",
        "mcp_list_tools.in_progress",
        "mcp_list_tools.completed",
        "mcp_list_tools.failed",
        "rate_limits.updated",
    }
)


class RealtimeConverter(Converter):
    name = "openai-realtime"

    def __init__(self) -> None:
        super().__init__()
        self.responding: str | None = None  # the id of the response streaming now
        self.responses = 0
        self.last_status: str | None = None
        self._usage: dict[str, int] = {}
        self._streamed: dict[tuple[str, int], bool] = {}  # (item id, part) -> text came
        self._kinds: dict[str, str] = {}  # item id -> its type
        self._last_type: str | None = None  # the type of the last server event
        self._error_open = False  # an error came mid-response: is the session going on?
        # the error events not told yet: (message, detail), told once what follows is known
        self._held_errors: list[tuple[str, Any]] = []
        self._last_server_t: float | None = None
        self._pinged = False  # pings since the last server message
        self.dropped = False

    # -- the server's events ---------------------------------------------------------------
    events = {
        "response.created": "_created",
        "response.done": "_done",
        "response.output_item.added": "_item_added",
        "response.output_item.done": "_item_done",
        "response.output_text.delta": ("_text_delta", 0),
        "response.output_audio_transcript.delta": ("_text_delta", 1),
        "response.output_text.done": ("_text_done", 0, "text"),
        "response.output_audio_transcript.done": ("_text_done", 1, "transcript"),
        "response.function_call_arguments.delta": "_arguments_delta",
        "response.mcp_call_arguments.delta": "_arguments_delta",
        "response.function_call_arguments.done": "_arguments_done",
        "response.mcp_call_arguments.done": "_arguments_done",
        "response.mcp_call.failed": "_mcp_failed",
        "error": "_error",
    }
    ignored_events = _IGNORED

    def on_payload(self, obj: dict[str, Any], event: Any) -> list[ChunkResponse]:
        kind = obj.get("type")
        if isinstance(kind, str) and kind in BETA_NAMES:
            self.quirk(QuirkId.REALTIME_BETA_EVENT_NAMES, f"{kind!r} (GA: {BETA_NAMES[kind]!r})")
            obj = {**obj, "type": BETA_NAMES[kind]}
            kind = obj["type"]
        self._timing()
        if kind != "error" and self._held_errors:
            self._tell_errors(ErrorKind.PROVIDER_ERROR_RECOVERED)
        if self._error_open and kind != "error":
            self._error_open = False
            self.quirk(
                QuirkId.REALTIME_ERROR_NOT_FATAL,
                f"the session went on after an error mid-response ({kind!r} came next)",
            )
        if kind == "rate_limits.updated" and self._last_type == "response.done":
            self.quirk(
                QuirkId.REALTIME_RATE_LIMITS_AFTER_DONE, "rate_limits.updated after response.done"
            )
        self._last_type = kind if isinstance(kind, str) else None
        return super().on_payload(obj, event)

    def _timing(self) -> None:
        """A long pause with pings in it, mid-response: noted when the next message comes."""
        now = self.now
        if (
            self.responding is not None
            and self._pinged
            and now is not None
            and self._last_server_t is not None
            and now - self._last_server_t >= LONG_PAUSE
        ):
            self.quirk(
                QuirkId.WS_LONG_PAUSE_PINGS,
                f"{now - self._last_server_t:.1f} s without a message mid-response, pings only",
            )
        self._pinged = False
        if now is not None:
            self._last_server_t = now

    def _created(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        response = obj.get("response")
        rid = response.get("id") if isinstance(response, dict) else None
        self.responding = rid if isinstance(rid, str) and rid else f"response {self.responses + 1}"
        self.responses += 1
        return []

    def _done(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        response = obj.get("response")
        response = response if isinstance(response, dict) else {}
        self.responding = None
        status = response.get("status")
        details = response.get("status_details")
        details = details if isinstance(details, dict) else {}
        reason = details.get("reason")
        if isinstance(status, str) and status:
            self.last_status = (
                reason if status != "completed" and isinstance(reason, str) and reason else status
            )
        if status == "failed":
            err = details.get("error")
            message = err.get("message") if isinstance(err, dict) else None
            self.error(
                ErrorKind.PROVIDER_ERROR,
                f"response failed: {message or reason or 'no reason given'}",
                err if isinstance(err, dict) else None,
            )
        out: list[ToolCallDelta] = []
        for call in self.tracker.open_calls():  # the response ended: its calls are whole
            done = self.tracker.complete(call)
            if done is not None:
                out.append(done)
        usage = self._add_usage(response.get("usage"))
        chunks = [ChunkResponse(tool_calls=out)] if out else []
        if usage is not None:
            chunks.append(ChunkResponse(usage=usage))
        return chunks

    def _add_usage(self, raw: Any) -> dict[str, int] | None:
        """The usage of every response so far (each ``response.done`` has its own)."""
        usage = normalize_usage(raw)
        if usage is None:
            return None
        details = raw.get("input_token_details") if isinstance(raw, dict) else None
        cached = details.get("cached_tokens") if isinstance(details, dict) else None
        if type(cached) is int:
            usage["cached_input_tokens"] = cached
        return add_up(self._usage, usage)

    # -- output items ----------------------------------------------------------------------
    def _item_added(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        item = obj.get("item")
        if not isinstance(item, dict):
            return []
        kind = item.get("type")
        item_id = item.get("id")
        if isinstance(item_id, str) and isinstance(kind, str):
            self._kinds[item_id] = kind
        if kind not in ("function_call", "mcp_call", "mcp_approval_request"):
            return []
        call = self.tracker.find(item_id) if isinstance(item_id, str) else None
        if call is None:
            call = self.tracker.open(item_id if isinstance(item_id, str) and item_id else None)
        return self._call_fields(call, item, first=True)

    def _call_fields(
        self, call: TrackedCall, item: dict[str, Any], *, first: bool = False
    ) -> list[ChunkResponse]:
        kind = item.get("type")
        call_id = item.get("call_id") if kind == "function_call" else item.get("id")
        call_id = call_id if isinstance(call_id, str) and call_id else None
        name = item.get("name")
        if kind == "mcp_approval_request":
            name = "mcp_approval_request"
        metadata: dict[str, Any] | None = None
        if first:
            metadata = {}
            if kind in _SERVER_ITEMS:
                metadata["server_side"] = True
            if kind == "mcp_approval_request":
                metadata["approval_request"] = True
            label = item.get("server_label")
            if isinstance(label, str) and label:
                metadata["server_label"] = label
            if self.responding is not None:
                metadata["response_id"] = self.responding
        delta = self.tracker.update(
            call,
            call_id=call_id,
            name=name if isinstance(name, str) and name else None,
            metadata=metadata or None,
            announce=first,
        )
        return [ChunkResponse(tool_calls=[delta])] if delta is not None else []

    def _item_done(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        item = obj.get("item")
        if not isinstance(item, dict):
            return []
        item_id = item.get("id")
        kind = item.get("type")
        if kind == "message" and isinstance(item_id, str):
            return self._message_done(item_id, item)
        if kind not in ("function_call", "mcp_call", "mcp_approval_request"):
            return []
        call = self.tracker.find(item_id) if isinstance(item_id, str) else None
        out: list[ChunkResponse] = []
        if call is None:
            call = self.tracker.open(item_id if isinstance(item_id, str) and item_id else None)
            out += self._call_fields(call, item, first=True)
        arguments = item.get("arguments")
        if kind == "mcp_approval_request" and not call.arguments:
            arguments = arguments if isinstance(arguments, str) else "{}"
        deltas = self._reconcile(call, arguments)
        done = self.tracker.complete(call)
        if done is not None:
            if kind == "mcp_call":
                done.metadata = {"result": {k: item.get(k) for k in ("output", "error")}}
            deltas.append(done)
        if deltas:
            out.append(ChunkResponse(tool_calls=deltas))
        return out

    def _message_done(self, item_id: str, item: dict[str, Any]) -> list[ChunkResponse]:
        """Text of a finished message that was never streamed (a transcript, a text part)."""
        content = item.get("content")
        if not isinstance(content, list):
            return []
        out: list[ChunkResponse] = []
        for index, part in enumerate(content):
            if not isinstance(part, dict) or self._streamed.get((item_id, index)):
                continue
            text = part.get("text") if part.get("type") == "output_text" else None
            if text is None and part.get("type") == "output_audio":
                text = part.get("transcript")
            if isinstance(text, str) and text:
                self._streamed[(item_id, index)] = True
                out.append(ChunkResponse(content=text))
        return out

    # -- text ------------------------------------------------------------------------------
    def _text_delta(self, obj: dict[str, Any], transcript: int) -> list[ChunkResponse]:
        delta = obj.get("delta")
        if not isinstance(delta, str) or not delta:
            return []
        self._mark(obj)
        return [ChunkResponse(content=delta)]

    def _mark(self, obj: dict[str, Any]) -> None:
        item_id = obj.get("item_id")
        index = obj.get("content_index", 0)
        if isinstance(item_id, str) and type(index) is int:
            self._streamed[(item_id, index)] = True

    def _text_done(self, obj: dict[str, Any], transcript: int, field: str) -> list[ChunkResponse]:
        item_id = obj.get("item_id")
        index = obj.get("content_index", 0)
        text = obj.get(field)
        if not isinstance(item_id, str) or type(index) is not int or not isinstance(text, str):
            return []
        if self._streamed.get((item_id, index)) or not text:
            return []
        self._streamed[(item_id, index)] = True
        return [ChunkResponse(content=text)]

    # -- arguments -------------------------------------------------------------------------
    def _arguments_delta(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        delta = obj.get("delta")
        item_id = obj.get("item_id")
        if not isinstance(delta, str) or not delta or not isinstance(item_id, str):
            return []
        call = self.tracker.find(item_id)
        if call is None:  # a delta before its item: the call opens here
            call = self.tracker.open(item_id)
            call_id = obj.get("call_id")
            self.tracker.update(call, call_id=call_id if isinstance(call_id, str) else None)
        out = self.tracker.append_exact(call, delta)
        return [ChunkResponse(tool_calls=[out])] if out is not None else []

    def _arguments_done(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        item_id = obj.get("item_id")
        call = self.tracker.find(item_id) if isinstance(item_id, str) else None
        if call is None:
            return []
        out = self.restated_name(call, obj.get("name"))
        out += self._reconcile(call, obj.get("arguments"))
        return [ChunkResponse(tool_calls=out)] if out else []

    def _reconcile(self, call: TrackedCall, final: Any) -> list[ToolCallDelta]:
        """The arguments a ``.done`` restates: what was never streamed is added (a missing
        suffix, or the whole text); a restatement that contradicts the stream is an error."""
        if not isinstance(final, str) or call.complete:
            return []
        streamed = call.arguments
        if final == streamed or not final:
            return []
        if final.startswith(streamed):
            delta = self.tracker.append_exact(call, final[len(streamed) :])
            return [delta] if delta is not None else []
        self.error(
            ErrorKind.ARGUMENTS_MISMATCH,
            f"call {call.call_id}: the arguments restated at the end differ from those streamed",
            {"streamed": streamed[:200], "final": final[:200]},
        )
        return []

    def _mcp_failed(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        self.error(ErrorKind.PROVIDER_ERROR, f"MCP call {obj.get('item_id')} failed")
        return []

    # -- errors ----------------------------------------------------------------------------
    def _error(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        err = obj.get("error")
        err = err if isinstance(err, dict) else obj
        message = err.get("message")
        code = err.get("code")
        kind = err.get("type")
        label = ".".join(str(x) for x in (kind, code) if isinstance(x, str) and x)
        text = message if isinstance(message, str) and message else "an error event"
        self._held_errors.append((f"{label}: {text}" if label else text, err))
        if self.responding is not None:
            self._error_open = True
        return []

    def _tell_errors(self, kind: ErrorKind) -> None:
        """The error events held: the session went on from them, or ended with them."""
        for message, detail in self._held_errors:
            self.error(kind, message, detail)
        self._held_errors = []

    # -- beside the events (a session's) ---------------------------------------------------
    def on_client_message(self, obj: Any) -> list[ChunkResponse]:
        """A client event: a ``function_call_output`` item answers its call."""
        if not isinstance(obj, dict) or obj.get("type") != "conversation.item.create":
            return []
        item = obj.get("item")
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            self.call_answered(item.get("call_id"))
        return []

    def on_control(
        self, kind: str, direction: str, code: int | None, reason: str
    ) -> list[ChunkResponse]:
        if kind == "ping" and direction == "server":
            self._pinged = True
            return []
        if kind != "close":
            return []
        self._tell_errors(ErrorKind.PROVIDER_ERROR)  # the session ended with them
        if direction != "server":
            return []
        said = f"{code} {reason}".strip() if code is not None else "no close frame"
        if code is None:
            if self.responding is not None:
                self.dropped = True
                self.quirk(QuirkId.WS_DROPPED_MID_RESPONSE, f"during {self.responding}")
                self.truncated("response.done", cut="were cut off with the connection")
            return []
        quirk = CLOSE_QUIRKS.get(code)
        if quirk is not None:
            self.quirk(quirk, said)
        if code not in NORMAL_CLOSES:
            self.error(ErrorKind.PROVIDER_ERROR, f"the server closed the session: {said}")
        return []

    def on_finish(self) -> list[ChunkResponse]:
        self._tell_errors(ErrorKind.PROVIDER_ERROR)
        self.report_unknown_events()
        out: list[ChunkResponse] = []
        deltas = self.tracker.flush_unannounced()
        if self.responding is not None:
            self.last_status = None  # the session ended in a response that never finished
            if not self.dropped:
                self.truncated("response.done")
        if deltas:
            out.append(ChunkResponse(tool_calls=deltas))
        if self.last_status is not None:
            out.append(ChunkResponse(finish_reason=self.last_status))
        return out
