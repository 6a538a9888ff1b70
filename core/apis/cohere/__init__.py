"""Cohere v2 chat: the ``cohere`` wire API."""

from ...plugins.wire_api import WireApi

API = WireApi.from_package(__name__)
