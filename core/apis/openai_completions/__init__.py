"""OpenAI's legacy Completions: the ``openai-completions`` wire API."""

from ...plugins.wire_api import WireApi

API = WireApi.from_package(__name__)
