"""``streamtool import FILE|DIR... --out TAPE``: the cassettes and archives a team already has
(vcrpy / pytest-recording cassettes, HAR 1.2 files, mitmproxy flow files) as a tape."""

from pathlib import Path
from typing import Annotated

import typer

from .errors import fail
from .main import app


@app.command(name="import")
def import_tape(
    files: Annotated[
        list[Path],
        typer.Argument(help="Cassettes (YAML, JSON), HAR files, flow files, or folders of them."),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="The new tape to write.")],
) -> None:
    """Import vcrpy cassettes, HAR files and mitmproxy flows as a tape: each response a
    recording of its API (streamed or not; serve answers both), with the credentials removed.
    Their chunk boundaries and timing are unknown: the recordings say so."""
    from streamtool.core.drive.imports import import_files
    from streamtool.core.model.records import RecordingError

    try:
        entries, removed, kinds = import_files(files, out)
    except RecordingError as exc:
        fail(str(exc))
    for line in kinds:
        typer.echo(line, err=True)
    streamed = sum(1 for e in entries if e.api)
    timed = sum(1 for e in entries if e.duration_s is not None)  # sessions the archive timed
    typer.echo(removed.summary(), err=True)
    typer.echo(
        f"{out}: {len(entries)} exchange{'s' if len(entries) != 1 else ''} "
        f"({streamed} of a known API; timing unknown"
        + (
            f" but for {timed} WebSocket session{'s' if timed != 1 else ''} timed by the archive"
            if timed
            else ""
        )
        + ")",
        err=True,
    )
