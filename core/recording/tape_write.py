"""Writing a whole tape at once: exchanges held in memory (a recorded session with a fault
applied: ``streamtool mutate TAPE``) as a new tape folder, numbered in order, with its index.

The tape is written into a hidden folder beside the destination, then moved into place by one
rename: a crash leaves the destination as it was (and the hidden folder, named after the
writer's process), and two writers of one destination never mix their files: the first rename
wins, the second is refused (or, with ``force``, replaces the whole tape by its own).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path

from ..model.records import RecordedExchange, RecordingError, os_error_text
from .tape_index import IndexEntry, rewrite_index, slug
from .writer import RecordingWriter

_NUMBER = re.compile(r"^\d+-")


def exchange_file(seq: int, name: str) -> str:
    """The file an exchange gets in a written tape: its number, then its name without the
    number it had (``0005-mcp-mcp-tools-call-add+404`` -> ``0006-mcp-mcp-tools-call-add-404``)."""
    return f"{seq:04d}-{slug(_NUMBER.sub('', name), 'exchange')}.jsonl"


def _entry(seq: int, file: str, exchange: RecordedExchange) -> IndexEntry:
    header = exchange.header
    request = header.request
    url = request.get("url")
    from urllib.parse import urlsplit

    end = exchange.end
    status = header.response.get("status")
    return IndexEntry(
        seq=seq,
        file=file,
        recorded_at=header.recorded_at,
        api=header.api,
        provider=header.provider,
        method=str(request.get("method") or "POST"),
        path=urlsplit(url).path if isinstance(url, str) else None,
        status=status if isinstance(status, int) else None,
        end=end.reason if end is not None else None,
        duration_s=end.t if end is not None else None,
        chunks=len(exchange.chunks),
    )


def _write(folder: Path, exchanges: Sequence[RecordedExchange]) -> None:
    entries = []
    for seq, exchange in enumerate(exchanges, 1):
        file = exchange_file(seq, exchange.name)
        writer = RecordingWriter(folder / file, exchange.header)
        for chunk in exchange.chunks:
            data = chunk.data
            writer.write_read(
                chunk.t or 0.0, data.encode("utf-8") if isinstance(data, str) else data
            )
        end = exchange.end
        if end is not None:
            writer.close(end.t, end.reason, end.error)
        else:
            writer.abandon()  # cut off as it was
        entries.append(_entry(seq, file, exchange))
    rewrite_index(folder, entries)


def write_tape(
    output: str | os.PathLike[str], exchanges: Sequence[RecordedExchange], *, force: bool = False
) -> Path:
    """Write ``exchanges`` as the tape ``output`` (a folder that must not exist, unless
    ``force``). Raises :class:`RecordingError` naming the folder."""
    target = Path(output)
    if target.exists() and not force:
        raise RecordingError(str(target), None, "exists (use --force to overwrite)")
    if not target.parent.is_dir():
        raise RecordingError(str(target), None, "its folder does not exist")
    temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        shutil.rmtree(temp, ignore_errors=True)
        temp.mkdir()
        _write(temp, exchanges)
        if force and target.exists():
            old = target.with_name(f".{target.name}.{os.getpid()}.old")
            os.rename(target, old)
            shutil.rmtree(old, ignore_errors=True)
        try:
            os.rename(temp, target)  # refused when another writer's tape is there now
        except OSError:
            if target.exists():
                raise RecordingError(
                    str(target), None, "exists (use --force to overwrite)"
                ) from None
            raise
    except OSError as exc:
        raise RecordingError(str(target), None, os_error_text(exc)) from None
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    return target
