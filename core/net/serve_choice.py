"""What ``serve PATH...`` answers with: a script of turns, recordings re-emitted in any API
(``--translate``), a tape, or files; and whether its options fit that (:func:`choose_library`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .library import Library


class ServeRefused(ValueError):
    """Paths and options that cannot be served together (the message says why)."""


@dataclass(frozen=True, slots=True)
class LibraryChoice:
    """``serve``'s options about what it serves."""

    tape: bool = False  # a folder answers only by request matching
    match_ignore: tuple[str, ...] = ()
    record_missing: bool = False
    upstream: str | None = None
    translate: bool = False
    log: Callable[[str], None] | None = None  # the recording of missing requests logs here
    expiry: Any = None  # --max-age / --on-expiry (an Expiry): else the tape's own settings


@dataclass(frozen=True, slots=True)
class Chosen:
    """What ``serve PATH...`` answers with."""

    library: Library
    on_miss: Any = None  # the tape's MissRecorder (--record-missing)
    made: bool = False  # a script, or --translate: streams made for each request
    as_tape: bool = False  # a folder served as a tape
    strict: bool = False  # ...that answers only by request matching


def _check(paths: Sequence[Path], choice: LibraryChoice, script: bool) -> None:
    """The options that do not fit the paths (checked before a tape folder is made)."""
    from ..drive.script import is_script

    if script or choice.translate:
        what = "a script" if script else "--translate"
        given = (
            ("--tape", choice.tape),
            ("--record-missing", choice.record_missing),
            ("--match-ignore", bool(choice.match_ignore)),
            ("--upstream", bool(choice.upstream)),
        )
        refused = [name for name, set_ in given if set_]
        if refused:
            raise ServeRefused(
                f"{refused[0]} is for tapes; {what} answers by conversation, not request body"
            )
    elif any(is_script(p) for p in paths):
        raise ServeRefused("a script of turns is served alone: streamtool serve SCRIPT")
    if choice.record_missing and not choice.upstream:
        raise ServeRefused("--record-missing needs --upstream URL (where missing requests go)")
    if choice.upstream and not choice.record_missing:
        raise ServeRefused("--upstream is only used with --record-missing")
    if choice.upstream:
        from .proxy import parse_upstreams

        try:
            parse_upstreams([choice.upstream])
        except ValueError as exc:
            raise ServeRefused(str(exc)) from None


def choose_library(paths: Sequence[Path], choice: LibraryChoice) -> Chosen:
    """What ``paths`` serve with ``choice``'s options (:class:`ServeRefused`: they do not fit,
    or nothing can be served; the recordings' own errors as they are raised)."""
    from ..drive.script import is_script
    from ..exchange.store_layout import is_store_url
    from .tape import holds_recordings, is_tape, tapes_under

    urls = [p for p in paths if is_store_url(str(p))]
    if urls:
        if len(paths) != 1 or choice.translate:
            raise ServeRefused(f"{urls[0]}: a tape on object storage is served alone, as a tape")
        _check(paths, choice, False)
        library, on_miss = _tape(paths[0], choice, True)
        return Chosen(library, on_miss, as_tape=True, strict=True)
    script = len(paths) == 1 and is_script(paths[0])
    _check(paths, choice, script)
    strict = choice.tape or choice.record_missing or (len(paths) == 1 and is_tape(paths[0]))
    if (strict or choice.match_ignore) and (
        len(paths) != 1 or (paths[0].exists() and not paths[0].is_dir())
    ):
        raise ServeRefused("--tape, --record-missing and --match-ignore take one tape folder")
    folder = paths[0] if len(paths) == 1 and paths[0].is_dir() else None
    if folder is not None and not strict and not holds_recordings(folder):
        inside = tapes_under(folder)
        if inside:
            raise ServeRefused(folder_of_tapes(folder, inside))
    if script or choice.translate:
        return Chosen(_made(paths, script), made=True)
    if strict or folder is not None:
        library, on_miss = _tape(paths[0], choice, strict)
        return Chosen(library, on_miss, as_tape=True, strict=strict)
    return Chosen(Library.from_paths(paths))


def _made(paths: Sequence[Path], script: bool) -> Library:
    """A script's library, or the recordings of ``paths`` re-emitted in any API."""
    from .emitting import ScriptLibrary, TranslateLibrary

    if script:
        return ScriptLibrary.from_file(paths[0])
    library = TranslateLibrary.from_paths(paths)
    if not library.exchanges:
        why = "".join(f"; {name}: {reason}" for name, reason in library.skipped[:3])
        raise ServeRefused(f"{paths[0]}: no recording holds a request to translate{why}")
    return library


def _tape(path: Path, choice: LibraryChoice, strict: bool) -> tuple[Library, Any]:
    """A folder (or a store URL) served as a tape, and its recorder of missing requests
    (--record-missing)."""
    from .tape import MissRecorder, load_tape

    on_miss = None
    try:
        library = load_tape(
            path,
            choice.match_ignore,
            create=choice.record_missing,
            fallback=not strict,
            expiry=choice.expiry,
        )

        if choice.record_missing and choice.upstream:
            on_miss = MissRecorder(library, choice.upstream, log=choice.log)
    except ValueError as exc:
        raise ServeRefused(str(exc)) from None
    if not library.recordings and not choice.record_missing:
        why = "".join(f"; {name}: {reason}" for name, reason in library.skipped[:3])
        raise ServeRefused(f"{path}: the tape holds no recordings it can serve{why}")
    return library, on_miss


def folder_of_tapes(folder: Path, tapes: list[Path]) -> str:
    """What to say about a folder that holds no recordings of its own, only tapes."""
    shown = ", ".join(str(t) for t in tapes[:5]) + (", ..." if len(tapes) > 5 else "")
    n = len(tapes)
    return (
        f"{folder}: holds no recordings of its own but {n}{'+' if n >= 50 else ''} "
        f"tape{'s' if n != 1 else ''} ({shown}); serve one tape at a time: "
        f"streamtool serve {tapes[0]}"
    )
