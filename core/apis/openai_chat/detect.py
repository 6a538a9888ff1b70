"""How a stream shows it is Chat Completions: objects with ``choices`` (or of the type
``chat.completion.chunk``). A Kimi K2 model's stream is read by ``kimi-k2``, which reads
everything ``openai-chat`` reads, plus the special-token tool calls such models leak into the
text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...model.records import Header

# where this API's JSON sniffing comes among the APIs' (lower first; see ``detect_from_event``):
# last, the least telling shape (other APIs' objects may hold ``choices`` too)
RANK = 70


def is_kimi_model(model: Any) -> bool:
    """A Kimi K2 model name (``moonshotai/kimi-k2-thinking``, ``kimi-k2-0905-preview``...)."""
    return isinstance(model, str) and "kimi" in model.lower()


def sniff_json(obj: dict[str, Any]) -> str | None:
    """The converter an event's JSON object points to, when it is a chat chunk."""
    if "choices" in obj or obj.get("object") == "chat.completion.chunk":
        return "kimi-k2" if is_kimi_model(obj.get("model")) else "openai-chat"
    return None


def sniff_header(header: Header) -> str | None:
    """The converter of a recording of this API, when its model says which: ``kimi-k2`` for an
    OpenAI-compatible request for a Kimi model."""
    return "kimi-k2" if is_kimi_model(header.model) else None
