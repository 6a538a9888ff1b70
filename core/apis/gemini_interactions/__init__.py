"""Google's Interactions API: the ``gemini-interactions`` wire API."""

from ...plugins.wire_api import WireApi

API = WireApi(
    package=__name__,  # where its parts are
    id="gemini-interactions",
    name="interactions",
    route="/interactions",  # the path without its version: a request of any version ends with it
    provider="gemini",
    base_url="https://generativelanguage.googleapis.com",
    path="/v1beta/interactions",
    key_env=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    aliases=("gemini-interactions-api", "interactions-api"),
    base_url_env="GOOGLE_GEMINI_BASE_URL",
)
