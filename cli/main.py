"""The ``streamtool`` command. Each command lives in its own module and registers itself here."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="streamtool",
    help="Record, replay, inspect and diff the server-sent-event streams of LLM providers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


@app.callback()
def _root() -> None:
    """Record, replay, inspect and diff the server-sent-event streams of LLM providers."""


# command modules: importing one registers its command on ``app``
from . import check as _check  # noqa: E402,F401
from . import diff as _diff  # noqa: E402,F401
from . import record as _record  # noqa: E402,F401
from . import replay as _replay  # noqa: E402,F401
from . import serve as _serve  # noqa: E402,F401


def main() -> None:
    app()
