"""How a session shows it is OpenAI Realtime: the event types only Realtime has (``session.*``,
``conversation.*``, ``input_audio_buffer.*``, ``output_audio_buffer.*``, ``rate_limits.updated``,
``response.done`` and the audio events; the beta names too). Asked before the Responses API,
whose events also start with ``response.``.
"""

from __future__ import annotations

from typing import Any

# where this API's JSON sniffing comes among the APIs' (lower first): before the Responses API's
RANK = 15

_PREFIXES = (
    "session.",
    "conversation.",
    "input_audio_buffer.",
    "output_audio_buffer.",
    "transcription_session.",
    "response.output_audio",
    "response.audio",
    "response.text.",
)
_TYPES = frozenset({"rate_limits.updated", "response.done"})


def sniff_json(obj: dict[str, Any]) -> str | None:
    """The converter an event's JSON object points to, when its type is one only Realtime has."""
    kind = obj.get("type")
    if isinstance(kind, str) and (kind in _TYPES or kind.startswith(_PREFIXES)):
        return "openai-realtime"
    return None
