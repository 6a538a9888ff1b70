"""``streamtool proxy``: capture an agent's real traffic by changing only its base URL."""

import sys
from typing import Annotated, Any

import typer

from streamtool.core.plugins.registry import TRANSFORMS

from . import listening
from .choices import complete_proxy_view, complete_transform
from .errors import fail, user_errors
from .main import app
from .params import choice_option

VIEWS = ("journal", "tree", "none")


Out = Annotated[
    str,
    typer.Option(
        "--out",
        "-o",
        metavar="PATH",
        help="Folder for the recordings and their index, or a tape on object storage "
        "(s3://BUCKET/PREFIX, gs://, az://, file://): each exchange published as it ends.",
    ),
]


@app.command()
def proxy(
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", help="Port to listen on (0: any free port).")
    ] = 8788,
    out: Out = "streamtool-captures",
    upstream: Annotated[
        list[str] | None,
        typer.Option(
            "--upstream",
            help="Send every request to URL (path kept), or API=URL for one API "
            "(chat, responses, messages, gemini, or a provider: openai, anthropic, gemini, "
            "openrouter). Default: the official host of each API. Repeatable.",
        ),
    ] = None,
    timeout: Annotated[
        float,
        typer.Option("--timeout", help="Seconds an upstream read may stall before it is cut."),
    ] = 600.0,
    view: Annotated[
        str | None,
        choice_option(
            "--view",
            names=VIEWS,
            complete=complete_proxy_view,
            help="Live view: journal (one row per exchange), tree (the newest stream above "
            "the journal) or none. Default: journal (off a terminal: a line per exchange as "
            "it ends).",
        ),
    ] = None,
    transform: Annotated[
        str | None,
        choice_option(
            "--transform",
            names=TRANSFORMS.builtins,
            complete=complete_transform,
            help="kimi-k2: rewrite Kimi's special-token tool calls in Chat Completions "
            "streams into standard tool_calls (the recording keeps the upstream's bytes).",
        ),
    ] = None,
    max_connections: Annotated[
        int | None,
        listening.max_connections_option(
            "Agent connections held open at most (default: what the open-file limit "
            "allows, three descriptors each)."
        ),
    ] = None,
    header_timeout: listening.HeaderTimeout = listening.HEADER_TIMEOUT,
    body_timeout: listening.BodyTimeout = listening.BODY_TIMEOUT,
    max_body: listening.MaxBody = "10MB",
    max_recording_bytes: Annotated[
        str,
        typer.Option(
            "--max-recording-bytes",
            help="Largest recording (decoded body bytes): a stream that would grow past it "
            "ends there, its recording with reason limit, the agent's connection cut.",
        ),
    ] = "1GB",
) -> None:
    """Forward an agent's requests to its provider and record every generating exchange.

    Point the agent at the proxy, e.g. OPENAI_BASE_URL=http://127.0.0.1:8788/v1 or
    ANTHROPIC_BASE_URL=http://127.0.0.1:8788; nothing else changes for it.

    Ctrl-C (exit 130) or SIGTERM (exit 143) stops it at once: exchanges in progress are cut,
    their recordings end interrupted and are indexed with the rest.
    """
    from streamtool.core.net.bodies import body_timeout as check_body_timeout
    from streamtool.core.net.guard import ConnectionLimits, connection_limit
    from streamtool.core.net.guard import header_timeout as check_header_timeout
    from streamtool.core.net.proxy import (
        FDS_PER_CONNECTION,
        ProxyApp,
        ProxyConfig,
        parse_upstreams,
    )
    from streamtool.core.net.server import parse_size

    if view is None:
        # on a terminal the journal's rows grow while they stream; off one it prints a line per
        # exchange when it ends
        view = "journal"
    if view not in VIEWS:
        fail(f"--view {view!r}: use one of {', '.join(VIEWS)}")
    if transform is not None and transform not in TRANSFORMS:
        fail(f"--transform {transform!r}: use one of {', '.join(TRANSFORMS.names())}")
    if not timeout > 0:
        fail("--timeout must be more than 0 seconds")
    try:
        limits = ConnectionLimits(
            connection_limit(max_connections, FDS_PER_CONNECTION),
            check_header_timeout(header_timeout),
        )
        body_time = check_body_timeout(body_timeout)
        body_limit = parse_size(max_body)
        recording_limit = parse_size(max_recording_bytes, "--max-recording-bytes")
    except ValueError as exc:
        fail(str(exc))
    try:
        upstreams = parse_upstreams(upstream or [])
    except ValueError as exc:
        fail(str(exc))
    factory = None
    if transform is not None:
        factory = TRANSFORMS.load(transform)
    from .journal import make_view

    live = make_view(view)
    config = ProxyConfig(
        out=out,
        upstreams=upstreams,
        timeout=timeout,
        transform=factory,
        observer=live.observer if live is not None else None,
        max_body=body_limit,
        body_timeout=body_time,
        max_recording_bytes=recording_limit,
    )
    with user_errors():
        proxy_app = ProxyApp(config)
    sock, origin = listening.listen(host, port)
    err = sys.stderr
    shown = out if "://" in out else f"{out}/"
    err.write(f"streamtool: proxy on {origin}, recording into {shown}\n")
    for label, where in _pointers(origin):
        err.write(f"  {label + ':':<22}{where}\n")
    where = ", ".join(f"{k}={v}" for k, v in upstreams.rules.items())
    if upstreams.default or where:
        err.write(
            f"  upstream: {upstreams.default or 'official hosts'}{'; ' + where if where else ''}\n"
        )
    err.write("  Ctrl-C stops it (every recording is finished)\n")
    err.flush()
    code = _run(proxy_app, sock, live, limits)
    n, cut = proxy_app.recorded, proxy_app.interrupted
    err.write(
        f"streamtool: proxy stopped; {n} exchange{'s' if n != 1 else ''} recorded in {shown}"
        f"{f' ({cut} interrupted)' if cut else ''}\n"
    )
    raise typer.Exit(code)


def _run(proxy_app: Any, sock: Any, live: Any, limits: Any) -> int:
    """Run the proxy until Ctrl-C (exit status 130) or SIGTERM (143); every exchange in
    progress is cut then, its recording finished (``interrupted``) and indexed."""
    import signal

    from streamtool.core.net.proxy import run_proxy

    try:
        if live is None:
            return run_proxy(proxy_app, sock, limits=limits).exit_code
        with live:
            return run_proxy(proxy_app, sock, limits=limits).exit_code
    except KeyboardInterrupt:  # while the live view closed
        return 128 + signal.SIGINT


def _pointers(origin: str) -> list[tuple[str, str]]:
    """How each official SDK (by its base-URL variable) and each proxied preset reaches the
    proxy at ``origin``, from the API rows and the presets."""
    from streamtool.core.exchange.requests import PRESETS
    from streamtool.core.plugins.table import sdk_apis, sdk_base_urls

    urls = sdk_base_urls(origin)
    labels: dict[str, str] = {}
    for api in sdk_apis():
        if api.sdk_label:
            labels.setdefault(api.base_url_env, api.sdk_label)
    out = [(label, f"{env}={urls[env]}") for env, label in labels.items()]
    out += [
        (p.label or p.name, origin + p.route_prefix.rstrip("/"))
        for p in PRESETS.values()
        if p.proxied
    ]
    return out
