"""Converter ``openai-responses``: the OpenAI Responses API (and compatible servers).

Output items are opened by ``response.output_item.added`` and closed by
``response.output_item.done``. A ``function_call`` item is one tool call in the shared tracker,
keyed by its item ``id``, its ``call_id`` (the invocation id) and its ``output_index``: argument
deltas carry only ``item_id`` (and ``output_index``), so parallel calls whose events interleave
still land in the right call. Arguments are reconciled with the authoritative copies in
``response.function_call_arguments.done``, ``output_item.done`` and ``response.completed``: only
a missing suffix is added (arguments sent only there are taken whole), never a duplicate, and a
copy that contradicts the streamed text is reported.

Text: ``response.output_text.delta`` (``.done`` fills in text that was never streamed),
annotations into the text segment's ``annotations`` metadata, refusals as text marked
``refusal``. Reasoning: ``reasoning_summary_text`` and ``reasoning_text`` deltas; the item's
``encrypted_content`` goes into the reasoning segment's metadata. Custom tools (free-form input)
get their input as a JSON string. Hosted tools that OpenAI runs itself (web search, file search,
code interpreter, image generation, MCP) are tool calls marked ``server_side`` whose ``result``
metadata is the finished item; client-run built-in calls (computer, shell, apply_patch) are plain
tool calls.

Errors: an ``error`` event and ``response.failed``. The finish reason is the response status
(``completed``, ``failed``), or for ``response.incomplete`` the ``incomplete_details.reason``
(``max_output_tokens``...). Usage comes from the final response. Framing without ``event:`` lines
(the type is read from the payload) and a trailing ``[DONE]`` are accepted.
"""

from __future__ import annotations

import json
from typing import Any

from ..model import ChunkResponse, ToolCallDelta
from ..tracker import TrackedCall
from ..usage import normalize_usage
from ..wire.fastjson import loads as _loads
from ..wire.sse import SSEEvent
from .base import Converter
from .segments import REASONING, TEXT, TOOL, ProseRuns

# hosted tools run by OpenAI inside the response: the item fields that are the call's input
_SERVER_ITEMS: dict[str, tuple[str, ...]] = {
    "web_search_call": ("action",),
    "file_search_call": ("queries",),
    "code_interpreter_call": ("code", "container_id"),
    "image_generation_call": (),
    "mcp_call": (),  # arguments as a JSON string, like a function call
    "mcp_list_tools": ("server_label",),
}
# built-in tools the client runs: the item fields that are the call's input
_CLIENT_ITEMS: dict[str, tuple[str, ...]] = {
    "computer_call": ("action",),
    "local_shell_call": ("action",),
    "shell_call": ("action",),
    "apply_patch_call": ("operation",),
}
_ARGUMENT_DELTAS = frozenset(
    {
        "response.function_call_arguments.delta",
        "response.mcp_call_arguments.delta",
        "response.custom_tool_call_input.delta",
    }
)
_ARGUMENT_DONES = frozenset(
    {
        "response.function_call_arguments.done",
        "response.mcp_call_arguments.done",
        "response.custom_tool_call_input.done",
    }
)
_IGNORED = frozenset(
    {
        "response.content_part.added",
        "response.content_part.done",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_part.done",
        "response.code_interpreter_call_code.delta",
        "response.code_interpreter_call_code.done",
    }
)


class _Item:
    """What an output item is, and what has been streamed of it (for reconciliation)."""

    __slots__ = ("type", "kind", "streamed", "done", "custom")

    def __init__(self, item_type: str) -> None:
        self.type = item_type
        # a custom tool call: the input is streamed as a JSON string
        self.custom = item_type == "custom_tool_call"
        kind = "other"
        if item_type == "function_call" or self.custom:
            kind = "call"
        elif item_type in _SERVER_ITEMS:
            kind = "server"
        elif item_type in _CLIENT_ITEMS:
            kind = "builtin"
        elif item_type == "message" or item_type == "reasoning":
            kind = item_type
        self.kind = kind  # "call", "server", "builtin", "message", "reasoning", "other"
        self.streamed: dict[tuple[str, int], int] = {}  # (part kind, index) -> characters streamed
        self.done = False


class OpenAIResponsesConverter(Converter):
    name = "openai-responses"

    def __init__(self) -> None:
        super().__init__()
        self._items: dict[str, _Item] = {}  # output item id -> what it is
        self._runs = ProseRuns()
        self.done = False  # [DONE] seen
        self.terminal: str | None = None  # completed / failed / incomplete
        self.failed = False
        self.finish_reason: str | None = None
        self._model: str | None = None
        self._seq: int | None = None
        self._error_messages: set[str] = set()
        self.payloads = 0

    # -- events ----------------------------------------------------------------------------
    def on_event(self, event: SSEEvent) -> list[ChunkResponse]:
        try:
            obj = _loads(event.data)
        except ValueError as exc:
            obj = self.not_json(event, exc)
            if obj is None:
                return []
        if type(obj) is dict:
            if obj.get("type") == "response.function_call_arguments.delta":
                # the hot path, inline: an argument fragment for the call opened last
                fragment = obj.get("delta")
                item_id = obj.get("item_id")
                call = self.tracker.find(item_id) if type(item_id) is str else None
                seq = obj.get("sequence_number")
                if (
                    call is not None
                    and call is self.tracker.calls[-1]
                    and type(fragment) is str
                    and fragment
                    and (
                        seq is None
                        or (type(seq) is int and (self._seq is None or seq == self._seq + 1))
                    )
                ):
                    self.payloads += 1
                    if seq is not None:
                        self._seq = seq
                    # what _argument_delta would do (no quirk applies to this delta)
                    added = self.tracker.append_exact(call, fragment)
                    return [ChunkResponse(tool_calls=[added])] if added is not None else []
            return self._payload(obj, event)
        return self.each_payload(obj, lambda payload: self._payload(payload, event))

    def on_unparsed(self, event: SSEEvent) -> bool:
        if event.data.strip() == "[DONE]":
            self.done = True
            return True
        return False

    def _payload(self, obj: dict[str, Any], event: SSEEvent) -> list[ChunkResponse]:
        self.payloads += 1
        kind = obj.get("type")
        if not isinstance(kind, str) or not kind:
            kind = event.event or ""
        seq = obj.get("sequence_number")
        if type(seq) is int:
            if self._seq is not None and seq != self._seq + 1:
                self.quirk(
                    "responses_sequence_gap",
                    f"sequence_number {seq} after {self._seq}",
                )
            self._seq = seq
        if kind == "response.function_call_arguments.delta":  # the hot path
            return self._argument_delta(obj, False)
        if kind in _ARGUMENT_DELTAS:
            return self._argument_delta(obj, kind == "response.custom_tool_call_input.delta")
        if kind == "response.output_text.delta":
            return self._text_delta(obj, TEXT, "text")
        if kind == "response.reasoning_summary_text.delta":
            return self._text_delta(obj, REASONING, "summary")
        if kind == "response.reasoning_text.delta":
            return self._text_delta(obj, REASONING, "content")
        if kind == "response.output_item.added":
            return self._item_added(obj)
        if kind == "response.output_item.done":
            return self._item_done(obj)
        if kind in _ARGUMENT_DONES:
            return self._argument_done(obj, kind)
        if kind == "response.output_text.done":
            return self._text_done(obj, TEXT, "text", "text")
        if kind == "response.reasoning_summary_text.done":
            return self._text_done(obj, REASONING, "summary", "text")
        if kind == "response.reasoning_text.done":
            return self._text_done(obj, REASONING, "content", "text")
        if kind == "response.refusal.delta":
            delta = obj.get("delta")
            if isinstance(delta, str) and delta:
                self._runs.enter(TEXT)
                return [ChunkResponse(content=delta, content_metadata={"refusal": True})]
            return []
        if kind == "response.output_text.annotation.added":
            values = self._runs.collect(TEXT, "annotations", obj.get("annotation"))
            return [ChunkResponse(content_metadata={"annotations": values})]
        if kind in ("response.created", "response.in_progress", "response.queued"):
            return self._lifecycle(obj)
        if kind == "response.completed":
            return self._completed(obj, "completed")
        if kind == "response.incomplete":
            return self._completed(obj, "incomplete")
        if kind == "response.failed":
            return self._completed(obj, "failed")
        if kind == "error":
            return self._error_event(obj)
        if kind in _IGNORED or (kind.startswith("response.") and kind.endswith("in_progress")):
            return []
        if kind.startswith("response."):
            # progress notes of hosted tools (web_search_call.searching...) carry nothing to keep
            if kind.endswith((".searching", ".completed", ".generating", ".interpreting")):
                return []
            self.quirk("responses_unknown_event", f"an event of type {kind!r}")
            return []
        self.quirk("responses_unknown_event", f"an event of type {kind!r}")
        return []

    # -- lifecycle -------------------------------------------------------------------------
    def _lifecycle(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        response = obj.get("response")
        if not isinstance(response, dict):
            return []
        model = response.get("model")
        if isinstance(model, str) and model and model != self._model:
            self._model = model
            return [ChunkResponse(model=model)]
        return []

    def _completed(self, obj: dict[str, Any], status: str) -> list[ChunkResponse]:
        if self.terminal is not None:
            self.quirk("finish_double", f"response.{status} after response.{self.terminal}")
            return []
        self.terminal = status
        chunk = ChunkResponse(is_complete=True)
        out = [chunk]
        response = obj.get("response")
        if not isinstance(response, dict):
            response = {}
        model = response.get("model")
        if isinstance(model, str) and model and model != self._model:
            self._model = chunk.model = model
        usage = normalize_usage(response.get("usage"))
        if usage:
            chunk.usage = usage
        reason = status
        if status == "incomplete":
            details = response.get("incomplete_details")
            if isinstance(details, dict) and isinstance(details.get("reason"), str):
                reason = details["reason"]
        elif status == "failed":
            self.failed = True
            err = response.get("error")
            message = _error_message(err) if err else "the response failed"
            if message not in self._error_messages:
                self._error_messages.add(message)
                self.error("provider_error", f"response failed: {message}", err)
        self.finish_reason = chunk.finish_reason = reason
        output = response.get("output")
        if isinstance(output, list):
            for index, item in enumerate(output):
                if isinstance(item, dict):
                    out.extend(self._final_item(index, item))
        if status == "completed":
            deltas = self.tracker.complete_all()
            if deltas:
                out.append(ChunkResponse(tool_calls=deltas))
        return out

    def _error_event(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        self.failed = True
        err = obj.get("error")
        if not isinstance(err, dict):
            err = {k: v for k, v in obj.items() if k not in ("type", "sequence_number")}
        message = _error_message(err)
        self._error_messages.add(message)
        self.error("provider_error", f"error event in the stream: {message}", err)
        return []

    # -- output items ----------------------------------------------------------------------
    def _item_added(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        item = obj.get("item")
        if not isinstance(item, dict):
            return []
        item_id = item.get("id")
        info = _Item(str(item.get("type")))
        if isinstance(item_id, str) and item_id:
            self._items[item_id] = info
        if info.kind in ("message", "reasoning", "other"):
            return []
        call = self._open_call(item_id, obj.get("output_index"))
        return self._call_fields(call, info, item, first=True)

    def _call_fields(
        self,
        call: TrackedCall,
        info: _Item,
        item: dict[str, Any],
        *,
        first: bool = False,
        where: str = "response.output_item.added",
    ) -> list[ChunkResponse]:
        """Merge what an item says about its call (id, name, arguments) into the tracker."""
        call_id = item.get("call_id")
        call_id = call_id if isinstance(call_id, str) and call_id else None
        if call_id is not None:
            if self.tracker.find(call_id) is None:
                self.tracker.alias(call_id, call)
            self._check_call_id(call, item)
        if call_id is None and first and info.kind == "server":
            call_id = item.get("id") if isinstance(item.get("id"), str) else None
        name: str | None = None
        metadata: dict[str, Any] | None = None
        if info.kind == "call" or info.kind == "builtin":
            raw_name = item.get("name")
            name = raw_name if isinstance(raw_name, str) and raw_name else None
            if name is None and info.kind == "builtin":
                name = info.type
        elif info.kind == "server":
            raw_name = item.get("name") if info.type == "mcp_call" else None
            name = raw_name if isinstance(raw_name, str) and raw_name else info.type
            if first:
                metadata = {"server_side": True}
                label = item.get("server_label")
                if isinstance(label, str):
                    metadata["server_label"] = label
        out: list[ToolCallDelta] = []
        if first:
            self._runs.enter(TOOL)
            delta = self.tracker.update(
                call, call_id=call_id, name=name, metadata=metadata, announce=True
            )
            if delta is not None:
                out.append(delta)
            if info.custom:
                opener = self.tracker.append_exact(call, '"')
                if opener is not None:
                    out.append(opener)
        else:
            # a call announced here (its deltas came before any item) takes the item's call id
            late_id = call_id if not call.announced else None
            delta = self.tracker.update(call, call_id=late_id, name=name)
            if delta is not None:
                out.append(delta)
        final = self._final_arguments(info, item)
        if final is not None:
            # hosted and built-in tool items state their input only when done: nothing to note
            quiet = first or (info.kind != "call" and info.type != "mcp_call")
            out.extend(self._reconcile(call, info, final, where, quiet=quiet))
        return [ChunkResponse(tool_calls=out)] if out else []

    def _final_arguments(self, info: _Item, item: dict[str, Any]) -> str | None:
        """The complete argument text an item states, if it states one."""
        if info.custom:
            text = item.get("input")
            return json.dumps(text, ensure_ascii=False) if isinstance(text, str) and text else None
        if info.kind == "call" or info.type == "mcp_call":
            args = item.get("arguments")
            if isinstance(args, str):
                return args or None
            if args is not None:
                self.quirk("oai_args_object", "arguments sent as a JSON value, not a string")
                return json.dumps(args, ensure_ascii=False)
            return None
        fields = _SERVER_ITEMS.get(info.type) or _CLIENT_ITEMS.get(info.type) or ()
        values = {k: item[k] for k in fields if item.get(k) is not None}
        return json.dumps(values, ensure_ascii=False) if values else None

    def _reconcile(
        self, call: TrackedCall, info: _Item, final: str, where: str, quiet: bool = False
    ) -> list[ToolCallDelta]:
        """Bring the streamed arguments up to the authoritative ``final`` text.

        ``quiet``: the item that opens the call states its arguments (nothing to note).
        """
        have = call.arguments
        if info.custom and not call.complete:
            final = final[:-1]  # the closing quote of the input string comes when the call closes
            streamed = have != '"'
        else:
            streamed = bool(have)
        if final == have:
            return []
        if call.complete or not final.startswith(have):
            self._mismatch(call, final, where)
            return []
        if quiet:
            pass
        elif streamed:
            self.quirk(
                "responses_args_suffix_in_done",
                f"call {call.call_id}: {where} holds more arguments than were streamed",
            )
        else:
            self.quirk(
                "responses_args_done_only",
                f"call {call.call_id}: arguments given only by {where}, without deltas",
            )
        delta = self.tracker.append_exact(call, final[len(have) :])
        return [delta] if delta is not None else []

    def _mismatch(self, call: TrackedCall, final: str, where: str) -> None:
        self.error(
            "arguments_mismatch",
            f"call {call.call_id}: {where} states other arguments than were streamed "
            "(the streamed ones are kept)",
            {"streamed": call.arguments, "stated": final},
        )

    def _item_done(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        item = obj.get("item")
        if not isinstance(item, dict):
            return []
        return self._finish_item(obj.get("output_index"), item, "response.output_item.done")

    def _final_item(self, index: int, item: dict[str, Any]) -> list[ChunkResponse]:
        item_id = item.get("id")
        info = self._items.get(item_id) if isinstance(item_id, str) else None
        if info is not None and info.done:
            if info.kind in ("call", "server", "builtin"):
                call = self._find_call(item_id, None)
                final = self._final_arguments(info, item)
                if call is not None and final is not None:
                    self._reconcile(call, info, final, "response.completed")  # closed: only checks
                if call is not None and info.kind != "server":
                    self._check_call_id(call, item)
            return []
        return self._finish_item(index, item, "response.completed")

    def _check_call_id(self, call: TrackedCall, item: dict[str, Any]) -> None:
        call_id = item.get("call_id")
        if isinstance(call_id, str) and call_id and call.call_id and call_id != call.call_id:
            self.quirk(
                "responses_call_id_changed",
                f"item {item.get('id')} said call_id {call.call_id!r}, later {call_id!r}",
            )

    def _finish_item(self, index: Any, item: dict[str, Any], where: str) -> list[ChunkResponse]:
        """An item is finished (``output_item.done``, or only listed in the final response)."""
        item_id = item.get("id")
        item_id = item_id if isinstance(item_id, str) and item_id else None
        info = self._items.get(item_id) if item_id is not None else None
        call = self._find_call(item_id, index)
        if info is None:
            info = _Item(str(item.get("type")))
            if item_id is not None:
                self._items[item_id] = info
            if info.kind in ("call", "server", "builtin") and call is None:
                quirk = (
                    "responses_completed_only"
                    if where == "response.completed"
                    else "responses_item_done_only"
                )
                self.quirk(quirk, f"a {info.type} item that only {where} announced")
        info.done = True
        if info.kind == "message":
            return self._message_done(info, item, where)
        if info.kind == "reasoning":
            return self._reasoning_done(info, item, where)
        if info.kind == "other":
            self.quirk("responses_unknown_item", f"an output item of type {info.type!r}")
            values = self._runs.collect(TEXT, "items", item)
            return [ChunkResponse(content_metadata={"items": values})]
        out: list[ChunkResponse] = []
        if call is None:
            call = self._open_call(item_id, index)
            out.extend(self._call_fields(call, info, item, first=True, where=where))
        else:
            out.extend(self._call_fields(call, info, item, where=where))
        deltas: list[ToolCallDelta] = []
        if info.custom and not call.complete:
            closer = self.tracker.append_exact(call, '"')
            if closer is not None:
                deltas.append(closer)
        done = self.tracker.complete(call)
        if done is not None:
            if info.kind == "server":
                done.metadata = {"result": item}
            deltas.append(done)
        if deltas:
            out.append(ChunkResponse(tool_calls=deltas))
        return out

    def _find_call(self, item_id: str | None, index: Any) -> TrackedCall | None:
        call = self.tracker.find(item_id) if item_id is not None else None
        if call is None and type(index) is int:
            call = self.tracker.find(("output", index))
        return call

    def _open_call(self, item_id: Any, index: Any) -> TrackedCall:
        """A new call, keyed by its item id and its output index (those that are given)."""
        call = self.tracker.open(item_id if isinstance(item_id, str) and item_id else None)
        if type(index) is int:
            self.tracker.alias(("output", index), call)
        return call

    def _message_done(self, info: _Item, item: dict[str, Any], where: str) -> list[ChunkResponse]:
        out: list[ChunkResponse] = []
        content = item.get("content")
        if not isinstance(content, list):
            return out
        for i, part in enumerate(content):
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if kind == "output_text":
                out.extend(self._fill_text(info, TEXT, ("text", i), part.get("text"), where))
            elif kind == "refusal":
                refusal = part.get("refusal")
                if isinstance(refusal, str) and refusal and not info.streamed.get(("text", i)):
                    self._runs.enter(TEXT)
                    info.streamed[("text", i)] = len(refusal)
                    out.append(ChunkResponse(content=refusal, content_metadata={"refusal": True}))
        return out

    def _reasoning_done(self, info: _Item, item: dict[str, Any], where: str) -> list[ChunkResponse]:
        out: list[ChunkResponse] = []
        for field, key in (("summary", "summary"), ("content", "content")):
            parts = item.get(field)
            if isinstance(parts, list):
                for i, part in enumerate(parts):
                    if isinstance(part, dict):
                        out.extend(
                            self._fill_text(info, REASONING, (key, i), part.get("text"), where)
                        )
        encrypted = item.get("encrypted_content")
        if isinstance(encrypted, str) and encrypted:
            meta = self._runs.one_or_many(REASONING, "encrypted_content", encrypted)
            out.append(ChunkResponse(reasoning_metadata=meta))
        return out

    # -- text ------------------------------------------------------------------------------
    def _text_delta(self, obj: dict[str, Any], kind: str, part: str) -> list[ChunkResponse]:
        delta = obj.get("delta")
        if type(delta) is not str or not delta:
            return []
        item = self._items.get(_str(obj.get("item_id")))
        if item is not None:
            key = (part, obj.get("summary_index" if part == "summary" else "content_index", 0))
            streamed = item.streamed
            streamed[key] = streamed.get(key, 0) + len(delta)
        if kind == TEXT:
            if self._runs.kind != TEXT:
                self._runs.enter(TEXT)
            return [ChunkResponse(content=delta)]
        if self._runs.kind != REASONING:
            self._runs.enter(REASONING)
        return [ChunkResponse(reasoning=delta)]

    def _text_done(
        self, obj: dict[str, Any], kind: str, part: str, field: str
    ) -> list[ChunkResponse]:
        item = self._items.get(_str(obj.get("item_id")))
        if item is None:
            return []
        index = obj.get("summary_index" if part == "summary" else "content_index", 0)
        return self._fill_text(item, kind, (part, index), obj.get(field), "the .done event")

    def _fill_text(
        self, info: _Item, kind: str, key: tuple[str, Any], text: Any, where: str
    ) -> list[ChunkResponse]:
        """Emit the part of a final text that was never streamed (nothing if all was)."""
        if not isinstance(text, str) or not text:
            return []
        streamed = info.streamed.get(key, 0)
        if streamed >= len(text):
            if streamed > len(text):
                self.quirk("responses_text_done_shorter", f"{where} holds less text than streamed")
            return []
        self.quirk(
            "responses_text_done_only" if not streamed else "responses_text_suffix_in_done",
            f"{kind} given by {where} but not (all) streamed",
        )
        info.streamed[key] = len(text)
        self._runs.enter(kind)
        if kind == TEXT:
            return [ChunkResponse(content=text[streamed:])]
        return [ChunkResponse(reasoning=text[streamed:])]

    # -- arguments -------------------------------------------------------------------------
    def _argument_delta(self, obj: dict[str, Any], custom: bool) -> list[ChunkResponse]:
        delta = obj.get("delta")
        if type(delta) is not str or not delta:
            return []
        tracker = self.tracker
        call = tracker.find(_str(obj.get("item_id")))
        if call is None:
            call = self._orphan_call(obj)
        if call is not tracker.calls[-1] and not call.complete:
            self.quirk(
                "responses_parallel_interleaved",
                "argument deltas of one call arrive after another call was opened",
            )
        if custom:
            delta = json.dumps(delta, ensure_ascii=False)[1:-1]
        out = tracker.append_exact(call, delta)
        return [ChunkResponse(tool_calls=[out])] if out is not None else []

    def _orphan_call(self, obj: dict[str, Any]) -> TrackedCall:
        index = obj.get("output_index")
        call = self._find_call(None, index)
        if call is not None:
            return call
        item_id = obj.get("item_id")
        self.quirk(
            "responses_delta_before_item",
            f"argument deltas for item {item_id!r} before its output_item.added",
        )
        call = self._open_call(item_id, index)
        if isinstance(item_id, str) and item_id and item_id not in self._items:
            self._items[item_id] = _Item("function_call")
        return call

    def _argument_done(self, obj: dict[str, Any], kind: str) -> list[ChunkResponse]:
        item_id = obj.get("item_id")
        call = self._find_call(
            item_id if isinstance(item_id, str) else None, obj.get("output_index")
        )
        info = self._items.get(item_id) if isinstance(item_id, str) else None
        if call is None or info is None:
            return []
        out: list[ToolCallDelta] = []
        name = obj.get("name")
        if isinstance(name, str) and name:
            delta = self.tracker.update(call, name=name)
            if delta is not None:
                out.append(delta)
        field = "input" if kind == "response.custom_tool_call_input.done" else "arguments"
        final = obj.get(field)
        if isinstance(final, str) and final:
            if info.custom:
                final = json.dumps(final, ensure_ascii=False)
            out.extend(self._reconcile(call, info, final, kind))
        return [ChunkResponse(tool_calls=out)] if out else []

    # -- end -------------------------------------------------------------------------------
    def on_finish(self) -> list[ChunkResponse]:
        deltas = self.tracker.flush_unannounced()
        if self.terminal is None and not self.failed and self.payloads:
            self.truncated("response.completed")
        return [ChunkResponse(tool_calls=deltas)] if deltas else []


def _str(value: Any) -> str:
    """A provider id used as a key: a string, or ``""`` for anything else."""
    return value if type(value) is str else ""


def _error_message(err: Any) -> str:
    if isinstance(err, dict):
        code = err.get("code") or err.get("type")
        message = err.get("message")
        if code and message:
            return f"{code}: {message}"
        return str(message or code or err)
    return str(err)
