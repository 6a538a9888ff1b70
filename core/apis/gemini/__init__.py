"""Gemini's native streamGenerateContent: the ``gemini`` wire API.

Its row (``api.json``): a request path takes its error shape where it names a method
(``:streamGenerateContent``) or a model.
"""

from ...plugins.wire_api import WireApi

API = WireApi.from_package(__name__)
