"""Building provider requests for ``streamtool record`` (sans-IO).

Everything here is pure: options in, a :class:`PreparedRequest` (method, URL, headers, body bytes)
out. Reading the files named on the command line and sending the request happen at the edge.

Conventions follow each provider's official SDK, so that the same ``--base-url`` works for an SDK
and for ``record``: the endpoint path of the API's row is appended to the base URL (``/v1`` is part
of the base URL for some APIs, the bare origin is the base URL for others).

What is particular to one API (the body's shape, its tools and tool choice, which header carries
the key, further headers and query parameters) is its package's request part
(``<package>.request``, :class:`RequestPart`), found through the API table, a plugin's API the same
way as a built-in one. An API whose package has no request part cannot be recorded.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from types import ModuleType
from typing import Any
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

from ..plugins import WireApi, api_table, builtin_apis, find_api, part
from ..recording.secrets import credential_values, secret_query_values
from ..wire import fastjson
from .hostcheck import is_loopback


class RequestError(ValueError):
    """The options do not make a valid request. ``str()`` is one line naming the culprit."""


@dataclass(frozen=True, slots=True)
class Api:
    """One ``--provider`` choice: a wire API (a row of :mod:`streamtool.core.apis`) and where
    it is sent by default."""

    name: str  # --provider value
    provider: str  # the recording header's "provider"
    wire: WireApi
    base_url: str | None
    key_env: tuple[str, ...]

    @property
    def api(self) -> str:
        """The recording header's "api"."""
        return self.wire.name

    @property
    def path(self) -> str:
        return self.wire.path


@functools.cache
def provider_apis() -> dict[str, Api]:
    """Every ``--provider`` choice: each API of the table (plugins' included) that a client
    reaches with an HTTP request, by its id, then each compatible provider's name
    (:data:`COMPATIBLE`)."""
    # an API whose package has no request part (MCP: a client's session, not one request) is
    # not record's to send
    found = {
        a.id: Api(a.id, a.provider, a, a.base_url, a.key_env)
        for a in api_table()
        if a.http and importlib.util.find_spec(f"{a.package}.request") is not None
    }
    # any server that speaks an API other providers speak too (OpenAI's), under the name its
    # row gives: that API with no default base URL and no key variable (the key is only read
    # from --api-key-env or a preset's variable, so an official key is never sent to an
    # arbitrary host); a plugin does not take a built-in's name
    for wire in api_table():
        if wire.compatible_provider:
            name = wire.compatible_provider
            found.setdefault(name, Api(name, name, wire, None, ()))
    return found


# what a preset is used with by default (a built-in's name: the plugins are not read for it)
COMPATIBLE = next((a.compatible_provider for a in builtin_apis() if a.compatible_provider), "")


def __getattr__(name: str) -> Any:
    if name == "APIS":  # read when asked for: it reads the installed plugins' APIs too
        return provider_apis()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True, slots=True)
class Preset:
    """An OpenAI-compatible provider reachable by name through ``--base-url NAME``."""

    name: str
    base_url: str
    key_env: tuple[str, ...]
    key_required: bool
    stream_usage: bool  # accepts stream_options.include_usage (else usage comes by default)
    hosts: tuple[str, ...]
    # the proxy takes a request whose path starts with the base URL's path for this provider's
    # and forwards it to the base URL's origin
    proxied: bool = False
    label: str = ""  # how the proxy's banner names it ("OpenRouter")

    @property
    def origin(self) -> str:
        """The base URL's scheme and host."""
        parts = urlsplit(self.base_url)
        return f"{parts.scheme}://{parts.netloc}"

    @property
    def route_prefix(self) -> str:
        """The path prefix of the requests that are this provider's (``/api/v1/``)."""
        return urlsplit(self.base_url).path.rstrip("/") + "/"


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        # OpenRouter always sends usage; its stream_options field is deprecated and has no effect
        Preset(
            "openrouter",
            "https://openrouter.ai/api/v1",
            ("OPENROUTER_API_KEY",),
            True,
            False,
            ("openrouter.ai",),
            proxied=True,
            label="OpenRouter",
        ),
        Preset(
            "groq",
            "https://api.groq.com/openai/v1",
            ("GROQ_API_KEY",),
            True,
            True,
            ("api.groq.com",),
        ),
        Preset(
            "deepseek",
            "https://api.deepseek.com",
            ("DEEPSEEK_API_KEY",),
            True,
            True,
            ("api.deepseek.com",),
        ),
        # Mistral rejects unknown fields (422 extra_forbidden) and sends usage on its last chunk
        Preset(
            "mistral",
            "https://api.mistral.ai/v1",
            ("MISTRAL_API_KEY",),
            True,
            False,
            ("api.mistral.ai",),
        ),
        Preset(
            "together",
            "https://api.together.xyz/v1",
            ("TOGETHER_API_KEY",),
            True,
            False,
            ("api.together.xyz", "api.together.ai"),
        ),
        Preset(
            "moonshot",
            "https://api.moonshot.ai/v1",
            ("MOONSHOT_API_KEY",),
            True,
            False,
            ("api.moonshot.ai", "api.moonshot.cn"),
        ),
        Preset(
            "ollama",
            "http://localhost:11434/v1",
            ("OLLAMA_API_KEY",),
            False,
            True,
            ("localhost:11434", "127.0.0.1:11434"),
        ),
        Preset(
            "vllm",
            "http://localhost:8000/v1",
            ("VLLM_API_KEY",),
            False,
            True,
            ("localhost:8000", "127.0.0.1:8000"),
        ),
    )
}

TOOL_CHOICES = ("auto", "required", "none")


@dataclass(frozen=True, slots=True)
class ToolDef:
    """A neutral tool definition: ``{name, description, parameters}`` (a JSON schema)."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(slots=True)
class RequestOptions:
    provider: str | None = None
    model: str | None = None
    prompt: str | None = None
    messages: list[dict[str, Any]] | None = None
    system: str | None = None
    tools: list[ToolDef] | None = None
    tool_choice: str | None = None
    body: bytes | None = None  # --body: sent exactly as given
    headers: list[tuple[str, str]] = field(default_factory=list)
    base_url: str | None = None  # a URL, or a preset name
    api_key_env: str | None = None
    max_tokens: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # --set KEY=VALUE
    stream_usage: bool = True
    # send the key as a query parameter where the API takes one (``?key=``, the older style)
    key_in_query: bool = False


@dataclass(slots=True)
class PreparedRequest:
    method: str
    url: str
    headers: dict[str, str]
    content: bytes
    body: Any  # what the recording header keeps: parsed JSON, else the text
    provider: str
    api: str
    model: str | None
    secrets: tuple[str, ...] = ()  # credential values: never written anywhere
    # AWS SigV4 signing still to do at the edge (botocore, ``net.aws.sign_sigv4``): "required",
    # "optional" (a local server, which asks for no credentials) or None
    sigv4: str | None = None

    def describe(self) -> dict[str, Any]:
        """The request as a recording header keeps it (before redaction)."""
        return {"method": self.method, "url": self.url, "headers": self.headers, "body": self.body}


def add_tools(
    body: dict[str, Any],
    opts: RequestOptions,
    format_tools: Callable[[list[ToolDef]], Any],
    format_tool_choice: Callable[[str], Any],
    choice_key: str = "tool_choice",
) -> dict[str, Any]:
    """``body`` with the options' tools (under ``tools``) and tool choice (under ``choice_key``),
    each in an API's shape; a choice its API formats as None is sent as nothing (its default)."""
    if opts.tools:
        body["tools"] = format_tools(opts.tools)
    if opts.tool_choice is not None:
        choice = format_tool_choice(opts.tool_choice)
        if choice is not None:
            body[choice_key] = choice
    return body


# -- reading the user's files (text in, values out) ---------------------------------------------
def _load_json(text: str, source: str) -> Any:
    try:
        return fastjson.loads(text)
    except json.JSONDecodeError as exc:
        raise RequestError(f"{source}:{exc.lineno}: not JSON ({exc.msg})") from None


def parse_tools(text: str, source: str) -> list[ToolDef]:
    """Neutral tool definitions from JSON text.

    Accepts a list (or ``{"tools": [...]}``) of ``{name, description, parameters}``; entries in
    the OpenAI (``{"type": "function", "function": {...}}``) or Anthropic (``input_schema``)
    shape are read too, so a tools file copied from either works.
    """
    data = _load_json(text, source)
    if isinstance(data, dict) and isinstance(data.get("tools"), list):
        data = data["tools"]
    if not isinstance(data, list):
        raise RequestError(f"{source}: a tools file holds a JSON list of tool definitions")
    tools: list[ToolDef] = []
    seen: set[str] = set()
    for i, entry in enumerate(data):
        where = f"{source}: tool #{i + 1}"
        if not isinstance(entry, dict):
            raise RequestError(f"{where}: not an object")
        if isinstance(entry.get("function"), dict):
            entry = entry["function"]
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise RequestError(f"{where}: needs a 'name' string")
        if name in seen:
            raise RequestError(f"{where}: a second tool named {name!r}")
        seen.add(name)
        description = entry.get("description", "")
        if not isinstance(description, str):
            raise RequestError(f"{where} ({name}): 'description' must be a string")
        params = entry.get("parameters", entry.get("input_schema"))
        if params is None:
            params = {"type": "object", "properties": {}}
        if not isinstance(params, dict):
            raise RequestError(f"{where} ({name}): 'parameters' must be a JSON schema object")
        tools.append(ToolDef(name, description, params))
    return tools


def parse_messages(text: str, source: str) -> list[dict[str, Any]]:
    """A conversation: a JSON list (or ``{"messages": [...]}``) of ``{role, content}``."""
    data = _load_json(text, source)
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        data = data["messages"]
    if not isinstance(data, list) or not data:
        raise RequestError(f"{source}: a messages file holds a non-empty JSON list of messages")
    for i, msg in enumerate(data):
        if not isinstance(msg, dict) or not isinstance(msg.get("role"), str):
            raise RequestError(f"{source}: message #{i + 1} needs a 'role' string")
        if "content" not in msg:
            raise RequestError(f"{source}: message #{i + 1} needs 'content'")
    return data


def parse_header_option(value: str) -> tuple[str, str]:
    """``--header 'Name: value'``."""
    name, sep, rest = value.partition(":")
    name = name.strip()
    if not sep or not name or any(c.isspace() for c in name):
        raise RequestError(f"--header {value!r}: expected 'Name: value'")
    return name, rest.strip()


def parse_set_option(value: str) -> tuple[str, Any]:
    """``--set KEY=VALUE``: the value is JSON when it parses, else the plain string."""
    key, sep, raw = value.partition("=")
    if not sep or not key.strip():
        raise RequestError(f"--set {value!r}: expected KEY=VALUE")
    try:
        return key.strip(), fastjson.loads(raw)
    except ValueError:
        return key.strip(), raw


# -- the conversation of --system/--prompt/--messages ---------------------------------------------
def conversation(opts: RequestOptions) -> tuple[str | None, list[dict[str, Any]]]:
    """The system prompt and the non-system messages, from --system/--prompt/--messages."""
    system = opts.system
    if opts.messages is not None:
        messages = []
        for msg in opts.messages:
            if msg["role"] in ("system", "developer") and isinstance(msg.get("content"), str):
                system = msg["content"] if system is None else f"{system}\n\n{msg['content']}"
            else:
                messages.append(msg)
    else:
        messages = [{"role": "user", "content": opts.prompt}]
    return system, messages


def text_parts(content: Any) -> list[Any]:
    """A message's content as a list of parts, a string being one ``{"text": ...}`` part."""
    if isinstance(content, str):
        return [{"text": content}]
    if isinstance(content, list):
        return [{"text": p} if isinstance(p, str) else p for p in content]
    return [content]


# -- an API's request part -----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RequestPart:
    """What :func:`build_request` reads from an API's request part (its package's ``request``
    module): ``build_body`` is required, every constant has the default shown here."""

    # build_body(opts, system, messages, stream_usage) -> dict: the JSON body for the options
    # (not used with --body), tools and tool choice included; ``system`` and ``messages`` are
    # what :func:`conversation` reads from --system/--prompt/--messages, ``stream_usage`` whether
    # to ask for usage in the stream where the API takes that request
    build_body: Callable[[RequestOptions, str | None, list[dict[str, Any]], bool], dict[str, Any]]
    key_header: str = "authorization"  # KEY_HEADER: the header that carries the API key
    key_prefix: str = "Bearer "  # KEY_PREFIX: what comes before the key in it
    # KEY_QUERY: the query parameter that carries the key instead with --key-in-query (None: none)
    key_query: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)  # HEADERS: sent with every request
    query: tuple[tuple[str, str], ...] = ()  # QUERY: query parameters of every request
    accept: str = "text/event-stream"  # ACCEPT: the stream's media type
    # SIGV4: with no key the request is signed with AWS SigV4 at the edge (no key is required)
    sigv4: bool = False

    @classmethod
    def of(cls, module: ModuleType) -> RequestPart:
        """The part a ``request`` module describes (its missing constants take the defaults)."""
        values: dict[str, Any] = {"build_body": module.build_body}
        for f in fields(cls):
            if f.name != "build_body" and hasattr(module, f.name.upper()):
                values[f.name] = getattr(module, f.name.upper())
        return cls(**values)


@functools.cache
def request_part(wire: WireApi) -> RequestPart:
    """How requests to ``wire`` are built; ``RequestError`` when its package has none."""
    module = part(wire, "request")
    if module is None or not callable(getattr(module, "build_body", None)):
        raise RequestError(
            f"{wire.id} cannot be recorded: its package ({wire.package}) has no request part"
        )
    return RequestPart.of(module)


@functools.cache
def _key_headers() -> frozenset[str]:
    """The headers the built-in APIs read their key from: one passed with --header is the
    credential (so is the header of the API the request is for, a plugin's too)."""
    found = set()
    for wire in builtin_apis():
        try:
            found.add(request_part(wire).key_header.lower())
        except RequestError:
            continue
    return frozenset(found)


def build_body(api: Api, opts: RequestOptions, stream_usage: bool) -> dict[str, Any]:
    """The JSON request body for ``api`` (not used with ``--body``)."""
    system, messages = conversation(opts)
    body = request_part(api.wire).build_body(opts, system, messages, stream_usage)
    body.update(opts.extra)
    return body


# -- the whole request ---------------------------------------------------------------------------
def preset_for(base_url: str | None) -> Preset | None:
    """The preset a ``--base-url`` names, or whose host it points to."""
    if not base_url:
        return None
    if base_url.lower() in PRESETS:
        return PRESETS[base_url.lower()]
    netloc = urlsplit(base_url).netloc.lower()
    host = netloc.rsplit("@", 1)[-1]
    for preset in PRESETS.values():
        for known in preset.hosts:
            if host == known or (":" not in known and host.split(":")[0] == known):
                return preset
    return None


def _resolve_api(opts: RequestOptions, preset: Preset | None) -> Api:
    name = opts.provider
    if name is None:
        if preset is None or not COMPATIBLE:
            raise RequestError(
                f"--provider is required ({', '.join(provider_apis())}) unless --base-url names "
                f"a preset "
                f"({', '.join(PRESETS)})"
            )
        name = COMPATIBLE
    apis = provider_apis()
    api = apis.get(name)
    if api is None:
        wire = find_api(name)  # another name of an API (an alias)
        api = apis.get(wire.id) if wire is not None else None
    if api is None:
        raise RequestError(f"unknown provider {name!r}; valid: {', '.join(apis)}")
    if preset is not None and not api.wire.compatible:
        # the compatible name first, then the compatible APIs' own
        compatible = (n for n, a in apis.items() if a.wire.compatible)
        names = sorted(compatible, key=lambda n: n != COMPATIBLE)
        raise RequestError(
            f"the {preset.name} preset speaks the OpenAI API; use it with "
            f"{', '.join(names[:-1])} or {names[-1]}"
        )
    return api


def _loopback(base: str) -> bool:
    """Whether ``base`` points at this machine (a local server: Ollama, vLLM, ``serve``)."""
    return is_loopback(urlsplit(base).hostname or "")


def _api_key(
    api: Api,
    request: RequestPart,
    preset: Preset | None,
    opts: RequestOptions,
    env: Mapping[str, str],
    sent: set[str],
    base: str,
) -> str | None:
    if opts.api_key_env:
        key = env.get(opts.api_key_env)
        if not key:
            raise RequestError(f"--api-key-env {opts.api_key_env}: that variable is not set")
        return key
    names = preset.key_env if preset is not None else api.key_env
    for var in names:
        if env.get(var):
            return env[var]
    if sent & (_key_headers() | {request.key_header.lower()}):
        return None  # the user passed the credential with --header
    if request.sigv4:
        return None  # no API key: the request is signed with SigV4 (botocore)
    required = preset.key_required if preset is not None else bool(names)
    # a server on this machine asks for no key (and a real one would only be sent there)
    if required and not _loopback(base):
        raise RequestError(
            f"no API key: set {' or '.join(names)} (or name another variable with --api-key-env)"
        )
    return None


def build_request(opts: RequestOptions, env: Mapping[str, str]) -> PreparedRequest:
    """The request ``record`` sends, from the command line options and the environment."""
    preset = preset_for(opts.base_url)
    api = _resolve_api(opts, preset)
    wire = api.wire.id
    request = request_part(api.wire)
    if opts.body is None:
        if opts.prompt is None and opts.messages is None:
            raise RequestError("give --prompt, --messages FILE or --body FILE")
        if opts.prompt is not None and opts.messages is not None:
            raise RequestError("--prompt and --messages cannot be used together")
        if not opts.model:
            raise RequestError("--model is required")
    else:
        conflicting = [
            flag
            for flag, value in (
                ("--prompt", opts.prompt),
                ("--messages", opts.messages),
                ("--system", opts.system),
                ("--tools", opts.tools),
                ("--tool-choice", opts.tool_choice),
                ("--max-tokens", opts.max_tokens),
                ("--set", opts.extra or None),
            )
            if value is not None
        ]
        if conflicting:
            raise RequestError(f"--body sends the body as it is: drop {', '.join(conflicting)}")
    if opts.tool_choice is not None and opts.tool_choice not in TOOL_CHOICES:
        names = [t.name for t in opts.tools or ()]
        if opts.tool_choice not in names:
            valid = ", ".join([*TOOL_CHOICES, *names])
            raise RequestError(f"--tool-choice {opts.tool_choice!r}: not a tool; valid: {valid}")

    base: str | None
    if preset is not None and (opts.base_url or "").lower() == preset.name:
        base = preset.base_url
    else:
        base = opts.base_url or (preset.base_url if preset else None) or api.base_url
    if not base:
        raise RequestError(
            f"--base-url is required for {api.name} (a URL, or a preset: {', '.join(PRESETS)})"
        )
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise RequestError(f"--base-url {base!r}: not an http(s) URL or a preset name")

    # body
    if opts.body is not None:
        content = opts.body
        try:
            body: Any = fastjson.loads(content)
        except ValueError:
            body = content.decode("utf-8", "replace")
    else:
        stream_usage = opts.stream_usage and (preset.stream_usage if preset else True)
        body = build_body(api, opts, stream_usage)
        content = json.dumps(body, ensure_ascii=False).encode("utf-8")
    model = opts.model
    if model is None and isinstance(body, dict) and isinstance(body.get("model"), str):
        model = body["model"]

    # URL
    path = api.path
    if "{model}" in path:
        if not model:
            raise RequestError(f"--model is required for {wire} (it is part of the URL)")
        path = path.format(model=quote(model, safe=""))
    query = list(request.query)

    # headers
    sent = {name.lower() for name, _ in opts.headers}
    key = _api_key(api, request, preset, opts, env, sent, base)
    headers: dict[str, str] = {
        "content-type": "application/json",
        "accept": request.accept,
        # the recording keeps the bytes as received: ask for them unencoded
        "accept-encoding": "identity",
    }
    if key is not None:
        if opts.key_in_query and request.key_query is not None:
            query.append((request.key_query, key))
        else:
            headers[request.key_header] = request.key_prefix + key
    headers.update(request.headers)
    lowered = {k.lower(): k for k in headers}
    for name, value in opts.headers:
        existing = lowered.get(name.lower())
        if existing is not None:
            del headers[existing]
        headers[name] = value
        lowered[name.lower()] = name
    sigv4 = None
    if request.sigv4 and key is None and "authorization" not in sent:
        sigv4 = "optional" if _loopback(base) else "required"
    url_query = "&".join(q for q in (parts.query, urlencode(query)) if q)
    url = urlunsplit(parts._replace(path=parts.path.rstrip("/") + path, query=url_query))
    secrets = [key] if key else []
    secrets += credential_values(opts.headers)
    secrets += secret_query_values(url)  # a key= or user:password@ in --base-url
    return PreparedRequest(
        method="POST",
        url=url,
        headers=headers,
        content=content,
        body=body,
        provider=preset.name if preset else api.provider,
        api=api.api,
        model=model,
        secrets=tuple(s for s in secrets if s),
        sigv4=sigv4,
    )
