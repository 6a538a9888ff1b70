"""Recordings on disk: the format (pure data, importable by the pipeline), the reader
(:mod:`.reader`), the writer (:mod:`.writer`, :mod:`.recorder`), secret scrubbing
(:mod:`.secrets`), replaying a file (:mod:`.replay_file`) and golden suites (:mod:`.check`).

Only the format is imported here: the pipeline may use it without touching any I/O module.
"""

from .format import (
    END_REASONS,
    FORMAT_NAME,
    FORMAT_VERSION,
    Chunk,
    End,
    Header,
    RecordingError,
)

__all__ = [
    "END_REASONS",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "Chunk",
    "End",
    "Header",
    "RecordingError",
]
