"""Finding recordings: files named on a command line, and folders searched for them."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..model.records import INDEX_NAME, missing_text
from ..outputs.golden import is_golden_name

SCAN_SUFFIXES = (".jsonl", ".sse")  # what a folder search picks up
STDIN = "-"


def find_recordings(paths: Iterable[str | os.PathLike[str]]) -> Iterator[tuple[str, str | None]]:
    """``(path, problem)`` for each recording under ``paths``, in order.

    A file is taken as named (whatever its suffix); a folder is searched recursively for
    ``*.jsonl`` and ``*.sse`` (golden files and hidden folders skipped), in sorted order; ``-`` is
    standard input. ``problem`` is a one-line message for a path that is neither, or a folder
    without recordings; the path is then not a recording.
    """
    for raw in paths:
        path = str(raw)
        if path == STDIN:
            yield path, None
        elif os.path.isdir(path):
            found = False
            for dirpath, dirnames, filenames in os.walk(path):
                dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
                for name in sorted(filenames):
                    if (
                        name.endswith(SCAN_SUFFIXES)
                        and not is_golden_name(name)
                        and name != INDEX_NAME  # a tape's index, not a recording
                    ):
                        found = True
                        yield os.path.join(dirpath, name), None
            if not found:
                yield path, f"{path}: no recordings (*.jsonl, *.sse) in it"
        elif os.path.exists(path):
            yield path, None
        else:
            yield path, missing_text(str(Path(path)))
