"""Converter ``gemini``: Gemini's native ``streamGenerateContent`` (Developer API and Vertex).

Each event is one ``GenerateContentResponse`` (``alt=sse`` framing, or an element of the JSON
array sent without it). Parts of candidate 0 map as follows:

- ``text`` parts are content, ``thought: true`` parts reasoning. A ``thoughtSignature`` is kept in
  the metadata of the part's segment (``thought_signature``; ``thought_signatures`` as well when
  one segment gets several); an empty text part that only carries a signature opens an empty text
  segment to hold it.
- ``functionCall`` parts arrive whole: one tool call each, closed at once, arguments ``{}`` when
  ``args`` is missing, the part's ``id`` or else a deterministic one from the shared tracker, the
  signature in the call's metadata. Vertex streamed arguments (``willContinue``) are assembled
  instead: the opening part names the call, ``partialArgs`` entries (``jsonPath`` plus a typed
  value; a string value with ``willContinue`` continues in the next entry for the same path) are
  written out as JSON text as they come, and an empty ``functionCall`` closes the call.
- ``executableCode`` / ``codeExecutionResult`` (the code-execution tool that Gemini runs itself)
  are a server-side tool call ``code_execution`` whose ``result`` metadata is the result part.

``finishReason`` is the finish reason (``MALFORMED_FUNCTION_CALL`` and ``UNEXPECTED_TOOL_CALL`` are
also errors); ``promptFeedback.blockReason`` is an error; an ``error`` object in the stream is an
error. ``usageMetadata`` repeats cumulatively and is passed on each time (the latest wins).
Grounding and citation metadata are kept in the text segment's metadata.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ...converters.base import Converter
from ...converters.prose_runs import REASONING, TEXT, TOOL, ProseRuns
from ...converters.stream_head import take_head
from ...model import ChunkResponse, ToolCallDelta
from ...model.quirk_ids import QuirkId
from ...model.vocabulary import ErrorKind
from ...pipeline.tracker import TrackedCall
from ...wire.sse import SSEEvent
from .citations import from_gemini_grounding

_STREAMED = ("gemini", "streamed-call")  # tracker key: the call whose arguments are streaming
_CODE = ("gemini", "code-execution")  # tracker key: the code execution awaiting its result
# finish reasons that are errors: their quirk, their error kind (the reason in lower case), and
# what they mean
_ERROR_FINISHES = {
    "MALFORMED_FUNCTION_CALL": (
        QuirkId.GEMINI_MALFORMED_FUNCTION_CALL,
        ErrorKind.MALFORMED_FUNCTION_CALL,
        "the model produced a malformed function call",
    ),
    "UNEXPECTED_TOOL_CALL": (
        QuirkId.GEMINI_UNEXPECTED_TOOL_CALL,
        ErrorKind.UNEXPECTED_TOOL_CALL,
        "the model called a tool that was not offered",
    ),
}


class GeminiConverter(Converter):
    name = "gemini"

    def __init__(self) -> None:
        super().__init__()
        self._runs = ProseRuns()
        self._writer: PartialArgsWriter | None = None
        self.finish_reason: str | None = None
        self.failed = False
        self.payloads = 0
        self._model: str | None = None

    # -- events ----------------------------------------------------------------------------
    def on_object(self, obj: Any, event: SSEEvent) -> list[ChunkResponse]:
        """Every event is a response object (no event types to dispatch on)."""
        if type(obj) is dict:
            return self.on_payload(obj, event)
        if isinstance(obj, list):  # a JSON array inside one SSE event (or a MultiPayload)
            out: list[ChunkResponse] = []
            for payload in obj:
                if isinstance(payload, dict):
                    out.extend(self.on_payload(payload, event))
            return out
        self.error(ErrorKind.BAD_PAYLOAD, "event data is not a JSON object", obj)
        return []

    def on_unparsed(self, event: SSEEvent) -> bool:
        if event.unterminated:
            self.error(
                ErrorKind.TRUNCATED, "the stream ends inside a response object", event.data[:200]
            )
            return True
        return False

    def on_payload(self, obj: dict[str, Any], event: SSEEvent) -> list[ChunkResponse]:
        self.payloads += 1
        out: list[ChunkResponse] = []
        head = ChunkResponse()
        self._model = take_head(
            head, obj.get("modelVersion"), obj.get("usageMetadata"), self._model
        )
        err = obj.get("error")
        if err:
            self.failed = True
            self.error(ErrorKind.PROVIDER_ERROR, f"error in the stream: {_error_message(err)}", err)
        feedback = obj.get("promptFeedback")
        if isinstance(feedback, dict) and feedback.get("blockReason"):
            reason = str(feedback["blockReason"])
            self.quirk(QuirkId.GEMINI_BLOCK_REASON, f"promptFeedback.blockReason {reason}")
            self.error(ErrorKind.PROMPT_BLOCKED, f"the prompt was blocked: {reason}", feedback)
            if self.finish_reason is None:
                self.finish_reason = head.finish_reason = reason
                head.is_complete = True
        if head.model or head.usage or head.finish_reason:
            out.append(head)
        candidates = obj.get("candidates")
        if isinstance(candidates, list):
            for candidate in candidates:
                if not isinstance(candidate, dict):
                    continue
                if candidate.get("index", 0) not in (0, None):
                    self.quirk(
                        QuirkId.N_CANDIDATES, "several candidates: only candidate 0 is replayed"
                    )
                    continue
                self._candidate(candidate, out)
        return out

    def _candidate(self, candidate: dict[str, Any], out: list[ChunkResponse]) -> None:
        content = candidate.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        if isinstance(parts, list):
            for part in parts:
                if isinstance(part, dict):
                    self._part(part, out)
        for key, meta_key in (
            ("groundingMetadata", "grounding_metadata"),
            ("citationMetadata", "citation_metadata"),
            ("urlContextMetadata", "url_context_metadata"),
        ):
            value = candidate.get(key)
            if value:
                self._runs.enter(TEXT)
                meta: dict[str, Any] = {meta_key: value}
                if key == "groundingMetadata":
                    citations = from_gemini_grounding(value)
                    if citations:
                        meta["citations"] = citations  # the latest grounding states them all
                out.append(ChunkResponse(content_metadata=meta))
        reason = candidate.get("finishReason")
        if isinstance(reason, str) and reason:
            out.append(self._finish(reason, candidate))

    # -- parts -----------------------------------------------------------------------------
    def _part(self, part: dict[str, Any], out: list[ChunkResponse]) -> None:
        signature = part.get("thoughtSignature")
        if not isinstance(signature, str) or not signature:
            signature = None
        text = part.get("text")
        if isinstance(text, str):
            if part.get("thought") is True:
                chunk = ChunkResponse(reasoning=text or None)
                if text:
                    self._runs.enter(REASONING)
                if signature:
                    chunk.reasoning_metadata = self._runs.one_or_many(
                        REASONING, "thought_signature", signature
                    )
                if text or signature:
                    out.append(chunk)
                return
            chunk = ChunkResponse(content=text)
            if text:
                self._runs.enter(TEXT)
            if signature:
                if not text:
                    self.quirk(
                        QuirkId.GEMINI_SIGNATURE_IN_EMPTY_TEXT_PART,
                        "a thoughtSignature on an empty text part",
                    )
                chunk.content_metadata = self._runs.one_or_many(
                    TEXT, "thought_signature", signature
                )
            if text or signature:
                out.append(chunk)
            return
        call = part.get("functionCall")
        if isinstance(call, dict):
            deltas = self._function_call(call, signature)
            if deltas:
                out.append(ChunkResponse(tool_calls=deltas))
            return
        code = part.get("executableCode")
        if isinstance(code, dict):
            out.append(ChunkResponse(tool_calls=self._code(code, signature)))
            return
        result = part.get("codeExecutionResult")
        if isinstance(result, dict):
            out.append(self._code_result(result))
            return
        if part.get("thought") is True and signature:
            meta = self._runs.one_or_many(REASONING, "thought_signature", signature)
            out.append(ChunkResponse(reasoning_metadata=meta))
            return
        self.quirk(QuirkId.GEMINI_UNKNOWN_PART, f"a part with keys {sorted(part)}")
        values = self._runs.collect(TEXT, "parts", part)
        out.append(ChunkResponse(content_metadata={"parts": values}))

    def _function_call(self, fc: dict[str, Any], signature: str | None) -> list[ToolCallDelta]:
        tracker = self.tracker
        name = fc.get("name")
        name = name if isinstance(name, str) and name else None
        call_id = fc.get("id")
        call_id = call_id if isinstance(call_id, str) and call_id else None
        partial = fc.get("partialArgs")
        will_continue = fc.get("willContinue") is True
        out: list[ToolCallDelta] = []
        streamed = tracker.find(_STREAMED)
        if streamed is not None and not streamed.complete:
            if name is None and call_id is None:
                self._partial_args(streamed, partial, out)
                if not will_continue:
                    self._close_streamed(streamed, out)
                return out
            # a new call while the streamed one was never closed by an empty functionCall
            self.quirk(
                QuirkId.GEMINI_STREAMED_CALL_NOT_CLOSED, f"call {streamed.call_id} was not closed"
            )
            self._close_streamed(streamed, out)
        if name is None and call_id is None and not fc.get("args"):
            if partial:
                self.error(ErrorKind.BAD_PAYLOAD, "partialArgs without an open streamed call", fc)
            else:
                self.quirk(
                    QuirkId.GEMINI_EMPTY_FUNCTION_CALL, "an empty functionCall with no open call"
                )
            return out
        # a functionCall without an id is Gemini's documented form (the id is optional): the
        # call gets a deterministic one, and that is not a quirk
        metadata = {"thought_signature": signature} if signature else None
        call = tracker.open()
        self._runs.enter(TOOL)
        if will_continue:
            self.quirk(
                QuirkId.GEMINI_PARTIAL_ARGS, "function call arguments streamed as partialArgs"
            )
            tracker.alias(_STREAMED, call)
            self._writer = PartialArgsWriter()
            first = tracker.update(
                call, call_id=call_id, name=name, metadata=metadata, announce=True
            )
            if first is not None:
                out.append(first)
            if fc.get("args"):
                self.quirk(
                    QuirkId.GEMINI_ARGS_AND_PARTIAL_ARGS, "a streamed call also gave whole args"
                )
            self._partial_args(call, partial, out)
            return out
        args = fc.get("args")
        text = "{}" if args is None else json.dumps(args, ensure_ascii=False)
        delta = tracker.update(
            call,
            call_id=call_id,
            name=name,
            arguments=text,
            metadata=metadata,
            complete=True,
            raw=True,
        )
        if delta is not None:
            out.append(delta)
        return out

    def _partial_args(self, call: TrackedCall, partial: Any, out: list[ToolCallDelta]) -> None:
        writer = self._writer
        if not partial or writer is None:
            return
        if not isinstance(partial, list):
            partial = [partial]
        for entry in partial:
            if not isinstance(entry, dict):
                continue
            try:
                text = writer.add(entry)
            except PartialArgsError as exc:
                self.error(ErrorKind.PARTIAL_ARGS, f"call {call.call_id}: {exc}", entry)
                continue
            if writer.problem is not None:
                self.error(ErrorKind.PARTIAL_ARGS, f"call {call.call_id}: {writer.problem}", entry)
                writer.problem = None
            if text:
                delta = self.tracker.append_exact(call, text)
                if delta is not None:
                    out.append(delta)

    def _close_streamed(self, call: TrackedCall, out: list[ToolCallDelta]) -> None:
        writer = self._writer
        self._writer = None
        if writer is not None:
            text = writer.close()
            if text:
                delta = self.tracker.append_exact(call, text)
                if delta is not None:
                    out.append(delta)
        done = self.tracker.complete(call)
        if done is not None:
            out.append(done)

    def _code(self, code: dict[str, Any], signature: str | None) -> list[ToolCallDelta]:
        tracker = self.tracker
        out: list[ToolCallDelta] = []
        previous = tracker.find(_CODE)
        if previous is not None and not previous.complete:
            done = tracker.complete(previous)  # a second code part before the first's result
            if done is not None:
                out.append(done)
        call = tracker.open(_CODE)
        # the part's own id (newer Gemini versions send one, and the result repeats it); a
        # deterministic one only when it has none
        code_id = code.get("id")
        code_id = code_id if isinstance(code_id, str) and code_id else None
        if code_id is not None:
            tracker.alias(("code", code_id), call)
        metadata: dict[str, Any] = {"server_side": True}
        if signature:
            metadata["thought_signature"] = signature
        self._runs.enter(TOOL)
        delta = tracker.update(
            call,
            call_id=code_id,
            name="code_execution",
            arguments=json.dumps(code, ensure_ascii=False),
            metadata=metadata,
            raw=True,
        )
        if delta is not None:
            out.append(delta)
        return out

    def _code_result(self, result: dict[str, Any]) -> ChunkResponse:
        result_id = result.get("id")
        call = None
        if isinstance(result_id, str) and result_id:
            call = self.tracker.find(("code", result_id))
        if call is None:
            call = self.tracker.find(_CODE)
        if call is not None and not call.complete:
            done = self.tracker.complete(call)
            if done is not None:
                done.metadata = {"result": result}
                return ChunkResponse(tool_calls=[done])
        self.quirk(
            QuirkId.GEMINI_ORPHAN_CODE_RESULT, "a codeExecutionResult without executableCode"
        )
        values = self._runs.collect(TEXT, "code_execution_results", result)
        return ChunkResponse(content_metadata={"code_execution_results": values})

    # -- finish ----------------------------------------------------------------------------
    def _finish(self, reason: str, candidate: dict[str, Any]) -> ChunkResponse:
        chunk = ChunkResponse()
        if self.finish_reason is not None:
            if reason != self.finish_reason:
                self.quirk(QuirkId.FINISH_DOUBLE, f"a second finishReason {reason!r}")
            return chunk
        self.finish_reason = chunk.finish_reason = reason
        chunk.is_complete = True
        error_finish = _ERROR_FINISHES.get(reason)
        if error_finish is not None:
            quirk_id, error_kind, meaning = error_finish
            self.quirk(quirk_id, f"finishReason {reason}")
            message = candidate.get("finishMessage")
            detail = message if isinstance(message, str) and message else meaning
            self.error(error_kind, f"{reason}: {detail}")
        tracker = self.tracker
        streamed = tracker.find(_STREAMED)
        if streamed is not None and not streamed.complete:
            self.error(
                ErrorKind.TRUNCATED,
                f"finishReason {reason} while the arguments of call {streamed.call_id} were "
                "still streaming",
            )
        elif tracker.calls:
            # STOP is the finish reason Gemini documents for a turn that ends in function
            # calls (it has no other): not a quirk, and the finish class is tool_calls
            deltas = tracker.complete_all()
            if deltas:
                chunk.tool_calls = deltas
        return chunk

    def on_finish(self) -> list[ChunkResponse]:
        deltas = self.tracker.flush_unannounced()
        if self.finish_reason is None and not self.failed and self.payloads:
            self.truncated("a finishReason")
        return [ChunkResponse(tool_calls=deltas)] if deltas else []


def _error_message(err: Any) -> str:
    if isinstance(err, dict):
        status = err.get("status") or err.get("code")
        message = err.get("message")
        if status and message:
            return f"{status}: {message}"
        return str(message or status or err)
    return str(err)


# -- Vertex partialArgs ----------------------------------------------------------------------
_PATH_STEP = re.compile(
    r"\.([A-Za-z_$][\w$-]*)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]|\[\"((?:[^\"\\]|\\.)*)\"\]"
)


class PartialArgsError(ValueError):
    pass


def parse_json_path(path: str) -> list[str | int]:
    """``$.a.b[0]['c d']`` -> ``["a", "b", 0, "c d"]``."""
    if not path.startswith("$"):
        raise PartialArgsError(f"jsonPath {path!r} does not start at $")
    steps: list[str | int] = []
    pos = 1
    while pos < len(path):
        m = _PATH_STEP.match(path, pos)
        if m is None:
            raise PartialArgsError(f"cannot read jsonPath {path!r}")
        name, index, quoted1, quoted2 = m.groups()
        if name is not None:
            steps.append(name)
        elif index is not None:
            steps.append(int(index))
        else:
            raw = quoted1 if quoted1 is not None else quoted2
            steps.append(re.sub(r"\\(.)", r"\1", raw))
        pos = m.end()
    return steps


class PartialArgsWriter:
    """Writes a function call's arguments as JSON text from Vertex ``partialArgs`` entries.

    Entries arrive in document order (each one sets the value at its ``jsonPath``), so the text
    can be written as they come: containers are opened and closed along the paths, and a string
    value marked ``willContinue`` stays open for the next entry of the same path. An entry that
    goes back to a container already closed is written anyway and reported in ``problem``
    (the text then repeats a key); an entry that cannot be read raises ``PartialArgsError``
    before anything is written.
    """

    __slots__ = ("_path", "_kinds", "_keys", "_counts", "_string", "_started", "problem")

    def __init__(self) -> None:
        self._path: list[str | int] = []  # keys of the open containers below the root
        self._kinds: list[type] = []  # dict or list, per open container (root first)
        self._keys: list[set[str | int]] = []  # members written, per open container
        self._counts: list[int] = []
        self._string: list[str | int] | None = None  # path of a string still open
        self._started = False
        self.problem: str | None = None  # set when an entry broke document order

    def add(self, entry: dict[str, Any]) -> str:
        path = entry.get("jsonPath")
        if not isinstance(path, str):
            raise PartialArgsError("a partialArgs entry without jsonPath")
        steps = parse_json_path(path)
        if not steps:
            raise PartialArgsError("a partialArgs entry for the root itself")
        continues = entry.get("willContinue") is True
        if "stringValue" in entry:
            value = entry["stringValue"]
            piece = json.dumps(value if isinstance(value, str) else str(value), ensure_ascii=False)
            is_string = True
        elif "numberValue" in entry:
            piece, is_string = json.dumps(entry["numberValue"]), False
        elif "boolValue" in entry:
            piece, is_string = ("true" if entry["boolValue"] else "false"), False
        elif "nullValue" in entry:
            piece, is_string = "null", False
        else:
            raise PartialArgsError(f"a partialArgs entry for {path} without a value")
        parts: list[str] = []
        if self._string is not None:
            if steps == self._string and is_string:
                # the same string goes on
                body = piece[1:-1]
                if continues:
                    return body
                self._string = None
                return body + '"'
            parts.append('"')  # the open string ends (its last entry said it would continue)
            self._string = None
        if not self._started:
            self._started = True
            self._kinds.append(dict)
            self._keys.append(set())
            self._counts.append(0)
            parts.append("{")
        parents = steps[:-1]
        common = 0
        while (
            common < len(self._path)
            and common < len(parents)
            and self._path[common] == parents[common]
        ):
            common += 1
        while len(self._path) > common:
            self._path.pop()
            self._keys.pop()
            self._counts.pop()
            parts.append("}" if self._kinds.pop() is dict else "]")
        for depth in range(common, len(parents)):
            parts.append(self._member(steps[depth], path))
            container = list if isinstance(steps[depth + 1], int) else dict
            parts.append("{" if container is dict else "[")
            self._path.append(steps[depth])
            self._kinds.append(container)
            self._keys.append(set())
            self._counts.append(0)
        parts.append(self._member(steps[-1], path))
        if is_string and continues:
            self._string = steps
            parts.append(piece[:-1])
        else:
            parts.append(piece)
        return "".join(parts)

    def _member(self, step: str | int, path: str) -> str:
        """Separator and key for a new member of the innermost open container.

        Entries out of document order are still written (so nothing is dropped) and noted in
        ``problem``.
        """
        kind = self._kinds[-1]
        keys = self._keys[-1]
        sep = "," if self._counts[-1] else ""
        self._counts[-1] += 1
        if kind is dict:
            key = step if isinstance(step, str) else str(step)
            if key in keys:
                self.problem = f"{path}: a key that was already written (entries out of order)"
            keys.add(key)
            return sep + json.dumps(key, ensure_ascii=False) + ":"
        if not isinstance(step, int) or step != self._counts[-1] - 1:
            self.problem = f"{path}: not the next element of its array (entries out of order)"
        return sep

    def close(self) -> str:
        """Everything still open, closed; ``{}`` when no entry came at all."""
        if not self._started:
            self._started = True
            return "{}"
        parts = []
        if self._string is not None:
            parts.append('"')
            self._string = None
        while self._kinds:
            parts.append("}" if self._kinds.pop() is dict else "]")
        self._path.clear()
        self._keys.clear()
        self._counts.clear()
        return "".join(parts)
