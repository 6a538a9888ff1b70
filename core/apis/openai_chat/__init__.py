"""OpenAI Chat Completions (and every OpenAI-compatible server): the ``openai-chat`` wire API."""

from ...plugins.wire_api import WireApi

API = WireApi(
    package=__name__,  # where its parts are
    id="openai-chat",
    name="chat.completions",
    short="chat",
    converters=("openai-chat", "kimi-k2"),
    provider="openai",
    base_url="https://api.openai.com/v1",
    path="/chat/completions",
    key_env=("OPENAI_API_KEY",),
    compatible=True,
    compatible_provider="openai-compatible",
    arguments_as_text=True,
    aliases=("chat", "chat-completions", "openai-compatible"),
    default=True,  # an unknown request is an OpenAI-compatible one
    sdk="openai",
    sdk_agent="OpenAI/",
    base_url_env="OPENAI_BASE_URL",
    sdk_label="OpenAI SDK / Codex",
    sdk_headers=("openai-beta",),
)
# older names of its encoder (``--emit openai-sse``): not names of the API
ENCODER_ALIASES = ("openai-sse",)
