"""``streamtool tape``: build a tape from a script of turns (``tape build``), and share tapes
through object storage (``tape push|pull|ls|verify|gc``, :mod:`streamtool.core.net.store_ops`).
"""

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from streamtool.core.outputs.emit import builtin_names

from .errors import fail, user_errors
from .main import app
from .text_or_json import TextOrJson

tape_app = typer.Typer(
    name="tape",
    help="Build a tape from a script of turns; push, pull, list, verify and collect tapes on "
    "object storage (s3://BUCKET/PREFIX, gs://, az://, file://).",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)
app.add_typer(tape_app, name="tape")

# the built-in APIs that have an encoder (the registry's: mypy cannot list the members)
Api = StrEnum("Api", [(v.replace("-", "_"), v) for v in builtin_names()[0]])  # type: ignore[misc]


Url = Annotated[str, typer.Argument(help="The tape on object storage: s3://BUCKET/PREFIX ...")]


@tape_app.command(name="build")
def build(
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


@contextmanager
def _bar(what: str) -> Iterator[tuple[Callable[[int], None], Callable[[int], None]]]:
    """``(on_total, advance)`` for an operation that learns its size once it starts: a
    progress bar on a terminal (nothing elsewhere)."""
    from .progress import progress

    with ExitStack() as stack:
        holder: list[Callable[[int], None]] = []

        def on_total(n: int) -> None:
            holder.append(stack.enter_context(progress(n, what, at_least=20)))

        def advance(n: int = 1) -> None:
            if holder:
                holder[0](n)

        yield on_total, advance


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


@tape_app.command(name="push")
def push(
    folder: Annotated[Path, typer.Argument(help="A tape folder (as proxy --out writes it).")],
    url: Url,
) -> None:
    """Publish a tape folder's finished exchanges to a tape on object storage (each recording
    once, by content hash; each exchange an entry of its own; nothing overwritten)."""
    from streamtool.core.net import store_ops

    with user_errors(), _bar("pushing") as (on_total, advance):
        result = store_ops.push(folder, url, on_total=on_total, progress=advance)
    for name, why in result.skipped:
        sys.stderr.write(f"streamtool: {folder / name}: not pushed: {why}\n")
    sys.stderr.write(
        f"streamtool: {url}: {_plural(result.added, 'exchange')} added, "
        f"{result.present} already there\n"
    )


@tape_app.command(name="pull")
def pull(
    url: Url,
    folder: Annotated[Path, typer.Argument(help="The folder to write (new, or pulled before).")],
) -> None:
    """Fetch a tape from object storage into a tape folder: every recording byte for byte
    (through the local cache, checked against its hash), its index and golden files."""
    from streamtool.core.net import store_ops

    with user_errors(), _bar("pulling") as (on_total, advance):
        entries = store_ops.pull(url, folder, on_total=on_total, progress=advance)
    sys.stderr.write(f"streamtool: {folder}: {_plural(len(entries), 'exchange')} from {url}\n")


@tape_app.command(name="ls")
def ls(
    url: Url,
    fmt: Annotated[
        TextOrJson, typer.Option("--format", help="text (a table) or json (an array of rows).")
    ] = TextOrJson.text,
) -> None:
    """List a store tape's exchanges, one row each, in the tape's order."""
    from streamtool.core.net import store_ops

    with user_errors():
        found = store_ops.rows(url)
    if fmt is TextOrJson.json:
        sys.stdout.write(json.dumps(found, ensure_ascii=False, indent=1) + "\n")
        return
    _table(found)


def _table(found: list[dict[str, Any]]) -> None:
    header = ["file", "recorded_at", "model", "status", "end", "bytes"]
    lines = [header] + [
        [str(r.get(k) if r.get(k) is not None else "") for k in header] for r in found
    ]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    for line in lines:
        sys.stdout.write("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())
        sys.stdout.write("\n")
    sys.stdout.write(f"{_plural(len(found), 'exchange')}\n")


@tape_app.command(name="verify")
def verify(url: Url) -> None:
    """Fetch every recording of a store tape and check it against its hash (exit 1 naming
    each exchange whose recording does not match, or is missing)."""
    from streamtool.core.net import store_ops

    with user_errors(), _bar("verifying") as (on_total, advance):
        checked, bad = store_ops.verify(url, progress=advance)
    for message in bad:
        sys.stdout.write(f"{message}\n")
    sys.stdout.write(f"{_plural(checked, 'exchange')} checked, {len(bad)} not matching\n")
    if bad:
        raise typer.Exit(1)


@tape_app.command(name="gc")
def gc(
    url: Url,
    older_than: Annotated[
        float,
        typer.Option("--older-than", metavar="DAYS", help="Exchanges recorded before DAYS ago."),
    ],
    delete: Annotated[
        bool, typer.Option("--delete", help="Remove them (without it: only list them).")
    ] = False,
) -> None:
    """List (--delete: remove) the exchanges recorded more than DAYS ago, and the recordings
    no exchange names any more (an interrupted writer's)."""
    from streamtool.core.net import store_ops

    with user_errors():
        try:
            found = store_ops.gc(url, older_than, delete=delete)
        except ValueError as exc:
            fail(str(exc))
    verb = "removed" if delete else "would be removed"
    what = "removed" if delete else "to remove"
    for ref in found.entries:
        when = f"{ref.recorded_at:%Y-%m-%d %H:%M}"
        sys.stdout.write(f"{what}: {ref.path} (recorded {when})\n")
    for digest in found.orphans:
        sys.stdout.write(f"{what}: recordings/{digest}.jsonl (named by no exchange)\n")
    tail = "" if delete else " (a dry run: --delete removes them)"
    sys.stdout.write(
        f"{_plural(len(found.entries), 'exchange')} and "
        f"{_plural(len(found.orphans), 'unnamed recording')} {verb}{tail}\n"
    )
