"""OpenAI Chat Completions streams written: ``chat.completion.chunk`` events. Sans-IO.

The one encoder of the API, with two entries over one chunk writer (:class:`Chunks`):

- :func:`emit` writes a whole reply (``replay --emit``, ``serve --script``, translation) as OpenAI
streams: a first chunk with the assistant role, text (``content``) one token per chunk, a refusal as
``refusal`` deltas, each tool call opened by a chunk with its ``index``, ``id``, ``type`` and
``name`` (and empty arguments) followed by its arguments a token or so per chunk, a closing chunk
with the finish reason, then ``data: [DONE]``. Usage rides on the closing chunk (the way most
servers send it; a separate usage chunk with empty ``choices`` is a catalogued quirk). Reasoning,
which OpenAI's own API does not stream, is sent as ``reasoning_content`` (DeepSeek, vLLM): replaying
it reports that one field's quirk. An error the provider reported in the stream is sent as an
``error`` object where it happened; when it came in the middle of a tool call, the stream ends after
it (no finish chunk, no ``[DONE]``: either would close the call) and the usage rides on that call's
last chunk. - :class:`OpenAISSEEmitter` writes the replay engine's items as they come (segment
events and tool invocations, behind any converter and any parser: the proxy's live rewriting): text
segments become ``content`` deltas (a refusal: ``refusal`` deltas), reasoning segments
``reasoning_content`` deltas; each tool invocation a ``tool_calls`` delta, sent when the call is
whole; a provider error in the stream an ``error`` object in its own chunk, where it happened.
``finish()`` adds the finish chunk (the finish class of :mod:`streamtool.core.model.finish` as an
OpenAI finish reason: ``tool_calls`` when the client has calls to run), a usage chunk when usage is
known (``choices: []``, as with ``stream_options.include_usage``) and ``data: [DONE]``. A stream
that was cut off (``truncated``) stays cut off: no finish chunk and no ``[DONE]``; a stream that
ended on an error without a finish reason gets no finish chunk. The completion id and ``created``
are given by the caller: nothing random. Quirks and other errors are not part of the stream (an
OpenAI stream has no place for them); server-side tool invocations (run by the provider, not the
client) are not sent as tool calls.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ...model import SegmentEvent, SegmentEventType, SegmentType, StreamError, ToolInvocation
from ...model.finish import OPENAI_CHAT_REASONS, finish_class
from ...model.quirk_ids import QuirkId
from ...model.vocabulary import ErrorKind
from ...outputs.emit.base import Emitted, Out, data_event, error_response
from ...outputs.emit.pieces import cut
from ...outputs.emit.reply import ERROR, REASONING, REFUSAL, TEXT, TOOL_CALL, Reply, error_message
from .errors import error_shape

INHERENT_QUIRKS = {QuirkId.REASONING_FIELD_REASONING_CONTENT}  # only when the reply has reasoning
DONE = "data: [DONE]\n\n"
_FIELDS = {TEXT: "content", REFUSAL: "refusal", REASONING: "reasoning_content"}
# an HTTP error's type by status (the one OpenAI's API sends)


class Chunks:
    """The ``chat.completion.chunk`` events of one completion: the one place their shape is
    written. ``full`` adds the fields OpenAI's own API sends as null (``system_fingerprint``,
    a choice's ``logprobs``)."""

    def __init__(self, completion_id: str, created: int, model: str, *, full: bool) -> None:
        self.completion_id = completion_id
        self.created = created
        self.model = model
        self.full = full

    def event(self, choices: list[dict[str, Any]], usage: Any = None) -> str:
        """A chunk of these choices (a usage chunk: none), with usage when given."""
        obj: dict[str, Any] = {
            "id": self.completion_id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
        }
        if self.full:
            obj["system_fingerprint"] = None
        obj["choices"] = choices
        if usage is not None:
            obj["usage"] = usage
        return data_event(obj)

    def choice(self, delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> str:
        """A chunk of the one choice's delta (and finish reason)."""
        choice: dict[str, Any] = {"index": 0, "delta": delta}
        if self.full:
            choice["logprobs"] = None
        choice["finish_reason"] = finish
        return self.event([choice], usage)


def call_opening(index: int, call_id: str | None, name: str | None) -> dict[str, Any]:
    """The delta that opens a tool call: its index, id, type and name, empty arguments."""
    head = {
        "index": index,
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": ""},
    }
    return {"tool_calls": [head]}


def call_arguments(index: int, arguments: str) -> dict[str, Any]:
    """A delta carrying (a piece of) a tool call's arguments."""
    return {"tool_calls": [{"index": index, "function": {"arguments": arguments}}]}


def error_event(body: dict[str, Any]) -> str:
    """An error the provider reported in the stream, as OpenAI and OpenRouter send them."""
    return data_event({"error": body})


def openai_usage(usage: dict[str, int]) -> dict[str, Any]:
    """Normalized usage (core/model/usage.py keys) as an OpenAI chat-completions usage object."""
    out: dict[str, Any] = {}
    if "input_tokens" in usage:
        out["prompt_tokens"] = usage["input_tokens"]
    if "output_tokens" in usage:
        out["completion_tokens"] = usage["output_tokens"]
    if "total_tokens" in usage:
        out["total_tokens"] = usage["total_tokens"]
    elif "input_tokens" in usage and "output_tokens" in usage:
        out["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
    if "cached_input_tokens" in usage:
        out["prompt_tokens_details"] = {"cached_tokens": usage["cached_input_tokens"]}
    if "reasoning_tokens" in usage:
        out["completion_tokens_details"] = {"reasoning_tokens": usage["reasoning_tokens"]}
    return out


# -- a whole reply -------------------------------------------------------------------------------
def call_id(reply: Reply, part_id: str | None, n: int) -> str:
    """The call's own id (OpenAI-compatible servers use ids of every shape), else a new one."""
    if part_id:
        return part_id
    return reply.ident("call_", f"{n}:{part_id}")


def stream_stops_in(reply: Reply) -> int | None:
    """The index of the last call the stream ended inside before an error came, if any."""
    found = None
    for n, part in enumerate(reply.parts):
        if part.kind == TOOL_CALL and part.cut:
            found = n
        elif part.kind == ERROR and found is not None:
            return found
    return None


def emit(reply: Reply) -> Emitted:
    if reply.status >= 400:
        return error_response(reply, error_shape(reply.status, reply.error_message()))
    out = Out(reply)
    completion_id = reply.seed if reply.seed.startswith("chatcmpl-") else reply.ident("chatcmpl-")
    chunks = Chunks(completion_id, reply.created, reply.model, full=True)
    # the first chunk opens the field the message starts with: a refusal's has content null
    first = next((p.kind for p in reply.parts if p.kind in _FIELDS), TEXT)
    opening = (
        {"content": None, "refusal": ""} if first == REFUSAL else {"content": "", "refusal": None}
    )
    out.opening(chunks.choice({"role": "assistant", **opening}))
    usage = openai_usage(reply.usage) if reply.usage else None
    # an error in the middle of a call ends the stream after it: a finish reason or [DONE] would
    # close the call, as if the model had finished it; the usage so far rides on the last chunk
    # of that call (as on the chunks of servers that send usage on every chunk)
    stops_in = None if reply.truncated else stream_stops_in(reply)
    calls = 0
    for n, part in enumerate(reply.parts):
        if part.kind in _FIELDS:
            field = _FIELDS[part.kind]
            for piece in cut(part.text, 1, part.pieces):
                out.send(chunks.choice({field: piece}), advance=len(piece))
        elif part.kind == TOOL_CALL:
            deltas = [(call_opening(calls, call_id(reply, part.call_id, calls), part.name), 0)]
            deltas += [
                (call_arguments(calls, piece), len(piece))
                for piece in cut(part.text, 1, part.pieces)
            ]
            for i, (delta, size) in enumerate(deltas):
                last = n == stops_in and i == len(deltas) - 1
                out.send(chunks.choice(delta, usage=usage if last else None), advance=size)
            calls += 1
        elif part.kind == ERROR:
            error = part.error or {}
            body: dict[str, Any] = {k: error[k] for k in ("type", "code") if k in error}
            out.send(error_event({"message": error_message(error), **body}))
    if reply.truncated:
        return out.done(complete=False)
    if stops_in is not None:
        return out.done()
    reason = OPENAI_CHAT_REASONS.get(reply.finish_class)
    if reason is not None:
        out.closing(chunks.choice({}, reason, usage or None))
    out.closing(DONE)
    return out.done()


# -- the engine's items, as they come --------------------------------------------------------------
class OpenAISSEEmitter:
    """Engine items in, OpenAI chat-completions SSE text out: ``feed(items)``, ``finish()``."""

    def __init__(
        self, *, completion_id: str = "chatcmpl-streamtool", created: int = 0, model: str = ""
    ) -> None:
        self.chunks = Chunks(completion_id, created, model, full=False)
        self.tool_calls = 0  # tool calls sent so far
        self.errors_sent = 0  # provider errors sent as error chunks
        self.truncated = False  # the replayed stream was cut off
        self.finished = False
        self._started = False
        self._kinds: dict[str, SegmentType] = {}
        self._refusals: set[str] = set()  # text segments that are a refusal (sent as refusal)

    @property
    def completion_id(self) -> str:
        return self.chunks.completion_id

    @property
    def created(self) -> int:
        return self.chunks.created

    @property
    def model(self) -> str:
        return self.chunks.model

    # -- input -----------------------------------------------------------------------------
    def feed(self, items: Iterable[object]) -> str:
        """SSE text for these engine items (``""`` when they add nothing to an OpenAI stream)."""
        parts: list[str] = []
        kinds = self._kinds
        for item in items:
            if isinstance(item, SegmentEvent):
                event_type = item.event_type
                if event_type is SegmentEventType.CONTENT:
                    if not item.delta:
                        continue
                    kind = kinds.get(item.segment_id)
                    if kind is SegmentType.TEXT:
                        field = "refusal" if item.segment_id in self._refusals else "content"
                        self._delta(parts, {field: item.delta})
                    elif kind is SegmentType.REASONING:
                        self._delta(parts, {"reasoning_content": item.delta})
                elif event_type is SegmentEventType.START:
                    assert item.segment_type is not None
                    kinds[item.segment_id] = item.segment_type
                    if item.metadata and item.metadata.get("refusal") is True:
                        self._refusals.add(item.segment_id)
                else:
                    kinds.pop(item.segment_id, None)
            elif isinstance(item, ToolInvocation):
                if not item.server_side:
                    self._tool_call(parts, item)
            elif isinstance(item, StreamError):
                if item.kind == ErrorKind.PROVIDER_ERROR:
                    self._error(parts, item)
                elif item.kind == ErrorKind.TRUNCATED:
                    self.truncated = True
        return "".join(parts)

    def finish(
        self,
        *,
        finish_reason: str | None = None,
        usage: dict[str, int] | None = None,
        finish_class: str | None = None,
    ) -> str:
        """The closing chunks: finish reason, usage (when known), ``data: [DONE]``.

        ``finish_class`` is the replay's (computed from ``finish_reason`` and the calls sent when
        not given)."""
        if self.finished:
            return ""
        self.finished = True
        parts: list[str] = []
        self._start(parts)
        cls = finish_class or _class_of(finish_reason, self.tool_calls > 0, self.errors_sent > 0)
        reason: str | None = None
        if not self.truncated and (finish_reason is not None or cls == "tool_calls"):
            reason = OPENAI_CHAT_REASONS.get(cls)
            if reason is None and cls == "unknown":
                reason = finish_reason  # a reason no table knows passes through unchanged
        if reason is not None:
            parts.append(self.chunks.choice({}, reason))
        if usage:
            mapped = openai_usage(usage)
            if mapped:
                parts.append(self.chunks.event([], usage=mapped))
        if not self.truncated:
            parts.append(DONE)
        return "".join(parts)

    # -- output ----------------------------------------------------------------------------
    def _start(self, parts: list[str]) -> None:
        if not self._started:
            self._started = True
            parts.append(self.chunks.choice({"role": "assistant", "content": ""}))

    def _delta(self, parts: list[str], delta: dict[str, Any]) -> None:
        self._start(parts)
        parts.append(self.chunks.choice(delta))

    def _error(self, parts: list[str], error: StreamError) -> None:
        detail = error.detail
        if isinstance(detail, dict) and isinstance(detail.get("message"), str):
            body = {k: v for k, v in detail.items() if k in ("message", "type", "code", "param")}
        else:
            body = {"message": error.message}
        self.errors_sent += 1
        self._start(parts)
        parts.append(error_event(body))

    def _tool_call(self, parts: list[str], invocation: ToolInvocation) -> None:
        if invocation.arguments is not None:
            arguments = json.dumps(invocation.arguments, ensure_ascii=False)
        else:
            arguments = invocation.raw_arguments or ""
        index = self.tool_calls
        self.tool_calls += 1
        self._delta(parts, call_opening(index, invocation.id, invocation.name))
        if arguments:
            self._delta(parts, call_arguments(index, arguments))


def _class_of(finish_reason: str | None, client_calls: bool, errors: bool) -> str:
    return finish_class(finish_reason, client_calls=client_calls, errors=errors)
