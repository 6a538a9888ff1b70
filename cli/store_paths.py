"""Store URLs (``s3://BUCKET/PREFIX``...) on the command lines of ``ls``, ``inspect`` and
``check``: each is checked out into a local tape folder for the command to read, and the paths
it prints are shown under the URL again."""

import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from .errors import fail


def has_url(paths: list[str]) -> bool:
    if not any("://" in p for p in paths):
        return False  # nothing to import: the usual command line starts as fast as before
    from streamtool.core.exchange.store_layout import is_store_url

    return any(is_store_url(p) for p in paths)


@contextmanager
def checked_out(
    paths: list[str], *, goldens: bool = False
) -> Iterator[tuple[list[str], Callable[[str], str], list[Any]]]:
    """``(local paths, shown, checkouts)``: ``paths`` with each store URL replaced by a
    folder made from it (removed afterwards), ``shown(text)`` putting the URL back where a
    folder's path appears, and the checkouts made."""
    if not has_url(paths):
        yield paths, _same, []
        return
    from streamtool.core.exchange.store_layout import is_store_url
    from streamtool.core.model.records import RecordingError
    from streamtool.core.net.store import checkout, discard

    from .progress import progress

    local: list[str] = []
    made: dict[str, str] = {}
    checkouts: list[Any] = []
    with ExitStack() as stack:
        for p in paths:
            if not is_store_url(p):
                local.append(p)
                continue
            bar: list[Callable[[int], None]] = []

            def on_total(n: int, bar: list[Callable[[int], None]] = bar) -> None:
                bar.append(stack.enter_context(progress(n, "fetching", at_least=20)))

            def advance(n: int, bar: list[Callable[[int], None]] = bar) -> None:
                if bar:
                    bar[0](n)

            try:
                co = checkout(p, progress=advance, on_total=on_total, with_goldens=goldens)
            except RecordingError as exc:
                fail(str(exc))
            stack.callback(discard, co.folder)
            checkouts.append(co)
            local.append(str(co.folder))
            made[str(co.folder)] = p.rstrip("/")
        sys.stderr.flush()

        def shown(text: str) -> str:
            for folder, url in made.items():
                text = text.replace(folder, url)
            return text

        yield local, shown, checkouts


def _same(text: str) -> str:
    return text
