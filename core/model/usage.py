"""Token usage, normalized across providers.

Every provider's usage object maps onto the same keys: ``input_tokens``, ``output_tokens``,
``total_tokens``, ``reasoning_tokens``, ``cached_input_tokens``, ``cache_creation_input_tokens``.
Only keys the provider reported appear.

``output_tokens`` has one meaning for every provider: every generated token, reasoning included
(``reasoning_tokens`` says how many of them were reasoning). OpenAI and Anthropic count it that
way; Gemini's ``candidatesTokenCount`` leaves the thoughts out (``thoughtsTokenCount`` is added
to it), and so do the Interactions API's ``total_output_tokens`` (``total_thought_tokens`` is
added) and xAI's ``completion_tokens`` (seen by its ``total_tokens``, which is then
``prompt + completion + reasoning``: the reasoning is added).

Usage objects that providers repeat are cumulative: callers keep the latest value per key
(:func:`merge_latest`), never a sum.
"""

from __future__ import annotations

from typing import Any

_DIRECT = {
    # OpenAI Chat Completions and compatible servers
    "prompt_tokens": "input_tokens",
    "completion_tokens": "output_tokens",
    "total_tokens": "total_tokens",
    "prompt_cache_hit_tokens": "cached_input_tokens",  # DeepSeek
    # Anthropic Messages and OpenAI Responses
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "cache_read_input_tokens": "cached_input_tokens",
    "cache_creation_input_tokens": "cache_creation_input_tokens",
    # Gemini
    "promptTokenCount": "input_tokens",
    "candidatesTokenCount": "output_tokens",
    "totalTokenCount": "total_tokens",
    "thoughtsTokenCount": "reasoning_tokens",
    "cachedContentTokenCount": "cached_input_tokens",
    # Gemini Interactions
    "total_input_tokens": "input_tokens",
    "total_output_tokens": "output_tokens",
    "total_thought_tokens": "reasoning_tokens",
    "total_cached_tokens": "cached_input_tokens",
}
_NESTED = {
    "prompt_tokens_details": {"cached_tokens": "cached_input_tokens"},
    "completion_tokens_details": {"reasoning_tokens": "reasoning_tokens"},
    "input_tokens_details": {"cached_tokens": "cached_input_tokens"},
    "output_tokens_details": {
        "reasoning_tokens": "reasoning_tokens",
        "thinking_tokens": "reasoning_tokens",
    },
}


def normalize_usage(raw: Any) -> dict[str, int] | None:
    """Map one provider usage object onto the normalized keys (``None`` if nothing usable)."""
    if not isinstance(raw, dict):
        return None
    out: dict[str, int] = {}
    for key, value in raw.items():
        target = _DIRECT.get(key)
        if target is not None:
            if type(value) is int:
                out.setdefault(target, value)
            continue
        nested = _NESTED.get(key)
        if nested is not None and isinstance(value, dict):
            for sub, target in nested.items():
                sub_value = value.get(sub)
                if type(sub_value) is int:
                    out.setdefault(target, sub_value)
    reasoning = out.get("reasoning_tokens")
    if reasoning:
        if "thoughtsTokenCount" in raw:
            # Gemini: candidatesTokenCount counts the answer only
            out["output_tokens"] = out.get("output_tokens", 0) + reasoning
        elif "total_thought_tokens" in raw:
            # Gemini Interactions: total_output_tokens counts the answer only
            if "output_tokens" in out:
                out["output_tokens"] += reasoning
        elif (
            "output_tokens" in out
            and "input_tokens" in out
            and out.get("total_tokens") == out["input_tokens"] + out["output_tokens"] + reasoning
        ):
            # completion_tokens without the reasoning (xAI): the total gives it away
            out["output_tokens"] += reasoning
    return out or None


def merge_latest(
    current: dict[str, int] | None, update: dict[str, int] | None
) -> dict[str, int] | None:
    """Cumulative usage: the latest value of each key wins; keys not repeated are kept."""
    if not update:
        return current
    if not current:
        return dict(update)
    merged = dict(current)
    merged.update(update)
    return merged


def add_up(total: dict[str, int], usage: dict[str, int]) -> dict[str, int]:
    """Usage counted per response (a session's responses, each with its own): ``usage`` added
    into the running ``total``, in place; a copy of the total is returned."""
    for key, value in usage.items():
        total[key] = total.get(key, 0) + value
    return dict(total)
