"""Anthropic's citations (``citations_delta`` and a text block's ``citations``: web search result,
search result, character, page and content block locations) as normalized citations. Sans-IO."""

from __future__ import annotations

from typing import Any

from ...model.citations import clean


def from_anthropic(citation: Any) -> dict[str, Any] | None:
    """One Anthropic citation object (``citations_delta.citation``)."""
    if not isinstance(citation, dict):
        return None
    kind = citation.get("type")
    values: dict[str, Any] = {"cited_text": citation.get("cited_text")}
    if kind == "web_search_result_location":
        values.update(url=citation.get("url"), title=citation.get("title"))
    elif kind == "search_result_location":
        values.update(url=citation.get("source"), title=citation.get("title"))
    elif kind == "char_location":
        values.update(
            title=citation.get("document_title"),
            start=citation.get("start_char_index"),
            end=citation.get("end_char_index"),
        )
    else:  # page_location, content_block_location, and types to come
        values.update(title=citation.get("document_title") or citation.get("title"))
        values.setdefault("url", citation.get("url"))
    return clean(values)
