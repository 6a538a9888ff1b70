"""Converter ``openai-completions``: OpenAI's legacy Completions stream (``POST /v1/completions``).

Still served by vLLM, llama.cpp, Ollama and most self-hosted servers. Each event is a
``text_completion`` object: ``choices[].text`` is the answer's text (no roles, no tool calls: a
model that calls tools writes them in its text, which the text parsers ``--parser xml|json|
sentinel`` read as they read chat content), ``choices[].logprobs`` (``tokens``,
``token_logprobs``, ``top_logprobs``, ``text_offset``) is kept in the text segment's metadata,
``choices[].finish_reason`` ends it (``stop``, ``length``), a last chunk may hold only ``usage``
(``stream_options.include_usage``), and ``data: [DONE]`` closes the stream. An ``error`` object
inside the stream is an ``errors`` entry.

Choice 0 is the answer; text of other choices (``n`` > 1) is kept in the text segment's
``choices`` metadata (quirk ``completions_extra_choices``).
"""

from __future__ import annotations

from typing import Any

from ...converters.base import Converter
from ...converters.prose_runs import TEXT, ProseRuns
from ...converters.stream_head import take_head
from ...model import ChunkResponse
from ...model.quirk_ids import QuirkId
from ...model.vocabulary import ErrorKind
from ...wire.sse import SSEEvent


class OpenAICompletionsConverter(Converter):
    name = "openai-completions"

    def __init__(self) -> None:
        super().__init__()
        self._runs = ProseRuns()
        self.done = False
        self.failed = False
        self.payloads = 0
        self.finish_reason: str | None = None
        self._model: str | None = None
        self._others: dict[int, list[str]] = {}  # text of choices other than 0

    def on_event(self, event: SSEEvent) -> list[ChunkResponse]:
        if event.data.strip() == "[DONE]":
            self.done = True
            return [ChunkResponse(is_complete=True)]
        if self.done:
            self.quirk(QuirkId.DATA_AFTER_DONE, "events after data: [DONE]")
        return super().on_event(event)

    def hot_event(self, obj: Any) -> tuple[Any, ...] | list[ChunkResponse] | None:
        """:meth:`_hot_text` as the hot path gives it (see :meth:`Converter.hot_event`)."""
        text = self._hot_text(obj)
        if text is None:
            return None
        return (TEXT, text) if text else ()

    def _hot_text(self, obj: Any) -> str | None:
        """The text of a chunk of one choice 0 holding only text (no finish, logprobs, usage,
        error), for a known model; ``None`` having changed nothing for any other chunk (the
        event path reads every chunk with it first: :meth:`on_payload` reads the others)."""
        if type(obj) is not dict or self.done:
            return None
        choices = obj.get("choices")
        if (
            type(choices) is not list
            or len(choices) != 1
            or obj.get("usage") is not None
            or obj.get("error")
        ):
            return None
        choice = choices[0]
        if (
            type(choice) is not dict
            or choice.get("index", 0) != 0
            or choice.get("finish_reason") is not None
            or choice.get("logprobs") is not None
        ):
            return None
        text = choice.get("text")
        if type(text) is not str:
            return None
        model = obj.get("model")
        if model != self._model:
            return None
        self.payloads += 1
        if text:
            self._runs.enter(TEXT)
        return text

    def on_payload(self, obj: dict[str, Any], event: SSEEvent) -> list[ChunkResponse]:
        self.payloads += 1
        chunk = ChunkResponse()
        out = [chunk]
        err = obj.get("error")
        if err:
            self.failed = True
            message = err.get("message") if isinstance(err, dict) else None
            self.error(ErrorKind.PROVIDER_ERROR, f"error inside the stream: {message or err}", err)
        self._model = take_head(chunk, obj.get("model"), obj.get("usage"), self._model)
        choices = obj.get("choices")
        if choices is None:
            choices = []
        if not isinstance(choices, list):
            self.error(ErrorKind.BAD_PAYLOAD, "'choices' is not a list", choices)
            return out
        for choice in choices:
            if not isinstance(choice, dict):
                self.error(ErrorKind.BAD_PAYLOAD, "a choice is not an object", choice)
                continue
            index = choice.get("index", 0)
            text = choice.get("text")
            if index != 0:
                self._other_choice(index, text, chunk)
                continue
            if isinstance(text, str) and text:
                self._runs.enter(TEXT)
                chunk.content += text
            logprobs = choice.get("logprobs")
            if logprobs is not None:
                meta = chunk.content_metadata or {}
                meta["logprobs"] = self._runs.collect(TEXT, "logprobs", logprobs)
                chunk.content_metadata = meta
            reason = choice.get("finish_reason")
            if isinstance(reason, str) and reason:
                if self.finish_reason is None:
                    self.finish_reason = chunk.finish_reason = reason
                    chunk.is_complete = True
                elif reason != self.finish_reason:
                    self.quirk(QuirkId.FINISH_DOUBLE, f"a second finish_reason {reason!r}")
        return out

    def _other_choice(self, index: Any, text: Any, chunk: ChunkResponse) -> None:
        self.quirk(QuirkId.COMPLETIONS_EXTRA_CHOICES, f"text for choice {index!r} besides choice 0")
        if not isinstance(text, str) or not text or type(index) is not int:
            return
        self._others.setdefault(index, []).append(text)
        self._runs.enter(TEXT)
        meta = chunk.content_metadata or {}
        meta["choices"] = {str(i): "".join(parts) for i, parts in sorted(self._others.items())}
        chunk.content_metadata = meta

    def on_finish(self) -> list[ChunkResponse]:
        self.report_unknown_events()
        if not self.done:
            if self.finish_reason is not None:
                self.quirk(QuirkId.EOF_NO_DONE, "the stream ended without data: [DONE]")
            elif self.payloads and not self.failed and not self.http_error:
                self.truncated("a finish_reason or [DONE]", "may be cut off")
        elif self.finish_reason is None and self.payloads and not self.failed:
            self.quirk(QuirkId.DONE_NO_FINISH_REASON, "[DONE] arrived without a finish_reason")
        return []
