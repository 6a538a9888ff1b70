"""Google's Interactions API: the ``gemini-interactions`` wire API.

Its row (``api.json``): its route is the path without its version (a request of any version ends
with ``/interactions``).
"""

from ...plugins.wire_api import WireApi

API = WireApi.from_package(__name__)
