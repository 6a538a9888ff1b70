"""Citations, normalized across providers. Sans-IO.

Every provider's way of saying where a text came from maps onto one shape: a dict with the keys
that apply among ``url``, ``title``, ``file_id``, ``start``, ``end`` (character offsets in the
text segment, when the provider gives them) and ``cited_text``. Converters put the list of a text
segment's citations in its ``citations`` metadata; the summary lists them all, each with the id
of its ``segment``.

- Anthropic ``citations_delta`` / a text block's ``citations``: ``web_search_result_location``
  (url, title, cited text), ``search_result_location`` (source as url), ``char_location`` (document
  title, character range), ``page_location`` and ``content_block_location`` (document title,
  cited text);
- OpenAI Responses annotations and Chat Completions ``annotations``: ``url_citation`` (url, title,
  range), ``file_citation`` (file id, file name as title, index), ``container_file_citation``;
- Perplexity ``search_results`` (url, title) or, without them, ``citations`` (urls), and xAI
  ``citations`` (urls);
- Gemini ``groundingMetadata``: each grounding support's text range with each web chunk it cites
  (url, title), or the chunks alone when no supports are given.
"""

from __future__ import annotations

from typing import Any

KEYS = ("url", "title", "file_id", "start", "end", "cited_text")


def _clean(values: dict[str, Any]) -> dict[str, Any] | None:
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
    return _clean(values)


def from_openai_annotation(annotation: Any) -> dict[str, Any] | None:
    """One Responses annotation, or one Chat Completions ``annotations`` entry (whose fields are
    nested under ``url_citation``). Annotations that are not citations (``file_path``) give
    ``None``."""
    if not isinstance(annotation, dict):
        return None
    kind = annotation.get("type")
    nested = annotation.get(kind) if isinstance(kind, str) else None
    fields: dict[str, Any] = nested if isinstance(nested, dict) else annotation
    if kind == "url_citation":
        return _clean(
            {
                "url": fields.get("url"),
                "title": fields.get("title"),
                "start": fields.get("start_index"),
                "end": fields.get("end_index"),
            }
        )
    if kind == "file_citation":
        return _clean(
            {
                "file_id": fields.get("file_id"),
                "title": fields.get("filename"),
                "start": fields.get("index"),
            }
        )
    if kind == "container_file_citation":
        return _clean(
            {
                "file_id": fields.get("file_id"),
                "title": fields.get("filename"),
                "start": fields.get("start_index"),
                "end": fields.get("end_index"),
            }
        )
    return None


def from_search_results(results: Any, urls: Any) -> list[dict[str, Any]]:
    """Perplexity's ``search_results`` (url, title), else a ``citations`` list of urls (Perplexity,
    xAI)."""
    out: list[dict[str, Any]] = []
    if isinstance(results, list) and results:
        for result in results:
            if isinstance(result, dict):
                cleaned = _clean({"url": result.get("url"), "title": result.get("title")})
                if cleaned:
                    out.append(cleaned)
        return out
    if isinstance(urls, list):
        for url in urls:
            if isinstance(url, str) and url:
                out.append({"url": url})
    return out


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
                    source = _clean({"url": web.get("uri"), "title": web.get("title")})
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
                    cleaned = _clean({**sources[index], **span})  # type: ignore[dict-item]
                    if cleaned:
                        out.append(cleaned)
        return out
    return [source for source in sources if source]
