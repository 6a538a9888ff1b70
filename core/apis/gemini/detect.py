"""How a stream shows it is Gemini's ``streamGenerateContent``: the keys of its objects."""

from __future__ import annotations

from typing import Any

# where this API's JSON sniffing comes among the APIs' (lower first; see ``detect_from_event``):
# after the APIs whose events name their type
RANK = 50


def sniff_json(obj: dict[str, Any]) -> str | None:
    """The converter an event's JSON object points to, when it has this API's keys, or is a
    Google API error (``{"error": {code, message, status}}``) as the stream's first word."""
    if "candidates" in obj or "usageMetadata" in obj or "promptFeedback" in obj:
        return "gemini"
    err = obj.get("error")
    if isinstance(err, dict) and isinstance(err.get("status"), str) and "choices" not in obj:
        return "gemini"
    return None
