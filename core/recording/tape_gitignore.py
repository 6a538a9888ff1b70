"""What of a tape to commit: the ``.gitignore`` written into a new tape.

A tape is its index (``index.jsonl``) and its recordings (``NNNN-*.jsonl``): what a repository
keeps, and what a test replays. Everything else a writer leaves in the folder is hidden (its
name starts with a dot) and is working state: the file lock (``.lock``), the sequence counter
(``.seq``), temporary files (``.index.jsonl.new``...) and the pytest plugin's note of the run
that recorded the tape.
The ``.gitignore`` says so in its comment and ignores those files.

It is written once, when a tape starts in a new folder (one that does not exist yet, or is
empty), and never over a ``.gitignore`` that is there: a user's own is theirs, a folder of
theirs that already holds files is left as it is, and a ``.gitignore`` they removed from a tape
is not written again.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

GITIGNORE_NAME = ".gitignore"
GITIGNORE_TEXT = """\
# A streamtool tape. Commit index.jsonl and the recordings (NNNN-*.jsonl): they are the tape.
# Ignore the hidden files beside them: the writers' lock, sequence counter and temporary
# files (streamtool writes this file once, when the tape starts; edit it as you like).
.*
!.gitignore
"""


def is_fresh(folder: str | os.PathLike[str]) -> bool:
    """A folder where a tape would start new: it does not exist yet, or holds nothing."""
    try:
        with os.scandir(folder) as entries:
            return next(entries, None) is None
    except FileNotFoundError:
        return True
    except OSError:  # not a folder, not readable: writing the tape says why
        return False


def write_gitignore(folder: str | os.PathLike[str]) -> bool:
    """Write the tape's ``.gitignore`` into ``folder`` unless one is there; True when written.

    The text goes to a hidden temporary file first and is linked into place, which fails if a
    ``.gitignore`` appeared meanwhile: a concurrent writer's, or the user's, is never
    overwritten, and a killed writer never leaves half of one. A folder that cannot be written
    to gets none (writing the tape itself says why).
    """
    target = Path(folder) / GITIGNORE_NAME
    if os.path.lexists(target):
        return False
    temp = target.with_name(f"{GITIGNORE_NAME}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        fh = open(temp, "x", encoding="utf-8")  # noqa: SIM115
    except OSError:
        return False  # the folder cannot be written to
    try:
        with fh:
            fh.write(GITIGNORE_TEXT)
        os.link(temp, target)
    except OSError:  # it exists now (FileExistsError), a full disk, no links
        return False
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temp)
    return True
