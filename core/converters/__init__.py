"""Converter registry and auto-detection.

Converters are plugins: registered by name in the ``streamtool.converters`` entry-point group
(the built-ins below in streamtool's own ``pyproject.toml``), each imported only when used (see
:mod:`streamtool.core.plugins.registry`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ..plugins.registry import CONVERTERS

if TYPE_CHECKING:
    from ..model.records import Header
    from ..plugins.wire_api import WireApi
    from ..wire.sse import SSEEvent
    from .base import Converter

# Importing this module imports no converter, nor the table of wire APIs: ``--help`` reads only
# the built-in names below.

# the built-in converters, as registered in pyproject.toml's "streamtool.converters" group
BUILTIN_CONVERTERS: dict[str, str] = CONVERTERS.builtins


class UnknownConverter(ValueError):
    pass


def converter_names() -> list[str]:
    """Every converter's name: the built-ins, then those installed plugins register."""
    return CONVERTERS.names()


def is_converter(name: str) -> bool:
    return name in CONVERTERS


def check_converter_name(name: str) -> None:
    """Raise :class:`UnknownConverter` (naming the valid ones) unless ``name`` is ``auto`` or a
    registered converter."""
    if name != "auto" and name not in CONVERTERS:
        raise UnknownConverter(
            f"unknown converter {name!r}; valid: auto, {', '.join(converter_names())}"
        )


def make_converter(name: str) -> Converter:
    if name == "auto":
        raise UnknownConverter("'auto' picks a converter; it is not one")
    try:
        cls = CONVERTERS.load(name)
    except KeyError:
        check_converter_name(name)
        raise
    from .base import Converter

    converter = cls()
    if not isinstance(converter, Converter):
        raise UnknownConverter(
            f"converter {name!r} ({cls.__module__}.{cls.__qualname__}) is not a Converter"
        )
    return converter


def detect_from_header(header: Header) -> str | None:
    """The converter a recording header points to (its ``api``, then URL, then provider).

    When that is an API's default converter, the API's ``detect`` part may pick another of its
    converters by the header (``sniff_header``: the model, say).
    """
    name = _detect_from_header(header)
    if name is None:
        return None
    from ..plugins import api_for_converter, part

    api = api_for_converter(name)
    # only an API with more than one converter has another to pick
    if api is not None and name == api.converter and len(api.converters) > 1:
        sniff = getattr(part(api, "detect"), "sniff_header", None)
        if sniff is not None:
            return sniff(header) or name
    return name


def _detect_from_header(header: Header) -> str | None:
    from urllib.parse import urlsplit

    from ..plugins import api_for_path, api_for_provider, converter_named

    if header.api:
        name = converter_named(str(header.api))
        if name:
            return name
    url = header.url
    if url:
        api = api_for_path(urlsplit(url).path, hosted=True)
        if api is not None:
            return api.converter
    api = api_for_provider(header.provider or "")
    return api.converter if api is not None else None


class _InOrder:
    """Answers made from rows in the table's order, each row read when the answers made from
    the ones before it did not tell (``make``: a row's askers, none for a row that tells
    nothing this way): a question answered by an early row reads the rows up to it. Safe from
    several threads: one at a time reads the next row, and the askers only grow."""

    def __init__(
        self,
        rows: Iterator[WireApi],
        make: Callable[[WireApi], list[Callable[[Any], str | None]]],
        lock: Any,
    ) -> None:
        self._rows = rows  # the rows not read yet
        self._make = make
        self._askers: list[Callable[[Any], str | None]] = []  # grows only, in table order
        self._lock = lock

    def ask(self, question: Any) -> str | None:
        """The first answer, in the table's order, or ``None`` when no row tells."""
        asked = 0
        while True:
            askers = self._askers
            for ask in askers[asked:]:
                found = ask(question)
                if found is not None:
                    return found
            asked = len(askers)
            if not self._read_next() and len(self._askers) == asked:
                return None  # every row read, and every asker asked

    def _read_next(self) -> bool:
        """Read up to the next row that tells; ``False`` when none is left."""
        with self._lock:
            for api in self._rows:
                made = self._make(api)
                if made:
                    self._askers.extend(made)
                    return True
            return False


class _Sniffers:
    """How some APIs tell their events, each part imported as it is needed. By the event's
    name: the rows in table order, each read when the ones before it did not answer (no two APIs
    name an event alike, so the first answer is the answer, as when every row was asked): a row
    that lists its ``event_names`` answers from the row, no part imported; one that lists
    ``*`` asks its ``detect`` part's ``sniff_event``. By its JSON: first the rows'
    ``json_values`` in the same way (an object naming its type outright), then the parts of the
    APIs whose row's ``json_keys`` the object holds one of (``*``: any object), imported as an
    object first needs them and asked in the order of their ``RANK``: the parts left out are
    those whose sniffer reads none of the object's keys, so the answer is the one every part
    asked in that order would give."""

    def __init__(self, rows: Callable[[], Iterator[WireApi]]) -> None:
        import threading

        self._rows = rows  # the APIs' rows in the table's order, each read as it is reached
        self._every: tuple[WireApi, ...] | None = None  # every row, once the JSON needs them
        self._loading = threading.Lock()  # one thread at a time reads the next row or part
        self._named = _InOrder(rows(), _event_sniffers, self._loading)
        self._valued = _InOrder(rows(), _value_sniffers, self._loading)
        # the JSON sniffers imported so far, by API, and the ranked lists per set of APIs asked
        self._json: dict[str, tuple[int, Callable[[dict[str, Any]], str | None]] | None] = {}
        self._ranked: dict[frozenset[str], tuple[Callable[[dict[str, Any]], str | None], ...]] = {}

    def by_event(self, name: str) -> str | None:
        """The converter an event's name points to, the APIs asked in table order."""
        return self._named.ask(name)

    def _all(self) -> tuple[WireApi, ...]:
        if self._every is None:
            self._every = tuple(self._rows())
        return self._every

    def by_object(self, obj: dict[str, Any]) -> str | None:
        """The converter an event's JSON object points to: the API whose row's ``json_values``
        it holds one of, else the sniffers of the APIs that may claim it (see the class's
        docstring), lower ``RANK`` first."""
        told = self._valued.ask(obj)
        if told is not None:
            return told
        wanted = frozenset(
            api.id
            for api in self._all()
            if "*" in api.json_keys or any(k in obj for k in api.json_keys)
        )
        ranked = self._ranked.get(wanted)
        if ranked is None:
            ranked = self._ranked[wanted] = self._rank(wanted)
        for sniff in ranked:
            found = sniff(obj)
            if found is not None:
                return found
        return None

    def _rank(self, wanted: frozenset[str]) -> tuple[Callable[[dict[str, Any]], str | None], ...]:
        from ..plugins import part

        with self._loading:
            for api in self._all():
                if api.id in wanted and api.id not in self._json:
                    detect = part(api, "detect")
                    sniff = getattr(detect, "sniff_json", None)
                    rank = getattr(detect, "RANK", _LAST)
                    self._json[api.id] = None if sniff is None else (rank, sniff)
            found = [self._json[api.id] for api in self._all() if api.id in wanted]
        return tuple(sniff for _, sniff in sorted((f for f in found if f), key=lambda f: f[0]))


def _pick(api: WireApi, obj: dict[str, Any]) -> str:
    """The converter of an object ``api``'s row told as its: its default, or (an API with more
    than one) the one its detect part's ``sniff_json`` picks."""
    if len(api.converters) > 1:
        from ..plugins import part

        sniff = getattr(part(api, "detect"), "sniff_json", None)
        found = sniff(obj) if sniff is not None else None
        if found is not None:
            return str(found)
    return api.converter


def _event_sniffers(api: WireApi) -> list[Callable[[str], str | None]]:
    """How ``api`` tells an event by its name: the names its row lists, then (a row listing
    ``*``) its detect part's ``sniff_event``; none when it tells none."""
    from ..plugins import part

    ask = getattr(part(api, "detect"), "sniff_event", None) if "*" in api.event_names else None
    if ask is None and all(listed == "*" for listed in api.event_names):
        return []  # no name listed, and no part to ask

    def sniff(name: str) -> str | None:
        if api.names_event(name):
            return api.converter
        return ask(name) if ask is not None else None

    return [sniff]


def _value_sniffers(api: WireApi) -> list[Callable[[dict[str, Any]], str | None]]:
    """How ``api`` tells an event's JSON object by the ``KEY=VALUE`` pairs its row lists
    (``json_values``); none when it lists none."""
    if not api.json_values:
        return []
    pairs = [(key, value) for key, _, value in (v.partition("=") for v in api.json_values)]

    def sniff(obj: dict[str, Any]) -> str | None:
        return _pick(api, obj) if any(obj.get(k) == v for k, v in pairs) else None

    return [sniff]


# the RANK of a detect part that gives none: after those that do
_LAST = 1_000_000


@functools.cache
def _sniffers(tier: str) -> _Sniffers:
    from ..plugins.table import builtin_rows, plugin_apis

    return _Sniffers(builtin_rows if tier == "builtin" else lambda: iter(plugin_apis()))


def _tiers(plugins: bool | None) -> Iterator[_Sniffers]:
    """The built-in APIs' sniffers (``plugins`` not True), then the plugins' (not False)."""
    if plugins is not True:
        yield _sniffers("builtin")
    if plugins is not False:
        yield _sniffers("plugins")


def detect_from_event(event: SSEEvent, *, plugins: bool | None = None) -> str | None:
    """The converter one event's shape points to, or ``None`` if it does not tell.

    Each API says whether an event is its API's: by the event's name, its row's
    ``event_names`` (or, a row listing ``*``, its ``detect`` part's ``sniff_event``; the APIs
    asked in the table's order: no two name an event alike), then by the event's JSON object,
    its ``detect`` part's ``sniff_json`` (light on purpose: this may import several; the
    first object of a JSON array), the parts asked in the order of their ``RANK``, lower first: an
    object that names its type outright is read before one known by its keys. The built-in
    APIs are asked first, the plugins' after; ``plugins=False`` asks the built-ins only,
    ``plugins=True`` the plugins only (a caller with several events asks the built-ins about
    all of them before it reads the plugins).
    """
    name = event.event
    obj: Any = _UNREAD
    for sniffers in _tiers(plugins):
        if name:
            found = sniffers.by_event(name)
            if found is not None:
                return found
        if obj is _UNREAD:
            obj = _json_object(event.data)
        if obj is not None:
            found = sniffers.by_object(obj)
            if found is not None:
                return found
    return None


_UNREAD = object()


def _json_object(data: str) -> dict[str, Any] | None:
    """An event's data as a JSON object (the first of an array of them), else ``None``."""
    from ..wire import fastjson

    try:
        obj: Any = fastjson.loads(data)
    except ValueError:
        return None
    if isinstance(obj, list) and obj and isinstance(obj[0], dict):
        obj = obj[0]
    return obj if isinstance(obj, dict) else None
