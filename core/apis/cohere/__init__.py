"""Cohere v2 chat: the ``cohere`` wire API."""

from ...plugins.wire_api import WireApi

API = WireApi(
    package=__name__,  # where its parts are
    id="cohere",
    name="v2.chat",
    label="v2/chat",
    provider="cohere",
    base_url="https://api.cohere.com",
    path="/v2/chat",
    key_env=("CO_API_KEY", "COHERE_API_KEY"),
    aliases=("cohere-v2", "cohere-chat"),
)
