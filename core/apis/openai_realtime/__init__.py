"""OpenAI Realtime: the ``openai-realtime`` wire API, a WebSocket session.

A client opens ``wss://api.openai.com/v1/realtime?model=...`` and both sides send JSON events, one
per text message: the client's (``session.update``, ``conversation.item.create``,
``response.create``...) and the server's (``session.created``, ``response.output_text.delta``,
``response.done``, ``rate_limits.updated``, ``error``...). Its parts: ``decoder`` (the converter
reading the server's events, the GA names and the retired beta ones), ``detect``, ``session`` (the
outline of a session that ``replay`` draws, and how ``serve`` matches a client's events) and
``mutations`` (the session faults ``conform --mutate`` applies).
"""

from ...plugins.wire_api import WireApi

API = WireApi.from_package(__name__)
