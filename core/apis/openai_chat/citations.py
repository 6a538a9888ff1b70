"""OpenAI's annotations (Responses, and Chat Completions' ``annotations``: url, file and container
file citations) and Perplexity's or xAI's search results as normalized citations. Sans-IO."""

from __future__ import annotations

from typing import Any

from ...model.citations import clean

# a citation annotation's fields by its type: our key, then theirs (a ``file_path`` annotation
# is not a citation)
_FIELDS: dict[str, dict[str, str]] = {
    "url_citation": {"url": "url", "title": "title", "start": "start_index", "end": "end_index"},
    "file_citation": {"file_id": "file_id", "title": "filename", "start": "index"},
    "container_file_citation": {
        "file_id": "file_id",
        "title": "filename",
        "start": "start_index",
        "end": "end_index",
    },
}


def from_openai_annotation(annotation: Any) -> dict[str, Any] | None:
    """One Responses annotation, or one Chat Completions ``annotations`` entry (whose fields are
    nested under ``url_citation``). Annotations that are not citations (``file_path``) give
    ``None``."""
    if not isinstance(annotation, dict):
        return None
    kind = annotation.get("type")
    names = _FIELDS.get(kind) if isinstance(kind, str) else None
    if names is None:
        return None
    nested = annotation.get(kind)
    fields: dict[str, Any] = nested if isinstance(nested, dict) else annotation
    return clean({ours: fields.get(theirs) for ours, theirs in names.items()})


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
