"""``streamtool serve PATH...``: play recordings back over real HTTP to real clients.

One folder is served as a tape: each request gets the recorded exchange whose request matches
it, in recorded order (index order, else file-name order). A tape with an index (or any folder
with ``--tape``) answers nothing else; a plain folder of recordings falls back to the recording
for the request's model. A folder of tapes is refused with the tapes it holds. A script of
turns (YAML, or JSON) is served as it is, and ``--translate`` answers every API's route from
recordings of any API (:mod:`streamtool.core.net.emitting`).
"""

import sys
from pathlib import Path
from typing import Annotated, Any, NamedTuple

import typer

from streamtool.core.plugins import api_for_converter

from . import listening
from .choices import complete_mutate
from .errors import fail, user_errors
from .main import app

# serve keeps the recorded pacing, but no pause lasts longer than this unless asked for: a damaged
# or absurd recorded time (t: 1e308) must never hold a client for ever.
SERVE_MAX_GAP = 60.0


# tapes' expiry (tape.json's max_age and on_expiry, for one server)
MaxAge = Annotated[
    str | None,
    typer.Option(
        "--max-age",
        metavar="DURATION",
        help="Tapes: an exchange recorded longer ago than this (7d, 12h, 30m) has "
        "expired (default: the tape's tape.json, else never).",
    ),
]
OnExpiry = Annotated[
    str | None,
    typer.Option(
        "--on-expiry",
        metavar="MODE",
        help="Tapes: an expired exchange is served with a warning (warn), answered 404 "
        "naming its age (fail), or recorded again with --record-missing (rerecord); "
        "default: warn.",
    ),
]


@app.command()
def serve(
    paths: Annotated[
        list[str],
        typer.Argument(
            help="Recordings (.jsonl), raw SSE bodies (.sse, .txt), one folder or store URL "
            "(a tape: s3://BUCKET/PREFIX, gs://...), or a script of turns (.yaml, .yml, .json)."
        ),
    ],
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int,
        typer.Option("--port", help="Port to listen on (0: any free port)."),
    ] = 8787,
    speed: Annotated[
        str,
        typer.Option(
            "--speed", help="Pacing: 1 = as recorded, 2 = twice as fast, max = no sleeps."
        ),
    ] = "1",
    rechunk: Annotated[
        int | None,
        typer.Option("--rechunk", help="Fault injection: re-cut bodies into N-byte writes."),
    ] = None,
    cut_after: Annotated[
        int | None,
        typer.Option("--cut-after", help="Fault injection: drop the connection after N bytes."),
    ] = None,
    stall: Annotated[
        float, typer.Option("--stall", help="Fault injection: pause SECONDS mid-stream.")
    ] = 0.0,
    stall_after: Annotated[
        int | None,
        typer.Option(
            "--stall-after", help="Where --stall pauses, in bytes (default: half the body)."
        ),
    ] = None,
    max_gap: Annotated[
        float,
        typer.Option(
            "--max-gap",
            help=(
                f"Cap every pause in a stream at SECONDS (default {SERVE_MAX_GAP:g}, so a"
                " damaged time never stalls a client for ever; inf keeps every recorded pause)."
            ),
        ),
    ] = SERVE_MAX_GAP,
    tape: Annotated[
        bool,
        typer.Option(
            "--tape",
            help="A folder without an index.jsonl answers only by request matching, as a tape "
            "with an index does (no fallback to the recording for the model).",
        ),
    ] = False,
    match_ignore: Annotated[
        list[str] | None,
        typer.Option(
            "--match-ignore",
            help="Tapes: a request field matching ignores (dotted paths, e.g. "
            "messages.*.cache_control); repeatable.",
        ),
    ] = None,
    record_missing: Annotated[
        bool,
        typer.Option(
            "--record-missing",
            help="Tapes: forward a request the tape does not hold to --upstream and add it "
            "to the tape.",
        ),
    ] = False,
    upstream: Annotated[
        str | None,
        typer.Option("--upstream", help="With --record-missing: where missing requests go."),
    ] = None,
    translate: Annotated[
        bool,
        typer.Option(
            "--translate",
            help="Answer a request on any API's route (chat.completions, responses, messages, "
            "streamGenerateContent) with the recording whose request holds the same "
            "conversation, re-emitted in the request's API.",
        ),
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No request log.")] = False,
    max_body: listening.MaxBody = "10MB",
    max_connections: Annotated[
        int | None,
        listening.max_connections_option(
            "Connections held open at most (default: what the open-file limit allows)."
        ),
    ] = None,
    header_timeout: listening.HeaderTimeout = listening.HEADER_TIMEOUT,
    body_timeout: listening.BodyTimeout = listening.BODY_TIMEOUT,
    mutate: Annotated[
        str | None,
        typer.Option(
            "--mutate",
            autocompletion=complete_mutate,
            help="Fault injection: apply these catalogue quirks (ID,ID or all) to every "
            "recording they apply to.",
        ),
    ] = None,
    max_age: MaxAge = None,
    on_expiry: OnExpiry = None,
) -> None:
    """Answer the provider endpoints with recorded streams, byte for byte.

    Files: a request gets the recording named by its X-Streamtool-Recording header, else the
    one for its model, else the only one for that endpoint.

    One folder is a tape: each request gets the next recorded exchange whose request body
    matches (recorded order: the index.jsonl's, else file names; a retried turn gets the
    retry's recording). With an index.jsonl, --tape or --record-missing, a request that
    matches nothing gets a 404 naming the closest exchange (with --record-missing it is
    forwarded to --upstream and added to the tape); a plain folder of recordings falls back to
    the rules for files. Unfinished exchanges (no end record, or not in the index) and files
    that are not the tape's own (symbolic links) are never served. A folder that holds only
    tapes is refused with their names: serve one of them.

    A script of turns (YAML or JSON) is served as it is: each request gets the first turn, from
    the one after the last served, whose match its last user message or tool result satisfies
    (a turn without match takes any), streamed in the API of the route it came on; after the
    last turn the script starts over. --translate serves recordings (a tape, a folder, files)
    to clients of any of those four APIs: a request gets the recording whose request holds the
    same conversation (roles, text, tool calls and results), re-emitted in its API (byte for
    byte in the recording's own); one recording file alone answers every request. A request
    nothing answers gets a 404 saying why.

    Ctrl-C (exit 130) or SIGTERM (exit 143) stops it at once: streams in progress are cut.
    """
    _serve(_Options(**locals()))  # the parameters, as given


class _Options(NamedTuple):
    """serve's options, as given."""

    paths: list[Path]
    host: str
    port: int
    speed: str
    rechunk: int | None
    cut_after: int | None
    stall: float
    stall_after: int | None
    max_gap: float
    tape: bool
    match_ignore: tuple[str, ...]
    record_missing: bool
    upstream: str | None
    translate: bool
    quiet: bool
    max_body: str
    max_connections: int | None
    header_timeout: float
    body_timeout: float
    mutate: str | None
    max_age: str | None = None
    on_expiry: str | None = None


def _serve(o: _Options) -> None:
    """Serve what the options say until interrupted."""
    from streamtool.core.exchange.store_layout import is_store_url

    # a store URL stays as it is (a path would fold its //)
    o = o._replace(
        paths=[p if is_store_url(str(p)) else Path(p) for p in o.paths],
        match_ignore=tuple(o.match_ignore or ()),
    )
    # the server stack is imported only by this command: every other command starts fast
    from streamtool.core.net.listen import run_server
    from streamtool.core.net.serve_choice import LibraryChoice, ServeRefused, choose_library
    from streamtool.core.net.service import ServiceConfig, build_service

    if not 0 <= o.port <= 65535:
        fail(f"--port must be a number from 0 to 65535 (0: any free port), not {o.port}")
    log = None if o.quiet else _log
    expiry = _expiry(o)
    choice = LibraryChoice(
        expiry=expiry,
        tape=o.tape,
        match_ignore=o.match_ignore,
        record_missing=o.record_missing,
        upstream=o.upstream,
        translate=o.translate,
        log=log,
    )
    try:
        with user_errors():
            chosen = choose_library(o.paths, choice)
    except ServeRefused as exc:
        fail(str(exc))
    playback, body_limit, body_time, limits = _settings(o)
    from streamtool.core.net.mutated_library import mutator

    try:
        config = ServiceConfig(
            playback=playback,
            log=log,
            on_miss=chosen.on_miss,
            mutate=mutator(o.mutate),
            max_body=body_limit,
            body_timeout=body_time,
        )
        service = build_service(chosen.library, config)
    except ValueError as exc:
        fail(str(exc))
    sock, origin = listening.listen(o.host, o.port)
    if chosen.made:
        _describe_made(chosen.library, o.paths, origin)
        if o.mutate is not None:
            sys.stderr.write(
                f"  each stream is made with the quirks of --mutate {o.mutate} that apply to it\n"
            )
    else:
        _describe(chosen, o, origin)
        if o.mutate is not None:
            sys.stderr.write(
                f"  each recording is served with the quirks of --mutate {o.mutate} that apply "
                "to it, worked out at its first request (the request log names them)\n"
            )
    sys.stderr.flush()
    stopped = run_server(
        service.app,
        sock,
        log_level="warning",  # serve logs its requests itself; uvicorn's INFO lines are noise
        access_log=False,
        limits=limits,
    )
    # Ctrl-C (130) or SIGTERM (143): the requests in progress were cut at once
    n = stopped.cut
    cut = f"; {n} request{'s' * (n != 1)} in progress cut" if n else ""
    sys.stderr.write(f"streamtool: serve stopped{cut}\n")
    raise typer.Exit(stopped.exit_code)


def _expiry(o: _Options) -> Any:
    """--max-age and --on-expiry as an Expiry (``None``: the tape's own settings)."""
    if o.max_age is None and o.on_expiry is None:
        return None
    from streamtool.core.exchange.store_layout import Expiry, parse_duration

    try:
        age = parse_duration(o.max_age) if o.max_age is not None else None
        return Expiry(age, o.on_expiry or "warn")
    except ValueError as exc:
        fail(f"--max-age/--on-expiry: {exc}")


def _settings(o: _Options) -> tuple[Any, int, float, Any]:
    """The playback, the request body's size and time limits, and the connection limits."""
    from streamtool.core.exchange.playback import Playback
    from streamtool.core.model.speed import parse_speed
    from streamtool.core.net.bodies import body_timeout as check_body_timeout
    from streamtool.core.net.guard import ConnectionLimits, connection_limit
    from streamtool.core.net.guard import header_timeout as check_header_timeout
    from streamtool.core.net.server import parse_size

    try:
        playback = Playback(
            speed=parse_speed(o.speed),
            rechunk=o.rechunk,
            stall=o.stall,
            stall_after=o.stall_after,
            cut_after=o.cut_after,
            max_gap=o.max_gap,
        )
    except ValueError as exc:
        fail(str(exc))
    try:
        body_limit = parse_size(o.max_body)
        body_time = check_body_timeout(o.body_timeout)
        # a request forwarded by --record-missing also holds its upstream connection and a file
        limits = ConnectionLimits(
            connection_limit(o.max_connections, 3 if o.record_missing else 1),
            check_header_timeout(o.header_timeout),
        )
    except ValueError as exc:
        fail(str(exc))
    return playback, body_limit, body_time, limits


def _describe(chosen: Any, o: _Options, origin: str) -> None:
    """What a tape, a folder or files serve, on stderr."""
    err = sys.stderr
    library = chosen.library
    n = len(library.recordings)
    what = f"{n} recording{'s' if n != 1 else ''}"
    if chosen.as_tape:
        what = f"the tape {o.paths[0]} ({n} exchange{'s' if n != 1 else ''})"
        if not chosen.strict:
            what = f"{o.paths[0]} as a tape ({n} recording{'s' if n != 1 else ''})"
    err.write(f"streamtool: serving {what} on {origin}\n")
    for rec in library.recordings:
        api = api_for_converter(rec.api)
        where = api.official_path if api is not None else "any endpoint (API unknown)"
        where = where.replace("{model}", rec.model or "MODEL")
        flags = [f"ends: {rec.ended}, served broken off"] if rec.broken else []
        if rec.status >= 400:
            flags.append(f"HTTP {rec.status}")
        extra = f" [{', '.join(flags)}]" if flags else ""
        err.write(f"  {rec.name}: {rec.model or '-'} on {where}{extra}\n")
    for name, reason in getattr(library, "skipped", []):
        err.write(f"  {name}: not served: {reason}\n")
    for message in getattr(library, "expired", []):
        err.write(f"  expired: {message}\n")
    if chosen.as_tape:
        err.write("  each request gets the next recorded exchange whose request matches\n")
        if not chosen.strict:
            err.write("  else the recording for its model (--tape: a 404 instead)\n")
    if chosen.on_miss is not None:
        err.write(f"  requests the tape does not hold go to {o.upstream} and are added to it\n")
    elif n > 1 and not chosen.as_tape:
        err.write("  pick one per request by model, or with the X-Streamtool-Recording header\n")


def _describe_made(library: object, paths: list[Path], origin: str) -> None:
    """What a script or --translate serves, on stderr."""
    from streamtool.core.net.emitting import ScriptLibrary, TranslateLibrary

    err = sys.stderr
    routes = "chat.completions, responses, messages and streamGenerateContent"
    if isinstance(library, ScriptLibrary):
        turns = library.script.turns
        n = len(turns)
        err.write(
            f"streamtool: serving the script {paths[0]} ({n} turn{'s' * (n != 1)}) on {origin}\n"
        )
        for i, turn in enumerate(turns):
            err.write(f"  turn-{i + 1}: {turn.describe()}\n")
        err.write(
            f"  in the API of each request's route ({routes}); after the last turn, the first\n"
        )
    elif isinstance(library, TranslateLibrary):
        n = len(library.exchanges)
        err.write(f"streamtool: serving {n} recording{'s' * (n != 1)} in any API on {origin}\n")
        for ex in library.exchanges:
            api = ex.api.label if ex.api is not None else "an API its replay tells"
            err.write(f"  {ex.rec.name}: recorded on {api}\n")
        for name, reason in library.skipped:
            err.write(f"  {name}: not served: {reason}\n")
        err.write(f"  {library.rule},\n  in the API of its route ({routes})\n")
    err.flush()


def _log(line: str) -> None:
    sys.stderr.write(f"streamtool: {line}\n")
    sys.stderr.flush()
