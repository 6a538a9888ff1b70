"""Streams made for the request: a script of turns served as it is, and recordings served in
whichever wire API a request comes in (``serve SCRIPT``, ``serve --translate``).

Both are :class:`~.library.Library` objects the server asks for the recording that answers a
request, as it asks a tape. The answer is made on demand: the chosen reply emitted in the API
of the route the request came on (any of the four APIs the emitters speak), paced as its
script or its recording says, kept for the next request that needs the same stream, and, with
``--mutate``, given the quirks asked for as it is made.

- :class:`ScriptLibrary`: each request gets a turn (:class:`~..drive.script.TurnPicker`: the
  turn's ``match`` on the request's last user message or tool result, else the next turn in
  order). The reply's model is the script's, else the request's.
- :class:`TranslateLibrary`: each request gets the recorded exchange whose request holds the
  same conversation (:mod:`..drive.conversation`: roles, text, tool calls and results, whatever
  API either was sent in), in recorded order as a tape. A request in the recording's own API
  gets the recording byte for byte; any other gets its meaning re-emitted. One recording file
  served alone answers every request (as ``serve ONE_RECORDING`` does without ``--translate``),
  whatever its conversation, even a raw body that holds no request.

A request nothing answers is a miss: HTTP 404 in the API's error shape, saying why (key-shaped
strings in it masked).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypedDict, Unpack

from ..drive.conversation import (
    Conversation,
    as_json,
    conversation_apis,
    has_conversation,
    last_input,
    read_conversation,
)
from ..drive.script import Script, TurnPicker, load_script
from ..drive.translate import recording_of, reply_from_file
from ..exchange.playback import Playback
from ..exchange.tape_match import Exchange, Matcher, MatchRules
from ..outputs.emit import Reply, emitter
from ..plugins import WireApi, api_for_converter, api_table, served_api
from ..recording.secrets import redact_keys
from .library import Incoming, Library, NoMatch, Recording, SelectionError, ServingLibrary
from .listen import LibraryServer
from .service import ServiceConfig, build_service
from .tape import load_exchanges

SUBJECT_WIDTH = 80  # characters of a request's last message shown in a miss


def route_api(request: Incoming) -> WireApi:
    """The API of the route a request came on, when an emitter speaks it (else a 404); a
    request that does not ask for a stream is refused (400) before it takes a turn."""
    api = served_api(request.path)
    if api is None or not has_conversation(api.id):
        known = conversation_apis()
        names = ", ".join(a.label for a in api_table() if a.id in known)
        raise SelectionError(
            404, f"streamtool makes streams for the {names} endpoints, not {request.path}"
        )
    body = request.body
    if not api.stream_in_path and not (isinstance(body, dict) and body.get("stream") is True):
        raise SelectionError(400, "streamtool serve replays streams: send stream: true")
    return api


def emitted_recording(reply: Reply, api: WireApi, name: str, model: str) -> Recording:
    """A reply emitted in ``api``, as a recording the server plays (its recording kept in
    ``origin`` for the mutations)."""
    emitted = emitter(api.id)(reply)
    header, chunks, end = recording_of(emitted, api.id, model=model)
    reads: list[tuple[float | None, bytes]] = [
        (c.t, c.data.encode("utf-8") if isinstance(c.data, str) else c.data) for c in chunks
    ]
    return Recording(
        name=name,
        path=name,
        api=api.converter,
        model=model or None,
        status=emitted.status,
        headers=[("content-type", emitted.content_type)],
        chunks=reads,
        size=sum(len(d) for _, d in reads),
        ended=end.reason,
        endpoint=api.route,
        origin=(header, chunks, end),
    )


class EmittingLibrary(ServingLibrary):
    """A library whose streams are made on demand (see the module's docstring)."""

    def __init__(self) -> None:
        super().__init__([])
        self._made: dict[tuple[Any, ...], Recording] = {}

    def prepare(self, rec: Recording) -> Recording:
        return rec  # changed as it was made (:meth:`_kept`)

    @property
    def needs_prepare(self) -> bool:
        return False

    def _kept(self, key: tuple[Any, ...], make: Callable[[], Recording]) -> Recording:
        rec = self._made.get(key)
        if rec is None:
            rec = make()
            if self._change is not None:
                what = self._change(rec)
                if what:
                    self.mutated[rec.name] = what
            self._made[key] = rec
            self.recordings.append(rec)
            self.by_name.setdefault(rec.name, rec)
        return rec


def _shown(text: str) -> str:
    text = redact_keys(" ".join(text.split()))
    return repr(text if len(text) <= SUBJECT_WIDTH else text[: SUBJECT_WIDTH - 3] + "...")


class ScriptLibrary(EmittingLibrary):
    """A script of turns, served (see the module's docstring). Its streams are named
    ``turn-N`` (1-based), in whichever API they are made."""

    def __init__(self, script: Script) -> None:
        super().__init__()
        self.script = script
        self.picker = TurnPicker(script.turns)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> ScriptLibrary:
        """Raises :class:`~..drive.script.ScriptError` for a script that is not valid."""
        return cls(load_script(path))

    def _choose(self, request: Incoming) -> Recording:
        api = route_api(request)
        conversation = read_conversation(api.id, request.body)
        subject = last_input(conversation)
        n = self.picker.pick(subject)
        if n is None:
            wanted = "; ".join(f"{i + 1}: {t.describe()}" for i, t in enumerate(self.script.turns))
            raise NoMatch(
                f"no turn of the script {Path(self.script.path).name} accepts this request "
                f"(its last message: {_shown(subject)}); the turns take: {wanted}"
            )
        model = self.script.model or (request.model or "")
        name = f"turn-{n + 1}"
        turn = self.script.turns[n]

        def make() -> Recording:
            reply = dataclasses.replace(turn.reply, model=model)
            return emitted_recording(reply, api, name, model)

        return self._kept((n, api.id, model), make)


@dataclass(slots=True)
class _Exchange:
    """A recorded exchange as translation serves it (``api`` None: a raw body whose API only
    its replay tells)."""

    rec: Recording
    api: WireApi | None
    conversation: Conversation
    reply: Reply | None = field(default=None, repr=False)


# every conversation goes to one endpoint of the matcher: the API a request is in does not count
_ANY_API = "conversation"


def _matched(conversation: Conversation) -> dict[str, Any]:
    return {"messages": as_json(conversation)}


def _readable(api: WireApi | None) -> bool:
    """An API whose streams translation reads and makes (else a raw body of unknown API)."""
    return api is not None and has_conversation(api.id)


class TranslateLibrary(EmittingLibrary):
    """Recorded exchanges served in any API (see the module's docstring). A stream re-emitted
    is named ``<recording>.<api>``. ``skipped``: recordings left out, and why. ``alone``: the
    one recording answers every request, whatever it holds (one file served)."""

    def __init__(self, recordings: Sequence[Recording], *, alone: bool = False) -> None:
        super().__init__()
        self.exchanges: list[_Exchange] = []
        self.skipped: list[tuple[str, str]] = []
        self.sources = list(recordings)
        self.alone = alone and len(self.sources) == 1
        if self.alone:
            rec = self.sources[0]
            api = api_for_converter(rec.api)
            self.exchanges.append(_Exchange(rec, api if _readable(api) else None, ()))
            recordings = []
        for rec in recordings:
            api = api_for_converter(rec.api)
            if rec.request_body is None:
                self.skipped.append((rec.name, "holds no request to match"))
            elif api is None or not has_conversation(api.id):
                label = api.label if api is not None else "an unknown API"
                self.skipped.append((rec.name, f"its request ({label}) cannot be read"))
            else:
                conversation = read_conversation(api.id, rec.request_body)
                self.exchanges.append(_Exchange(rec, api, conversation))
        # a tape's matching, on conversations: the exchanges are named by their position
        self.matcher = Matcher(
            [
                Exchange(str(i), _ANY_API, _matched(ex.conversation))
                for i, ex in enumerate(self.exchanges)
            ],
            MatchRules(ignore=()),
        )

    @classmethod
    def from_paths(cls, paths: Iterable[str | os.PathLike[str]]) -> TranslateLibrary:
        """One folder (a tape, or a folder of recordings: its finished exchanges, in order) or
        recording files. Raises :class:`RecordingError` for unusable input."""
        paths = list(paths)
        if len(paths) == 1 and Path(paths[0]).is_dir():
            recordings, skipped = load_exchanges(paths[0])
            library = cls(recordings)
            library.skipped[:0] = skipped
            return library
        return cls(Library.from_paths(paths).recordings, alone=len(paths) == 1)

    @property
    def rule(self) -> str:
        """Which recording a request gets, in a few words."""
        if self.alone:
            return "every request gets it"
        return "each request gets the recording whose request holds the same conversation"

    def _choose(self, request: Incoming) -> Recording:
        api = route_api(request)
        if self.alone:
            ex = self.exchanges[0]
        else:
            body = _matched(read_conversation(api.id, request.body))
            found = self.matcher.match(_ANY_API, body)
            if found is None:
                raise NoMatch(self._miss(body, request.path, request.secrets()))
            ex = self.exchanges[int(found.name)]
        if ex.api is not None and ex.api.id == api.id:
            return self._kept((ex.rec.name, api.id), lambda: ex.rec)

        def make() -> Recording:
            if ex.reply is None:
                ex.reply, _ = reply_from_file(ex.rec.path)
            return emitted_recording(ex.reply, api, f"{ex.rec.name}.{api.id}", ex.reply.model)

        return self._kept((ex.rec.name, api.id), make)

    def _miss(self, body: dict[str, Any], path: str, secrets: Sequence[str] = ()) -> str:
        where = redact_keys(path)
        if not self.exchanges:
            return f"no recorded exchange holds a request to match on {where}"
        miss = self.matcher.miss(_ANY_API, body, secrets=secrets)
        if miss.closest is None or miss.difference is None:
            return f"no recorded exchange has this conversation on {where}"
        return (
            f"no recorded exchange has this conversation on {where}; closest is "
            f"{self.exchanges[int(miss.closest)].rec.name} (request vs recording): "
            f"{miss.difference.describe(secrets)}"
        )


class EmittingServer(LibraryServer[EmittingLibrary]):
    """A script or translated recordings served from a background thread: ``.url``,
    ``.library`` and ``.served`` (the streams served, in order)."""


class ServingOptions(TypedDict, total=False):
    """How :func:`serving_script` and :func:`serving_translated` serve.

    ``speed``: ``None`` (the default) sends at once, ``1.0`` as recorded (or as the script
    says); ``max_gap``: the longest pause, in seconds, at any speed; ``mutate``: catalogue quirk
    ids given to every stream they apply to; ``log``: called with a line per request; ``port``:
    the port on 127.0.0.1 (``0``, the default: a free one)."""

    speed: float | None
    max_gap: float | None
    mutate: Sequence[str] | None
    log: Callable[[str], None] | None
    port: int


def _serving(make: Callable[[], EmittingLibrary], options: ServingOptions) -> EmittingServer:
    """The server of the library ``make`` builds (once ``options`` are known to be options)."""
    from .mutated_library import mutator

    unknown = sorted(options.keys() - ServingOptions.__optional_keys__)
    if unknown:  # as a keyword-only parameter of that name would be refused
        raise TypeError(f"unexpected keyword argument {unknown[0]!r}")
    library = make()
    playback = Playback(speed=options.get("speed"), max_gap=options.get("max_gap"))
    mutate = mutator(options.get("mutate") or None)
    config = ServiceConfig(playback=playback, log=options.get("log"), mutate=mutate)
    return EmittingServer(library, build_service(library, config).app, port=options.get("port", 0))


def serving_script(
    path: str | os.PathLike[str], **options: Unpack[ServingOptions]
) -> EmittingServer:
    """Serve a script of turns on 127.0.0.1 from a background thread.

    ``with serving_script("loop.yaml") as server:`` then point an SDK at ``server.url + "/v1"``
    (OpenAI) or ``server.url`` (Anthropic, Gemini). ``options``: :class:`ServingOptions`
    (``speed=None`` sends at once, ``1.0`` streams as the script says). Raises
    :class:`~..drive.script.ScriptError` for a script that is not valid.
    """
    return _serving(partial(ScriptLibrary.from_file, path), options)


def serving_translated(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    **options: Unpack[ServingOptions],
) -> EmittingServer:
    """Serve recordings (a tape, a folder, files) to clients of any API, from a background
    thread: each request gets the exchange whose conversation it holds, in the request's API.
    ``options``: :class:`ServingOptions`."""
    given = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    return _serving(partial(TranslateLibrary.from_paths, given), options)


__all__ = [
    "EmittingLibrary",
    "EmittingServer",
    "ScriptLibrary",
    "ServingOptions",
    "TranslateLibrary",
    "emitted_recording",
    "serving_script",
    "serving_translated",
]
