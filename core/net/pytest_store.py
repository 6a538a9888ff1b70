"""The pytest plugin's tapes on object storage (``--stream-tape-store URL``, or a marker's
``path="s3://..."``): where a test's tape is, whether it exists, and how a passing test's
staged exchanges join it (published, as ``tape push`` publishes them)."""

from __future__ import annotations

import os
from pathlib import Path

from ..exchange.store_layout import match_key
from ..recording.tape_index import read_index
from .store import StoreTape, header_fields, staging_folder

RUN_NOTE = "recorded-by-run"  # the object a tape recorded in ``once`` mode keeps its run in


def tape_url(base: str, module: str, name: str) -> str:
    """A test's tape under the store URL ``base``: ``BASE/<test module>/<name>``."""
    return f"{base.rstrip('/')}/{module}/{name}"


def has_tape(url: str) -> bool:
    return bool(StoreTape(url).listing().refs)


def recorded_by(url: str, run: str) -> bool:
    data = StoreTape(url).get_bytes(RUN_NOTE)
    return data is not None and data.decode("utf-8", "replace").strip() == run


def staging(url: str) -> Path:
    """A test's own staging tape for ``url`` (a local folder under the cache)."""
    return staging_folder(url)


def merge(url: str, folder: str | os.PathLike[str], *, drop: str, note: str | None) -> None:
    """Publish the finished exchanges of the staging tape ``folder`` to the store tape
    ``url``. ``drop``: ``"same"`` first removes the tape's entries for the same requests,
    ``"all"`` every entry it held (mode ``all``); ``note``: the run to keep in the tape."""
    from .library import exchange_of, load_recording

    tape = StoreTape(url)
    root = Path(folder)
    entries = read_index(root)
    if drop != "none":
        old = tape.listing(offline_ok=False).refs
        if drop == "same":
            keys = set()
            for e in entries:
                ex = exchange_of(load_recording(root / e.file))
                keys.add(match_key(ex.endpoint, ex.body))
            old = [r for r in old if r.key in keys]
        tape.delete([r.path for r in old])
    for e in entries:
        path = root / e.file
        if path.is_file():
            fields = header_fields(path)
            fields.update({k: v for k, v in e.to_record().items() if v is not None})
            fields.pop("seq", None)
            fields.pop("file", None)
            tape.publish_file(path, fields)
    if note is not None:
        import obstore

        try:
            obstore.put(tape.store, tape.key(RUN_NOTE), note.encode("utf-8"))
        except Exception as exc:
            raise tape.fail(exc) from None


__all__ = ["has_tape", "merge", "recorded_by", "staging", "tape_url"]
