"""Gemini's ``groundingMetadata`` (grounding supports with the web chunks they cite) as
normalized citations. Sans-IO."""

from __future__ import annotations

from typing import Any

from ...model.citations import clean


def from_gemini_grounding(metadata: Any) -> list[dict[str, Any]]:
    """Gemini ``groundingMetadata``: supports (text ranges) with the web chunks they cite."""
    if not isinstance(metadata, dict):
        return []
    chunks = metadata.get("groundingChunks")
    sources: list[dict[str, Any] | None] = []
    if isinstance(chunks, list):
        for chunk in chunks:
            source = None
            if isinstance(chunk, dict):
                web = chunk.get("web") or chunk.get("retrievedContext")
                if isinstance(web, dict):
                    source = clean({"url": web.get("uri"), "title": web.get("title")})
            sources.append(source)
    out: list[dict[str, Any]] = []
    supports = metadata.get("groundingSupports")
    if isinstance(supports, list) and supports:
        for support in supports:
            if not isinstance(support, dict):
                continue
            segment = support.get("segment")
            span: dict[str, Any] = {}
            if isinstance(segment, dict):
                span = {
                    "start": segment.get("startIndex", 0 if "endIndex" in segment else None),
                    "end": segment.get("endIndex"),
                    "cited_text": segment.get("text"),
                }
            indices = support.get("groundingChunkIndices")
            for index in indices if isinstance(indices, list) else []:
                if type(index) is int and 0 <= index < len(sources) and sources[index]:
                    cleaned = clean({**sources[index], **span})  # type: ignore[dict-item]
                    if cleaned:
                        out.append(cleaned)
        return out
    return [source for source in sources if source]
