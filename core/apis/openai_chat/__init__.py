"""OpenAI Chat Completions (and every OpenAI-compatible server): the ``openai-chat`` wire API.

Its row (``api.json``) is the default one: a request of no known shape is an OpenAI-compatible
one.
"""

from ...plugins.wire_api import WireApi

API = WireApi.from_package(__name__)
