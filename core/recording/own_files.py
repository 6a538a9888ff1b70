"""Opening the files streamtool writes without ever writing through a link.

A tape folder (its index, counter, lock and recordings) may be shared, copied or
prepared by someone else: a symbolic link (or a second hard link) where a file of the tape is
expected would make a write land outside the tape. :func:`open_own` opens with ``O_NOFOLLOW``
(a symbolic link is refused by the kernel, never followed) and checks the opened descriptor:
a regular file with one name only. A refusal is a :class:`RecordingError`: one line naming the
file.
"""

from __future__ import annotations

import errno
import os
import stat

from ..model.records import RecordingError, os_error_text

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
# a FIFO put in a file's place would block the open: refused at once instead (no effect on
# regular files)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)

LINK_REFUSED = "is a symbolic link: streamtool writes only its own files, never through a link"
NOT_REGULAR = "is not a regular file: streamtool writes only its own files"
NOT_EMPTY = "holds data already: not the empty file its tape made for this recording"
HARD_LINKED = (
    "has another name (a hard link): streamtool writes only its own files, never through a link"
)


def refusal(path: str | os.PathLike[str], *, regular: bool = True) -> str | None:
    """Why the entry at ``path`` may not be written (``None``: it may, or it does not exist):
    looked at without following a link. ``regular``: anything but a regular file is refused
    too (else a device such as ``/dev/null``, named on purpose, may be written)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return _why(st, regular)


def _why(st: os.stat_result, regular: bool = True) -> str | None:
    if stat.S_ISLNK(st.st_mode):
        return LINK_REFUSED
    if not stat.S_ISREG(st.st_mode):
        return NOT_REGULAR if regular else None
    if st.st_nlink > 1:
        return HARD_LINKED
    return None


def open_own(
    path: str | os.PathLike[str],
    flags: int,
    mode: int = 0o644,
    *,
    regular: bool = True,
    empty: bool = False,
) -> int:
    """``os.open(path, flags, mode)`` for a file of streamtool's own: a symbolic link at
    ``path`` is not followed, and what was opened must be a regular file (``regular``; else
    also a device or a FIFO named on purpose) with no other name, and nothing in it
    (``empty``: the file a tape created for a recording, opened to write it). Raises
    :class:`RecordingError` for a refused file; other ``OSError`` exceptions pass through
    (``FileExistsError`` for ``O_EXCL``, ``FileNotFoundError``...)."""
    if not _NOFOLLOW:  # no O_NOFOLLOW (Windows): look first
        why = refusal(path, regular=regular)
        if why is not None:
            raise RecordingError(str(path), None, why)
    extra = _NOFOLLOW | _CLOEXEC | (_NONBLOCK if regular else 0)
    try:
        fd = os.open(path, flags | extra, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP or (
            exc.errno == errno.ENXIO and refusal(path) is not None  # a FIFO without a reader
        ):
            raise RecordingError(str(path), None, refusal(path) or LINK_REFUSED) from None
        raise
    try:
        st = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise RecordingError(str(path), None, os_error_text(exc)) from None
    why = _why(st, regular)
    if why is None and empty and st.st_size:
        why = NOT_EMPTY
    if why is not None:
        os.close(fd)
        raise RecordingError(str(path), None, why)
    return fd
