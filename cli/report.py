"""``streamtool report FILE -o report.html``: one self-contained HTML page about a recording."""

import os
import stat
import sys
from pathlib import Path
from typing import Annotated

import typer

from .errors import USAGE_ERRORS, fail
from .main import app
from .params import ConverterOption, HandlerOption

MARK = 'name="generator" content="streamtool report"'


@app.command()
def report(
    file: Annotated[
        str,
        typer.Argument(help="A recording or raw body; - reads standard input.", show_default=False),
    ],
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            "-o",
            help="The HTML file to write (default: the recording's name with .report.html, in "
            "the current folder; - for standard output).",
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite an existing file that is not a report.")
    ] = False,
    stall: Annotated[
        float, typer.Option("--stall", help="A gap over this many seconds is a stall.")
    ] = 1.0,
    converter: ConverterOption = "auto",
    parser: HandlerOption = None,
) -> None:
    """Write a self-contained HTML report: facts, final tree, timeline, raw reads, a player."""
    from streamtool.core.converters import check_converter_name
    from streamtool.core.drive.inspect_file import inspect_for_report
    from streamtool.core.handlers import check_parser_name, default_parser
    from streamtool.core.outputs.report import build_report

    from .progress import progress

    if stall != stall or stall <= 0:
        fail("--stall must be a number of seconds > 0")
    parser_name = parser or default_parser()
    target = output
    if target is None:
        stem = "stdin" if file == "-" else Path(file).name.split(".")[0] or "recording"
        target = f"{stem}.report.html"
    if target != "-":
        _check_target(Path(target), force)
    try:
        check_converter_name(converter)
        check_parser_name(parser_name)
        with progress(_reads(file), "reading", at_least=PROGRESS_AT_LEAST) as advance:
            inspector = inspect_for_report(
                file,
                converter=converter,
                parser=parser_name,
                stall=stall,
                on_chunk=lambda: advance(1),
            )
    except USAGE_ERRORS as exc:
        message = str(exc)
        if not message.startswith((file, "<stdin>")):
            message = f"{file}: {message}"
        fail(message)
    html = build_report(inspector)
    if target == "-":
        sys.stdout.write(html)
        sys.stdout.flush()
        return
    path = Path(target)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        tmp.write_text(html, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        fail(f"{path}: cannot write the report ({exc.strerror or exc})")
    sys.stderr.write(f"wrote {path}\n")


def _check_target(path: Path, force: bool) -> None:
    """A report replaces only a regular file (or makes a new one): a folder, a device, a FIFO
    or a socket is refused, --force or not (it would be replaced, or written without end)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        fail(f"{path}: cannot write the report there ({exc.strerror or exc})")
    if stat.S_ISDIR(mode):
        fail(f"{path}: is a folder; name the HTML file to write with -o")
    if not stat.S_ISREG(mode):
        fail(f"{path}: is not a regular file (a device, FIFO or socket); use -o - for stdout")
    if not force:
        try:
            head = path.read_text(encoding="utf-8", errors="replace")[:2000]
        except OSError:
            head = ""
        if MARK not in head:
            fail(f"{path}: exists and is not a streamtool report; pass --force to overwrite it")


# a report of fewer reads is written before a bar would be worth drawing
PROGRESS_AT_LEAST = 20_000
_LARGE_BYTES = 2_000_000


def _reads(file: str) -> int:
    """How many reads a large recording holds (one per line), for the progress bar; 0 for a
    small one, standard input or a raw body (nothing worth counting first)."""
    import os

    from .progress import on_terminal

    if file == "-" or not file.endswith(".jsonl") or not on_terminal():
        return 0
    try:
        if os.stat(file).st_size < _LARGE_BYTES:
            return 0
        with open(file, "rb") as fh:
            return max(
                0, sum(block.count(b"\n") for block in iter(lambda: fh.read(1 << 20), b"")) - 2
            )
    except OSError:
        return 0
