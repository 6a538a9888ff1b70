"""OpenAI's legacy Completions: the ``openai-completions`` wire API."""

from ...plugins.wire_api import WireApi
from ..openai_chat import OPENAI_SDK

API = WireApi(
    package=__name__,  # where its parts are
    id="openai-completions",
    name="completions",
    label="completions",
    route="/completions",
    converters=("openai-completions",),
    path="/completions",
    aliases=("legacy-completions", "text_completion"),
    **OPENAI_SDK,
)
