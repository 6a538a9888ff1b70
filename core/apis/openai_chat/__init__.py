"""OpenAI Chat Completions (and every OpenAI-compatible server): the ``openai-chat`` wire API."""

from typing import Any

from ...plugins.wire_api import WireApi

# what the APIs of OpenAI's host that its SDK speaks (and so do OpenAI-compatible servers) have
# in common: Chat Completions, Completions, Responses
OPENAI_SDK: dict[str, Any] = {
    "error_style": "openai",
    "provider": "openai",
    "base_url": "https://api.openai.com/v1",
    "key_env": ("OPENAI_API_KEY",),
    "compatible": True,
    "sdk": "openai",
    "sdk_agent": "OpenAI/",
    "base_url_env": "OPENAI_BASE_URL",
    "sdk_headers": ("openai-beta",),
}

API = WireApi(
    package=__name__,  # where its parts are
    id="openai-chat",
    name="chat.completions",
    label="chat.completions",
    short="chat",
    route="/chat/completions",
    converters=("openai-chat", "kimi-k2"),
    path="/chat/completions",
    compatible_provider="openai-compatible",
    arguments_as_text=True,
    aliases=("chat", "chat-completions", "openai-compatible"),
    default=True,  # an unknown request is an OpenAI-compatible one
    sdk_label="OpenAI SDK / Codex",
    **OPENAI_SDK,
)
# older names of its encoder (``--emit openai-sse``): not names of the API
ENCODER_ALIASES = ("openai-sse",)
