"""One wire API's row: where the API lives, what it is called, where its model is named.

Every wire API is a package (``streamtool.core.apis.<api>``, or a plugin's) whose ``API`` is one
:class:`WireApi`; the package's other modules are its parts (:mod:`.table` finds them). A row is
data: a built-in package keeps it in its manifest, ``api.json`` beside its ``__init__.py``
(:meth:`WireApi.from_package`); a plugin may write ``WireApi(...)`` in Python as well. Pure
data: nothing here imports more than the standard library.

A row is a frozen msgspec Struct (msgspec is the model's library): defined at every start, its
fields (35 when measured) cost half what a ``NamedTuple``'s did (2.0M instructions against 3.9M,
most of that ``typing``'s check of each annotation). It keeps the named tuple's ``_replace``,
``_fields`` and ``_field_defaults``, which plugins and tests use. Its annotations are evaluated
(no ``from __future__ import annotations``).
"""

import functools
import importlib.util
import json
import os.path
import re
import sys
from typing import Any, ClassVar
from urllib.parse import urlsplit

import msgspec
from msgspec.structs import force_setattr

# an API package's manifest, beside its ``__init__.py``: the row's fields as one JSON object
MANIFEST = "api.json"
# the JSON values a manifest may give a field, by the type of the field's default (a field
# without one is a string; a None default is a pattern's), and how an error names them
_JSON_TYPES: dict[type, tuple[tuple[type, ...], str]] = {
    str: ((str,), "a string"),
    type(None): ((str, type(None)), "a string or null"),
    bool: ((bool,), "true or false"),
    tuple: ((list,), "a list of strings"),
}


class ManifestError(ValueError):
    """An API package's manifest that does not give a row (the message names the file)."""


class WireApi(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One wire API. What the row leaves empty of its label, route, converters and error style
    follows from its other fields (see each)."""

    id: str  # the table's key, and record's --provider value: "openai-chat"
    name: str  # a recording header's "api", the proxy's and the tapes' name: "chat.completions"
    provider: str  # whose API it is: its official host's provider
    # the official SDK's default base URL; empty for an API without an official host (MCP: every
    # server is its own), whose requests the proxy sends to --upstream only
    base_url: str
    path: str  # what a request appends to a base URL ("{model}": the model, quoted)
    # as serve lists it to clients (GET /) and in its log; by default its name
    label: str = ""
    # the streaming endpoint: a request path ending with it is this API (serve answers it); by
    # default the path after the model it names (":streamGenerateContent"), else the whole path
    route: str = ""
    # the converters that read its streams, the default first; by default the one named as the API
    converters: tuple[str, ...] = ()
    # the shape of its error bodies (see error_body); by default its provider's
    error_style: str = ""
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
    # its tool calls' arguments are a JSON string, where "" is not a way to say "no arguments"
    # (an empty string is the model's fault, model_args_empty)
    arguments_as_text: bool = False
    # its stream may come framed as one JSON array: a replay notes it (a wire quirk)
    json_array_quirk: bool = False
    # a request of no known shape is taken for this API: its provider, its error style (one row)
    default: bool = False
    # a pattern a request path (lower case) matches when it is for this API's provider, on any
    # of its endpoints (the proxy routes it there)
    provider_path: str | None = None
    provider_header: str = ""  # a request header only its provider's clients send (lower case)
    # a pattern a request path matches when its error answer takes this API's shape though no
    # endpoint answers it (serve's 404)
    error_path: str | None = None
    sdk: str = ""  # its official Python SDK's module, when that takes an httpx-style client
    base_url_env: str = ""  # the environment variable its official SDK reads its base URL from
    # request headers its official SDK sends that say how to read the request (a replay of the
    # request sends them again)
    sdk_headers: tuple[str, ...] = ()
    sdk_agent: str = ""  # how its official SDK's User-Agent starts ("OpenAI/")
    # who points a client at a proxy through base_url_env (the proxy's banner): "Anthropic / Claude"
    sdk_label: str = ""
    short: str = ""  # a shorter name for narrow columns (the proxy's journal): "chat"
    sigv4: str = ""  # the AWS service its requests are signed for (SigV4), when they are
    # record's --provider name for any server that speaks it (OpenAI-compatible ones): no default
    # base URL and no key variable, so an official key is never sent to an arbitrary host
    compatible_provider: str = ""
    # how its clients reach it: "http" (a request, a streamed answer: record, serve, the proxy)
    # and/or "websocket" (a session of messages over one connection: the proxy relays it, serve
    # answers the upgrade at its route)
    transports: tuple[str, ...] = ("http",)
    # older names of its encoder (``--emit openai-sse``, Chat's): names of the encoder only,
    # not of the API
    encoder_aliases: tuple[str, ...] = ()
    # the package that holds the API's parts (``decoder``, ``encoder``, ``request``...): the
    # module its row is registered from, filled in by the table when a row leaves it empty
    package: str = ""
    # the top-level keys of an event's JSON object of which its detect part's ``sniff_json``
    # reads one at least to claim it (``["jsonrpc"]``: MCP): the part is imported and asked only
    # for an object holding one of them (a test holds every built-in to its list); ``["*"]``:
    # asked of every object; empty: never (a part without ``sniff_json``)
    json_keys: tuple[str, ...] = ("*",)
    # the SSE event names (or event-stream frames' :event-type) of its streams, a name ending in
    # "*" standing for every name that begins with the rest ("response.*"): an event so named
    # is this API's (its default converter), told from the row without importing a part;
    # ["*"]: its detect part's ``sniff_event`` is asked; empty: its events carry no name
    event_names: tuple[str, ...] = ("*",)
    # "KEY=VALUE": an event's JSON object whose top-level KEY is the string VALUE is this API's,
    # told from the row before any detect part is asked (a value no other API's objects hold at
    # that key: Chat's "object=chat.completion.chunk"); its part's ``sniff_json`` then only picks
    # among its converters, when it has more than one
    json_values: tuple[str, ...] = ()

    # the named tuple's names, kept (filled in below the class)
    _fields: ClassVar[tuple[str, ...]]
    _field_defaults: ClassVar[dict[str, Any]]

    def __post_init__(self) -> None:
        if not self.label:
            force_setattr(self, "label", self.name)
        if not self.route:
            force_setattr(self, "route", self.path.rpartition("{model}")[2])
        if not self.converters:
            force_setattr(self, "converters", (self.id,))
        if not self.error_style:
            force_setattr(self, "error_style", self.provider)
        for listed in self.json_values:
            key, equals, _ = listed.partition("=")
            if not key or not equals:
                raise ValueError(f"'json_values' entry {listed!r} is not KEY=VALUE")

    def _replace(self, **changes: Any) -> "WireApi":
        """The row with ``changes`` (as a named tuple's ``_replace``)."""
        return msgspec.structs.replace(self, **changes)

    @classmethod
    def from_package(cls, package: str) -> "WireApi":
        """The row of the API package ``package`` (its ``__name__``) as its manifest gives it:
        a JSON object of the row's fields, a list for a tuple; ``package`` is where its parts
        are. A manifest that is not one gives a :class:`ManifestError` naming it. The manifest
        is read through the package's parent, without importing the package (the table reads
        every built-in API's row at start-up), and once: the package's ``API`` and the table's
        row are one object."""
        return _manifest_row(package)

    @property
    def converter(self) -> str:
        """The converter its recordings get unless their stream says otherwise."""
        return self.converters[0]

    @property
    def http(self) -> bool:
        """Its clients send HTTP requests (``record`` can make one, ``serve`` answers them)."""
        return "http" in self.transports

    @property
    def websocket(self) -> bool:
        """Its clients open WebSocket sessions (at its route)."""
        return "websocket" in self.transports

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

    def claims_path(self, path: str) -> bool:
        """A (lower case) request path is for this API's provider (:attr:`provider_path`)."""
        return self.provider_path is not None and bool(_pattern(self.provider_path).search(path))

    def names_event(self, name: str) -> bool:
        """An event named ``name`` is one of this API's, as its row's :attr:`event_names` list
        them (a row that lists ``"*"`` leaves that to its detect part: ``False`` here)."""
        for listed in self.event_names:
            if listed == "*":
                continue
            if name == listed or (listed.endswith("*") and name.startswith(listed[:-1])):
                return True
        return False

    def errs_on(self, path: str) -> bool:
        """A request path no endpoint answers takes this API's error shape (:attr:`error_path`)."""
        return self.error_path is not None and bool(_pattern(self.error_path).search(path))

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


WireApi._fields = WireApi.__struct_fields__
WireApi._field_defaults = {
    f.name: f.default for f in msgspec.structs.fields(WireApi) if f.default is not msgspec.NODEFAULT
}


# a manifest decoded into its row (a field the row does not have is an error, not left out)
_DECODER = msgspec.json.Decoder(WireApi)


def _row_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """A manifest's fields checked against the row's, its lists made tuples."""
    defaults = WireApi._field_defaults
    missing = [f for f in WireApi._fields if f not in defaults and f not in fields]
    if missing:
        raise ManifestError(f"the row's {missing[0]!r} is missing")
    row: dict[str, Any] = {}
    for name, value in fields.items():
        if name == "package":
            raise ManifestError("'package' is the manifest's own package, not a field")
        if name not in WireApi._fields:
            raise ManifestError(f"no row field {name!r}")
        allowed, words = _JSON_TYPES[type(defaults.get(name, ""))]
        if not isinstance(value, allowed) or (
            isinstance(value, list) and not all(isinstance(v, str) for v in value)
        ):
            raise ManifestError(f"{name!r} must be {words}, not {json.dumps(value)}")
        row[name] = tuple(value) if isinstance(value, list) else value
    return row


@functools.cache
def _manifest_row(package: str) -> WireApi:
    try:
        data = _read_beside(package, MANIFEST)
        # a manifest msgspec takes as a row (every field of the right type, none unknown, no
        # "package") is one: decoded into the row at once. Anything else is read again below,
        # field by field, for the error that names what is wrong.
        try:
            row = _DECODER.decode(data)
        except (msgspec.ValidationError, msgspec.DecodeError):
            row = None
        if row is not None and b'"package"' not in data:
            return msgspec.structs.replace(row, package=package)
        fields = json.loads(data)
        if not isinstance(fields, dict):
            raise ManifestError("a manifest is one JSON object of the row's fields")
        row_fields = _row_fields(fields)
        try:
            return WireApi(package=package, **row_fields)
        except ValueError as exc:  # a value the row refuses (a json_values entry)
            raise ManifestError(str(exc)) from None
    except OSError as exc:
        problem = f"cannot be read: {exc.strerror or exc}"
    except ManifestError as exc:
        problem = str(exc)
    except ValueError as exc:  # not JSON, or not UTF-8
        problem = f"not JSON: {exc}"
    raise ManifestError(f"{_manifest_path(package)}: {problem}")


def _read_beside(package: str, name: str) -> bytes:
    """The file ``name`` of ``package``, read without importing the package: through its
    parent's loader (imported already), else (a plugin's top-level package, or one whose parent
    is a namespace package) through its own, found."""
    parent, _, leaf = package.rpartition(".")
    spec = getattr(sys.modules.get(parent), "__spec__", None) if parent else None
    if spec is not None and spec.origin is not None:
        where = os.path.join(os.path.dirname(spec.origin), leaf, name)
    else:
        spec = importlib.util.find_spec(package)
        if spec is None or spec.origin is None:
            raise OSError("its package's loader reads no data files")  # a namespace package
        where = os.path.join(os.path.dirname(spec.origin), name)
    get_data = getattr(spec.loader, "get_data", None)  # importlib's loaders of files have it
    if get_data is None:  # a loader that cannot read files beside its modules
        raise OSError("its package's loader reads no data files")
    data: bytes = get_data(where)
    return data


def _manifest_path(package: str) -> str:
    """Where the manifest of ``package`` is (or would be), for an error to name."""
    spec = importlib.util.find_spec(package)
    folder = os.path.dirname(spec.origin) if spec and spec.origin else package.replace(".", "/")
    return os.path.join(folder, MANIFEST)


@functools.cache
def _pattern(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)
