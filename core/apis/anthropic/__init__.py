"""Anthropic Messages: the ``anthropic`` wire API."""

from ...plugins.wire_api import WireApi

API = WireApi(
    package=__name__,  # where its parts are
    id="anthropic",
    name="messages",
    route="/messages",  # the path without its version: a request of any version ends with it
    provider="anthropic",
    base_url="https://api.anthropic.com",
    path="/v1/messages",
    key_env=("ANTHROPIC_API_KEY",),
    hosted_routes=("/anthropic/*:streamRawPredict",),  # Claude on Vertex AI
    provider_path=r"^/v1/messages",
    provider_header="anthropic-version",
    error_path=r"/messages",
    sdk="anthropic",
    base_url_env="ANTHROPIC_BASE_URL",
    sdk_label="Anthropic / Claude",
    sdk_headers=("anthropic-version",),
)
