"""One-line errors with exit code 2 for unusable input; never a traceback."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import typer

from streamtool.core.converters import UnknownConverter
from streamtool.core.handlers import UnknownParser
from streamtool.core.records import RecordingError
from streamtool.core.replay import DetectionError

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
