"""OpenAI Chat Completions (and every OpenAI-compatible server): the ``openai-chat`` wire API.

Its row (``api.json``) is the default one: a request of no known shape is an OpenAI-compatible
one.
"""

from ...plugins.wire_api import WireApi

API = WireApi.from_package(__name__)
# older names of its encoder (``--emit openai-sse``): not names of the API
ENCODER_ALIASES = ("openai-sse",)
