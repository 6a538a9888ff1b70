"""Converter ``openai-chat``: OpenAI Chat Completions and every OpenAI-compatible server.

Handles the catalogue's quirks for this API (reference/provider-quirks.md, sections B-D):
tool calls without ``index`` or sharing one index, ids and names repeated or ``""``, whole calls in
one chunk, arguments sent as objects or cumulatively, reasoning in ``reasoning_content`` /
``reasoning`` / ``reasoning_details``, Mistral ``content`` arrays, Azure's empty first ``choices``,
usage-only chunks, an ``error`` object inside a 200 stream, ``finish_reason: "stop"`` after tool
calls, and streams that end without ``[DONE]``. Each quirk met is reported by its catalogue id.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import msgspec

from ...converters.base import Converter, MultiPayload
from ...converters.prose_runs import TEXT
from ...model import ChunkResponse, ToolCallDelta
from ...model.quirk_ids import QuirkId
from ...model.usage import normalize_usage
from ...model.vocabulary import ErrorKind
from ...pipeline.tracker import TrackedCall
from ...wire.sse import SSEEvent
from .citations import from_openai_annotation, from_search_results
from .kimi_tokens import MarkerSniffer
from .parallel import PARALLEL_WRAPPER, Wrapper, unwrapped

# the field of the delta that carries the reasoning -> its quirk
_REASONING_FIELDS = {
    "reasoning_content": QuirkId.REASONING_FIELD_REASONING_CONTENT,
    "reasoning": QuirkId.REASONING_FIELD_REASONING,
    "reasoning_details": QuirkId.REASONING_FIELD_REASONING_DETAILS,
}


class OpenAIChatConverter(Converter):
    name = "openai-chat"
    # a run's fragments are taken when it ends: the hot check reads the arguments' length as
    # it was before the run (shorter: a fragment it lets through would pass the check after
    # the takes too; one it stops is read by on_object after them)
    defers_takes = True
    sniff_kimi_tokens = True  # note Kimi special tokens in the text (kimi-k2 reads them instead)

    def __init__(self) -> None:
        super().__init__()
        self._last: TrackedCall | None = None
        self.done = False
        # the answer came whole (``message``, not ``delta``: a response that was not streamed),
        # which no ``[DONE]`` follows
        self.whole = False
        self.finish_reason: str | None = None
        self.payloads = 0
        self.failed = False  # an error object arrived in the stream
        self._annotations: list[Any] = []  # delta.annotations as sent
        self._cited: list[dict[str, Any]] = []  # their citations, normalized
        self._sources: list[dict[str, Any]] = []  # the answer's sources (Perplexity, xAI)
        self._model: str | None = None
        self._reasoning_field: str | None = None
        self._content_started = False
        self._kimi = (MarkerSniffer(), MarkerSniffer()) if self.sniff_kimi_tokens else None
        # multi_tool_use.parallel wrappers (held until their arguments are whole): key -> wrapper
        self._wrappers: dict[Any, Wrapper] = {}
        self._wrapper_list: list[Wrapper] = []
        self._open_wrapper: Wrapper | None = None  # the wrapper the last tool-call delta went to

    # -- events ----------------------------------------------------------------------------
    def on_event(self, event: SSEEvent) -> list[ChunkResponse]:
        data = event.data
        if data == "[DONE]" or (len(data) < 16 and data.strip() == "[DONE]"):
            self.done = True
            return [ChunkResponse(is_complete=True)]
        if not data.strip():
            self.quirk(QuirkId.SSE_EMPTY_EVENT_AFTER_COMMENT, "an event with empty data")
            return []
        if self.done:
            self.quirk(QuirkId.DATA_AFTER_DONE, "events after data: [DONE]")
        return self._loaded(self.load_json(event))

    def on_object(self, obj: Any, event: SSEEvent) -> list[ChunkResponse]:
        if self.done:
            self.quirk(QuirkId.DATA_AFTER_DONE, "events after data: [DONE]")
        return self._loaded(obj)

    def _loaded(self, obj: Any) -> list[ChunkResponse]:
        if obj is None:
            return []
        if isinstance(obj, MultiPayload):
            out: list[ChunkResponse] = []
            for payload in obj:
                out.extend(self._payload(payload))
            return out
        return self._payload(obj)

    def hot_event(self, obj: Any) -> tuple[Any, ...] | list[ChunkResponse] | None:
        """:meth:`hot_struct` of a chunk read as a dict of the shape of :class:`_HotChunk`: one
        choice whose delta holds text, or one argument fragment of a call without id or name
        (nothing else in the chunk may ask for anything: see :meth:`_payload`)."""
        if type(obj) is not dict:
            return None
        model = obj.get("model")
        if (
            (model and type(model) is not str)
            or obj.get("error")
            or obj.get("usage")
            or "x_groq" in obj
            or "citations" in obj
            or "search_results" in obj
        ):
            return None
        choices = obj.get("choices")
        if type(choices) is not list or len(choices) != 1:
            return None
        choice = choices[0]
        if (
            type(choice) is not dict
            or choice.get("finish_reason") is not None
            or choice.get("index", 0) not in (0, None)
        ):
            return None
        delta = choice.get("delta")
        if (
            type(delta) is not dict
            or delta.get("refusal")
            or delta.get("annotations")
            or delta.get("reasoning_content")
            or delta.get("reasoning")
            or delta.get("reasoning_details")
        ):
            return None
        content = delta.get("content")
        if content:
            if type(content) is not str or delta.get("tool_calls") or delta.get("function_call"):
                return None
            shaped = _HotDelta(content=content)
        elif content is not None and content != "":
            return None
        else:
            tool_calls = delta.get("tool_calls")
            if type(tool_calls) is not list or len(tool_calls) != 1:
                return None
            tc = tool_calls[0]
            if type(tc) is not dict or "id" in tc:
                return None
            fn = tc.get("function")
            if type(fn) is not dict or "name" in fn:
                return None
            index = tc.get("index")
            args = fn.get("arguments")
            if type(index) is not int or type(args) is not str:
                return None
            shaped = _HotDelta(tool_calls=[_HotToolCall(index, _HotFunction(args))])
        return self.hot_struct(_HotChunk((_HotChoice(shaped),), model or None))

    def hot_struct(self, shaped: Any) -> tuple[Any, ...] | list[ChunkResponse] | None:
        """A chunk read as a :class:`_HotChunk` (decoded so, the shape's checks made by the
        decoder: no error, usage, x_groq, citations, search results, finish reason, refusal,
        annotations or reasoning, a tool call without id or name; or made so by
        :meth:`hot_event`): its text once the text has begun, or the one argument fragment of an
        announced, open call that the tracker appends as it is (see :meth:`Converter.hot_event`
        and :meth:`_payload`); ``None`` having changed nothing for any other."""
        if self.done:
            return None
        model = shaped.model
        if model and model != self._model:
            return None
        delta = shaped.choices[0].delta  # one choice: the shape's
        content = delta.content
        tool_calls = delta.tool_calls
        if content:
            if not self._content_started or tool_calls:
                return None
            self.payloads += 1
            return self._hot_content(content)
        if tool_calls is None or len(tool_calls) != 1:
            return None
        tc = tool_calls[0]
        return self._hot_fragment(tc.index, tc.function.arguments)

    def _hot_fragment(self, index: int, args: str) -> tuple[Any, ...] | None:
        """An argument fragment of a hot chunk (see :meth:`hot_event`)."""
        if not self._fragments_pass():
            return None
        tracker = self.tracker
        call = tracker.find(index)
        if call is None:
            return None
        if not args:
            if not call.announced or call.complete:
                return None
            self.payloads += 1
            self._last = call
            return ()
        if not tracker.appends_plainly(call, args):
            return None
        self.payloads += 1
        self._last = call
        if not self.defers_takes:
            tracker.take(call, args)
        return call, args

    def _hot_content(self, content: str) -> tuple[Any, ...] | list[ChunkResponse]:
        """The text of a hot chunk (the text of the stream has begun)."""
        if self._kimi is not None and self._kimi[0].feed(content):
            self._kimi_quirk(QuirkId.KIMI_TOKENS_IN_CONTENT, "delta.content")
            return [ChunkResponse(content=content)]
        return TEXT, content

    def _fragments_pass(self) -> bool:
        """Whether an argument fragment's chunk reaches the handler as it is."""
        return True

    def _payload(self, obj: Any) -> list[ChunkResponse]:
        if not isinstance(obj, dict):
            self.error(ErrorKind.BAD_PAYLOAD, "event data is not a JSON object", obj)
            return []
        self.payloads += 1
        chunk = ChunkResponse()
        model = obj.get("model")
        if model and model != self._model:
            self._model = chunk.model = model

        err = obj.get("error")
        if err:
            message = err.get("message") if isinstance(err, dict) else str(err)
            self.failed = True
            self.error(ErrorKind.PROVIDER_ERROR, f"error inside the stream: {message}", err)

        usage = obj.get("usage")
        if not usage and "x_groq" in obj:
            x_groq = obj["x_groq"]
            if isinstance(x_groq, dict):
                usage = x_groq.get("usage")
        if usage:
            chunk.usage = normalize_usage(usage)

        if "citations" in obj or "search_results" in obj:
            # Perplexity and xAI: the sources of the whole answer, repeated on later chunks
            cited = from_search_results(obj.get("search_results"), obj.get("citations"))
            if cited and cited != self._sources:
                self._sources = cited
                self._cite(chunk, cited, "sources")

        choices = obj.get("choices")
        if not choices:
            if usage:
                self.quirk(
                    QuirkId.USAGE_ONLY_CHUNK, "usage arrives in a chunk whose choices are empty"
                )
                if "choices" not in obj:
                    self.quirk(
                        QuirkId.USAGE_CHUNK_NO_CHOICES_KEY, "a usage chunk without 'choices'"
                    )
            elif self.payloads == 1 and isinstance(choices, list):
                self.quirk(
                    QuirkId.AZURE_EMPTY_FIRST_CHUNK,
                    "first chunk has empty choices"
                    + (" (prompt_filter_results)" if "prompt_filter_results" in obj else ""),
                )
            return [chunk]

        if not isinstance(choices, list):
            self.error(ErrorKind.BAD_PAYLOAD, "'choices' is not a list", choices)
            return [chunk]
        tool_deltas: list[ToolCallDelta] = []
        for choice in choices:
            if not isinstance(choice, dict):
                continue
            if choice.get("index", 0) not in (0, None):
                self.quirk(QuirkId.N_CHOICES, "several choices: only choice 0 is replayed")
                continue
            delta = choice.get("delta")
            if delta is None:
                delta = choice.get("message")
                self.whole = delta is not None
            if isinstance(delta, dict):
                self._delta(delta, chunk, tool_deltas)
            finish = choice.get("finish_reason")
            if finish is not None:
                self._finish(finish, chunk, tool_deltas)
        if tool_deltas:
            chunk.tool_calls = tool_deltas
        return [chunk]

    def _delta(self, delta: dict[str, Any], chunk: ChunkResponse, out: list[ToolCallDelta]) -> None:
        content = delta.get("content")
        if type(content) is str:
            chunk.content = content
            if not self._content_started and content.strip():
                self._content_started = True
                if content.lstrip().startswith("<think>"):
                    self.quirk(
                        QuirkId.THINK_TAGS_IN_CONTENT, "reasoning as <think>...</think> in content"
                    )
        elif isinstance(content, list):
            self._content_array(content, chunk)
        if self._kimi is not None and chunk.content and self._kimi[0].feed(chunk.content):
            self._kimi_quirk(QuirkId.KIMI_TOKENS_IN_CONTENT, "delta.content")

        if "reasoning_content" in delta or "reasoning" in delta or "reasoning_details" in delta:
            self._reasoning(delta, chunk)

        refusal = delta.get("refusal")
        if type(refusal) is str and refusal:
            # the model refused: the refusal is the text the user sees, marked as such
            chunk.content += refusal
            meta = chunk.content_metadata = dict(chunk.content_metadata or {})
            meta["refusal"] = True

        annotations = delta.get("annotations")
        if isinstance(annotations, list) and annotations:
            self._annotations.extend(annotations)
            found = [c for c in map(from_openai_annotation, annotations) if c is not None]
            self._cited.extend(found)
            meta = chunk.content_metadata = dict(chunk.content_metadata or {})
            meta["annotations"] = list(self._annotations)
            if found:
                self._cite(chunk, list(self._cited), "annotations")

        tool_calls = delta.get("tool_calls")
        if tool_calls:
            if not isinstance(tool_calls, list):
                tool_calls = [tool_calls]
            for tc in tool_calls:
                if isinstance(tc, dict):
                    self._tool_call(tc, out)
        elif delta.get("function_call"):
            fc = delta["function_call"]
            if isinstance(fc, dict):
                self.quirk(QuirkId.LEGACY_FUNCTION_CALL, "deprecated delta.function_call")
                self._tool_call({"index": 0, "function": fc}, out)

    def _reasoning(self, delta: dict[str, Any], chunk: ChunkResponse) -> None:
        reasoning = delta.get("reasoning_content")
        field = "reasoning_content"
        if not (isinstance(reasoning, str) and reasoning):
            reasoning, field = delta.get("reasoning"), "reasoning"
        if not (isinstance(reasoning, str) and reasoning):
            reasoning, field = _details_text(delta.get("reasoning_details")), "reasoning_details"
        if reasoning:
            chunk.reasoning = (chunk.reasoning or "") + reasoning
            if field != self._reasoning_field:
                self._reasoning_field = field
                self.quirk(_REASONING_FIELDS[field], f"reasoning arrives in delta.{field}")
            if self._kimi is not None and self._kimi[1].feed(reasoning):
                self._kimi_quirk(QuirkId.KIMI_TOKENS_IN_REASONING, f"delta.{field}")

    def _kimi_quirk(self, quirk_id: QuirkId, where: str) -> None:
        self.quirk(
            quirk_id,
            f"Kimi K2 tool-call tokens (<|tool_call...|>) in {where}, read here as plain text; "
            "replay with --converter kimi-k2 to turn them into tool calls",
        )

    def _content_array(self, parts: list[Any], chunk: ChunkResponse) -> None:
        self.quirk(QuirkId.MISTRAL_CONTENT_ARRAY, "delta.content is an array of typed chunks")
        for part in parts:
            if isinstance(part, str):
                chunk.content += part
                continue
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if kind == "text" and isinstance(part.get("text"), str):
                chunk.content += part["text"]
            elif kind == "thinking":
                thinking = part.get("thinking")
                text = thinking if isinstance(thinking, str) else _details_text(thinking)
                if text:
                    chunk.reasoning = (chunk.reasoning or "") + text

    # -- tool calls ------------------------------------------------------------------------
    def _tool_call(self, tc: dict[str, Any], out: list[ToolCallDelta]) -> None:
        fn = tc.get("function")
        # fast path: a plain argument fragment for an open, announced call (most chunks)
        if "id" not in tc and type(fn) is dict and "name" not in fn:
            index = tc.get("index")
            args = fn.get("arguments")
            if type(index) is int and type(args) is str:
                call = self.tracker.find(index)
                if call is not None and call.announced and not call.complete:
                    self._last = call
                    delta = self.tracker.append(call, args)
                    if delta is not None:
                        out.append(delta)
                    return
        if not isinstance(fn, dict):
            fn = {}
        index = tc.get("index")
        if index is None and type(fn.get("index")) is int:
            index = fn["index"]  # Ollama puts it inside "function"
        if type(index) is not int:
            index = None
            if not self.whole:  # a whole answer's calls carry none: it is a stream's field
                self.quirk(QuirkId.OAI_TOOL_INDEX_MISSING, "tool_calls entries without 'index'")
        if self._wrap(tc, fn, index, out):
            return
        raw_id = tc.get("id")
        call_id = raw_id if isinstance(raw_id, str) and raw_id else None
        if raw_id == "":
            self.quirk(QuirkId.OAI_EMPTY_ID, 'tool call id sent as ""')
        name = fn.get("name")
        name = name if isinstance(name, str) and name else None
        args = fn.get("arguments")
        if args is not None and not isinstance(args, str):
            self.quirk(QuirkId.OAI_ARGS_OBJECT, "arguments sent as a JSON value, not a string")
            args = json.dumps(args, ensure_ascii=False, separators=(",", ":"))
        extra = tc.get("extra_content")
        metadata = {"extra_content": extra} if extra else None

        call = self._resolve(index, call_id, name, args, out)
        if call is None:
            return
        if call.announced:
            if call_id is not None and call_id == call.call_id:
                self.quirk(
                    QuirkId.OAI_ID_EVERY_CHUNK, "the tool call id is repeated on later chunks"
                )
            if name is not None and name == call.name:
                self.quirk(
                    QuirkId.OAI_NAME_EVERY_CHUNK, "the tool name is repeated on later chunks"
                )
        self._last = call
        delta = self.tracker.update(
            call, call_id=call_id, name=name, arguments=args or None, metadata=metadata
        )
        if delta is not None:
            out.append(delta)

    def _wrap(
        self, tc: dict[str, Any], fn: dict[str, Any], index: Any, out: list[ToolCallDelta]
    ) -> bool:
        """Hold a ``multi_tool_use.parallel`` call (or a later fragment of one): its arguments
        are the real calls, given out when they are whole (:meth:`_unwrap`): when the next call
        begins (calls stream one after another) or at the finish."""
        raw_id = tc.get("id")
        name = fn.get("name")
        wrapper = None
        if isinstance(raw_id, str) and raw_id:
            wrapper = self._wrappers.get(("id", raw_id))
        if wrapper is None and type(index) is int:
            wrapper = self._wrappers.get(("index", index))
            if wrapper is not None and name and name != PARALLEL_WRAPPER:
                wrapper = None  # a new call at the wrapper's index
        if wrapper is None and index is None and not raw_id and not name:
            # a fragment with neither index nor id nor name continues the call before it
            wrapper = self._open_wrapper
        if wrapper is None:
            self._open_wrapper = None
            if name != PARALLEL_WRAPPER:
                if self._wrapper_list and name:
                    self._unwrap(out)  # a new call: the held wrapper is whole, and came first
                return False
            # the calls before the wrapper are whole: they come first
            out.extend(self.tracker.complete_all())
            wrapper = Wrapper(raw_id if isinstance(raw_id, str) and raw_id else None)
            self._wrapper_list.append(wrapper)
            if wrapper.call_id is not None:
                self._wrappers[("id", wrapper.call_id)] = wrapper
            if type(index) is int:
                self._wrappers[("index", index)] = wrapper
        self._open_wrapper = wrapper
        args = fn.get("arguments")
        if isinstance(args, str):
            wrapper.arguments.append(args)
        elif args is not None:
            wrapper.arguments.append(json.dumps(args, ensure_ascii=False))
        return True

    def _unwrap(self, out: list[ToolCallDelta]) -> None:
        """The calls of every held ``multi_tool_use.parallel`` wrapper, as if sent one by one:
        ids ``<wrapper id>_<n>`` (deterministic), names without ``functions.``."""
        wrappers, self._wrapper_list = self._wrapper_list, []
        self._wrappers = {}
        for n, wrapper in enumerate(wrappers):
            base = wrapper.call_id or f"call_parallel_{n}"
            deltas, count = unwrapped(
                self.tracker, PARALLEL_WRAPPER, base, "".join(wrapper.arguments)
            )
            if count is not None:
                self.quirk(
                    QuirkId.OAI_MULTI_TOOL_USE_PARALLEL,
                    f"call {base} wraps {count} calls in multi_tool_use.parallel",
                )
            out.extend(deltas)

    def _resolve(
        self,
        index: int | None,
        call_id: str | None,
        name: str | None,
        args: str | None,
        out: list[ToolCallDelta],
    ) -> TrackedCall | None:
        # provider keys in the shared tracker: the call id (a str) and the index (an int)
        tracker = self.tracker
        if call_id is not None:
            call = tracker.find(call_id)
            if call is None and index is not None:
                prev = self.tracker.find(index)
                if prev is not None and not prev.complete:
                    if prev.call_id is None or (prev.synthetic_id and not prev.announced):
                        call = prev  # an index-only first delta; the id came later
                    elif prev.call_id != call_id:
                        self.quirk(
                            QuirkId.OAI_PARALLEL_SAME_INDEX,
                            f"calls with different ids share index {index}",
                        )
                        delta = tracker.complete(prev)  # same index, new id: the old call is done
                        if delta is not None:
                            out.append(delta)
            if call is None:
                call = tracker.open()
            tracker.alias(call_id, call)
            if index is not None:
                tracker.alias(index, call)
            return call
        if index is not None:
            call = self.tracker.find(index)
            if call is not None and call.complete:
                if not name and not args:
                    self.quirk(
                        QuirkId.OAI_TRAILING_EMPTY_TOOL_STUB,
                        "an empty tool-call stub after the call",
                    )
                    return None
                call = None
            if call is None:
                call = tracker.open()
                tracker.alias(index, call)
            return call
        last = self._last
        if last is not None and not last.complete and (name is None or name == last.name):
            return last
        return tracker.open()

    def _cite(self, chunk: ChunkResponse, found: list[dict[str, Any]], source: str) -> None:
        """The text's citations: those of the annotations, then the answer's sources."""
        if source == "sources":
            self._sources = found
        meta = chunk.content_metadata = dict(chunk.content_metadata or {})
        meta["citations"] = self._cited + [c for c in self._sources if c not in self._cited]

    # -- finish ----------------------------------------------------------------------------
    def _finish(self, reason: Any, chunk: ChunkResponse, out: list[ToolCallDelta]) -> None:
        if reason == "":
            self.quirk(QuirkId.FINISH_EMPTY_STRING, 'finish_reason "" on an intermediate chunk')
            return
        if self.finish_reason is not None:
            self.quirk(QuirkId.FINISH_DOUBLE, f"a second finish_reason {reason!r}")
            return
        self.finish_reason = chunk.finish_reason = str(reason)
        chunk.is_complete = True
        if self._wrapper_list:
            self._unwrap(out)
        if reason == "error":
            self.error(ErrorKind.PROVIDER_ERROR, "finish_reason 'error'")
        if self.tracker.calls and reason == "stop":
            self.quirk(
                QuirkId.FINISH_STOP_WITH_TOOLS, 'finish_reason "stop" although tool calls were made'
            )
        out.extend(self.tracker.complete_all())

    def on_finish(self) -> list[ChunkResponse]:
        chunk = ChunkResponse()
        deltas = self.tracker.flush_unannounced()
        if self._wrapper_list:
            self._unwrap(deltas)
        if self.done or self.finish_reason is not None:
            deltas.extend(self.tracker.complete_all())
        if not self.done and not self.whole:
            if self.finish_reason is not None:
                self.quirk(QuirkId.EOF_NO_DONE, "the stream ended without data: [DONE]")
            elif self.payloads and not self.failed:  # an error ends a stream, not a cut
                self.truncated("a finish_reason or [DONE]", "may be cut off")
        elif self.finish_reason is None and self.payloads:
            self.quirk(QuirkId.DONE_NO_FINISH_REASON, "[DONE] arrived without a finish_reason")
        if deltas:
            chunk.tool_calls = deltas
        return [chunk] if deltas else []


# The hot shape of feed_many (OpenAIChatConverter.hot_struct): a chunk of one choice whose delta
# holds text or one argument fragment of a call without id or name. Every field that sends a
# chunk off the hot path is declared, so that the decoder refuses it: typed ``None`` (only null
# allowed, or absent) or ``UnsetType`` (never allowed); other fields are skipped. The Structs
# hold only strings, numbers and each other (never a cycle): the collector need not track them.
# hot_event makes one of a dict of that shape.
class _HotFunction(msgspec.Struct, gc=False):
    arguments: str
    name: msgspec.UnsetType = msgspec.UNSET


class _HotToolCall(msgspec.Struct, gc=False):
    index: int
    function: _HotFunction
    id: msgspec.UnsetType = msgspec.UNSET


class _HotDelta(msgspec.Struct, gc=False):
    content: str | None = None
    tool_calls: list[_HotToolCall] | None = None
    function_call: None = None
    refusal: None = None
    annotations: None = None
    reasoning_content: None = None
    reasoning: None = None
    reasoning_details: None = None


class _HotChoice(msgspec.Struct, gc=False):
    delta: _HotDelta
    index: Literal[0] | None = 0
    finish_reason: None = None


class _HotChunk(msgspec.Struct, gc=False):
    choices: tuple[_HotChoice]
    model: str | None = None
    error: None = None
    usage: None = None
    x_groq: msgspec.UnsetType = msgspec.UNSET
    citations: msgspec.UnsetType = msgspec.UNSET
    search_results: msgspec.UnsetType = msgspec.UNSET


OpenAIChatConverter.hot_decoder = msgspec.json.Decoder(_HotChunk)


def _details_text(details: Any) -> str:
    """Reasoning text out of OpenRouter ``reasoning_details`` or Mistral ``thinking`` lists."""
    if not isinstance(details, list):
        return ""
    parts = []
    for item in details:
        if isinstance(item, dict):
            text = item.get("text")
            if not isinstance(text, str):
                text = item.get("summary")
            if isinstance(text, str):
                parts.append(text)
        elif isinstance(item, str):
            parts.append(item)
    return "".join(parts)
