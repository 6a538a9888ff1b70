"""The ids of the quirk catalogue. The code reports a quirk by a member of
``QuirkId`` (``QuirkId.EOF_NO_DONE``), so that a typo is an error (mypy's, or an
AttributeError), never an id the catalogue does not know.

Generated from the catalogue, :mod:`streamtool.core.model.quirks`
(``python -m streamtool.core.model.quirks --ids > core/model/quirk_ids.py``); a test
keeps the two equal. A module of its own, so that the code that reports quirks does not
load the catalogue's texts.

A member is its id: a ``str`` (it compares, hashes and serializes as the text) of a
closed set. ``QuirkId(text)`` is the member of that id, and raises ``ValueError`` for
any other text; ``QuirkId.members()`` lists them in the catalogue's order. It is not an
``enum.Enum``: every replay imports this module, and building an enum of the catalogue's
ids cost some 78,000 instructions a member at every start (10 million for 129 ids, 2% of
a small replay's whole run); the members here are made from the annotations, once.
"""

from __future__ import annotations

from typing import ClassVar


class QuirkId(str):
    """A quirk id of the catalogue (see the module's docstring)."""

    __slots__ = ()

    SSE_COMMENT_KEEPALIVE: ClassVar[QuirkId]
    SSE_EMPTY_EVENT_AFTER_COMMENT: ClassVar[QuirkId]
    SSE_SINGLE_NEWLINE_SEPARATOR: ClassVar[QuirkId]
    EOF_NO_DONE: ClassVar[QuirkId]
    DONE_NO_FINISH_REASON: ClassVar[QuirkId]
    DATA_AFTER_DONE: ClassVar[QuirkId]
    UNKNOWN_EVENT: ClassVar[QuirkId]
    PROVIDER_ERROR: ClassVar[QuirkId]
    OAI_TOOL_INDEX_MISSING: ClassVar[QuirkId]
    OAI_PARALLEL_SAME_INDEX: ClassVar[QuirkId]
    OAI_ID_EVERY_CHUNK: ClassVar[QuirkId]
    OAI_NAME_EVERY_CHUNK: ClassVar[QuirkId]
    OAI_ARGS_CUMULATIVE: ClassVar[QuirkId]
    OAI_ARGS_PLACEHOLDER_THEN_FULL: ClassVar[QuirkId]
    OAI_ARGS_DELTA_PLUS_SUMMARY: ClassVar[QuirkId]
    OAI_ARGS_OBJECT: ClassVar[QuirkId]
    OAI_MULTI_TOOL_USE_PARALLEL: ClassVar[QuirkId]
    OAI_EMPTY_ID: ClassVar[QuirkId]
    OAI_TRAILING_EMPTY_TOOL_STUB: ClassVar[QuirkId]
    LEGACY_FUNCTION_CALL: ClassVar[QuirkId]
    FINISH_STOP_WITH_TOOLS: ClassVar[QuirkId]
    FINISH_EMPTY_STRING: ClassVar[QuirkId]
    FINISH_DOUBLE: ClassVar[QuirkId]
    AZURE_EMPTY_FIRST_CHUNK: ClassVar[QuirkId]
    USAGE_ONLY_CHUNK: ClassVar[QuirkId]
    USAGE_CHUNK_NO_CHOICES_KEY: ClassVar[QuirkId]
    N_CHOICES: ClassVar[QuirkId]
    N_CANDIDATES: ClassVar[QuirkId]
    REASONING_FIELD_REASONING_CONTENT: ClassVar[QuirkId]
    REASONING_FIELD_REASONING: ClassVar[QuirkId]
    REASONING_FIELD_REASONING_DETAILS: ClassVar[QuirkId]
    THINK_TAGS_IN_CONTENT: ClassVar[QuirkId]
    ANTHROPIC_TOOL_INPUT_IN_START: ClassVar[QuirkId]
    ANTHROPIC_CONTENT_IN_MESSAGE_START: ClassVar[QuirkId]
    ANTHROPIC_ORPHAN_INPUT_JSON: ClassVar[QuirkId]
    ANTHROPIC_ORPHAN_BLOCK_STOP: ClassVar[QuirkId]
    ANTHROPIC_ORPHAN_TOOL_RESULT: ClassVar[QuirkId]
    ANTHROPIC_BLOCK_INDEX_REUSED: ClassVar[QuirkId]
    ANTHROPIC_SECOND_MESSAGE_START: ClassVar[QuirkId]
    ANTHROPIC_SIGNATURE_ON_OTHER_BLOCK: ClassVar[QuirkId]
    ANTHROPIC_UNKNOWN_EVENT: ClassVar[QuirkId]
    ANTHROPIC_UNKNOWN_BLOCK: ClassVar[QuirkId]
    ANTHROPIC_UNKNOWN_DELTA: ClassVar[QuirkId]
    GEMINI_EMPTY_FUNCTION_CALL: ClassVar[QuirkId]
    GEMINI_PARTIAL_ARGS: ClassVar[QuirkId]
    GEMINI_ARGS_AND_PARTIAL_ARGS: ClassVar[QuirkId]
    GEMINI_STREAMED_CALL_NOT_CLOSED: ClassVar[QuirkId]
    GEMINI_SIGNATURE_IN_EMPTY_TEXT_PART: ClassVar[QuirkId]
    GEMINI_MALFORMED_FUNCTION_CALL: ClassVar[QuirkId]
    GEMINI_UNEXPECTED_TOOL_CALL: ClassVar[QuirkId]
    GEMINI_BLOCK_REASON: ClassVar[QuirkId]
    GEMINI_UNKNOWN_PART: ClassVar[QuirkId]
    GEMINI_ORPHAN_CODE_RESULT: ClassVar[QuirkId]
    RESPONSES_ARGS_DONE_ONLY: ClassVar[QuirkId]
    RESPONSES_ARGS_SUFFIX_IN_DONE: ClassVar[QuirkId]
    RESPONSES_COMPLETED_ONLY: ClassVar[QuirkId]
    RESPONSES_ITEM_DONE_ONLY: ClassVar[QuirkId]
    RESPONSES_TEXT_DONE_ONLY: ClassVar[QuirkId]
    RESPONSES_TEXT_SUFFIX_IN_DONE: ClassVar[QuirkId]
    RESPONSES_TEXT_DONE_SHORTER: ClassVar[QuirkId]
    TEXT_MISMATCH: ClassVar[QuirkId]
    RESPONSES_DELTA_BEFORE_ITEM: ClassVar[QuirkId]
    RESPONSES_CALL_ID_CHANGED: ClassVar[QuirkId]
    RESPONSES_PARALLEL_WRAPPER: ClassVar[QuirkId]
    RESPONSES_ITEM_ID_ROTATION: ClassVar[QuirkId]
    RESPONSES_PARALLEL_INTERLEAVED: ClassVar[QuirkId]
    RESPONSES_SEQUENCE_GAP: ClassVar[QuirkId]
    RESPONSES_UNKNOWN_EVENT: ClassVar[QuirkId]
    RESPONSES_UNKNOWN_ITEM: ClassVar[QuirkId]
    MISTRAL_CONTENT_ARRAY: ClassVar[QuirkId]
    KIMI_TOKENS_IN_CONTENT: ClassVar[QuirkId]
    KIMI_TOKENS_IN_REASONING: ClassVar[QuirkId]
    KIMI_NATIVE_IDS: ClassVar[QuirkId]
    KIMI_BARE_COUNTER_ID: ClassVar[QuirkId]
    KIMI_ARGS_DOUBLE_ENCODED: ClassVar[QuirkId]
    KIMI_SINGULAR_SECTION_MARKER: ClassVar[QuirkId]
    KIMI_CALL_WITHOUT_SECTION: ClassVar[QuirkId]
    KIMI_CALL_END_MISSING: ClassVar[QuirkId]
    KIMI_SECTION_END_MISSING: ClassVar[QuirkId]
    BEDROCK_TEXT_BLOCK_WITHOUT_START: ClassVar[QuirkId]
    BEDROCK_PADDING_FIELD: ClassVar[QuirkId]
    BEDROCK_ORPHAN_TOOL_INPUT: ClassVar[QuirkId]
    BEDROCK_UNKNOWN_DELTA: ClassVar[QuirkId]
    BEDROCK_METADATA_BEFORE_STOP: ClassVar[QuirkId]
    BEDROCK_INVOKE_UNKNOWN_MODEL_EVENTS: ClassVar[QuirkId]
    COHERE_ERROR_IN_MESSAGE_END: ClassVar[QuirkId]
    COHERE_ORPHAN_TOOL_CALL_DELTA: ClassVar[QuirkId]
    INTERACTIONS_CONTENT_EVENTS: ClassVar[QuirkId]
    INTERACTIONS_ERROR_EVENT: ClassVar[QuirkId]
    INTERACTIONS_ORPHAN_ARGUMENTS_DELTA: ClassVar[QuirkId]
    INTERACTIONS_ORPHAN_RESULT: ClassVar[QuirkId]
    INTERACTIONS_STEP_NOT_STOPPED: ClassVar[QuirkId]
    COMPLETIONS_EXTRA_CHOICES: ClassVar[QuirkId]
    REALTIME_BETA_EVENT_NAMES: ClassVar[QuirkId]
    REALTIME_ERROR_NOT_FATAL: ClassVar[QuirkId]
    REALTIME_RATE_LIMITS_AFTER_DONE: ClassVar[QuirkId]
    REALTIME_CLOSE_REQUEST_SHAPE: ClassVar[QuirkId]
    REALTIME_CLOSE_AUTH: ClassVar[QuirkId]
    WS_DROPPED_MID_RESPONSE: ClassVar[QuirkId]
    WS_LONG_PAUSE_PINGS: ClassVar[QuirkId]
    TOOL_ID_CHANGED: ClassVar[QuirkId]
    TOOL_NAME_CHANGED: ClassVar[QuirkId]
    TOOL_ID_REUSED: ClassVar[QuirkId]
    ARGS_AFTER_COMPLETE: ClassVar[QuirkId]
    TOOL_ARGS_DUPLICATE_KEY: ClassVar[QuirkId]
    TOOL_CALLS_IGNORED_BY_PARSER: ClassVar[QuirkId]
    MCP_RESPONSE_ON_GET_STREAM: ClassVar[QuirkId]
    MCP_PRIMING_EVENT_WITHOUT_ID: ClassVar[QuirkId]
    MCP_STREAM_ENDED_BEFORE_RESPONSE: ClassVar[QuirkId]
    MCP_RESPONSE_ID_UNKNOWN: ClassVar[QuirkId]
    MCP_HEADER_BODY_MISMATCH: ClassVar[QuirkId]
    MCP_NOTIFICATION_AFTER_RESPONSE: ClassVar[QuirkId]
    MCP_SESSION_ID_MISSING: ClassVar[QuirkId]
    MCP_SESSION_ID_CHANGED: ClassVar[QuirkId]
    MODEL_ARGS_INVALID_JSON: ClassVar[QuirkId]
    MODEL_ARGS_EMPTY: ClassVar[QuirkId]
    MODEL_TOOL_NOT_OFFERED: ClassVar[QuirkId]
    MODEL_STREAM_CUT_MID_CALL: ClassVar[QuirkId]
    READS_UTF8_SPLIT: ClassVar[QuirkId]
    READS_CRLF_SPLIT: ClassVar[QuirkId]
    READS_ONE_EVENT_EACH: ClassVar[QuirkId]
    READS_SINGLE: ClassVar[QuirkId]
    GEMINI_JSON_ARRAY: ClassVar[QuirkId]
    MCP_SESSION_EXPIRED: ClassVar[QuirkId]
    MCP_STREAM_DROPPED_AFTER_PRIMING: ClassVar[QuirkId]
    MCP_MESSAGES_BEFORE_RESPONSE: ClassVar[QuirkId]
    MCP_JSON_INSTEAD_OF_SSE: ClassVar[QuirkId]
    MCP_STATELESS_SERVER: ClassVar[QuirkId]
    MCP_INPUT_REQUIRED: ClassVar[QuirkId]

    def __new__(cls, text: str) -> QuirkId:
        member = _MEMBERS.get(text)
        if member is None:
            raise ValueError(f"{text!r} is not a quirk id of the catalogue")
        return member

    @property
    def value(self) -> str:
        """The id as a plain ``str`` (as an enum member's ``value``)."""
        return str.__str__(self)

    @classmethod
    def members(cls) -> tuple[QuirkId, ...]:
        """Every id, in the catalogue's order."""
        return tuple(_MEMBERS.values())


_MEMBERS: dict[str, QuirkId] = {}
for _name in QuirkId.__annotations__:
    _MEMBERS[_name.lower()] = _member = str.__new__(QuirkId, _name.lower())
    setattr(QuirkId, _name, _member)
del _name, _member
