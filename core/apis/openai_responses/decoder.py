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
get their input as a JSON string. Built-in tool items are tool calls whose input is the finished
item's (the item in ``output_item.added`` is a placeholder), streamed from their own delta events
where the API has them (code, a patch's diff, shell commands: written first in the arguments, so
the streamed text is a prefix of the final arguments). A call is ``server_side`` (its ``result``
metadata the finished item, or its output item) when the stream shows the provider ran it: a
hosted tool, an output item for it in the same response, a hosted shell container,
``execution: "server"``, or a tool the request never offered. ``mcp_approval_request`` is an
invocation the client must answer; ``mcp_list_tools`` is text metadata. Events are matched to
their item by ``item_id``, else by ``output_index`` (rotating ids). Partial images are image
segments (metadata only); unknown event types are counted for the ``unknown_event`` quirk.

Over a WebSocket (``client.responses.connect()``; a recording whose header says so) a session
holds several responses one after the other: each ``response.created`` starts a new one (its
sequence numbers and output indexes start again), usage is summed over them, the finish
reason is the last one's, and a ``function_call_output`` the client sends in its next
``response.create`` answers its call.

Errors: an ``error`` event and ``response.failed``. The finish reason is the response status
(``completed``, ``failed``), or for ``response.incomplete`` the ``incomplete_details.reason``
(``max_output_tokens``...). Usage comes from the final response. Framing without ``event:`` lines
(the type is read from the payload) and a trailing ``[DONE]`` are accepted.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

import msgspec

from ...converters.base import Converter
from ...converters.prose_runs import REASONING, TEXT, TOOL, ProseRuns
from ...converters.stream_head import take_head
from ...model import ChunkResponse, ToolCallDelta
from ...model.quirk_ids import QuirkId
from ...model.records import Header
from ...model.usage import add_up
from ...model.vocabulary import ErrorKind
from ...pipeline.adapter import RENAMED
from ...pipeline.tracker import TrackedCall
from ...wire import fastjson
from ...wire.sse import SSEEvent
from ..openai_chat.citations import from_openai_annotation
from ..openai_chat.parallel import Wrapper, unwrapped

# hosted tools the provider runs inside the response: the item fields that are the call's input
_SERVER_ITEMS: dict[str, tuple[str, ...]] = {
    "web_search_call": ("action",),
    "file_search_call": ("queries",),
    "code_interpreter_call": ("code", "container_id"),
    "image_generation_call": (),
    "mcp_call": (),  # arguments as a JSON string, like a function call
    "x_search_call": ("action", "query"),  # xAI
}
# xAI's server-side tools: Grok runs them itself and may report them as function or custom tool
# calls named after the tool (the request offers them as {"type": "x_search"}, not as functions)
_XAI_SERVER_TOOLS = frozenset(
    {
        "web_search",
        "web_search_with_snippets",
        "browse_page",
        "x_search",
        "x_keyword_search",
        "x_semantic_search",
        "x_user_search",
        "x_thread_fetch",
        "code_execution",
        "view_image",
        "view_x_video",
        "collections_search",
    }
)
# built-in tools the client runs (unless the stream shows the provider ran them): input fields
_CLIENT_ITEMS: dict[str, tuple[str, ...]] = {
    "computer_call": ("action", "actions"),
    "local_shell_call": ("action",),
    "shell_call": ("action",),
    "apply_patch_call": ("operation",),
    "tool_search_call": ("arguments",),
}
# input fields streamed by the item's own delta events: the path of the streamed value (a string,
# or a list of strings for shell commands), written first in the arguments so that the streamed
# text is a prefix of the final arguments
_STREAMED: dict[str, tuple[str, ...]] = {
    "code_interpreter_call": ("code",),
    "apply_patch_call": ("operation", "diff"),
    "shell_call": ("action", "commands"),
}
# calls whose completion waits for the end of the response: an output item for them in the same
# response means the provider ran them (a hosted shell, xAI's search tools)
_HELD = frozenset(
    {
        "computer_call",
        "local_shell_call",
        "shell_call",
        "apply_patch_call",
        "tool_search_call",
        "custom_tool_call",
    }
)
# output items that answer a call (by its call_id)
_OUTPUT_ITEMS = frozenset(
    {
        "function_call_output",
        "custom_tool_call_output",
        "computer_call_output",
        "local_shell_call_output",
        "shell_call_output",
        "apply_patch_call_output",
        "tool_search_output",
    }
)
_ARGUMENT_DONES = (
    "response.function_call_arguments.done",
    "response.mcp_call_arguments.done",
    "response.custom_tool_call_input.done",
)
_SHELL_COMMANDS = (
    "response.shell_call_command.added",
    "response.shell_call_command.delta",
    "response.shell_call_command.done",
)
# documented events that carry nothing beyond what the items and the deltas already say
_IGNORED = frozenset(
    {
        "response.content_part.added",
        "response.content_part.done",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_part.done",
        "response.refusal.done",
        "response.code_interpreter_call_code.done",
        "response.apply_patch_call_operation_diff.done",
        "response.shell_call_command.done",
        "response.code_interpreter_call.in_progress",
        "response.code_interpreter_call.interpreting",
        "response.code_interpreter_call.completed",
        "response.file_search_call.in_progress",
        "response.file_search_call.searching",
        "response.file_search_call.completed",
        "response.web_search_call.in_progress",
        "response.web_search_call.searching",
        "response.web_search_call.completed",
        "response.image_generation_call.in_progress",
        "response.image_generation_call.generating",
        "response.image_generation_call.completed",
        "response.mcp_call.in_progress",
        "response.mcp_call.completed",
        "response.mcp_call.failed",
        "response.mcp_list_tools.in_progress",
        "response.mcp_list_tools.completed",
        "response.mcp_list_tools.failed",
        "response.shell_call_output_content.delta",
        "response.shell_call_output_content.done",
        "response.audio.delta",
        "response.audio.done",
        "response.audio.transcript.delta",
        "response.audio.transcript.done",
        "response.compaction.compacting",
    }
)


class _Item:
    """What an output item is, and what has been streamed of it (for reconciliation)."""

    __slots__ = (
        "type",
        "id",
        "kind",
        "texts",
        "stated",
        "done",
        "custom",
        "closed",
        "streaming",
        "commands",
        "open",
    )

    def __init__(self, item_type: str, item_id: str | None = None) -> None:
        self.type = item_type
        self.id = item_id
        # a custom tool call: the input is streamed as a JSON string
        self.custom = item_type == "custom_tool_call"
        self.closed = False  # a custom call's input string was closed in the arguments
        kind = "other"
        if item_type == "function_call" or self.custom:
            kind = "call"
        elif item_type in _SERVER_ITEMS:
            kind = "server"
        elif item_type in _CLIENT_ITEMS:
            kind = "builtin"
        elif item_type == "mcp_approval_request":
            kind = "approval"
        elif item_type == "mcp_list_tools":
            kind = "meta"
        elif item_type in _OUTPUT_ITEMS:
            kind = "output"
        elif item_type == "message" or item_type == "reasoning":
            kind = item_type
        # "call", "server", "builtin", "approval", "meta", "output", "message", "reasoning", "other"
        self.kind = kind
        self.texts: dict[tuple[str, Any], list[str]] = {}  # (part kind, index) -> text streamed
        self.stated: dict[tuple[str, Any], str] = {}  # contradicting final texts already reported
        self.done = False
        self.streaming = False  # the streamed input field's opening was written to the arguments
        self.commands = 0  # shell commands opened in the arguments
        self.open = False  # a shell command string is open in the arguments

    def add_text(self, key: tuple[str, Any], delta: str) -> None:
        """Keep a streamed piece of a part's text (for reconciliation with its done event)."""
        texts = self.texts.get(key)
        if texts is None:
            self.texts[key] = [delta]
        else:
            texts.append(delta)

    @property
    def is_call(self) -> bool:
        return self.kind in _CALL_KINDS


_CALL_KINDS = frozenset({"call", "server", "builtin", "approval"})


class OpenAIResponsesConverter(Converter):
    name = "openai-responses"
    # response.completed restates every call: its arguments are checked against the streamed ones
    keeps_completed_arguments = True
    defers_takes = True  # the hot path checks which call is open: not its arguments' length

    def __init__(self) -> None:
        super().__init__()
        self._items: dict[str, _Item] = {}  # output item id -> what it is
        self._by_index: dict[int, _Item] = {}  # output_index -> the item (ids may rotate)
        self._held: list[TrackedCall] = []  # calls whose completion waits for the response's end
        self._runs = ProseRuns()
        self.done = False  # [DONE] seen
        self.terminal: str | None = None  # completed / failed / incomplete
        self.failed = False
        self.whole = False  # the answer came whole, as a JSON body (it was not streamed)
        self.finish_reason: str | None = None
        self._model: str | None = None
        self._seq: int | None = None
        self._error_messages: set[str] = set()
        self._client_tools: set[str] | None = None  # function/custom tools the request offered
        self._hosted_shell = False  # the request's shell tool runs in a hosted container
        self._xai_host = False  # the request went to xAI
        self.payloads = 0
        self.session = False  # a WebSocket session: several responses (use_header)
        self._session_usage: dict[str, int] = {}
        # the call that hot_struct takes argument deltas for, and its item id (_hot_call_of)
        self._hot_call: TrackedCall | None = None
        self._hot_item_id = ""
        # function calls named `parallel` that wrap the real calls (no declared tool has that
        # name), held until whole: item id -> the wrapper
        self._wrapped: dict[str, Wrapper] = {}
        # a client call whose call_id a later event changed: its tracker index -> the last id
        self._later_id: dict[int, str] = {}

    def use_header(self, header: Header) -> None:
        super().use_header(header)
        self.session = header.websocket
        url = header.request.get("url")
        if isinstance(url, str):
            host = url.split("://", 1)[-1].split("/", 1)[0].split(":", 1)[0].lower()
            self._xai_host = host == "x.ai" or host.endswith(".x.ai")
        body = header.request.get("body")
        tools = body.get("tools") if isinstance(body, dict) else None
        if not isinstance(tools, list) or not tools:
            return
        names: set[str] = set()
        for tool in tools:
            if not isinstance(tool, dict):
                return
            kind = tool.get("type")
            if kind in ("function", "custom"):
                name = tool.get("name")
                if not isinstance(name, str):
                    function = tool.get("function")
                    name = function.get("name") if isinstance(function, dict) else None
                if isinstance(name, str):
                    names.add(name)
            elif kind == "shell":
                env = tool.get("environment")
                if isinstance(env, dict) and str(env.get("type", "")).startswith("container"):
                    self._hosted_shell = True
            elif isinstance(tool.get("tools"), list):
                return  # a namespace of tools: which names it offers is not known here
        self._client_tools = names

    # -- events ----------------------------------------------------------------------------
    events = {
        "response.function_call_arguments.delta": "_argument_delta",
        "response.mcp_call_arguments.delta": "_argument_delta",
        "response.custom_tool_call_input.delta": ("_argument_delta", True),
        "response.output_text.delta": ("_text_delta", TEXT, "text"),
        "response.reasoning_summary_text.delta": ("_text_delta", REASONING, "summary"),
        "response.reasoning_text.delta": ("_text_delta", REASONING, "content"),
        "response.output_item.added": "_item_added",
        "response.output_item.done": "_item_done",
        **{kind: ("_argument_done", kind) for kind in _ARGUMENT_DONES},
        "response.output_text.done": ("_text_done", TEXT, "text", "text"),
        "response.reasoning_summary_text.done": ("_text_done", REASONING, "summary", "text"),
        "response.reasoning_text.done": ("_text_done", REASONING, "content", "text"),
        "response.refusal.delta": "_refusal_delta",
        "response.output_text.annotation.added": "_annotation",
        "response.code_interpreter_call_code.delta": "_input_delta",
        "response.apply_patch_call_operation_diff.delta": "_input_delta",
        **{kind: ("_shell_command", kind) for kind in _SHELL_COMMANDS},
        "response.image_generation_call.partial_image": "_partial_image",
        "response.created": "_lifecycle",
        "response.in_progress": "_lifecycle",
        "response.queued": "_lifecycle",
        "response.completed": ("_completed", "completed"),
        "response.incomplete": ("_completed", "incomplete"),
        "response.failed": ("_completed", "failed"),
        "response.cancelled": ("_completed", "cancelled"),
        "error": "_error_event",
    }
    ignored_events = _IGNORED
    # the text deltas of the table (type -> its run and its part), which hot_struct reads too
    _text_deltas: ClassVar[dict[str, tuple[str, str]]] = {
        kind: (entry[1], entry[2])
        for kind, entry in events.items()
        if type(entry) is tuple and entry[0] == "_text_delta"
    }

    def hot_event(self, obj: Any) -> tuple[Any, ...] | list[ChunkResponse] | None:
        """:meth:`hot_struct` of an event read as a dict whose fields have the types of
        :class:`_HotDelta` (any other is left to :meth:`on_payload`)."""
        if type(obj) is not dict:
            return None
        kind = obj.get("type")
        delta = obj.get("delta")
        item_id = obj.get("item_id")
        seq = obj.get("sequence_number")
        content_index = obj.get("content_index", 0)
        summary_index = obj.get("summary_index", 0)
        if (
            type(kind) is not str
            or type(delta) is not str
            or type(item_id) is not str
            or (seq is not None and type(seq) is not int)
            or type(content_index) is not int
            or type(summary_index) is not int
        ):
            return None
        return self.hot_struct(_HotDelta(kind, delta, item_id, seq, content_index, summary_index))

    def hot_struct(self, shaped: Any) -> tuple[Any, ...] | list[ChunkResponse] | None:
        """An argument delta for the call opened last, or a text, summary or reasoning delta of
        a known item, in sequence, read as a :class:`_HotDelta` (decoded so, or made so by
        :meth:`hot_event`): what :meth:`on_payload` does with them, without a chunk each (see
        :meth:`Converter.hot_event`); ``None`` having changed nothing for any other event."""
        delta = shaped.delta
        if not delta:
            return None
        seq = shaped.sequence_number
        if seq is not None and self._seq is not None and seq != self._seq + 1:
            return None
        kind = shaped.type
        if kind == "response.function_call_arguments.delta":
            call = self._hot_call
            if call is None or shaped.item_id != self._hot_item_id:
                call = self._hot_call_of(shaped.item_id)
                if call is None:
                    return None
            if seq is not None:
                self._seq = seq
            self.payloads += 1
            return call, delta
        streamed = self._text_deltas.get(kind)  # the event table's _text_delta entries
        if streamed is None:
            return None
        item = self._items.get(shaped.item_id)
        if item is None:
            return None
        if seq is not None:
            self._seq = seq
        self.payloads += 1
        run, part = streamed
        item.add_text(
            (part, shaped.summary_index if part == "summary" else shaped.content_index), delta
        )
        if self._runs.kind != run:
            self._runs.enter(run)
        return run, delta

    def _hot_call_of(self, item_id: str) -> TrackedCall | None:
        """The call whose argument deltas :meth:`hot_struct` takes for item ``item_id``: the call
        opened last, announced and open (else ``None``). It stays that call until an event is
        read otherwise (:meth:`on_payload`): hot events change no call's state."""
        tracker = self.tracker
        call = tracker.find(item_id)
        if call is None or call is not tracker.calls[-1] or not call.announced or call.complete:
            return None
        self._hot_call = call
        self._hot_item_id = item_id
        return call

    def on_unparsed(self, event: SSEEvent) -> bool:
        if event.data.strip() == "[DONE]":
            self.done = True
            return True
        return False

    def on_payload(self, obj: dict[str, Any], event: SSEEvent) -> list[ChunkResponse]:
        self._hot_call = None  # the event may change the calls
        self.payloads += 1
        if self.session and obj.get("type") == "response.created" and self.terminal is not None:
            # the session's next response: numbered from its own start
            self.terminal = None
            self._seq = None
            self._by_index = {}
        seq = obj.get("sequence_number")
        if type(seq) is int:
            if self._seq is not None and seq != self._seq + 1:
                self.quirk(
                    QuirkId.RESPONSES_SEQUENCE_GAP,
                    f"sequence_number {seq} after {self._seq}",
                )
            self._seq = seq
        return super().on_payload(obj, event)

    def other_event(self, kind: str | None, obj: dict[str, Any]) -> list[ChunkResponse]:
        kind = kind or ""
        if not kind and isinstance(obj.get("error"), dict):
            return self._error_event(obj)  # an HTTP error's body: {"error": {...}}
        if not kind and obj.get("object") == "response" and isinstance(obj.get("output"), list):
            # an answer that was not streamed (a JSON body): the response as its end carries it
            status = obj.get("status")
            ended = status if status in ("completed", "incomplete", "failed") else "completed"
            self.whole = True
            return self._completed({"response": obj}, ended)
        if kind.startswith("response.shell_call_command."):
            return self._shell_command(obj, kind)  # unknown only when its command is streaming
        self.unknown_event(kind)
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
            self.quirk(QuirkId.FINISH_DOUBLE, f"response.{status} after response.{self.terminal}")
            return []
        self.terminal = status
        chunk = ChunkResponse(is_complete=True)
        out = [chunk]
        response = obj.get("response")
        if not isinstance(response, dict):
            response = {}
        self._model = take_head(chunk, response.get("model"), response.get("usage"), self._model)
        if self.session and chunk.usage:
            # each response of a session counts its own tokens: the session's are their sum
            chunk.usage = add_up(self._session_usage, chunk.usage)
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
                self.error(ErrorKind.PROVIDER_ERROR, f"response failed: {message}", err)
        self.finish_reason = reason
        if not self.session:  # a session's finish is its last response's (on_finish)
            chunk.finish_reason = reason
        output = response.get("output")
        if isinstance(output, list):
            for index, item in enumerate(output):
                if isinstance(item, dict):
                    out.extend(self._final_item(index, item))
        if status == "completed":
            deltas = self._renamed(self.tracker.complete_all())
            if deltas:
                out.append(ChunkResponse(tool_calls=deltas))
        elif self._held:
            # a held call that was done stays done: only its completion was waiting
            deltas = []
            for call in self._held:
                done = self.tracker.complete(call)
                if done is not None:
                    deltas.append(done)
            if deltas:
                out.append(ChunkResponse(tool_calls=self._renamed(deltas)))
        self._held = []
        return out

    def _error_event(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        self.failed = True
        err = obj.get("error")
        if not isinstance(err, dict):
            err = {k: v for k, v in obj.items() if k not in ("type", "sequence_number")}
        message = _error_message(err)
        self._error_messages.add(message)
        self.error(ErrorKind.PROVIDER_ERROR, f"error event in the stream: {message}", err)
        return []

    # -- output items ----------------------------------------------------------------------
    def _item(self, item_id: Any, index: Any) -> _Item | None:
        """The item an event is about: by its ``item_id``, else by its ``output_index`` (some
        servers give every event of one item a new ``item_id``)."""
        info = self._items.get(item_id) if type(item_id) is str else None
        if info is None and type(index) is int:
            info = self._by_index.get(index)
            if info is not None and type(item_id) is str and item_id and info.id != item_id:
                self.quirk(
                    QuirkId.RESPONSES_ITEM_ID_ROTATION,
                    f"output item {index} ({info.type}) came as item_id {item_id!r} "
                    f"after {info.id!r}",
                )
        return info

    def _register(self, item: dict[str, Any], index: Any) -> _Item:
        item_id = item.get("id")
        item_id = item_id if isinstance(item_id, str) and item_id else None
        info = _Item(str(item.get("type")), item_id)
        if item_id is not None:
            self._items[item_id] = info
        if type(index) is int:
            self._by_index[index] = info
        return info

    def _item_added(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        item = obj.get("item")
        if not isinstance(item, dict):
            return []
        index = obj.get("output_index")
        item_id = item.get("id")
        known = self._items.get(item_id) if isinstance(item_id, str) else None
        info = self._register(item, index)
        if not info.is_call:
            return []
        if self._wraps(info, item):
            return []
        call = self._find_call(item_id, None) if known is not None and known.is_call else None
        if call is None:
            call = self._open_call(item_id, index)
        return self._call_fields(call, info, item, first=not call.announced)

    def _wraps(self, info: _Item, item: dict[str, Any]) -> bool:
        """Whether the item is a `parallel` wrapper (held: its arguments are the real calls)."""
        item_id = item.get("id")
        if not isinstance(item_id, str) or not item_id:
            return False
        wrapper = self._wrapped.get(item_id)
        if wrapper is not None:
            return True
        if info.type != "function_call" or item.get("name") != RESPONSES_PARALLEL_WRAPPER:
            return False
        if self._client_tools is not None and RESPONSES_PARALLEL_WRAPPER in self._client_tools:
            return False  # a tool the request declared: a call like any other
        call_id = item.get("call_id")
        wrapper = Wrapper(call_id if isinstance(call_id, str) and call_id else None)
        arguments = item.get("arguments")
        if isinstance(arguments, str) and arguments:
            wrapper.arguments.append(arguments)
        self._wrapped[item_id] = wrapper
        return True

    def _unwrap(self, item_id: str, final: Any) -> list[ChunkResponse]:
        """A whole wrapper (its final arguments when the event states them): its calls."""
        wrapper = self._wrapped.pop(item_id)
        text = final if isinstance(final, str) and final else "".join(wrapper.arguments)
        base = wrapper.call_id or item_id
        self._runs.enter(TOOL)
        deltas, count = unwrapped(self.tracker, RESPONSES_PARALLEL_WRAPPER, base, text)
        if count is not None:
            self.quirk(
                QuirkId.RESPONSES_PARALLEL_WRAPPER,
                f"call {base} wraps {count} calls in a function_call named parallel",
            )
        return [ChunkResponse(tool_calls=deltas)] if deltas else []

    def _runs_on_server(self, info: _Item, item: dict[str, Any], name: str | None) -> bool:
        """Whether the item itself (or the request) shows that the provider runs this call."""
        if info.kind == "server":
            return True
        if info.type == "tool_search_call":
            return item.get("execution") == "server"
        if info.type == "shell_call":
            env = item.get("environment")
            if isinstance(env, dict) and str(env.get("type", "")).startswith("container"):
                return True
            return self._hosted_shell
        if info.kind == "call" and name is not None:
            if self._client_tools is not None and name not in self._client_tools:
                # a call of a tool the request never offered: one of the provider's own
                return True
            offered = self._client_tools is not None and name in self._client_tools
            if not offered and name in _XAI_SERVER_TOOLS and self._is_xai():
                # the request is unknown (a raw body) or lists tools in namespaces: Grok's own
                # tools are told by the stream (its model, its host) and their names
                return True
        return False

    def _is_xai(self) -> bool:
        return self._xai_host or (self._model or "").lower().startswith("grok")

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
        if call_id is None and first and info.kind in ("server", "approval", "builtin"):
            # no call_id (a hosted tool_search_call has none): the item's own id, not one made up
            call_id = item.get("id") if isinstance(item.get("id"), str) and item.get("id") else None
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
        elif info.kind == "approval":
            name = "mcp_approval_request"
        if first:
            metadata = {}
            if self._runs_on_server(info, item, name):
                metadata["server_side"] = True
            if info.kind == "approval":
                metadata["approval_request"] = True
            label = item.get("server_label")
            if isinstance(label, str) and info.kind in ("server", "approval"):
                metadata["server_label"] = label
        out: list[ToolCallDelta] = []
        if first:
            self._runs.enter(TOOL)
            delta = self.tracker.update(
                call, call_id=call_id, name=name, metadata=metadata or None, announce=True
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
        placeholder = (
            where == "response.output_item.added"
            and info.kind in ("server", "builtin")
            and item.get("status") != "completed"
        )
        if placeholder:
            # the added item of a built-in tool is a placeholder (empty code, no query...): its
            # input comes with its own deltas or when the item is done
            path = _STREAMED.get(info.type)
            if info.type == "apply_patch_call":
                # only an operation with a diff streams one (delete_file has none, a create_file
                # may state its content): the opening waits for the first diff delta
                path = None
            if path is not None and not call.arguments and not info.streaming:
                info.streaming = True
                opening = "".join(f"{{{json.dumps(key)}: " for key in path)
                opening += "[" if info.type == "shell_call" else '"'
                delta = self.tracker.append_exact(call, opening)
                if delta is not None:
                    out.append(delta)
        else:
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
                self.quirk(QuirkId.OAI_ARGS_OBJECT, "arguments sent as a JSON value, not a string")
                return json.dumps(args, ensure_ascii=False)
            return None
        if info.kind == "approval":
            values: dict[str, Any] = {
                k: item[k] for k in ("server_label", "name") if item.get(k) is not None
            }
            args = item.get("arguments")
            if isinstance(args, str):
                try:
                    values["arguments"] = fastjson.loads(args)
                except ValueError:
                    values["arguments"] = args
            return json.dumps(values, ensure_ascii=False)
        if info.type == "tool_search_call":
            args = item.get("arguments")
            return json.dumps(args, ensure_ascii=False) if args is not None else None
        fields = _SERVER_ITEMS.get(info.type) or _CLIENT_ITEMS.get(info.type) or ()
        values = {k: item[k] for k in fields if item.get(k) is not None}
        path = _STREAMED.get(info.type)
        if path is not None:
            values = _streamed_first(values, path)
        return json.dumps(values, ensure_ascii=False) if values else None

    def _reconcile(
        self, call: TrackedCall, info: _Item, final: str, where: str, quiet: bool = False
    ) -> list[ToolCallDelta]:
        """Bring the streamed arguments up to the authoritative ``final`` text.

        ``quiet``: the item that opens the call states its arguments (nothing to note).
        """
        have = call.arguments
        if info.custom and not info.closed and not call.complete:
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
                QuirkId.RESPONSES_ARGS_SUFFIX_IN_DONE,
                f"call {call.call_id}: {where} holds more arguments than were streamed",
            )
        else:
            self.quirk(
                QuirkId.RESPONSES_ARGS_DONE_ONLY,
                f"call {call.call_id}: arguments given only by {where}, without deltas",
            )
        delta = self.tracker.append_exact(call, final[len(have) :])
        return [delta] if delta is not None else []

    def _mismatch(self, call: TrackedCall, final: str, where: str) -> None:
        self.error(
            ErrorKind.ARGUMENTS_MISMATCH,
            f"call {call.call_id}: {where} states other arguments than were streamed "
            "(the streamed ones are kept)",
            {"streamed": call.arguments, "stated": final},
        )

    def _input_delta(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        """A fragment of a built-in tool's streamed input (code, a patch's diff)."""
        delta = obj.get("delta")
        if type(delta) is not str or not delta:
            return []
        item_id, index = obj.get("item_id"), obj.get("output_index")
        info = self._item(item_id, index)
        call = self._find_call(_str(item_id) or None, index)
        if info is None or call is None or call.complete:
            return []
        text = json.dumps(delta, ensure_ascii=False)[1:-1]
        if not info.streaming:
            path = _STREAMED.get(info.type)
            if info.type != "apply_patch_call" or path is None or call.arguments:
                return []  # the item states the whole input when it is done
            # the first fragment of a patch's diff opens the streamed field
            info.streaming = True
            text = "".join(f"{{{json.dumps(key)}: " for key in path) + '"' + text
        out = self.tracker.append_exact(call, text)
        return [ChunkResponse(tool_calls=[out])] if out is not None else []

    def _shell_command(self, obj: dict[str, Any], kind: str) -> list[ChunkResponse]:
        """``response.shell_call_command.added`` / ``.delta`` / ``.done``: one command of a
        ``shell_call`` streamed into ``action.commands``."""
        index = obj.get("output_index")
        info = self._item(obj.get("item_id"), index)
        call = self._find_call(_str(obj.get("item_id")) or None, index)
        if info is None or call is None or not info.streaming or call.complete:
            return []
        text = ""
        if kind == "response.shell_call_command.added":
            if info.open:
                text += '"'
            text += (", " if info.commands else "") + '"'
            info.commands += 1
            info.open = True
            command = obj.get("command")
            if isinstance(command, str) and command:
                text += json.dumps(command, ensure_ascii=False)[1:-1]
        elif kind == "response.shell_call_command.delta":
            delta = obj.get("delta")
            if info.open and isinstance(delta, str) and delta:
                text = json.dumps(delta, ensure_ascii=False)[1:-1]
        elif kind == "response.shell_call_command.done":
            if info.open:
                text = '"'
                info.open = False
        else:
            self.unknown_event(kind)
        if not text:
            return []
        out = self.tracker.append_exact(call, text)
        return [ChunkResponse(tool_calls=[out])] if out is not None else []

    def _partial_image(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        """A partial image of an image generation call: an image segment (never the base64)."""
        data = obj.get("partial_image_b64")
        image: dict[str, Any] = {"source": "image_generation_call.partial_image"}
        item_id = obj.get("item_id")
        if isinstance(item_id, str):
            image["item_id"] = item_id
        number = obj.get("partial_image_index")
        if type(number) is int:
            image["index"] = number
        for key in ("output_format", "size", "quality", "background"):
            value = obj.get(key)
            if isinstance(value, str):
                image["format" if key == "output_format" else key] = value
        if isinstance(data, str):
            image["image_bytes"] = _b64_size(data)
        return [ChunkResponse(images=[image])]

    def _item_done(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        item = obj.get("item")
        if not isinstance(item, dict):
            return []
        return self._finish_item(obj.get("output_index"), item, "response.output_item.done")

    def _final_item(self, index: int, item: dict[str, Any]) -> list[ChunkResponse]:
        item_id = item.get("id")
        info = self._items.get(item_id) if isinstance(item_id, str) else None
        if info is None:
            info = self._by_index.get(index)
            if info is not None and info.type != item.get("type"):
                info = None
        if info is not None and info.done:
            if info.is_call:
                call = self._find_call(info.id, index)
                final = self._final_arguments(info, item)
                if call is not None and final is not None:
                    self._reconcile(call, info, final, "response.completed")  # closed: only checks
                if call is not None and info.kind != "server":
                    self._check_call_id(call, item)
            return []
        return self._finish_item(index, item, "response.completed")

    def _check_call_id(self, call: TrackedCall, item: dict[str, Any]) -> None:
        call_id = item.get("call_id")
        known = self.tracker.given.get(call.index) or call.call_id
        if isinstance(call_id, str) and call_id and known and call_id != known:
            if self._later_id.get(call.index) == call_id:
                return  # said again (response.completed repeats output_item.done)
            self._later_id[call.index] = call_id
            self.quirk(
                QuirkId.RESPONSES_CALL_ID_CHANGED,
                f"item {item.get('id')} said call_id {call.call_id!r}, later {call_id!r}",
            )

    def _renamed(self, deltas: list[ToolCallDelta]) -> list[ToolCallDelta]:
        """Completions of client calls whose call_id changed carry the last id (the one the
        final response holds and a client answers with) in their END metadata."""
        later = self._later_id
        if later:
            for delta in deltas:
                new = later.get(delta.index) if delta.is_complete else None
                if new is not None and not (delta.metadata or {}).get("server_side"):
                    delta.metadata = {**(delta.metadata or {}), RENAMED: new}
        return deltas

    def _finish_item(self, index: Any, item: dict[str, Any], where: str) -> list[ChunkResponse]:
        """An item is finished (``output_item.done``, or only listed in the final response)."""
        item_id = item.get("id")
        item_id = item_id if isinstance(item_id, str) and item_id else None
        info = self._item(item_id, index)
        if info is not None and info.type != item.get("type"):
            info = None
        if item_id is not None and item_id in self._wrapped:
            if info is not None:
                info.done = True
            return self._unwrap(item_id, item.get("arguments"))
        call = self._find_call(item_id, index) if info is not None else None
        if call is None and info is None:
            call = self._find_call(item_id, None)
        if info is None:
            info = self._register(item, index)
            if info.is_call and call is None and not self.whole:
                quirk = (
                    QuirkId.RESPONSES_COMPLETED_ONLY
                    if where == "response.completed"
                    else QuirkId.RESPONSES_ITEM_DONE_ONLY
                )
                self.quirk(quirk, f"a {info.type} item that only {where} announced")
        info.done = True
        if info.kind == "message":
            return self._message_done(info, item, where)
        if info.kind == "reasoning":
            return self._reasoning_done(info, item, where)
        if info.kind == "output":
            return self._call_output(item)
        if info.kind == "meta":
            tools = item.get("tools")
            listed = {
                "server_label": item.get("server_label"),
                "tools": [t.get("name") for t in tools if isinstance(t, dict) and "name" in t]
                if isinstance(tools, list)
                else [],
            }
            values = self._runs.collect(TEXT, "mcp_list_tools", listed)
            return [ChunkResponse(content_metadata={"mcp_list_tools": values})]
        if info.kind == "other":
            self.quirk(QuirkId.RESPONSES_UNKNOWN_ITEM, f"an output item of type {info.type!r}")
            values = self._runs.collect(TEXT, "items", item)
            return [ChunkResponse(content_metadata={"items": values})]
        out: list[ChunkResponse] = []
        if call is None:
            call = self._open_call(item_id, index)
            out.extend(self._call_fields(call, info, item, first=True, where=where))
        else:
            out.extend(self._call_fields(call, info, item, where=where))
        deltas: list[ToolCallDelta] = []
        if info.custom and not info.closed and not call.complete:
            info.closed = True
            closer = self.tracker.append_exact(call, '"')
            if closer is not None:
                deltas.append(closer)
        if info.type in _HELD:
            # an output item in this response shows (or confirms) that the provider ran it, and
            # is its result: the call's completion waits for it, or for the response's end
            if call not in self._held and not call.complete:
                self._held.append(call)
        else:
            done = self.tracker.complete(call)
            if done is not None:
                if info.kind == "server":
                    done.metadata = {"result": _without_images(item)}
                deltas.append(done)
        if deltas:
            out.append(ChunkResponse(tool_calls=self._renamed(deltas)))
        return out

    def _call_output(self, item: dict[str, Any]) -> list[ChunkResponse]:
        """An output item in the response itself: the provider ran the call it answers."""
        call_id = item.get("call_id")
        call = self.tracker.find(call_id) if isinstance(call_id, str) and call_id else None
        if call is None and not call_id and item.get("type") == "tool_search_output":
            # a hosted tool search's output names no call: it answers the hosted search before it
            call = next(
                (
                    c
                    for c in self._held
                    if c.name == "tool_search_call" and (c.metadata or {}).get("server_side")
                ),
                None,
            )
        if call is None or call.complete:
            values = self._runs.collect(TEXT, "items", item)
            return [ChunkResponse(content_metadata={"items": values})]
        if call in self._held:
            self._held.remove(call)
        done = self.tracker.complete(call)
        if done is None:
            return []
        done.metadata = {"server_side": True, "result": _without_images(item)}
        return [ChunkResponse(tool_calls=[done])]

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
                if isinstance(refusal, str) and refusal and not info.texts.get(("refusal", i)):
                    self._runs.enter(TEXT)
                    info.texts[("refusal", i)] = [refusal]
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
        item_id = obj.get("item_id")
        item = self._items.get(item_id) if type(item_id) is str else None
        if item is None:
            item = self._item(obj.get("item_id"), obj.get("output_index"))
        if item is not None:
            item.add_text((part, _part_index(obj, part)), delta)
        if self._runs.kind != kind:
            self._runs.enter(kind)
        return [self._run_chunk(kind, [delta])]  # the chunk of a hot text's run of one

    def _refusal_delta(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        delta = obj.get("delta")
        if not isinstance(delta, str) or not delta:
            return []
        info = self._item(obj.get("item_id"), obj.get("output_index"))
        if info is not None:
            key = ("refusal", _part_index(obj, "content"))
            info.texts.setdefault(key, []).append(delta)
        self._runs.enter(TEXT)
        return [ChunkResponse(content=delta, content_metadata={"refusal": True})]

    def _annotation(self, obj: dict[str, Any]) -> list[ChunkResponse]:
        annotation = obj.get("annotation")
        meta = {"annotations": self._runs.collect(TEXT, "annotations", annotation)}
        citation = from_openai_annotation(annotation)
        if citation is not None:
            meta["citations"] = self._runs.collect(TEXT, "citations", citation)
        return [ChunkResponse(content_metadata=meta)]

    def _text_done(
        self, obj: dict[str, Any], kind: str, part: str, field: str
    ) -> list[ChunkResponse]:
        item = self._item(obj.get("item_id"), obj.get("output_index"))
        if item is None:
            return []
        return self._fill_text(
            item, kind, (part, _part_index(obj, part)), obj.get(field), "the .done event"
        )

    def _fill_text(
        self, info: _Item, kind: str, key: tuple[str, Any], text: Any, where: str
    ) -> list[ChunkResponse]:
        """Emit the part of a final text that was never streamed (nothing if all was).

        A final text that contradicts the streamed one is never spliced onto it: the streamed
        text is kept and a ``text_mismatch`` error holds both."""
        if not isinstance(text, str) or not text:
            return []
        parts = info.texts.get(key)
        streamed = ""
        if parts:
            streamed = parts[0] if len(parts) == 1 else "".join(parts)
            info.texts[key] = [streamed]
        if streamed == text:
            return []
        if streamed and not text.startswith(streamed):
            if streamed.startswith(text):
                self.quirk(
                    QuirkId.RESPONSES_TEXT_DONE_SHORTER, f"{where} holds less text than streamed"
                )
            elif info.stated.get(key) != text:
                info.stated[key] = text
                self.error(
                    ErrorKind.TEXT_MISMATCH,
                    f"{where} states other {kind} than was streamed (the streamed text is kept)",
                    {"streamed": streamed, "stated": text},
                )
            return []
        if not self.whole:  # an answer that was not streamed has no stream to miss it
            self.quirk(
                QuirkId.RESPONSES_TEXT_DONE_ONLY
                if not streamed
                else QuirkId.RESPONSES_TEXT_SUFFIX_IN_DONE,
                f"{kind} given by {where} but not (all) streamed",
            )
        info.texts[key] = [text]
        self._runs.enter(kind)
        if kind == TEXT:
            return [ChunkResponse(content=text[len(streamed) :])]
        return [ChunkResponse(reasoning=text[len(streamed) :])]

    # -- arguments -------------------------------------------------------------------------
    def _argument_delta(self, obj: dict[str, Any], custom: bool = False) -> list[ChunkResponse]:
        """An argument fragment (of a custom tool's input: JSON-escaped) for the call its
        ``item_id`` names, else its ``output_index`` (a delta before its item opens the call)."""
        delta = obj.get("delta")
        if type(delta) is not str or not delta:
            return []
        tracker = self.tracker
        item_id = obj.get("item_id")
        wrapper = self._wrapped.get(item_id) if type(item_id) is str else None
        if wrapper is not None:
            wrapper.arguments.append(delta)
            return []
        call = tracker.find(item_id) if type(item_id) is str else None
        if call is None:
            call = self._orphan_call(obj)
        if call is not tracker.calls[-1] and not call.complete:
            self.quirk(
                QuirkId.RESPONSES_PARALLEL_INTERLEAVED,
                "argument deltas of one call arrive after another call was opened",
            )
        if custom:
            delta = json.dumps(delta, ensure_ascii=False)[1:-1]
        out = tracker.append_exact(call, delta)
        return [ChunkResponse(tool_calls=[out])] if out is not None else []

    def _orphan_call(self, obj: dict[str, Any]) -> TrackedCall:
        index = obj.get("output_index")
        item_id = obj.get("item_id")
        call = self._find_call(None, index)
        if call is not None:
            self._item(item_id, index)  # notes a rotated item id
            return call
        self.quirk(
            QuirkId.RESPONSES_DELTA_BEFORE_ITEM,
            f"argument deltas for item {item_id!r} before its output_item.added",
        )
        call = self._open_call(item_id, index)
        if isinstance(item_id, str) and item_id and item_id not in self._items:
            info = _Item("function_call", item_id)
            self._items[item_id] = info
            if type(index) is int:
                self._by_index[index] = info
        return call

    def _argument_done(self, obj: dict[str, Any], kind: str) -> list[ChunkResponse]:
        item_id = obj.get("item_id")
        index = obj.get("output_index")
        wrapper = self._wrapped.get(item_id) if type(item_id) is str else None
        if wrapper is not None:
            final = obj.get("arguments")
            if isinstance(final, str) and final:
                wrapper.arguments = [final]  # the whole text, as the event states it
            return []
        call = self._find_call(item_id if isinstance(item_id, str) else None, index)
        info = self._item(item_id, index)
        if call is None or info is None:
            return []
        out = self.restated_name(call, obj.get("name"))
        field = "input" if kind == "response.custom_tool_call_input.done" else "arguments"
        final = obj.get(field)
        if isinstance(final, str) and final:
            if info.custom:
                final = json.dumps(final, ensure_ascii=False)
            out.extend(self._reconcile(call, info, final, kind))
        return [ChunkResponse(tool_calls=out)] if out else []

    # -- end -------------------------------------------------------------------------------
    def on_finish(self) -> list[ChunkResponse]:
        self._hot_call = None
        self.report_unknown_events()
        out: list[ChunkResponse] = []
        for item_id in list(self._wrapped):  # a wrapper the stream never finished
            out.extend(self._unwrap(item_id, None))
        deltas = self.tracker.flush_unannounced()
        for call in self._held:  # done, but the response never said it ended
            done = self.tracker.complete(call)
            if done is not None:
                deltas.append(done)
        self._held = []
        if self.terminal is None and not self.failed and self.payloads:
            self.truncated("response.completed")
        if deltas:
            out.append(ChunkResponse(tool_calls=self._renamed(deltas)))
        if self.session and self.finish_reason is not None:
            out.append(ChunkResponse(finish_reason=self.finish_reason))
        return out

    def on_client_message(self, obj: Any) -> list[ChunkResponse]:
        """A session's ``response.create``: the function outputs in its input answer calls."""
        if not isinstance(obj, dict) or obj.get("type") != "response.create":
            return []
        items = obj.get("input")
        if not isinstance(items, list) and isinstance(obj.get("response"), dict):
            items = obj["response"].get("input")
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict) and item.get("type") in _OUTPUT_ITEMS:
                self.call_answered(item.get("call_id"))
        return []


RESPONSES_PARALLEL_WRAPPER = "parallel"  # the Responses name of OpenAI's parallel-call wrapper


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


def _streamed_first(values: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    """``values`` with the streamed field (at ``path``) first at every level, so that the
    arguments written while it streams are a prefix of the final arguments."""
    key = path[0]
    if key not in values:
        return values
    value = values[key]
    if len(path) > 1:
        if not isinstance(value, dict):
            return values
        value = _streamed_first(value, path[1:])
    out = {key: value}
    out.update((k, v) for k, v in values.items() if k != key)
    return out


def _b64_size(data: str) -> int:
    """The number of bytes a base64 text decodes to (without decoding it)."""
    n = len(data.rstrip("="))
    return n * 3 // 4


def _without_images(item: dict[str, Any]) -> dict[str, Any]:
    """An item as kept in metadata: base64 image data replaced by its size."""
    if item.get("type") != "image_generation_call" or not isinstance(item.get("result"), str):
        return item
    out = dict(item)
    out["result"] = {"base64_bytes": _b64_size(item["result"])}
    return out


def _part_index(obj: dict[str, Any], part: str) -> Any:
    """The event's ``content_index`` (``summary_index``) as a key: a list or an object there
    (a broken stream) is its JSON text, never an unhashable key."""
    index = obj.get("summary_index" if part == "summary" else "content_index", 0)
    if isinstance(index, list | dict):
        return json.dumps(index, sort_keys=True)
    return index


# The hot shape of feed_many (OpenAIResponsesConverter.hot_struct): an event with a string
# delta and item id, an integer (or absent) sequence number and part indexes; other fields are
# skipped. hot_event makes one of a dict of that shape.
class _HotDelta(msgspec.Struct, gc=False):
    type: str
    delta: str
    item_id: str
    sequence_number: int | None = None
    content_index: int = 0
    summary_index: int = 0


OpenAIResponsesConverter.hot_decoder = msgspec.json.Decoder(_HotDelta)
