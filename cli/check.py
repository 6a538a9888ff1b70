"""``streamtool check PATH...``: replay recordings and compare them with their golden files."""

import json
import os
import shlex
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from streamtool.core.drive.check import CheckReport, FileResult

from .choices import checked_by
from .errors import fail, user_errors
from .main import app
from .params import converter_option, parser_option
from .store_paths import checked_out

CI_ENV = "CI"


class Format(StrEnum):
    text = "text"
    json = "json"
    junit = "junit"
    github = "github"


def ci_is_set() -> bool:
    """True when the ``CI`` environment variable is set to anything but empty/0/false/no."""
    return os.environ.get(CI_ENV, "").strip().lower() not in ("", "0", "false", "no")


def parse_shard(value: str) -> tuple[int, int]:
    """``I/N`` -> ``(I, N)`` with 1 <= I <= N; ValueError with a sentence otherwise."""
    first, sep, second = value.partition("/")
    try:
        i, n = int(first), int(second)
    except ValueError:
        i = n = 0
    if not sep or not 1 <= i <= n:
        raise ValueError(f"{value!r} is not a shard: write I/N, with I from 1 to N (as 2/4).")
    return i, n


_shard = checked_by(parse_shard)


def _jobs(value: int | None) -> int | None:
    if value is not None and value < 1:
        raise typer.BadParameter(f"{value} is not a number of processes: give 1 or more.")
    return value


@app.command()
def check(
    paths: Annotated[
        list[str],
        typer.Argument(
            help="Recordings, golden files or folders (searched for *.jsonl and *.sse).",
            show_default=False,
        ),
    ],
    update: Annotated[
        bool,
        typer.Option(
            "--update", help="Write missing golden files and refresh the ones that drifted."
        ),
    ] = False,
    create_missing: Annotated[
        bool,
        typer.Option(
            "--create-missing",
            help="With --update while CI is set: create missing golden files too "
            "(outside CI, --update always creates them).",
        ),
    ] = False,
    converter: Annotated[
        str | None,
        converter_option(
            "With --update: the converter golden files are written with (default: the "
            "one a golden file names, else auto)."
        ),
    ] = None,
    parser: Annotated[
        str | None,
        parser_option(
            "With --update: the parser golden files are written with (default: the one a "
            "golden file names, else $STREAMTOOL_PARSER or api_tool_call)."
        ),
    ] = None,
    fmt: Annotated[
        Format,
        typer.Option(
            "--format",
            help="text (diffs for people), json (for scripts), junit (JUnit XML) or github "
            "(GitHub Actions annotations).",
        ),
    ] = Format.text,
    golden: Annotated[
        Path | None,
        typer.Option("--golden", help="The golden file for - (a recording on standard input)."),
    ] = None,
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs",
            "-j",
            callback=_jobs,
            help="Replay in N processes; the report is the same as with 1, in the same order "
            "(default: the machine's cores, when the recordings add up to 2 MB or more).",
        ),
    ] = None,
    shard: Annotated[
        str | None,
        typer.Option(
            "--shard",
            metavar="I/N",
            callback=_shard,
            help="Check only shard I of N (by a hash of each golden file's path): N CI jobs "
            "given the same paths check every golden file exactly once.",
        ),
    ] = None,
) -> None:
    """Replay recordings and compare them with their golden files (exit 1 on drift).

    A recording foo.jsonl has its golden file foo.golden.json beside it. Exit codes: 0 all match,
    1 drift / missing / orphaned golden files, 2 unusable input.
    """
    if not update and (converter or parser or create_missing):
        fail("--converter, --parser and --create-missing go with --update")
    with checked_out(paths, goldens=True) as (local, shown, checkouts):
        report = _check(local, update, create_missing, converter, parser, golden, jobs, shard)
        if update:
            from streamtool.core.net.store import publish_goldens

            with user_errors():
                for co in checkouts:
                    n = publish_goldens(co)
                    if n:
                        sys.stderr.write(f"streamtool: {shown(str(co.folder))}: {n} golden ")
                        sys.stderr.write(f"file{'s' if n != 1 else ''} sent to the store\n")
        for result in report.results:
            if result.status == "error":
                sys.stderr.write(f"streamtool: error: {shown(result.message or '')}\n")
        if fmt is Format.json:
            text = json.dumps(report.to_dict(), ensure_ascii=False, indent=2) + "\n"
        elif fmt in (Format.junit, Format.github):
            from streamtool.core.outputs.ci_report import render_check

            text = render_check(report.to_dict(), fmt.value)
        else:
            text = render_report(report, [str(p) for p in local], color=use_color())
        sys.stdout.write(shown(text))
        sys.stdout.flush()
    raise typer.Exit(report.exit_code)


def _check(
    paths: list[str],
    update: bool,
    create_missing: bool,
    converter: str | None,
    parser: str | None,
    golden: Path | None,
    jobs: int | None,
    shard: str | None,
) -> "CheckReport":
    with user_errors(), _progress(update) as (on_start, on_done):
        from streamtool.core.drive.check import check_paths  # imported when used: fast start

        return check_paths(
            [Path(p) for p in paths],
            update=update,
            create_missing=create_missing or not ci_is_set(),
            converter=converter,
            parser=parser,
            stdin_golden=golden,
            jobs=jobs,
            shard=parse_shard(shard) if shard else None,
            on_start=on_start,
            on_done=on_done,
        )


# below this many recordings a check is over before a bar would be worth drawing
PROGRESS_AT_LEAST = 50


@contextmanager
def _progress(update: bool) -> Iterator[tuple[Callable[[int], None], Callable[[], None]]]:
    """``check_paths``'s callbacks driving a progress bar on a terminal (see cli/progress.py)."""
    from .progress import on_terminal, progress

    if not on_terminal():
        yield (lambda n: None), (lambda: None)
        return
    with ExitStack() as stack:
        advance: list[Callable[[int], None]] = []

        def on_start(n: int) -> None:
            verb = "updating" if update else "checking"
            advance.append(stack.enter_context(progress(n, verb, at_least=PROGRESS_AT_LEAST)))

        def on_done() -> None:
            if advance:
                advance[0](1)

        yield on_start, on_done


_LABELS = {
    "match": "ok",
    "drift": "DRIFT",
    "missing": "MISSING",
    "orphan": "ORPHAN",
    "created": "created",
    "updated": "updated",
}


# SGR colours of the status labels on a terminal
_COLORS = {"match": "32", "drift": "1;31", "missing": "1;33", "orphan": "33"}


def use_color() -> bool:
    """Colour on a terminal, unless ``NO_COLOR`` is set (or ``TERM`` is dumb)."""
    return (
        sys.stdout.isatty()
        and not os.environ.get("NO_COLOR")
        and os.environ.get("TERM", "") != "dumb"
    )


def render_report(report: "CheckReport", paths: list[str], *, color: bool = False) -> str:
    lines: list[str] = []
    for r in report.results:
        if r.status == "error":
            continue  # already on stderr
        label = f"{_LABELS[r.status]:8}"
        code = _COLORS.get(r.status) if color else None
        if code:
            label = f"\x1b[{code}m{label.rstrip()}\x1b[0m" + label[len(label.rstrip()) :]
        lines.append(f"{label} {_subject(r)}")
        if r.message and r.status != "match":
            lines.append(f"         {r.message}")
        if r.diff:
            lines.append(r.diff.rstrip("\n"))
    counts = report.counts()
    # a path that named nothing to check (missing, an empty folder) was said on stderr: it is
    # not a file checked
    unusable = sum(1 for r in report.results if r.recording is None and r.golden is None)
    counts["error"] -= unusable
    checked = len(report.results) - unusable
    if checked == 0 and unusable:
        return "\n".join(lines) + "\n" if lines else ""
    parts = [f"{n} {status}" for status, n in counts.items() if n]
    if unusable:
        parts.append(f"{unusable} path{'s' if unusable > 1 else ''} with nothing to check")
    lines.append(f"{checked} checked: {', '.join(parts) or 'nothing'}")
    if counts["drift"] + counts["missing"] > 1:
        # with CI set, --update alone would leave the missing golden files missing
        create = " --create-missing" if counts["missing"] and ci_is_set() else ""
        lines.append(
            f"to accept every replay as it is now: streamtool check --update{create} "
            + shlex.join(paths)
        )
    return "\n".join(lines) + "\n"


def _subject(r: "FileResult") -> str:
    if r.recording is None:
        return str(r.golden)
    if r.status in ("created", "updated"):
        return f"{r.recording} -> {r.golden}"
    return r.recording
