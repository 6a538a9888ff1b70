"""Gemini's native streamGenerateContent: the ``gemini`` wire API."""

from ...plugins.wire_api import WireApi

API = WireApi(
    package=__name__,  # where its parts are
    id="gemini",
    name="gemini",
    label="streamGenerateContent",
    provider="gemini",
    base_url="https://generativelanguage.googleapis.com",
    path="/v1beta/models/{model}:streamGenerateContent",
    key_env=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    more_routes=(":generateContent",),
    model_in_path=r"/models/([^/:]+):",
    stream_in_path=True,
    provider_aliases=("google", "vertex", "vertex-ai", "google-vertex", "google-ai"),
    aliases=("generatecontent",),
    json_array_quirk=True,
    provider_path=r"^/v1(?:beta|alpha)/|generatecontent",
    error_path=r":[^/]*$|/models/",  # a method (":streamGenerateContent"), or a model
    base_url_env="GOOGLE_GEMINI_BASE_URL",
    sdk_label="Gemini",
)
