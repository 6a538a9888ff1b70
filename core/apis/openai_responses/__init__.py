"""OpenAI Responses: the ``openai-responses`` wire API."""

from ...plugins.wire_api import WireApi
from ..openai_chat import OPENAI_SDK

API = WireApi(
    package=__name__,  # where its parts are
    id="openai-responses",
    name="responses",
    label="responses",
    route="/responses",
    converters=("openai-responses",),
    path="/responses",
    arguments_as_text=True,
    # client.responses.connect(): the same events over one WebSocket, several responses a
    # session (the decoder reads a session's recording: see its use_header)
    transports=("http", "websocket"),
    **OPENAI_SDK,
)
