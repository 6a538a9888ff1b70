"""The quirk catalogue: every quirk id the converters, the tracker and the handlers report.

Each entry gives the quirk a severity, a one-line explanation and its reference:

- ``error``: a client will likely get it wrong (merged or lost tool calls, broken arguments, a crash
  on a chunk it did not expect);
- ``warn``: a client may get it wrong, or streamtool had to repair something;
- ``info``: a legitimate variation worth knowing about when reading a stream.

An ``error`` or ``warn`` entry is a departure from the contract of the API it is reported for,
never that contract itself: Gemini's ``STOP`` after function calls and its function calls without
``id`` are what Gemini documents, so they are not quirks. What an API documents but clients often
miss (a usage chunk with empty ``choices`` under ``stream_options.include_usage``, SSE comments)
is at most ``info``.

The reference names the section of the provider-quirks catalogue this project keeps (``Q-TC-1``...)
and one or two public issue threads that show the behaviour (``owner/repo#N``, ``owner/repo PR#N``);
for an API that catalogue does not cover yet, ``SDK:`` and where the official SDK defines the shape.
``docs/quirks.md`` is generated from this table (``python -m streamtool.core.model.quirks``), and
so is ``core/model/quirk_ids.py`` (``... --ids``), the ``QuirkId`` class by which the code reports
a quirk (so that mypy knows every id): a test keeps the three equal. Sans-IO; it imports only the
quirk ids. A quirk's severity and kind are enums of their own here: a replay, which never loads
the catalogue, does not build them.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from enum import StrEnum

from .quirk_ids import QuirkId


class Severity(StrEnum):
    """How much a quirk matters, most severe first."""

    ERROR = "error"  # a client will likely get it wrong
    WARN = "warn"  # a client may get it wrong, or streamtool repaired something
    INFO = "info"  # a legitimate variation worth knowing about


class QuirkKind(StrEnum):
    """What a catalogue entry is."""

    PROVIDER = "provider"  # a provider's way of streaming
    MODEL = "model"  # a fault of the model's output
    WIRE = "wire"  # how the bytes arrived: read boundaries and framing
    # a server's behaviour over the exchanges of a session (MCP), applied to a tape, not a stream
    SESSION = "session"


SEVERITIES = tuple(Severity)
"""Severities, most severe first."""


@dataclass(frozen=True, slots=True)
class QuirkInfo:
    id: str  # a QuirkId member, but for the entry :func:`lookup` makes for an id the class lacks
    severity: Severity
    explanation: str
    reference: str
    kind: QuirkKind = QuirkKind.PROVIDER

    @property
    def anchor(self) -> str:
        """The id of the entry's heading in ``docs/quirks.md`` (GitHub-style anchor)."""
        return self.id.lower()

    @property
    def doc(self) -> str:
        """Where the entry is documented, relative to the project root."""
        return f"docs/quirks.md#{self.anchor}"

    def to_dict(self) -> dict[str, str]:
        return {
            "id": self.id,
            "severity": self.severity,
            "explanation": self.explanation,
            "reference": self.reference,
            "doc": self.doc,
        }


KINDS = tuple(QuirkKind)
"""What an entry is: a provider's way of streaming, a fault of the model's output (``model``), or
how the bytes arrived (``wire``: read boundaries and framing, which never change what a stream
means and are reported in a replay's statistics, not its quirks)."""

# the specification an MCP entry cites (its transport's sections)
_MCP_2025 = "Spec: MCP 2025-11-25 basic/transports, Streamable HTTP"
_MCP_2026 = "Spec: MCP 2026-07-28 basic/transports/streamable-http"

# (id, severity, explanation, reference); grouped as in the catalogue's sections. A quirk that
# ``streamtool mutate`` can apply to a real stream has a mutation: a function that declares the
# quirk's id (:mod:`streamtool.core.mutations`, or an API package's ``mutations`` part; a
# session's faults: its ``session_faults`` part). The table is text: the ``QuirkId`` class is
# generated from it (``--ids``, below).
_ENTRIES: tuple[tuple[str, ...], ...] = (
    # -- A. SSE and transport -----------------------------------------------------------------
    (
        "sse_comment_keepalive",
        "info",
        "SSE comment lines (`: OPENROUTER PROCESSING`, `: ping`) arrive between events; a parser "
        "that JSON-decodes every line fails on them",
        "Q-SSE-1; openai/openai-go#227, tmc/langchaingo PR#631",
    ),
    (
        "sse_empty_event_after_comment",
        "warn",
        "an event with empty data (a keep-alive followed by a blank line); `json.loads('')` "
        "raises in clients that decode every event",
        "Q-SSE-2; openai/openai-python#2722",
    ),
    (
        "sse_single_newline_separator",
        "error",
        "events separated by a single newline: a standard SSE parser joins their data lines "
        "into one invalid JSON value",
        "Q-SSE-4; anomalyco/opencode#27365",
    ),
    (
        "eof_no_done",
        "warn",
        "the stream ended without `data: [DONE]`; clients that wait for it hang or report a "
        "truncated stream",
        "Q-SSE-7; maximhq/bifrost PR#7115",
    ),
    (
        "done_no_finish_reason",
        "warn",
        "`data: [DONE]` came without any finish_reason: the stream cannot tell a complete answer "
        "from a cut one",
        "Q-SSE-7; earendil-works/pi#6226, diegosouzapw/OmniRoute#7800",
    ),
    (
        "data_after_done",
        "warn",
        "events arrived after `data: [DONE]`; clients stop reading at [DONE] and lose them",
        "Q-TC-8; openai/openai-node PR#2658",
    ),
    (
        "unknown_event",
        "info",
        "an event type this API's converter does not know was skipped",
        "Q-SSE-8; vercel/ai PR#2720",
    ),
    (
        "provider_error",
        "error",
        "an error event inside a 200 stream, after output began (`event: error`, a top-level "
        "`error` object); clients that skip unknown events show a cut answer as complete",
        "Q-SSE-8; anthropics/anthropic-sdk-python#1918, use-agent-os/agent-os#2118",
    ),
    # -- B. Chat Completions tool-call deltas -------------------------------------------------
    (
        "oai_tool_index_missing",
        "error",
        "tool_calls entries without `index`; openai-python's accumulator raises TypeError and "
        "other clients merge every call into call 0",
        "Q-TC-1; openai/openai-python#2806",
    ),
    (
        "oai_parallel_same_index",
        "error",
        "parallel tool calls share one `index`; merging by index glues their arguments, names "
        "and ids together",
        "Q-TC-2; ollama/ollama#15457, langchain-ai/langchainjs#8276",
    ),
    (
        "oai_id_every_chunk",
        "error",
        "the tool call id is repeated on every chunk; concatenating accumulators build ids like "
        "`call_1call_1call_1`",
        "Q-TC-3; BerriAI/litellm#20480, SillyTavern/SillyTavern PR#5948",
    ),
    (
        "oai_name_every_chunk",
        "error",
        "the tool name is repeated on every chunk; concatenating accumulators build names like "
        "`read_fileread_file`",
        "Q-TC-3; NousResearch/hermes-agent PR#11984",
    ),
    (
        "oai_args_cumulative",
        "error",
        "every argument fragment repeats the arguments so far; appending them gives `{..}{..}` "
        "(streamtool keeps only the new suffix)",
        "Q-TC-4; NousResearch/hermes-agent PR#35718",
    ),
    (
        "oai_args_placeholder_then_full",
        "error",
        "a `{}` placeholder came before the full arguments; appending both gives invalid JSON "
        "(streamtool drops the placeholder)",
        "Q-TC-4; microsoft/autogen PR#7549",
    ),
    (
        "oai_args_delta_plus_summary",
        "error",
        "the complete arguments were sent again after their deltas; appending them doubles the "
        "JSON (streamtool drops the repeat)",
        "Q-TC-4; elizaOS/eliza PR#16973",
    ),
    (
        "oai_args_object",
        "error",
        "arguments sent as a JSON value instead of a string; string accumulators crash or build "
        "`[object Object]`",
        "Q-TC-5; can1357/oh-my-pi PR#1779, ggml-org/llama.cpp#20198",
    ),
    (
        "oai_multi_tool_use_parallel",
        "error",
        "parallel calls wrapped in one `multi_tool_use.parallel` call whose arguments hold "
        "`tool_uses` (`recipient_name: functions.NAME`, `parameters`); clients that do not "
        "unwrap it run a tool named `parallel` (streamtool gives the inner calls, ids "
        "`<wrapper id>_<n>`)",
        "Q-TC-2; anomalyco/opencode PR#39042",
    ),
    (
        "oai_empty_id",
        "warn",
        'a tool call id sent as `""`; clients that key calls by id lose or merge them '
        "(streamtool gives the call a deterministic id)",
        "Q-TC-6; vercel/ai#7834",
    ),
    (
        "oai_trailing_empty_tool_stub",
        "warn",
        "a last chunk carries an empty tool-call stub; some clients turn it into a duplicate call",
        "Q-TC-8; vercel/ai#3953",
    ),
    (
        "legacy_function_call",
        "warn",
        "the deprecated `delta.function_call` instead of `tool_calls`; current clients ignore it",
        "Q-TC-6; openai/openai-python#2806",
    ),
    # -- C. Finish reason, usage, first and last chunks --------------------------------------
    (
        "finish_stop_with_tools",
        "error",
        '`finish_reason: "stop"` although tool calls were sent; agent loops that branch on '
        '"tool_calls" stop early',
        "Q-FR-1; vllm-project/vllm PR#9209, Portkey-AI/gateway PR#1534",
    ),
    (
        "finish_empty_string",
        "warn",
        'finish_reason `""` on an intermediate chunk; clients treating any non-null value as '
        "the end truncate the stream",
        "Q-FR-2; adolfousier/opencrabs PR#1499",
    ),
    (
        "finish_double",
        "warn",
        "a second, different finish reason after the first; the first one is kept",
        "Q-FR-2; BerriAI/litellm PR#27580",
    ),
    (
        "azure_empty_first_chunk",
        "warn",
        "a first chunk with empty `choices` (content-filter results); `choices[0]` raises "
        "IndexError",
        "Q-FR-3; pydantic/pydantic-ai#164, simonw/llm#294",
    ),
    (
        "usage_only_chunk",
        "info",
        "usage arrives in a last chunk whose `choices` is empty; `choices[0]` raises IndexError "
        "in clients that do not expect it",
        "Q-FR-4; openai/openai-openapi PR#240",
    ),
    (
        "usage_chunk_no_choices_key",
        "warn",
        "a usage chunk without a `choices` key at all; `chunk.choices` is None in typed clients",
        "Q-FR-4; ROCm/ATOM PR#1711",
    ),
    (
        "n_choices",
        "info",
        "several choices in one stream; only choice 0 is replayed",
        "Q-FR-4; openai/openai-openapi PR#240",
    ),
    (
        "n_candidates",
        "info",
        "several Gemini candidates in one stream; only candidate 0 is replayed",
        "Q-GM-4; googleapis/go-genai#903",
    ),
    # -- D. Reasoning fields ------------------------------------------------------------------
    (
        "reasoning_field_reasoning_content",
        "info",
        "reasoning arrives in `delta.reasoning_content` (DeepSeek, older vLLM); clients reading "
        "another field drop it",
        "Q-RS-1; BerriAI/litellm#20246",
    ),
    (
        "reasoning_field_reasoning",
        "info",
        "reasoning arrives in `delta.reasoning` (OpenRouter, newer vLLM); clients reading "
        "`reasoning_content` drop it",
        "Q-RS-1; ogx-ai/ogx PR#4244",
    ),
    (
        "reasoning_field_reasoning_details",
        "info",
        "reasoning arrives only in `delta.reasoning_details`; clients reading the plain fields "
        "drop it",
        "Q-RS-1; BerriAI/litellm PR#22573",
    ),
    (
        "think_tags_in_content",
        "warn",
        "`<think>` tags inside `content`: reasoning leaks into the answer text",
        "Q-RS-2; smg-project/smg PR#1030",
    ),
    # -- E. Anthropic Messages ----------------------------------------------------------------
    (
        "anthropic_tool_input_in_start",
        "warn",
        "a tool_use block started with a non-empty `input`; clients that read the arguments only "
        "from `input_json_delta` lose them",
        "Q-AN-1; ggml-org/llama.cpp PR#22960",
    ),
    (
        "anthropic_content_in_message_start",
        "warn",
        "`message_start` already carries content blocks; clients that only read "
        "`content_block_*` events lose them",
        "Q-AN-1; farion1231/cc-switch PR#2557",
    ),
    (
        "anthropic_orphan_input_json",
        "warn",
        "an `input_json_delta` for a block that was never started; it is ignored",
        "Q-AN-3; anomalyco/opencode PR#43289",
    ),
    (
        "anthropic_orphan_block_stop",
        "info",
        "a `content_block_stop` for a block that was never started",
        "Q-AN-3; anomalyco/opencode PR#43289",
    ),
    (
        "anthropic_orphan_tool_result",
        "info",
        "a server tool result block without the server tool call it answers",
        "Q-AN-5; anthropics/anthropic-sdk-python PR#1429",
    ),
    (
        "anthropic_block_index_reused",
        "error",
        "a content block index started twice; clients keyed by index merge two blocks",
        "Q-AN-3; BerriAI/litellm#5231",
    ),
    (
        "anthropic_second_message_start",
        "warn",
        "a second `message_start` in one stream; clients reset their message and lose the first",
        "Q-AN-1; tmc/langchaingo PR#1343",
    ),
    (
        "anthropic_signature_on_other_block",
        "warn",
        "a `signature_delta` for a block that is not thinking; the next turn may be refused for a "
        "missing signature",
        "Q-AN-4; looplj/axonhub PR#1110",
    ),
    (
        "anthropic_unknown_event",
        "info",
        "an Anthropic event type this version does not know was skipped",
        "Q-SSE-8; anthropics/anthropic-sdk-python#1918",
    ),
    (
        "anthropic_unknown_block",
        "info",
        "a content block type this version does not know; its content is kept as metadata",
        "Q-AN-5; anthropics/anthropic-sdk-python PR#1875",
    ),
    (
        "anthropic_unknown_delta",
        "info",
        "a content_block_delta type this version does not know was skipped",
        "Q-AN-5; anthropics/anthropic-sdk-python PR#1875",
    ),
    # -- F. Gemini ----------------------------------------------------------------------------
    (
        "gemini_empty_function_call",
        "warn",
        "a functionCall without `args`: read as `{}`",
        "Q-TC-9; vllm-project/vllm#11392",
    ),
    (
        "gemini_partial_args",
        "info",
        "arguments streamed as Vertex `partialArgs` with `willContinue`; clients that expect "
        "whole functionCall parts create bogus calls",
        "Q-GM-1; mcowger/plexus#702",
    ),
    (
        "gemini_args_and_partial_args",
        "warn",
        "a functionCall part holds both `args` and `partialArgs`; the streamed arguments win",
        "Q-GM-1; langchain-ai/langchain-google#1752",
    ),
    (
        "gemini_streamed_call_not_closed",
        "error",
        "a streamed (`willContinue`) function call was never closed; its arguments may be cut",
        "Q-GM-1; BerriAI/litellm PR#23815",
    ),
    (
        "gemini_signature_in_empty_text_part",
        "warn",
        "a thoughtSignature in an empty text part; merging parts loses it and the next turn is "
        "refused",
        "Q-GM-3; google/adk-go PR#442",
    ),
    (
        "gemini_malformed_function_call",
        "error",
        "finishReason MALFORMED_FUNCTION_CALL: the model's call was dropped, with no payload",
        "Q-GM-4; mastra-ai/mastra PR#20302",
    ),
    (
        "gemini_unexpected_tool_call",
        "error",
        "finishReason UNEXPECTED_TOOL_CALL: the model called a tool that was not offered",
        "Q-GM-4; mozilla-ai/any-llm PR#1202",
    ),
    (
        "gemini_block_reason",
        "error",
        "`promptFeedback.blockReason` on a 200 stream without candidates: the prompt was blocked",
        "Q-GM-4; ankit373/hydra PR#855",
    ),
    (
        "gemini_unknown_part",
        "info",
        "a part type this version does not know; it is kept as metadata",
        "Q-GM-1; googleapis/go-genai#903",
    ),
    (
        "gemini_orphan_code_result",
        "info",
        "a codeExecutionResult without the executableCode it answers",
        "Q-GM-1; googleapis/go-genai#903",
    ),
    # -- G. OpenAI Responses ------------------------------------------------------------------
    (
        "responses_args_done_only",
        "warn",
        "a function call's arguments came only in `.done`, never as deltas; delta-only clients "
        "see `{}`",
        "Q-RA-2; anomalyco/opencode PR#44862",
    ),
    (
        "responses_args_suffix_in_done",
        "warn",
        "`.done` holds more arguments than the deltas carried; the missing suffix is added once",
        "Q-RA-2; anomalyco/opencode PR#46084",
    ),
    (
        "responses_completed_only",
        "warn",
        "an output item appears only in `response.completed`; streaming clients never see it",
        "Q-RA-2; langchain-ai/langchainjs#8049",
    ),
    (
        "responses_item_done_only",
        "warn",
        "an output item appears first in `output_item.done`, never `.added`; clients that open "
        "items on `.added` lose it",
        "Q-RA-2; iii-hq/workers PR#1020",
    ),
    (
        "responses_text_done_only",
        "warn",
        "output text came only in `output_text.done`, never as deltas",
        "Q-RA-2; lidge-jun/opencodex PR#4652",
    ),
    (
        "responses_text_suffix_in_done",
        "warn",
        "`output_text.done` holds more text than the deltas carried; the suffix is added once",
        "Q-RA-2; lidge-jun/opencodex PR#4652",
    ),
    (
        "responses_text_done_shorter",
        "warn",
        "`output_text.done` holds less text than the deltas carried; the streamed text is kept",
        "Q-RA-2; lidge-jun/opencodex PR#4652",
    ),
    (
        "text_mismatch",
        "error",
        "a final event states text that contradicts what streamed; clients that trust one or "
        "the other show different answers",
        "Q-RA-2; anomalyco/opencode PR#44862",
    ),
    (
        "responses_delta_before_item",
        "warn",
        "argument deltas arrived before their `output_item.added`; clients keyed by item lose them",
        "Q-RA-1; pgadmin-org/pgadmin4#10348",
    ),
    (
        "responses_call_id_changed",
        "error",
        "a function call item changed its `call_id` between events; the tool result cannot be "
        "paired with the call",
        "Q-RA-1; vllm-project/vllm PR#47916",
    ),
    (
        "responses_parallel_wrapper",
        "error",
        "parallel calls wrapped in one `function_call` named `parallel` (no declared tool has "
        "that name) whose arguments hold `tool_uses` (`recipient_name: functions.NAME`, "
        "`parameters`): the Responses form of `multi_tool_use.parallel`; clients that do not "
        "unwrap it run a tool named `parallel` (streamtool gives the inner calls, ids "
        "`<wrapper call_id>_<n>`)",
        "Q-TC-2 (its Responses form); anomalyco/opencode PR#39042",
    ),
    (
        "responses_item_id_rotation",
        "warn",
        "the same output item came back under a new `item_id`; clients keyed by item id split "
        "one call in two",
        "Q-RA-1; anomalyco/opencode PR#45081",
    ),
    (
        "responses_parallel_interleaved",
        "info",
        "parallel function call items are open at the same time and their deltas interleave; "
        "clients keyed by index glue them together",
        "Q-RA-3; BerriAI/litellm PR#21337",
    ),
    (
        "responses_sequence_gap",
        "warn",
        "`sequence_number` skipped values: events were lost or reordered on the way",
        "Q-RA-1; vllm-project/vllm PR#29947",
    ),
    (
        "responses_unknown_event",
        "info",
        "a Responses event type this version does not know was skipped",
        "Q-SSE-8; vllm-project/vllm PR#29947",
    ),
    (
        "responses_unknown_item",
        "info",
        "an output item type this version does not know; it is kept as metadata",
        "Q-RA-1; openai/openai-dotnet#418",
    ),
    # -- H. Mistral, Kimi K2 ------------------------------------------------------------------
    (
        "mistral_content_array",
        "error",
        "`delta.content` is an array of typed chunks instead of a string; string accumulators "
        "raise TypeError",
        "Q-MI-1; symfony/ai#2422",
    ),
    (
        "kimi_tokens_in_content",
        "error",
        "Kimi K2 tool-call tokens (`<|tool_call_begin|>`...) leak into `content`; the tool calls "
        "reach the user as text",
        "Q-KM-1; vllm-project/vllm PR#31207",
    ),
    (
        "kimi_tokens_in_reasoning",
        "error",
        "Kimi K2 tool-call tokens leak into the reasoning; the tool calls are never made",
        "Q-KM-1; vllm-project/vllm PR#34955",
    ),
    (
        "kimi_native_ids",
        "info",
        "Kimi tool-call ids in their native `functions.NAME:IDX` form; they must round-trip "
        "verbatim",
        "Q-KM-2; vybestack/llxprt-code#712",
    ),
    (
        "kimi_bare_counter_id",
        "warn",
        "a Kimi tool-call id without the `functions.` prefix (a bare counter)",
        "Q-KM-2; openclaw/openclaw PR#70030",
    ),
    (
        "kimi_args_double_encoded",
        "warn",
        "Kimi tool-call arguments double-encoded as a JSON string; decoded once",
        "Q-KM-1; typeclaw/typeclaw PR#344",
    ),
    (
        "kimi_singular_section_marker",
        "info",
        "Kimi sections opened by `<|tool_call_section_begin|>` (singular)",
        "Q-KM-1; typeclaw/typeclaw PR#344",
    ),
    (
        "kimi_call_without_section",
        "warn",
        "a Kimi `<|tool_call_begin|>` outside a tool-call section",
        "Q-KM-1; NousResearch/hermes-agent#24534",
    ),
    (
        "kimi_call_end_missing",
        "warn",
        "a Kimi tool call closed without `<|tool_call_end|>`",
        "Q-KM-1; BerriAI/litellm#12679",
    ),
    (
        "kimi_section_end_missing",
        "warn",
        "the stream ended inside a Kimi tool-call section (no `<|tool_calls_section_end|>`)",
        "Q-KM-1; ikawrakow/ik_llama.cpp#942",
    ),
    # -- I. Amazon Bedrock, Cohere, legacy Completions ----------------------------------------
    (
        "bedrock_text_block_without_start",
        "info",
        "Bedrock's ConverseStream sends no `contentBlockStart` for text and reasoning blocks: "
        "their first `contentBlockDelta` opens them; clients that key blocks on the start event "
        "drop the text",
        "SDK: botocore's bedrock-runtime service model (ContentBlockStart has only toolUse, "
        "toolResult and image members)",
    ),
    (
        "bedrock_padding_field",
        "info",
        "every Bedrock event carries a `p` member of padding (random letters, so that an "
        "event's size does not tell its content); strict decoders that reject unknown members "
        "fail on it",
        "SDK: Bedrock ConverseStream and InvokeModelWithResponseStream responses",
    ),
    (
        "bedrock_orphan_tool_input",
        "warn",
        "a `toolUse` input piece for a content block that no `contentBlockStart` opened as a "
        "tool use; it is ignored",
        "SDK: botocore's bedrock-runtime service model (ToolUseBlockDelta)",
    ),
    (
        "bedrock_unknown_delta",
        "warn",
        "a `contentBlockDelta` with none of the members this converter reads (text, toolUse, "
        "reasoningContent, citation)",
        "SDK: botocore's bedrock-runtime service model (ContentBlockDelta)",
    ),
    (
        "bedrock_metadata_before_stop",
        "info",
        "the `metadata` event (usage, metrics) came before `messageStop`; Bedrock sends it last",
        "SDK: botocore's bedrock-runtime service model (ConverseStreamOutput)",
    ),
    (
        "bedrock_invoke_unknown_model_events",
        "warn",
        "InvokeModelWithResponseStream chunks hold events of a model API no converter reads; "
        "nothing in them is shown (use ConverseStream, or a converter for that model)",
        "SDK: botocore's bedrock-runtime service model (PayloadPart)",
    ),
    (
        "cohere_error_in_message_end",
        "warn",
        "Cohere reported a failure in `message-end` (`delta.error`, finish reason `ERROR`) "
        "after a 200 status; clients that read only the finish reason lose the message",
        "SDK: cohere-ai/cohere-python (ChatMessageEndEventDelta.error)",
    ),
    (
        "cohere_orphan_tool_call_delta",
        "warn",
        "a `tool-call-delta` for an index no `tool-call-start` opened; it is ignored",
        "SDK: cohere-ai/cohere-python (ToolCallDeltaV2ChatStreamResponse)",
    ),
    (
        "interactions_content_events",
        "info",
        "the Interactions stream uses the older content events (`content.start/delta/stop`, "
        "`interaction.start` / `interaction.complete`), which the API sends when steps are "
        "disabled; clients written for the step events (`step.*`) read nothing from it",
        "SDK: googleapis/python-genai (ContentStart, ContentDelta; InteractionSSEEvent)",
    ),
    (
        "interactions_error_event",
        "warn",
        "an Interactions `error` event mid-stream after a 200 status; what came before it may be "
        "only part of the answer",
        "SDK: googleapis/python-genai (ErrorEvent)",
    ),
    (
        "interactions_orphan_arguments_delta",
        "warn",
        "an `arguments_delta` for a step index that is not an open `function_call` step; the "
        "piece is ignored",
        "SDK: googleapis/python-genai (ArgumentsDelta, StepDelta.index)",
    ),
    (
        "interactions_orphan_result",
        "warn",
        "a built-in tool's result step whose `call_id` no call step had; it is kept in the text "
        "segment's `tool_results`",
        "SDK: googleapis/python-genai (GoogleSearchResultStep.call_id)",
    ),
    (
        "interactions_step_not_stopped",
        "warn",
        "the interaction completed while a function or built-in call step had no `step.stop` "
        "(or result); the call is closed at the end",
        "SDK: googleapis/python-genai (StepStop)",
    ),
    (
        "completions_extra_choices",
        "warn",
        "a legacy `text_completion` stream interleaves several choices (`n` > 1); only choice "
        "0 is read as the answer, the others are kept in the text segment's metadata",
        "SDK: openai/openai-python (Completion.choices)",
    ),
    # -- J. OpenAI Realtime and WebSocket sessions -------------------------------------------
    (
        "realtime_beta_event_names",
        "warn",
        "the session speaks the retired beta event names (`response.text.delta`, "
        "`response.audio.delta`, `response.audio_transcript.delta`, `conversation.item.created`) "
        "instead of the GA ones (`response.output_text.delta`...); read as their GA names, but "
        "a client written for one shape reads nothing from the other",
        "SDK: openai/openai-python (types/realtime: RealtimeServerEvent); the beta was retired "
        "2026-05-07",
    ),
    (
        "realtime_error_not_fatal",
        "warn",
        "an `error` event while a response streams, and the session goes on (no close follows): "
        "a client that takes every error for the end of the session stops reading too early",
        "SDK: openai/openai-python (RealtimeErrorEvent: most errors are recoverable)",
    ),
    (
        "realtime_rate_limits_after_done",
        "info",
        "`rate_limits.updated` arrives after `response.done`: a client that stops reading at "
        "`response.done` misses it, one that waits for it after every response may wait for ever",
        "SDK: openai/openai-python (RateLimitsUpdatedEvent)",
    ),
    (
        "realtime_close_request_shape",
        "error",
        "the server closed the session with code 4000 (the request's shape; the reason "
        "`<type>.<code>`, e.g. `invalid_request_error.beta_api_shape_disabled`)",
        "SDK: openai/openai-python (realtime connection: close codes)",
    ),
    (
        "realtime_close_auth",
        "error",
        "the server closed the session with code 3000 (authentication; the reason `<type>.<code>`)",
        "SDK: openai/openai-python (realtime connection: close codes)",
    ),
    (
        "ws_dropped_mid_response",
        "error",
        "the WebSocket connection ended without a close frame while a response was streaming: "
        "the response was cut off",
        "SDK: openai/openai-python (realtime connection, built on websockets: "
        "ConnectionClosedError, code 1006 of RFC 6455)",
    ),
    (
        "ws_long_pause_pings",
        "warn",
        "a long pause mid-response with only keep-alive pings on the connection: a client with "
        "a read timeout shorter than the pause gives up on a session that is alive",
        "SDK: openai/openai-python (realtime connection, built on websockets: keepalive "
        "pings, RFC 6455 5.5.2); the Realtime server pings about every 20 s",
    ),
    # -- Tool calls in any API (the shared tracker and the handlers) --------------------------
    (
        "tool_id_changed",
        "error",
        "a tool call changed its id mid-stream; the tool result cannot be paired with the call",
        "Q-RA-1; vllm-project/vllm PR#47916",
    ),
    (
        "tool_name_changed",
        "error",
        "a tool call changed its name mid-stream; the first name is kept",
        "Q-TC-3; langchain-ai/langchainjs#8276",
    ),
    (
        "tool_id_reused",
        "error",
        "two tool calls share one id; the second gets a `#2` suffix, clients keyed by id merge "
        "them",
        "Q-TC-2; openclaw/openclaw#84730",
    ),
    (
        "args_after_complete",
        "warn",
        "argument fragments arrived for a call already closed; they are ignored",
        "Q-TC-8; openai/openai-node PR#2658",
    ),
    (
        "tool_args_duplicate_key",
        "warn",
        "a tool call's arguments hold the same key twice; JSON parsers keep the last value",
        "Q-VL-1; openvinotoolkit/model_server#3838",
    ),
    (
        "tool_calls_ignored_by_parser",
        "warn",
        "the stream has API tool calls but the chosen text parser reads only text; replay with "
        "`--parser api_tool_call` to see them",
        "Q-VL-1; vllm-project/vllm PR#32506",
    ),
    # -- MCP over Streamable HTTP: one exchange of a session --------------------------------
    (
        "mcp_response_on_get_stream",
        "error",
        "a JSON-RPC response arrived on the GET stream, which carries only server-initiated "
        "messages unless it resumes a request's stream; a client waiting on the request's own "
        "stream never sees it and times out",
        f"{_MCP_2025}, Listening for Messages from the Server; r33drichards/mcp-js#185",
    ),
    (
        "mcp_priming_event_without_id",
        "warn",
        "an SSE event with empty data and no `id` (a priming event without its cursor): the "
        "client cannot resume the stream with `Last-Event-ID`, and clients that JSON-decode "
        "every event fail on the empty data",
        f"{_MCP_2025}, Sending Messages to the Server; modelcontextprotocol/typescript-sdk "
        "PR#1184, koala73/worldmonitor PR#4781",
    ),
    (
        "mcp_stream_ended_before_response",
        "warn",
        "a request's SSE stream ended before the response to it, without an event id to resume "
        "from; the client waits for an answer that never comes, or reports the call as failed",
        f"{_MCP_2025}, Resumability and Redelivery; argoproj-labs/mcp-for-argocd PR#153",
    ),
    (
        "mcp_response_id_unknown",
        "error",
        "a response whose id answers no request the client sent on this exchange; SDK clients "
        "drop it, and the request it was meant for never completes",
        f"{_MCP_2025}, Sending Messages to the Server (JSON-RPC 2.0, Response object); "
        "Kuadrant/mcp-gateway PR#1514",
    ),
    (
        "mcp_header_body_mismatch",
        "error",
        "a 2026-07-28 request whose `Mcp-Method`, `Mcp-Name` or `MCP-Protocol-Version` header "
        "disagrees with its body; servers must refuse it (400, `HeaderMismatch` -32020) and "
        "intermediaries that route on the header act on another call",
        f"{_MCP_2026}, Standard Request Headers; kerlenton/mcpsnoop#93, laravel/mcp PR#286",
    ),
    (
        "mcp_notification_after_response",
        "warn",
        "a notification arrived on a request's SSE stream after the response to it; clients "
        "close the stream at the response and lose it",
        f"{_MCP_2025}, Sending Messages to the Server; mastra-ai/mastra PR#14782",
    ),
    (
        "mcp_session_id_missing",
        "error",
        "a request of a session went without its `MCP-Session-Id`, or its answer without the "
        "one the request sent; servers answer such a request 400 and the session is lost",
        f"{_MCP_2025}, Session Management; modelcontextprotocol/csharp-sdk#1759",
    ),
    (
        "mcp_session_id_changed",
        "error",
        "a response names another `MCP-Session-Id` than the one its request sent; a client "
        "that keeps either one sends requests the server no longer knows",
        f"{_MCP_2025}, Session Management; NousResearch/hermes-agent PR#91689",
    ),
)

# -- I. Faults of the model's output (any API) ----------------------------------------------------
_MODEL_FAULTS: tuple[tuple[str, ...], ...] = (
    (
        "model_args_invalid_json",
        "error",
        "a tool call was closed with arguments that are not valid JSON (cut mid-string); clients "
        "that `json.loads` them raise, lenient ones run the tool with half its input",
        "Q-SSE-7; agentic-os-org/ANOLISA PR#2209, anomalyco/opencode#39968",
    ),
    (
        "model_args_empty",
        "warn",
        'a tool call was closed with an empty arguments string (not `"{}"`); `json.loads("")` '
        "raises",
        "Q-TC-9; pipecat-ai/pipecat PR#409, vllm-project/vllm#11392",
    ),
    (
        "model_tool_not_offered",
        "error",
        "the model called a tool the request did not offer; agent loops look the name up and "
        "crash or answer with an error the model did not expect",
        "Q-GM-4; mozilla-ai/any-llm PR#1202",
    ),
    (
        "model_stream_cut_mid_call",
        "error",
        "the stream ended in the middle of a tool call, without a finish reason; clients that "
        "run whatever arrived execute a call with cut arguments",
        "Q-SSE-7; earendil-works/pi#6226, xiaoyu-work/claw-os#11",
    ),
)

# -- J. Reads and framing: how the bytes arrived ---------------------------------------------------
_WIRE: tuple[tuple[str, ...], ...] = (
    (
        "reads_utf8_split",
        "info",
        "a UTF-8 character was split across two network reads; clients that decode each read on "
        "its own get replacement characters or a UnicodeDecodeError",
        "Q-SSE-6; sourcegraph PR#50718, ollama/ollama-js#255",
    ),
    (
        "reads_crlf_split",
        "info",
        "a CRLF line end was split across two network reads; clients that split each read on "
        "line ends see an extra blank line and end an event early",
        "Q-SSE-3; rexxars/eventsource-parser#17, ax-llm/ax PR#622",
    ),
    (
        "reads_one_event_each",
        "info",
        "every network read held exactly one whole event; a client that parses each read as "
        "one event works here and breaks when the provider cuts differently",
        "Q-SSE-4; SamSaffron/term-llm PR#454, Growth-Circle/cadis#2053",
    ),
    (
        "reads_single",
        "info",
        "the whole stream arrived in one network read (a buffering proxy); clients that expect "
        "one event per read see only the first",
        "Q-SSE-3; hey-api/hey-api#3054, 1jehuang/jcode#565",
    ),
    (
        "gemini_json_array",
        "info",
        "a Gemini stream framed as one JSON array (`streamGenerateContent` without `alt=sse`); "
        "SSE clients find no events",
        "Q-SSE-9; simonw/llm-gemini#97, symfony/ai PR#1988",
    ),
)

# -- K. Sessions: a server's behaviour over several exchanges (MCP), applied to a tape -----------
# Legitimate behaviour a client must handle (hence info); conform --mutate and mutate apply them
# to a recorded session (the session_faults part of the API's package).
_SESSION: tuple[tuple[str, ...], ...] = (
    (
        "mcp_session_expired",
        "info",
        "the server ended the session in the middle of a run: a request with its "
        "`MCP-Session-Id` is answered 404, and the client must start a new session with a "
        "fresh `initialize` and send the request again",
        f"{_MCP_2025}, Session Management; modelcontextprotocol/python-sdk#1676, "
        "DAWNCR0W/affine-mcp-server#301",
    ),
    (
        "mcp_stream_dropped_after_priming",
        "info",
        "a request's SSE stream closed right after its priming event (an event id and a "
        "`retry`); the client must reconnect with a GET carrying `Last-Event-ID` to get the rest "
        "and the response",
        f"{_MCP_2025}, Resumability and Redelivery; modelcontextprotocol/python-sdk PR#1719",
    ),
    (
        "mcp_messages_before_response",
        "info",
        "progress and log notifications and a server request (`ping`) arrive on a request's "
        "stream before its response; the client must answer the server's request, which the "
        "server waits for",
        f"{_MCP_2025}, Sending Messages to the Server; micronaut-projects/micronaut-mcp#76",
    ),
    (
        "mcp_json_instead_of_sse",
        "info",
        "what the server answered with an SSE stream comes as one JSON body (its notifications "
        "dropped), and what it answered with JSON comes as an SSE stream; a client must read "
        "both for any request",
        f"{_MCP_2025}, Sending Messages to the Server; argoproj-labs/mcp-for-argocd PR#153",
    ),
    (
        "mcp_stateless_server",
        "info",
        "the server speaks only 2026-07-28: no `initialize` handshake and no sessions "
        "(`server/discover`, `_meta` on every request, GET and DELETE answered 405); the client "
        "must negotiate the stateless generation",
        f"{_MCP_2026}; modelcontextprotocol/modelcontextprotocol PR#2575",
    ),
    (
        "mcp_input_required",
        "info",
        "a tool call is answered with `resultType: input_required` and an elicitation in "
        "`inputRequests`; the client must ask, then send the call again with `inputResponses` "
        "and the `requestState`",
        f"{_MCP_2026}, Multi Round-Trip Requests; thunder-id/thunderid PR#5441",
    ),
)

_KIND_OF = {"tool_id_reused": QuirkKind.MODEL}  # an entry above that is a fault of the model's

_TABLES = (
    (_ENTRIES, QuirkKind.PROVIDER),
    (_MODEL_FAULTS, QuirkKind.MODEL),
    (_WIRE, QuirkKind.WIRE),
    (_SESSION, QuirkKind.SESSION),
)


def _quirk_id(qid: str) -> QuirkId:
    try:
        return QuirkId(qid)
    except ValueError:
        raise LookupError(
            f"{qid!r} is not in core/model/quirk_ids.py, which is stale: "
            "python -m streamtool.core.model.quirks --ids > core/model/quirk_ids.py"
        ) from None


def _catalogue() -> dict[QuirkId, QuirkInfo]:
    out: dict[QuirkId, QuirkInfo] = {}
    for entries, kind in _TABLES:
        for qid, severity, explanation, reference in entries:
            key = _quirk_id(qid)
            out[key] = QuirkInfo(
                key, Severity(severity), explanation, reference, _KIND_OF.get(qid, kind)
            )
    return out


def quirk_ids_source() -> str:
    """The text of ``core/model/quirk_ids.py``: the ``QuirkId`` class, a member per id, in order.

    Read from the table's text, not from :data:`CATALOGUE`, so that it can be written while the
    class lacks a new entry's id."""
    lines = [
        '"""The ids of the quirk catalogue. The code reports a quirk by a member of',
        "``QuirkId`` (``QuirkId.EOF_NO_DONE``), so that a typo is an error (mypy's, or an",
        "AttributeError), never an id the catalogue does not know.",
        "",
        "Generated from the catalogue, :mod:`streamtool.core.model.quirks`",
        "(``python -m streamtool.core.model.quirks --ids > core/model/quirk_ids.py``); a test",
        "keeps the two equal. A module of its own, so that the code that reports quirks does not",
        "load the catalogue's texts.",
        "",
        "A member is its id: a ``str`` (it compares, hashes and serializes as the text) of a",
        "closed set. ``QuirkId(text)`` is the member of that id, and raises ``ValueError`` for",
        "any other text; ``QuirkId.members()`` lists them in the catalogue's order. It is not an",
        "``enum.Enum``: every replay imports this module, and building an enum of the catalogue's",
        "ids cost some 78,000 instructions a member at every start (10 million for 129 ids, 2% of",
        "a small replay's whole run); the members here are made from the annotations, once.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import ClassVar",
        "",
        "",
        "class QuirkId(str):",
        '    """A quirk id of the catalogue (see the module\'s docstring)."""',
        "",
        "    __slots__ = ()",
        "",
    ]
    lines += [f"    {e[0].upper()}: ClassVar[QuirkId]" for entries, _ in _TABLES for e in entries]
    lines += [
        "",
        "    def __new__(cls, text: str) -> QuirkId:",
        "        member = _MEMBERS.get(text)",
        "        if member is None:",
        '            raise ValueError(f"{text!r} is not a quirk id of the catalogue")',
        "        return member",
        "",
        "    @property",
        "    def value(self) -> str:",
        '        """The id as a plain ``str`` (as an enum member\'s ``value``)."""',
        "        return str.__str__(self)",
        "",
        "    @classmethod",
        "    def members(cls) -> tuple[QuirkId, ...]:",
        '        """Every id, in the catalogue\'s order."""',
        "        return tuple(_MEMBERS.values())",
        "",
        "",
        "_MEMBERS: dict[str, QuirkId] = {}",
        "for _name in QuirkId.__annotations__:",
        "    _MEMBERS[_name.lower()] = _member = str.__new__(QuirkId, _name.lower())",
        "    setattr(QuirkId, _name, _member)",
        "del _name, _member",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__" and sys.argv[1:] == ["--ids"]:  # pragma: no cover
    # the generator of quirk_ids.py runs before the catalogue is built from the class it writes
    sys.stdout.write(quirk_ids_source())
    sys.exit(0)

CATALOGUE: dict[QuirkId, QuirkInfo] = _catalogue()
"""Every quirk id, in the catalogue's order."""


def entry(quirk_id: str) -> QuirkInfo | None:
    """The catalogue entry of ``quirk_id`` (a member or its text, as a user gives it), or None."""
    return CATALOGUE.get(quirk_id)  # type: ignore[call-overload]  # a QuirkId is its text


def lookup(quirk_id: str) -> QuirkInfo:
    """The catalogue entry of ``quirk_id``; an id the catalogue lacks is a ``warn`` of its own."""
    info = entry(quirk_id)
    if info is not None:
        return info
    return QuirkInfo(quirk_id, Severity.WARN, "not in this version's quirk catalogue", "")


def severity_rank(severity: str) -> int:
    """0 for ``error``, 1 for ``warn``, 2 for ``info``."""
    return SEVERITIES.index(Severity(severity))


def catalogue_markdown() -> str:
    """The text of ``docs/quirks.md``: one heading (anchor) per id."""
    lines = [
        "# Quirk catalogue",
        "",
        "Every provider behaviour streamtool reports as a quirk (`replay --format json`'s",
        "`quirks`, `inspect`'s lint, golden files), with its severity, what it means and a",
        "reference. Severities: **error** a client will likely get wrong; **warn** a client may",
        "get wrong, or streamtool repaired something; **info** a variation worth knowing about.",
        "References name the section of the provider-quirks catalogue (`Q-SSE-1`...) and public",
        "issue threads (`owner/repo#N`) that show the behaviour; MCP's entries name the section of",
        "its specification (`Spec: MCP 2025-11-25 ...`) instead of the catalogue's.",
        "",
        "The last entries (`mcp_session_expired` ...) are not seen in one stream: they are a",
        "server's behaviour over a session's exchanges, which `mutate` and `conform --mutate`",
        "apply to a recorded MCP session (a tape).",
        "",
        "An **error** or **warn** entry is a departure from the contract of the API it is reported",
        "for, never the contract itself: Gemini's `STOP` after function calls and its function",
        "calls without `id` are what Gemini documents, so they are not quirks. What an API",
        "documents but clients often miss (a usage chunk with empty `choices`, SSE comments) is at",
        "most **info**.",
        "",
        "This file is generated from `core/model/quirks.py`",
        "(`python -m streamtool.core.model.quirks > docs/quirks.md`); a test keeps them equal.",
        "",
        "| id | severity |",
        "|---|---|",
    ]
    for info in CATALOGUE.values():
        lines.append(f"| [`{info.id}`](#{info.anchor}) | {info.severity} |")
    for info in CATALOGUE.values():
        lines += [
            "",
            f"## {info.id}",
            "",
            f"**{info.severity}**: {info.explanation}.",
            "",
            f"Reference: {info.reference}.",
        ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # pragma: no cover - the generator of docs/quirks.md
    if sys.argv[1:]:
        sys.exit("usage: python -m streamtool.core.model.quirks [--ids]")
    else:
        sys.stdout.write(catalogue_markdown())
