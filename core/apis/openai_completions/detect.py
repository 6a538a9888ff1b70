"""How a stream shows it is OpenAI's legacy Completions: ``text_completion`` objects, or choices
that hold a ``text`` and no ``delta``.
"""

from __future__ import annotations

from typing import Any

# where this API's JSON sniffing comes among the APIs' (lower first; see ``detect_from_event``):
# before Chat Completions, whose chunks also hold ``choices``
RANK = 60


def sniff_json(obj: dict[str, Any]) -> str | None:
    """The converter an event's JSON object points to, when it is a legacy completion."""
    if obj.get("object") == "text_completion" or _legacy_choices(obj.get("choices")):
        return "openai-completions"
    return None


def _legacy_choices(choices: Any) -> bool:
    """Choices of a legacy completion: ``text`` and no ``delta`` (servers that omit
    ``object``); chat chunks that also carry ``text`` (Together) have a ``delta``."""
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return False
    return "text" in choices[0] and "delta" not in choices[0] and "message" not in choices[0]
