"""OpenAI Responses: the ``openai-responses`` wire API."""

from ...plugins.wire_api import WireApi

API = WireApi(
    package=__name__,  # where its parts are
    id="openai-responses",
    name="responses",
    provider="openai",
    base_url="https://api.openai.com/v1",
    path="/responses",
    key_env=("OPENAI_API_KEY",),
    compatible=True,
    arguments_as_text=True,
    sdk="openai",
    sdk_agent="OpenAI/",
    base_url_env="OPENAI_BASE_URL",
    sdk_headers=("openai-beta",),
    # client.responses.connect(): the same events over one WebSocket, several responses a
    # session (the decoder reads a session's recording: see its use_header)
    transports=("http", "websocket"),
)
