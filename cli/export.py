"""``streamtool export TAPE --vcr OUT``: a tape as a vcrpy cassette (YAML), which vcrpy replays."""

from pathlib import Path
from typing import Annotated

import typer

from .errors import fail
from .main import app


@app.command()
def export(
    tape: Annotated[Path, typer.Argument(help="The tape (a folder with index.jsonl).")],
    vcr: Annotated[Path, typer.Option("--vcr", help="The cassette to write (YAML).")],
    force: Annotated[bool, typer.Option("--force", help="Overwrite the cassette.")] = False,
) -> None:
    """Write a tape as a vcrpy cassette: each exchange's request and its whole response body
    (vcrpy keeps no read boundaries or timing)."""
    import yaml

    from streamtool.core.drive.imports import vcr_cassette
    from streamtool.core.model.records import RecordingError

    if not (tape / "index.jsonl").is_file():
        fail(f"{tape}: not a tape (no index.jsonl)")
    if vcr.exists() and not force:
        fail(f"{vcr}: exists (use --force to overwrite)")
    try:
        cassette = vcr_cassette(tape)
    except RecordingError as exc:
        fail(str(exc))
    text = yaml.safe_dump(cassette, allow_unicode=True, sort_keys=False)
    temp = vcr.with_name(f".{vcr.name}.tmp")
    try:
        temp.write_text(text, encoding="utf-8")
        temp.replace(vcr)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        fail(f"{vcr}: {exc.strerror or exc}")
    n = len(cassette["interactions"])
    typer.echo(f"{vcr}: {n} interaction{'s' if n != 1 else ''}", err=True)
