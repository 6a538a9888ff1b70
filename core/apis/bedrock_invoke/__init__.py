"""Amazon Bedrock InvokeModelWithResponseStream: the ``bedrock-invoke`` wire API."""

from ...plugins.wire_api import WireApi

API = WireApi.from_package(__name__)
