"""The wire APIs streamtool speaks: one row each, read by every part that needs to know them.

A row says where the API lives (its endpoint's path suffix, its official host and the path an SDK
appends to its base URL), what it is called (by recordings, clients and users), where a request
names its model and asks for a stream, which converter reads its stream, and in which shape its
errors come. ``record`` builds requests from it, ``serve`` answers its endpoints, the proxy,
SDK capture and tapes name what they record by it, and the converter registry picks a
converter for a recorded URL with it. Adding an API is adding a row (and its converter).

Pure data and lookups: nothing here opens a socket or imports the network edge or an SDK.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, NamedTuple
from urllib.parse import urlsplit


class WireApi(NamedTuple):
    """One wire API (a named tuple: made at import without the cost of a dataclass)."""

    id: str  # the table's key, and record's --provider value: "openai-chat"
    name: str  # a recording header's "api", the proxy's and the tapes' name: "chat.completions"
    label: str  # as serve lists it to clients (GET /) and in its log
    # the streaming endpoint: a request path ending with it is this API (serve answers it)
    route: str
    converters: tuple[str, ...]  # the converters that read its streams, the default first
    error_style: str  # the shape of its error bodies (see error_body)
    provider: str  # whose API it is: its official host's provider
    base_url: str  # the official SDK's default base URL
    path: str  # what a request appends to a base URL ("{model}": the model, quoted)
    key_env: tuple[str, ...] = ()  # where its official SDK finds the API key
    # further path suffixes of the same API, not streamed (recognised, never served)
    more_routes: tuple[str, ...] = ()
    # the API as another cloud hosts it, "PART*SUFFIX": a path holding PART and ending with
    # SUFFIX. Only a recorded URL is read this way (to pick a converter).
    hosted_routes: tuple[str, ...] = ()
    model_field: str = "model"  # the request body's field naming the model
    # a pattern whose one group is the model, for APIs that name it in the path (first)
    model_in_path: str | None = None
    stream_in_path: bool = False  # the path asks for the stream; else the body's "stream": true
    # spoken by other providers too (OpenAI-compatible servers): the host, not the path, tells
    # whose it is, and its error bodies have its own shape whoever answers
    compatible: bool = False
    provider_aliases: tuple[str, ...] = ()  # other names of its provider in a recording header
    aliases: tuple[str, ...] = ()  # other names of the API (users, recording headers)

    @property
    def converter(self) -> str:
        """The converter its recordings get unless their stream says otherwise."""
        return self.converters[0]

    @property
    def official_path(self) -> str:
        """The endpoint's path on the official host (``/v1/chat/completions``)."""
        return urlsplit(self.base_url).path + self.path

    @property
    def names(self) -> tuple[str, ...]:
        """Every name the API goes by (lower case): id, name, label and aliases."""
        return tuple(
            dict.fromkeys(n.lower() for n in (self.id, self.name, self.label, *self.aliases))
        )

    def path_model(self, path: str) -> str | None:
        """The model a (percent-decoded) request path names, when this API names it there."""
        if self.model_in_path is None:
            return None
        found = _pattern(self.model_in_path).search(path)
        return found.group(1) if found else None

    def model_of(self, path: str, body: Any) -> str | None:
        """The model a request is for: named in its path, else in its JSON body."""
        model = self.path_model(path)
        if model is None and isinstance(body, dict):
            model = body.get(self.model_field)
        return model if isinstance(model, str) and model else None


API_TABLE: tuple[WireApi, ...] = (
    WireApi(
        id="openai-chat",
        name="chat.completions",
        label="chat.completions",
        route="/chat/completions",
        converters=("openai-chat", "kimi-k2"),
        error_style="openai",
        provider="openai",
        base_url="https://api.openai.com/v1",
        path="/chat/completions",
        key_env=("OPENAI_API_KEY",),
        compatible=True,
        aliases=("chat", "chat-completions", "openai-compatible"),
    ),
    WireApi(
        id="openai-responses",
        name="responses",
        label="responses",
        route="/responses",
        converters=("openai-responses",),
        error_style="openai",
        provider="openai",
        base_url="https://api.openai.com/v1",
        path="/responses",
        key_env=("OPENAI_API_KEY",),
        compatible=True,
    ),
    WireApi(
        id="anthropic",
        name="messages",
        label="messages",
        route="/messages",
        converters=("anthropic",),
        error_style="anthropic",
        provider="anthropic",
        base_url="https://api.anthropic.com",
        path="/v1/messages",
        key_env=("ANTHROPIC_API_KEY",),
        hosted_routes=("/anthropic/*:streamRawPredict",),  # Claude on Vertex AI
    ),
    # after openai-chat: "/chat/completions" also ends with "/completions"
    WireApi(
        id="openai-completions",
        name="completions",
        label="completions",
        route="/completions",
        converters=("openai-completions",),
        error_style="openai",
        provider="openai",
        base_url="https://api.openai.com/v1",
        path="/completions",
        key_env=("OPENAI_API_KEY",),
        compatible=True,
        aliases=("legacy-completions", "text_completion"),
    ),
    WireApi(
        id="gemini",
        name="gemini",
        label="streamGenerateContent",
        route=":streamGenerateContent",
        converters=("gemini",),
        error_style="gemini",
        provider="gemini",
        base_url="https://generativelanguage.googleapis.com",
        path="/v1beta/models/{model}:streamGenerateContent",
        key_env=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        more_routes=(":generateContent",),
        model_in_path=r"/models/([^/:]+):",
        stream_in_path=True,
        provider_aliases=("google", "vertex", "vertex-ai", "google-vertex", "google-ai"),
        aliases=("generatecontent",),
    ),
    WireApi(
        id="gemini-interactions",
        name="interactions",
        label="interactions",
        route="/interactions",
        converters=("gemini-interactions",),
        error_style="gemini",
        provider="gemini",
        base_url="https://generativelanguage.googleapis.com",
        path="/v1beta/interactions",
        key_env=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        aliases=("gemini-interactions-api", "interactions-api"),
    ),
    WireApi(
        id="bedrock-converse",
        name="converse-stream",
        label="ConverseStream",
        route="/converse-stream",
        converters=("bedrock-converse",),
        error_style="bedrock",
        provider="bedrock",
        base_url="https://bedrock-runtime.us-east-1.amazonaws.com",
        path="/model/{model}/converse-stream",
        key_env=("AWS_BEARER_TOKEN_BEDROCK",),
        more_routes=("/converse",),
        model_in_path=r"/model/([^/]+)/converse-stream$",
        stream_in_path=True,
        provider_aliases=("aws", "amazon-bedrock", "aws-bedrock", "amazon"),
        aliases=("bedrock", "converse", "conversestream"),
    ),
    WireApi(
        id="bedrock-invoke",
        name="invoke-with-response-stream",
        label="InvokeModelWithResponseStream",
        route="/invoke-with-response-stream",
        converters=("bedrock-invoke",),
        error_style="bedrock",
        provider="bedrock",
        base_url="https://bedrock-runtime.us-east-1.amazonaws.com",
        path="/model/{model}/invoke-with-response-stream",
        key_env=("AWS_BEARER_TOKEN_BEDROCK",),
        model_in_path=r"/model/([^/]+)/invoke-with-response-stream$",
        stream_in_path=True,
        provider_aliases=("aws", "amazon-bedrock", "aws-bedrock", "amazon"),
        aliases=("invokemodelwithresponsestream", "bedrock-invoke-model"),
    ),
    WireApi(
        id="cohere",
        name="v2.chat",
        label="v2/chat",
        route="/v2/chat",
        converters=("cohere",),
        error_style="cohere",
        provider="cohere",
        base_url="https://api.cohere.com",
        path="/v2/chat",
        key_env=("CO_API_KEY", "COHERE_API_KEY"),
        aliases=("cohere-v2", "cohere-chat"),
    ),
)


@functools.cache
def _pattern(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _route_matches(route: str, path: str) -> bool:
    """``path`` (lower case) ends with ``route`` (lower case); ``PART*SUFFIX``: ends with
    SUFFIX, and PART comes before it."""
    part, star, suffix = route.rpartition("*")
    if not star:
        return path.endswith(route)
    return path.endswith(suffix) and part in path[: len(path) - len(suffix)]


@functools.cache
def _names() -> dict[str, WireApi]:
    found: dict[str, WireApi] = {}
    for api in API_TABLE:
        for name in api.names:
            found.setdefault(name, api)
    return found


def served_api(path: str) -> WireApi | None:
    """The API whose streaming endpoint ``path`` ends with, letter for letter: what ``serve``
    answers, and where a recording made for it says it was sent."""
    for api in API_TABLE:
        if path.endswith(api.route):
            return api
    return None


def api_for_path(path: str, *, hosted: bool = False) -> WireApi | None:
    """The API a request path is for, streamed or not, in any letter case (the proxy, SDK
    capture); ``hosted`` also reads the paths other clouds host it at (a recorded URL)."""
    low = path.lower()
    for api in API_TABLE:
        routes = (api.route, *api.more_routes, *(api.hosted_routes if hosted else ()))
        if any(_route_matches(route.lower(), low) for route in routes):
            return api
    return None


def find_api(name: str) -> WireApi | None:
    """The API a name means (any of its :attr:`~WireApi.names`, in any letter case)."""
    return _names().get(name.lower())


def api_for_converter(converter: str | None) -> WireApi | None:
    """The API whose streams a converter reads."""
    for api in API_TABLE:
        if converter in api.converters:
            return api
    return None


def converter_named(name: str) -> str | None:
    """The converter a recording header's ``api`` points to: a converter named outright, else
    the default one of the API it names."""
    low = name.lower()
    if api_for_converter(low) is not None:
        return low
    api = find_api(low)
    return api.converter if api is not None else None


def api_for_provider(provider: str) -> WireApi | None:
    """The API of a provider that has only one (``anthropic``, ``gemini``, ``vertex``...);
    ``None`` for one with several (``openai``: the stream tells) or none."""
    low = provider.lower()
    found = [a for a in API_TABLE if low == a.provider or low in a.provider_aliases]
    return found[0] if len(found) == 1 else None


def model_in_path(path: str) -> str | None:
    """A model named in a (percent-decoded) request path the way an API of the table names it."""
    for api in API_TABLE:
        model = api.path_model(path)
        if model is not None:
            return model
    return None


def official_hosts() -> dict[str, str]:
    """The official hosts (``api.openai.com``) and their providers."""
    return {urlsplit(a.base_url).netloc: a.provider for a in API_TABLE}


def official_origins() -> dict[str, str]:
    """Each provider's official origin (``https://api.openai.com``), in table order."""
    origins: dict[str, str] = {}
    for api in API_TABLE:
        parts = urlsplit(api.base_url)
        origins.setdefault(api.provider, f"{parts.scheme}://{parts.netloc}")
    return origins


def error_body(style: str, status: int, message: str) -> bytes:
    """An error in the shape an API's SDK reads its message from (a row's ``error_style``)."""
    kinds = {
        400: "invalid_request_error",
        404: "not_found_error",
        405: "invalid_request_error",
        409: "conflict_error",
    }
    kind = kinds.get(status, "api_error")
    obj: dict[str, Any]
    if style == "anthropic":
        obj = {"type": "error", "error": {"type": kind, "message": message}}
    elif style == "bedrock":
        # botocore reads the error code from "__type" when no x-amzn-ErrorType header is sent
        types = {
            400: "ValidationException",
            404: "ResourceNotFoundException",
            405: "ValidationException",
            409: "ConflictException",
            413: "ValidationException",
            429: "ThrottlingException",
        }
        obj = {"__type": types.get(status, "InternalServerException"), "message": message}
    elif style == "cohere":
        obj = {"message": message}
    elif style == "gemini":
        statuses = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 405: "NOT_FOUND", 409: "ABORTED"}
        obj = {"error": {"code": status, "message": message, "status": statuses.get(status)}}
    else:
        code = {404: "not_found"}.get(status)
        obj = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return json.dumps(obj).encode("utf-8")
