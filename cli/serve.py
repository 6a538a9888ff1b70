"""``streamtool serve PATH...``: play recordings back over real HTTP to real clients."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from .errors import fail, user_errors
from .main import app

_PATHS = {
    "openai-chat": "/v1/chat/completions",
    "kimi-k2": "/v1/chat/completions",
    "openai-responses": "/v1/responses",
    "anthropic": "/v1/messages",
    "gemini": "/v1beta/models/{model}:streamGenerateContent",
}


@app.command()
def serve(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Recordings (.jsonl), raw SSE bodies (.sse, .txt), or folders of them."
        ),
    ],
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", help="Port to listen on (0: any free port).")
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
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No request log.")] = False,
) -> None:
    """Answer the provider endpoints with recorded streams, byte for byte.

    A request gets the recording named by its X-Streamtool-Recording header, else the one for
    its model, else the only one for that endpoint.
    """
    # the server stack is imported only by this command: every other command starts fast
    from streamtool.core.net.playback import Playback, parse_speed
    from streamtool.core.net.server import Library, bind, create_app, run_server

    with user_errors():
        library = Library.from_paths(paths)
    try:
        playback = Playback(
            speed=parse_speed(speed),
            rechunk=rechunk,
            stall=stall,
            stall_after=stall_after,
            cut_after=cut_after,
        )
    except ValueError as exc:
        fail(str(exc))
    try:
        sock = bind(host, port)
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
    real_port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    err = sys.stderr
    n = len(library.recordings)
    err.write(
        f"streamtool: serving {n} recording{'s' if n != 1 else ''} on http://{shown}:{real_port}\n"
    )
    for rec in library.recordings:
        where = _PATHS.get(rec.api or "", "any endpoint (API unknown)")
        where = where.replace("{model}", rec.model or "MODEL")
        flags = [f"ends: {rec.ended}, served broken off"] if rec.broken else []
        if rec.status >= 400:
            flags.append(f"HTTP {rec.status}")
        extra = f" [{', '.join(flags)}]" if flags else ""
        err.write(f"  {rec.name}: {rec.model or '-'} on {where}{extra}\n")
    if n > 1:
        err.write("  pick one per request by model, or with the X-Streamtool-Recording header\n")
    err.flush()
    run_server(
        create_app(library, playback),
        sock,
        log_level="warning" if quiet else "info",
        access_log=not quiet,
    )
