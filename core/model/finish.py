"""The normalized finish class: how a response ended, whatever the provider called it. Sans-IO.

Providers name the same ending differently (``tool_calls`` / ``tool_use`` / a Responses
``completed`` whose output holds function calls / Gemini ``STOP`` after function calls; ``length``
/ ``max_tokens`` / ``MAX_TOKENS`` / ``max_output_tokens``...). :func:`finish_class` maps a raw
finish reason, together with what the stream held, onto one of :data:`CLASSES`:

- ``tool_calls``: the client must act (run the calls, answer an approval request). A reason of the
  ``stop`` family counts as ``tool_calls`` when the stream holds calls the client must run
  (Responses ``completed``, Gemini ``STOP``, Chat Completions servers that say ``stop``), and so
  does no reason at all when the stream ended cleanly (no error) with such calls; calls the
  provider ran itself (``server_side``) do not count;
- ``stop``: a natural end (``stop``, ``end_turn``, ``stop_sequence``, ``completed``, ``STOP``,
  Anthropic ``pause_turn``, which ends the turn while a server tool keeps working);
- ``length``: a token or context limit;
- ``content_filter``: a safety or policy filter stopped the output;
- ``refusal``: the model refused (Anthropic ``refusal``; a ``stop`` ending whose text is a refusal);
- ``error``: the provider reported a failure (Responses ``failed``, ``error``,
  ``MALFORMED_FUNCTION_CALL``), or the stream has no finish reason and holds errors;
- ``cancelled``: the response was cancelled (Responses ``cancelled``, vLLM ``abort``);
- ``unknown``: no finish reason, no client calls and nothing wrong, or a reason this table does
  not know.

The transcript, ``diff`` and the OpenAI emitter all use this one mapping.
"""

from __future__ import annotations

CLASSES = (
    "tool_calls",
    "stop",
    "length",
    "content_filter",
    "refusal",
    "error",
    "cancelled",
    "unknown",
)

# raw finish reasons (lower-cased) -> class
REASONS: dict[str, str] = {
    # stop family
    "stop": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "completed": "stop",
    "complete": "stop",
    "eos": "stop",
    "end": "stop",
    # the client must act
    "tool_calls": "tool_calls",
    "tool_use": "tool_calls",
    "function_call": "tool_calls",
    "tool_call": "tool_calls",  # Cohere TOOL_CALL
    "requires_action": "tool_calls",  # Gemini Interactions: function calls to run
    # limits
    "length": "length",
    "max_tokens": "length",
    "max_output_tokens": "length",
    "max_prompt_tokens": "length",
    "model_length": "length",
    "model_context_window_exceeded": "length",
    "incomplete": "length",
    # filters
    "content_filter": "content_filter",
    "safety": "content_filter",
    "recitation": "content_filter",
    "prohibited_content": "content_filter",
    "blocklist": "content_filter",
    "spii": "content_filter",
    "image_safety": "content_filter",
    "image_prohibited_content": "content_filter",
    "image_recitation": "content_filter",
    "guardrail_intervened": "content_filter",  # Bedrock
    "content_filtered": "content_filter",  # Bedrock
    # refusals
    "refusal": "refusal",
    # failures
    "error": "error",
    "failed": "error",
    "malformed_function_call": "error",
    "unexpected_tool_call": "error",
    "too_many_tool_calls": "error",
    "missing_thought_signature": "error",
    # cancellations
    "cancelled": "cancelled",
    "canceled": "cancelled",
    "abort": "cancelled",
}

# the class as an OpenAI chat-completions finish_reason (what the emitter sends)
OPENAI_CHAT_REASONS: dict[str, str] = {
    "tool_calls": "tool_calls",
    "stop": "stop",
    "length": "length",
    "content_filter": "content_filter",
    "refusal": "stop",  # the refusal itself is sent as refusal deltas
    "error": "error",
}


def finish_class(
    reason: str | None,
    *,
    client_calls: bool = False,
    refusal: bool = False,
    errors: bool = False,
) -> str:
    """The class of a raw finish ``reason`` (see the module docstring).

    ``client_calls``: the stream holds tool calls the client must run; ``refusal``: its text is a
    refusal; ``errors``: it holds errors (used only when there is no finish reason).
    """
    if reason is None or reason == "":
        if errors:
            return "error"
        # the stream ended cleanly ([DONE], message_stop) with complete calls but named no
        # reason (kimi-k2 on some hosts; an Anthropic programmatic tool call handed to the
        # client): the client's next step is to run them, so it is told so
        return "tool_calls" if client_calls else "unknown"
    cls = REASONS.get(reason.lower(), "unknown")
    if cls == "stop":
        if client_calls:
            return "tool_calls"
        if refusal:
            return "refusal"
    return cls
