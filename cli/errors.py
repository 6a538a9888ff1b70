"""One-line errors with exit code 2 for unusable input; never a traceback."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from streamtool.core.converters import UnknownConverter
from streamtool.core.engine.replay import DetectionError
from streamtool.core.handlers import UnknownParser
from streamtool.core.model.records import RecordingError

if TYPE_CHECKING:
    from rich.console import Console

USAGE_ERRORS: tuple[type[BaseException], ...] = (
    RecordingError,
    DetectionError,
    UnknownConverter,
    UnknownParser,
)


def fail(message: str, code: int = 2) -> NoReturn:
    sys.stderr.write(f"streamtool: error: {message}\n")
    raise typer.Exit(code)


def warn(message: str) -> None:
    sys.stderr.write(f"streamtool: warning: {message}\n")


@contextmanager
def user_errors(path: str | None = None) -> Iterator[None]:
    """Turn the library's input errors into one line on stderr and exit code 2."""
    try:
        yield
    except USAGE_ERRORS as exc:
        message = str(exc)
        if path and isinstance(exc, DetectionError):
            message = f"{path}: {message}"
        fail(message)
    except BrokenPipeError:
        # the reader went away (| head): not an error of ours
        sys.stderr.close()
        raise typer.Exit(0) from None


def pipe_console(**kwargs: Any) -> Console:
    """A rich console for standard output that treats a reader going away (``| head``) as the
    end of the output, exit code 0, as ``replay`` does (rich's own default exits 1)."""
    from rich.console import Console

    class PipeConsole(Console):
        def on_broken_pipe(self) -> None:
            import os

            self.quiet = True
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise typer.Exit(0)

    return PipeConsole(**kwargs)
