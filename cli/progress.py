"""Progress of a long run, on standard error, only on a terminal.

``with progress(total, "replaying") as advance: ... advance(n)`` shows rich's progress bar with
the count done of the total, the rate and the time left while the run goes on, and removes it
when the run ends. Off a terminal (a pipe, a CI log, a file) it shows nothing at all: the output
of a command is the same with or without it. Runs below ``at_least`` show nothing either: a
bar that flashes for a fraction of a second is noise.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


def _nothing(n: int = 1) -> None:
    pass


def on_terminal() -> bool:
    return sys.stderr.isatty() and os.environ.get("TERM", "") != "dumb"


@contextmanager
def progress(
    total: int, what: str, *, at_least: int = 1, unit: str = ""
) -> Iterator[Callable[[int], None]]:
    """A function to call with how many more are done (see the module docstring)."""
    if total < at_least or not on_terminal():
        yield _nothing
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        TextColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    class Rate(ProgressColumn):
        def render(self, task: Any) -> Text:
            speed = task.speed
            if speed is None:
                return Text(f"-{unit}/s", style="progress.data.speed")
            shown = f"{speed:,.0f}" if speed >= 10 else f"{speed:.1f}"
            return Text(f"{shown}{unit}/s", style="progress.data.speed")

    console = Console(file=sys.stderr)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        Rate(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    ) as bar:
        task = bar.add_task(what, total=total)

        def advance(n: int = 1) -> None:
            bar.advance(task, n)

        yield advance
