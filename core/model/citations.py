"""Citations, normalized across providers: the one shape every API's citations map onto. Sans-IO.

Every provider's way of saying where a text came from maps onto one shape: a dict with the keys
that apply among ``url``, ``title``, ``file_id``, ``start``, ``end`` (character offsets in the
text segment, when the provider gives them) and ``cited_text``. Converters put the list of a text
segment's citations in its ``citations`` metadata; the summary lists them all, each with the id
of its ``segment``. Each API's own shapes are read in its package (``citations.py``: Anthropic's
citation blocks, OpenAI's annotations and Perplexity's or xAI's search results, Gemini's
grounding metadata).
"""

from __future__ import annotations

from typing import Any

KEYS = ("url", "title", "file_id", "start", "end", "cited_text")


def clean(values: dict[str, Any]) -> dict[str, Any] | None:
    """The normalized citation of ``values`` (its keys among :data:`KEYS`, with values of
    the right type), or None when nothing is left."""
    out = {}
    for key in KEYS:
        value = values.get(key)
        if value is None or value == "":
            continue
        if key in ("start", "end"):
            if type(value) is not int:
                continue
        elif not isinstance(value, str):
            continue
        out[key] = value
    return out or None
