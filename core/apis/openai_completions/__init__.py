"""OpenAI's legacy Completions: the ``openai-completions`` wire API."""

from ...plugins.wire_api import WireApi

API = WireApi(
    package=__name__,  # where its parts are
    id="openai-completions",
    name="completions",
    provider="openai",
    base_url="https://api.openai.com/v1",
    path="/completions",
    key_env=("OPENAI_API_KEY",),
    compatible=True,
    sdk="openai",
    sdk_agent="OpenAI/",
    base_url_env="OPENAI_BASE_URL",
    sdk_headers=("openai-beta",),
    aliases=("legacy-completions", "text_completion"),
)
