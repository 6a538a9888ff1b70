"""What ``serve`` and ``proxy`` share about listening: the connection-guard and body options
(``--max-connections``, ``--header-timeout``, ``--body-timeout``, ``--max-body``), typed once so
both commands say the same thing, and opening the listening socket."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from .errors import fail

# the defaults of --header-timeout and --body-timeout (streamtool.core.net.guard.HEADER_TIMEOUT,
# streamtool.core.net.bodies.BODY_TIMEOUT, which this module does not import: the server stack
# loads only when the command runs; a test keeps them equal)
HEADER_TIMEOUT = 10.0
BODY_TIMEOUT = 30.0

AT_THE_LIMIT = (
    "At the limit a new one closes the oldest still sending its request head, else the one "
    "sending its request body slowest (answered 503), or is answered 503 when all are busy."
)


def max_connections_option(what: str) -> typer.models.OptionInfo:
    """``--max-connections``; ``what`` says which connections and how the default is set."""
    return typer.Option("--max-connections", help=f"{what} {AT_THE_LIMIT}")


HeaderTimeout = Annotated[
    float,
    typer.Option(
        "--header-timeout",
        help="Seconds a request head may take to arrive before the connection is closed "
        "(inf: no limit).",
    ),
]


BodyTimeout = Annotated[
    float,
    typer.Option(
        "--body-timeout",
        help="Seconds a request body may take to arrive after its head; 408 after (inf: no limit).",
    ),
]

MaxBody = Annotated[
    str,
    typer.Option("--max-body", help="Largest request body accepted (413 beyond)."),
]


def listen(host: str, port: int) -> tuple[Any, str]:
    """The listening socket on ``host:port`` (port 0: any free one) and its origin URL; a
    socket that cannot be opened is a one-line error (exit 2). An address that is not loopback
    is one warning line: keys and recordings pass through whoever can reach it."""
    import sys

    from streamtool.core.exchange.hostcheck import is_loopback
    from streamtool.core.net.listen import bind

    try:
        sock = bind(host, port)
    except OSError as exc:
        import errno

        hint = ""
        if exc.errno == errno.EADDRINUSE:
            hint = "; another program listens there: another --port, or --port 0 for any free one"
        fail(f"cannot listen on {host}:{port}: {(exc.strerror or str(exc)).lower()}{hint}")
    if not is_loopback(host):
        sys.stderr.write(
            f"streamtool: warning: listening on {host}, not a loopback address: anyone who can "
            "reach it can send requests with the keys that pass through it and read what it "
            "serves or records\n"
        )
    shown = f"[{host}]" if ":" in host else host
    return sock, f"http://{shown}:{sock.getsockname()[1]}"
