"""OpenAI Responses: the ``openai-responses`` wire API.

Its row (``api.json``) gives two transports: HTTP, and ``client.responses.connect()``, the same
events over one WebSocket, several responses a session (the decoder reads a session's recording:
see its ``use_header``).
"""

from ...plugins.wire_api import WireApi

API = WireApi.from_package(__name__)
