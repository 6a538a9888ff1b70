"""The table of wire APIs: every API package's row, and the lookups every part reads it with.

The table is the list of API packages registered in the ``streamtool.apis`` entry-point group
(streamtool's own the same way, :mod:`.registry`); each package's ``API`` is its row
(:class:`~.wire_api.WireApi`) and its other modules are its parts (:func:`part`): what an API
can do is which parts its package has. ``record`` builds requests from it, ``serve`` answers its
endpoints, the proxy, SDK capture and tapes name what they record by it, and the converter
registry picks a converter for a recorded URL with it.

Lookups try the built-in APIs first and read the installed plugins only when none of those
answers (the entry points cost some 10 ms), so a replay of a built-in API's recording never reads
them. Pure data and lookups: nothing here opens a socket or imports the network edge or an SDK.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import json
import sys
from collections.abc import Callable, Iterator, Mapping
from importlib.machinery import PathFinder
from types import ModuleType
from typing import Any, TypeVar
from urllib.parse import urlsplit

from .registry import APIS, CONVERTERS
from .wire_api import WireApi

T = TypeVar("T")


class ApiError(ValueError):
    """A registered API that cannot be used (its ``API`` is missing or not a row)."""


def _load(name: str) -> WireApi:
    target = APIS.target(name)
    module, _, attribute = target.partition(":")
    if name in APIS.builtins and attribute == "API":
        # a built-in API's row is its package's manifest (``API = WireApi.from_package``),
        # read without importing the package: a replay imports only the packages it uses
        return WireApi.from_package(module)
    row = APIS.load(name)
    if not isinstance(row, WireApi):
        raise ApiError(f"API {name!r} ({target}) is not a WireApi row")
    if not row.package:
        row = row._replace(package=target.partition(":")[0])
    return row


@functools.cache
def builtin_apis() -> tuple[WireApi, ...]:
    """The built-in APIs' rows, in the table's order."""
    return tuple(builtin_rows())


def builtin_rows() -> Iterator[WireApi]:
    """The built-in APIs' rows in the table's order, each manifest read as it is reached (once:
    a look-up that stops at its answer reads the manifests up to it, not all of them)."""
    return (_load(name) for name in APIS.builtins)


# the installed plugins' APIs that could not be loaded, and why (``streamtool converters``)
SKIPPED: dict[str, str] = {}


@functools.cache
def plugin_apis() -> tuple[WireApi, ...]:
    """The rows of the APIs installed plugins add (a plugin's name taken by a built-in aside).
    A plugin whose row cannot be loaded is left out (and noted in :data:`SKIPPED`): one broken
    package never breaks the look-ups of every other API."""
    rows = []
    for name in APIS.names():
        if name in APIS.builtins:
            continue
        try:
            rows.append(_load(name))
        except Exception as exc:  # an uninstallable plugin: any error of its import
            SKIPPED[name] = f"{type(exc).__name__}: {exc}"
    return tuple(rows)


def api_table() -> tuple[WireApi, ...]:
    """Every API: the built-ins, then the plugins'."""
    return builtin_apis() + plugin_apis()


def _tiers() -> Iterator[tuple[WireApi, ...]]:
    yield builtin_apis()
    yield plugin_apis()


def _first(found: Callable[[tuple[WireApi, ...]], T | None]) -> T | None:
    for rows in _tiers():
        answer = found(rows)
        if answer is not None:
            return answer
    return None


def _first_row(matches: Callable[[WireApi], bool]) -> WireApi | None:
    """The first row that ``matches``, in the table's order (the built-ins', then the
    plugins'): the built-ins' manifests are read as the look-up reaches them, so one answered
    by an early row reads only the manifests up to it (a replay's header, naming its API)."""
    for api in builtin_rows():
        if matches(api):
            return api
    return next((api for api in plugin_apis() if matches(api)), None)


@functools.cache
def has_part(api: WireApi, role: str) -> bool:
    """Whether an API's package has the part ``role``, found without importing the package
    (the command line's choices, read at start-up)."""
    if api.package in sys.modules:
        return importlib.util.find_spec(f"{api.package}.{role}") is not None
    spec = importlib.util.find_spec(api.package)  # its parent is imported, not the package
    if spec is None or spec.submodule_search_locations is None:
        return False
    where = list(spec.submodule_search_locations)
    return PathFinder.find_spec(f"{api.package}.{role}", where) is not None


@functools.cache
def part(api: WireApi, role: str) -> ModuleType | None:
    """The module ``role`` (``decoder``, ``encoder``, ``request``...) of an API's package, or
    ``None`` when the package (or it) is not there. Imported at once, found once: a part that
    is there but fails to import (a module it imports is missing) raises its error."""
    name = f"{api.package}.{role}"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name in (name, api.package):
            return None
        raise


def _route_matches(route: str, path: str) -> bool:
    """``path`` (lower case) ends with ``route`` (lower case); ``PART*SUFFIX``: ends with
    SUFFIX, and PART comes before it."""
    part_, star, suffix = route.rpartition("*")
    if not star:
        return path.endswith(route)
    return path.endswith(suffix) and part_ in path[: len(path) - len(suffix)]


def _longest(matches: list[tuple[int, WireApi]]) -> WireApi | None:
    """The API of the longest matching route (``/chat/completions`` before ``/completions``)."""
    return max(matches, key=lambda m: m[0])[1] if matches else None


@functools.cache
def _names(rows: tuple[WireApi, ...]) -> dict[str, WireApi]:
    found: dict[str, WireApi] = {}
    for api in rows:
        for name in api.names:
            found.setdefault(name, api)
    return found


def served_api(path: str, transport: str | None = None) -> WireApi | None:
    """The API whose streaming endpoint ``path`` ends with, letter for letter: what ``serve``
    answers, and where a recording made for it says it was sent. ``transport`` (``http``,
    ``websocket``): only the APIs reached that way."""
    return _first(
        lambda rows: _longest(
            [
                (len(a.route), a)
                for a in rows
                if path.endswith(a.route) and (transport is None or transport in a.transports)
            ]
        )
    )


def api_for_path(path: str, *, hosted: bool = False) -> WireApi | None:
    """The API a request path is for, streamed or not, in any letter case (the proxy, SDK
    capture); ``hosted`` also reads the paths other clouds host it at (a recorded URL)."""
    low = path.lower()

    def found(rows: tuple[WireApi, ...]) -> WireApi | None:
        matches = []
        for api in rows:
            routes = (api.route, *api.more_routes, *(api.hosted_routes if hosted else ()))
            for route in routes:
                if _route_matches(route.lower(), low):
                    matches.append((len(route), api))
        return _longest(matches)

    return _first(found)


@functools.cache
def _claimers(rows: tuple[WireApi, ...]) -> tuple[tuple[WireApi, Callable[..., Any]], ...]:
    found = []
    for api in rows:
        claim = getattr(part(api, "detect"), "claim_request", None)
        if claim is not None:
            found.append((api, claim))
    return tuple(found)


def api_for_request(
    method: str, headers: Mapping[str, str], body: Any
) -> tuple[WireApi, str] | None:
    """The API that claims a request by what it carries rather than by its path (its detect
    part's ``claim_request(method, headers, body)``: the name of the request, or ``None``),
    and that name. For APIs served at any path (an MCP server's endpoint is its own)."""

    def found(rows: tuple[WireApi, ...]) -> tuple[WireApi, str] | None:
        for api, claim in _claimers(rows):
            name = claim(method, headers, body)
            if name is not None:
                return api, name
        return None

    return _first(found)


def find_api(name: str) -> WireApi | None:
    """The API a name means (any of its :attr:`~WireApi.names`, in any letter case)."""
    low = name.lower()
    return _first(lambda rows: _names(rows).get(low))


def api_for_converter(converter: str | None) -> WireApi | None:
    """The API whose streams a converter reads."""
    return _first_row(lambda api: converter in api.converters)


def converter_named(name: str) -> str | None:
    """The converter a recording header's ``api`` points to: a converter named outright, else
    the default one of the API it names (the built-ins asked both ways before any plugin).

    A built-in converter is one of the built-in rows' converters (a test keeps the two equal),
    so the built-ins' registry answers the first question without reading their manifests."""
    low = name.lower()
    if low in CONVERTERS.builtins:  # a built-in converter named outright
        return low
    for api in builtin_rows():  # a built-in API named
        if low in api.names:
            return api.converter
    plugins = plugin_apis()
    if any(low in a.converters for a in plugins):
        return low
    found = next((a for a in plugins if low in a.names), None)
    return found.converter if found is not None else None


def api_for_provider(provider: str) -> WireApi | None:
    """The API of a provider that has only one (``anthropic``, ``gemini``, ``vertex``...);
    ``None`` for one with several (``openai``: the stream tells) or none."""
    low = provider.lower()
    if not low:
        return None
    for rows in _tiers():  # a built-in provider's APIs are all built-in: no plugin is read
        found = [a for a in rows if low == a.provider or low in a.provider_aliases]
        if found:
            return found[0] if len(found) == 1 else None
    return None


def model_in_path(path: str) -> str | None:
    """A model named in a (percent-decoded) request path the way an API of the table names it."""
    return _first(lambda rows: next((m for a in rows if (m := a.path_model(path))), None))


def official_hosts() -> dict[str, str]:
    """The official hosts (``api.openai.com``) and their providers (an API without an
    official host, ``base_url`` empty, has none)."""
    return {urlsplit(a.base_url).netloc: a.provider for a in api_table() if a.base_url}


def official_origins() -> dict[str, str]:
    """Each provider's official origin (``https://api.openai.com``), in table order (an API
    without an official host, ``base_url`` empty, has none: its requests need an upstream)."""
    origins: dict[str, str] = {}
    for api in api_table():
        if not api.base_url:
            continue
        parts = urlsplit(api.base_url)
        origins.setdefault(api.provider, f"{parts.scheme}://{parts.netloc}")
    return origins


def api_by_header(headers: Mapping[str, str]) -> WireApi | None:
    """The API whose provider's clients alone send one of the (lower-case) ``headers``."""
    return next(
        (a for a in api_table() if a.provider_header and a.provider_header in headers), None
    )


def sdk_apis() -> tuple[WireApi, ...]:
    """The APIs whose official SDK reads its base URL from the environment."""
    return tuple(a for a in api_table() if a.base_url_env)


def sdk_base_urls(origin: str) -> dict[str, str]:
    """Each official SDK's base URL variable, pointed at ``origin`` (with the path the official
    base URL has: ``OPENAI_BASE_URL`` -> ``origin + "/v1"``)."""
    urls: dict[str, str] = {}
    for api in sdk_apis():
        urls.setdefault(api.base_url_env, origin + urlsplit(api.base_url).path)
    return urls


def default_api() -> WireApi:
    """The API a request of no known shape is taken for (the row marked ``default``; else the
    table's first): its provider and its error style answer for it."""
    found = _first(lambda rows: next((a for a in rows if a.default), None))
    return found if found is not None else builtin_apis()[0]


@functools.cache
def error_api(style: str) -> WireApi:
    """The API that shapes the error bodies of a style: the first of that ``error_style`` whose
    package has an ``errors`` part; the default API's for a style none shapes."""
    found = _first(
        lambda rows: next(
            (a for a in rows if a.error_style == style and part(a, "errors") is not None), None
        )
    )
    return found if found is not None else default_api()


def error_shape(api: WireApi, status: int, message: str) -> dict[str, Any]:
    """An error as ``api`` answers it (its package's ``errors`` part, or the one of the API
    defining its ``error_style``)."""
    errors = part(api, "errors") or part(error_api(api.error_style), "errors")
    if errors is None:
        raise ApiError(f"API {api.id!r}: no errors part shapes its error bodies")
    shape: dict[str, Any] = errors.error_shape(status, message)
    return shape


def error_body(style: str, status: int, message: str) -> bytes:
    """An error in the shape an API's SDK reads its message from (a row's ``error_style``)."""
    return json.dumps(error_shape(error_api(style), status, message)).encode("utf-8")
