"""OpenAI's annotations (Responses, and Chat Completions' ``annotations``: url, file and container
file citations) and Perplexity's or xAI's search results as normalized citations. Sans-IO."""

from __future__ import annotations

from typing import Any

from ...model.citations import clean


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
        return clean(
            {
                "url": fields.get("url"),
                "title": fields.get("title"),
                "start": fields.get("start_index"),
                "end": fields.get("end_index"),
            }
        )
    if kind == "file_citation":
        return clean(
            {
                "file_id": fields.get("file_id"),
                "title": fields.get("filename"),
                "start": fields.get("index"),
            }
        )
    if kind == "container_file_citation":
        return clean(
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
                cleaned = clean({"url": result.get("url"), "title": result.get("title")})
                if cleaned:
                    out.append(cleaned)
        return out
    if isinstance(urls, list):
        for url in urls:
            if isinstance(url, str) and url:
                out.append({"url": url})
    return out
