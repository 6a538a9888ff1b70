"""The connection-guard options that ``serve`` and ``proxy`` share (``--max-connections``,
``--header-timeout``), typed once so both commands say the same thing."""

from __future__ import annotations

from typing import Annotated

import typer

# the default of --header-timeout (streamtool.core.net.server.HEADER_TIMEOUT, which this module
# does not import: the server stack loads only when the command runs)
HEADER_TIMEOUT = 10.0

AT_THE_LIMIT = (
    "At the limit a new one closes the oldest still sending its request head, or is answered "
    "503 when all are busy."
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
