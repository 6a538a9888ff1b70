"""Anthropic Messages: the ``anthropic`` wire API.

Its row (``api.json``): its route is the path without its version (a request of any version ends
with ``/messages``); its hosted route is Claude on Vertex AI.
"""

from ...plugins.wire_api import WireApi

API = WireApi.from_package(__name__)
