"""``streamtool tape build SCRIPT --api API -o TAPE``: a script of turns written as a tape of
real recordings."""

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from streamtool.core.outputs.emit import builtin_names

from .errors import fail
from .main import app


class Action(StrEnum):
    build = "build"


# the built-in APIs that have an encoder (the registry's: mypy cannot list the members)
Api = StrEnum("Api", [(v.replace("-", "_"), v) for v in builtin_names()[0]])  # type: ignore[misc]


@app.command(name="tape")
def tape(
    action: Annotated[Action, typer.Argument(help="build: write a script's turns as a tape.")],
    script: Annotated[Path, typer.Argument(help="The script (YAML or JSON) of turns.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="The tape folder to write.")],
    api: Annotated[
        Api | None, typer.Option("--api", help="The wire API the tape speaks (else the script's).")
    ] = None,
) -> None:
    """Write a script of turns as a tape: one real recording per turn, streamed as the API
    streams, with the tape's index."""
    from streamtool.core.drive.script import build_tape, load_script
    from streamtool.core.model.records import RecordingError

    if output.exists() and (not output.is_dir() or any(output.iterdir())):
        fail(f"{output}: exists and is not empty (a tape is built into a new folder)")
    try:
        written = build_tape(load_script(script), output, api.value if api else None)
    except RecordingError as exc:
        fail(str(exc))
    typer.echo(f"{output}: {len(written)} recording{'s' if len(written) != 1 else ''}", err=True)
