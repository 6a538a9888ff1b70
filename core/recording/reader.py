"""File I/O for recordings: open a recording or a raw SSE body, and write recordings.

This is the edge: everything here touches the file system. Parsing rules live in
:mod:`streamtool.core.model.records`.
"""

from __future__ import annotations

import io
import os
import stat
import sys
import time
from collections.abc import Generator, Iterable, Iterator
from pathlib import Path
from typing import IO, Any, Literal

import msgspec

from ..model.records import (
    Chunk,
    End,
    Header,
    RecordingError,
    SessionRecord,
    is_utf8_text,
    os_error_text,
    parse_header,
    record_from_obj,
)
from ..wire import fastjson
from ..wire.fastjson import check_depth
from ..wire.fastjson import loads_utf8_unchecked as fast_loads

RAW_SUFFIXES = {".sse", ".txt"}
RECORDING_SUFFIXES = {".jsonl", ".json"}
RAW_BLOCK = 64 * 1024
# a recording is read in blocks of whole lines of about this size (measured: at 64 KB the peak
# memory of a 200 MB replay of many calls was 2 MB higher, the freed blocks' room scattered
# among what the replay keeps; the speed is the same)
READ_BLOCK = 256 * 1024
GOLDEN_FORMAT = "streamtool-golden"  # what check writes (outputs/golden.py)
GOLDEN_READ_LIMIT = 64 * 1024 * 1024
STDIN = "-"  # the path that names standard input
STDIN_NAME = "<stdin>"


class Source:
    """A recording or raw SSE body on disk, read lazily.

    ``header`` is available at once; iterate :meth:`chunks` once; afterwards ``end`` holds the
    end record, or ``None`` when the recording was cut off before it. A WebSocket session
    (:attr:`websocket`) holds messages, not reads: iterate :meth:`session_records` instead
    (:meth:`chunks` refuses it).
    """

    _session = False  # session_records() is reading: message records are what is wanted

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = str(path)
        self.name = Path(self.path).name
        self.end: End | None = None
        self.cut_line: int | None = None  # the last line, cut mid-way (not replayed)
        self._fh: IO[Any] | None = None
        self._resume: int | None = None  # set while chunks() has the file to open again
        self._lineno = 0
        self._stdin_head: list[tuple[float, bytes]] | None = None
        if self.path == STDIN:
            self.path = self.name = STDIN_NAME
            self._open_stdin()
            return
        try:
            mode = os.stat(self.path).st_mode
            if stat.S_ISDIR(mode):
                raise RecordingError(self.path, None, "is a folder, not a recording")
            if not stat.S_ISREG(mode):
                # a FIFO or a device would block or never end: read standard input with "-"
                raise RecordingError(self.path, None, "is not a regular file (use - for stdin)")
            self._open()
        except OSError as exc:
            raise RecordingError(self.path, None, os_error_text(exc)) from None

    def close(self) -> None:
        """Close the file (reading the header alone leaves it open for :meth:`chunks`)."""
        fh, self._fh = self._fh, None
        if fh is not None:
            fh.close()

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- opening ---------------------------------------------------------------------------
    def _refuse_golden(self, first: Any) -> None:
        """A golden file given where a recording belongs: say what it is, and what to use."""
        obj = first
        if obj is None:
            try:
                with open(self.path, encoding="utf-8") as fh:
                    obj = fastjson.loads(fh.read(GOLDEN_READ_LIMIT))
            except (OSError, ValueError):
                return
        if not isinstance(obj, dict) or obj.get("format") != GOLDEN_FORMAT:
            return
        recording = obj.get("recording")
        where = (
            f"replay {Path(self.path).with_name(recording)}, or compare them with streamtool check"
            if isinstance(recording, str) and recording
            else "replay the recording it belongs to"
        )
        raise RecordingError(
            self.path, None, f"is a golden file (the expected transcript), not a recording: {where}"
        )

    def _open(self) -> None:
        suffix = Path(self.path).suffix.lower()
        if suffix in RAW_SUFFIXES:
            self._as_raw()
            return
        # utf-8-sig: a BOM at the start (an editor's) is not part of the header line
        fh = open(self.path, "rb")  # noqa: SIM115
        try:
            first, lineno = _first_line(fh)
        except _NotUTF8 as exc:
            fh.close()
            if suffix in RECORDING_SUFFIXES:
                raise RecordingError(self.path, exc.lineno, "not UTF-8 text") from None
            self._as_raw()
            return
        if first is None:
            fh.close()
            if suffix in RECORDING_SUFFIXES:
                raise RecordingError(self.path, 1, "empty file: no header")
            self._as_raw()
            return
        try:
            obj = fastjson.loads(first)
        except ValueError:
            obj = None
        looks_like_recording = isinstance(obj, dict) and obj.get("type") == "header"
        if suffix not in RECORDING_SUFFIXES and not looks_like_recording:
            fh.close()
            self._as_raw()
            return
        if obj is None:
            fh.close()
            self._refuse_golden(None)
            raise RecordingError(self.path, lineno, "not JSON, and not a recording header")
        try:
            self.header = parse_header(obj, self.path, lineno)
        except RecordingError:
            fh.close()
            self._refuse_golden(obj)
            raise
        # the file is opened again by chunks(): reading the header alone holds no file open
        self._resume = fh.tell()
        fh.close()
        self._lineno = lineno
        self.raw = False

    def _as_raw(self) -> None:
        self.raw = True
        self.header = Header(raw_body=True)

    def _open_stdin(self) -> None:
        """Standard input: a recording when its first line is a header, else a raw body.

        A raw body is read as it arrives (``curl -N ... | streamtool inspect -``): each read
        is a chunk whose ``t`` counts from when streamtool began reading.
        """
        fd = sys.stdin.fileno()
        self._t0 = time.monotonic()
        head: list[tuple[float, bytes]] = []
        seen = b""
        while True:
            block = os.read(fd, RAW_BLOCK)
            if block:
                head.append((time.monotonic() - self._t0, block))
                seen += block
            stripped = seen.lstrip()
            if not block or b"\n" in stripped or (stripped and stripped[:1] != b"{"):
                break
        first = seen.lstrip().split(b"\n", 1)[0]
        try:
            obj = fastjson.loads(first)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and obj.get("type") == "header":
            # read on line by line, as from a file: what came first, then the rest of stdin
            fh = io.BufferedReader(_Prefixed(seen, fd), RAW_BLOCK)
            try:
                first_line, lineno = _first_line(fh)
            except _NotUTF8 as exc:
                raise RecordingError(self.path, exc.lineno, "not UTF-8 text") from None
            assert first_line is not None
            self.header = parse_header(fastjson.loads(first_line), self.path, lineno)
            self._fh = fh
            self._lineno = lineno
            self.raw = False
            return
        self._as_raw()
        self._stdin_head = head

    # -- reading ---------------------------------------------------------------------------
    @property
    def websocket(self) -> bool:
        """A WebSocket session: its records are messages (:meth:`session_records`)."""
        return self.header.websocket

    def session_records(self) -> Iterator[SessionRecord]:
        """The messages and control frames of a WebSocket session, in order (iterate once)."""
        if not self.websocket:
            raise RecordingError(self.path, None, "is not a WebSocket session (no messages)")
        self._session = True
        for block, _ in self.chunk_blocks():
            yield from block  # type: ignore[misc]  # messages and control frames only

    def chunks(self) -> Iterator[Chunk]:
        for block, _ in self.chunk_blocks():
            yield from block

    def chunk_blocks(self) -> Iterator[tuple[list[Chunk], bool]]:
        """:meth:`chunks` in lists, as they are read: ``(chunks, texts)``, ``texts`` true when
        every chunk of the list is text (a block of plain chunk lines, decoded at once)."""
        if self.raw:
            for chunk in self._raw_chunks():
                yield [chunk], False
            return
        if self.websocket and not self._session:
            raise RecordingError(
                self.path,
                None,
                "is a WebSocket session (messages, not network reads): replay, inspect, report, "
                "check, diff, serve, conform and mutate read it",
            )
        fh = self._fh
        blocks = False
        if fh is None and self._resume is not None:
            # bytes: each line's UTF-8 is parsed as it is, no text decoded twice
            try:
                fh = open(self.path, "rb")  # noqa: SIM115
                fh.seek(self._resume)
            except OSError as exc:
                raise RecordingError(self.path, None, os_error_text(exc)) from None
            self._resume = None
            self._fh = fh
            blocks = True  # a file (standard input is read line by line, as it comes)
        assert fh is not None
        try:
            if blocks:
                yield from self._blocks(fh)
            else:
                yield from _singles(self._line_chunks(fh, fh))
        finally:
            fh.close()

    def _blocks(self, fh: IO[bytes]) -> Generator[tuple[list[Chunk], bool], None, None]:
        """The records of a file, read in blocks of whole lines: a block of plain chunk records
        (each line one compact object, as the writer writes them) is decoded in one call
        (:func:`_plain_chunks`); any other block, and the last line when the file does not end
        with a line end, goes line by line (:meth:`_line_chunks`: its errors, its line numbers,
        the cut last line)."""
        pending: list[bytes] = []  # the start of a line that has not ended yet
        read = fh.read
        while data := read(READ_BLOCK):
            cut = data.rfind(b"\n") + 1
            if not cut:
                pending.append(data)  # a long line: joined once it has ended
                continue
            block = data if cut == len(data) else data[:cut]
            if pending:
                pending.append(block)
                block = b"".join(pending)
                pending = []
            if cut < len(data):
                pending.append(data[cut:])
            if self.end is None and not self._session:
                chunks: list[Chunk] | None = _plain_chunks(block)
                if chunks is not None:
                    self._lineno += len(chunks)
                    yield chunks, True
                    continue
                # often the end record alone (the last line): the lines before it at once
                last = block.rfind(b"\n", 0, -1) + 1
                chunks = _plain_chunks(block[:last]) if last else None
                if chunks is not None:
                    self._lineno += len(chunks)
                    yield chunks, True
                    block = block[last:]
            if (yield from _singles(self._line_chunks(fh, io.BytesIO(block)))):
                return
        if pending:
            yield from _singles(self._line_chunks(fh, (b"".join(pending),)))

    def _line_chunks(self, fh: IO[bytes], lines: Iterable[bytes]) -> Generator[Chunk, None, bool]:
        """The records of ``lines`` (the next lines of ``fh``), one by one; ``True`` when the
        last line of the file was cut mid-way (the reader stops there)."""
        path = self.path
        lineno = self._lineno
        loads = fast_loads
        try:
            for line in lines:
                lineno += 1
                if self.end is not None:
                    if line.strip():
                        raise RecordingError(path, lineno, "a record after the end record")
                    continue
                try:
                    obj = loads(line)
                except UnicodeDecodeError:
                    raise RecordingError(path, lineno, "not UTF-8 text") from None
                except ValueError as exc:
                    if not line.strip():
                        continue
                    if not line.endswith(b"\n") and self._at_end(fh):
                        # the last line was cut mid-way (a crash, a full disk, kill -9): what
                        # came before it is whole; the reader says so and stops there
                        self.cut_line = lineno
                        return True
                    msg = fastjson.error_text(exc)
                    raise RecordingError(path, lineno, f"not JSON ({msg})") from None
                if type(obj) is dict and obj.get("type") == "chunk" and not self._session:
                    text = obj.get("text")
                    if type(text) is str and "b64" not in obj and is_utf8_text(text):
                        t = obj.get("t")
                        # t - t == 0 is False for NaN and the infinities
                        if t is None or (type(t) in (float, int) and t - t == 0):
                            yield Chunk(t, text)  # two scalars: no nesting to check
                            continue
                try:
                    check_depth(line, obj)
                except ValueError as exc:
                    raise RecordingError(path, lineno, f"not JSON ({exc.args[0]})") from None
                rec = record_from_obj(obj, path, lineno)
                if isinstance(rec, End):
                    self.end = rec
                elif (type(rec) is Chunk) != self._session:
                    yield rec  # type: ignore[misc]
                elif self._session:
                    raise RecordingError(path, lineno, "a chunk record in a WebSocket session")
                else:
                    raise RecordingError(
                        path,
                        lineno,
                        f"a WebSocket {obj.get('type')} record in a recording of network reads "
                        "(its header names no websocket transport)",
                    )
        finally:
            self._lineno = lineno
        return False

    @staticmethod
    def _at_end(fh: IO[bytes]) -> bool:
        return not fh.read(1)

    def _raw_chunks(self) -> Iterator[Chunk]:
        if self._stdin_head is not None:
            head, self._stdin_head = self._stdin_head, []
            for t, block in head:
                yield Chunk(round(t, 6), block)
            fd = sys.stdin.fileno()
            while block := os.read(fd, RAW_BLOCK):
                yield Chunk(round(time.monotonic() - self._t0, 6), block)
            self.end = End(round(time.monotonic() - self._t0, 6), "complete", None)
            return
        try:
            with open(self.path, "rb") as fh:
                while block := fh.read(RAW_BLOCK):
                    yield Chunk(None, block)
        except OSError as exc:
            raise RecordingError(self.path, None, os_error_text(exc)) from None
        self.end = End(None, "complete", None)


class _Prefixed(io.RawIOBase):
    """``head``, then the bytes of file descriptor ``fd`` as they come."""

    def __init__(self, head: bytes, fd: int) -> None:
        self._head = memoryview(head)
        self._fd = fd

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        head = self._head
        if head:
            n = min(len(buffer), len(head))
            buffer[:n] = head[:n]
            self._head = head[n:]
            return n
        data = os.read(self._fd, len(buffer))
        buffer[: len(data)] = data
        return len(data)


class _NotUTF8(Exception):
    def __init__(self, lineno: int) -> None:
        self.lineno = lineno


def _first_line(fh: IO[bytes]) -> tuple[str | None, int]:
    """The first line that is not blank, decoded (a BOM at the start, an editor's, is not part
    of it), and its number. readline, not iteration: the position after it stays known (tell)
    for chunks()."""
    lineno = 0
    while True:
        raw = fh.readline()
        if not raw:
            return None, lineno
        lineno += 1
        try:
            line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
        except UnicodeDecodeError:
            raise _NotUTF8(lineno) from None
        if line.strip():
            return line, lineno


class _PlainChunk(Chunk, kw_only=True, rename={"data": "text"}):
    """A chunk record of text whose time is a finite number or null, decoded as the
    :class:`Chunk` it is; any other record (``b64``, a text that is not a string, ``t`` that is
    not a number, the end record) fails to decode as one. Other fields are ignored, as the line
    by line reading ignores them; msgspec refuses the non-finite numbers (``NaN``, ``1e400``)."""

    type: Literal["chunk"]
    data: str
    t: int | float | None = None
    b64: msgspec.UnsetType = msgspec.UNSET


_decode_plain_lines = msgspec.json.Decoder(_PlainChunk).decode_lines
_NotPlain = (msgspec.DecodeError, UnicodeError, RecursionError)


def _singles(
    chunks: Generator[Chunk, None, bool],
) -> Generator[tuple[list[Chunk], bool], None, bool]:
    """Each chunk of ``chunks`` as a list of its own (not said to be text); their return."""
    while True:
        try:
            chunk = next(chunks)
        except StopIteration as stop:
            return bool(stop.value)
        yield [chunk], False


def _plain_chunks(block: bytes) -> list[Chunk] | None:
    """The chunks of a block of whole lines that are all plain chunk records, or ``None``.

    ``decode_lines`` reads values separated by any whitespace; the block is taken only when every
    line is one value, which holds when each line starts with ``{`` and ends with ``}`` (a line
    end between ``}`` and ``{`` cannot be inside a JSON value, and a JSON string holds no line
    end) and there are as many values as lines."""
    n = block.count(b"\n")
    if (
        not n
        or block[:1] != b"{"
        or block[-2:] != b"}\n"
        or (n > 1 and block.count(b"}\n{") != n - 1)
    ):
        return None
    try:
        records = _decode_plain_lines(block)
    except _NotPlain:
        return None
    return records if len(records) == n else None  # type: ignore[return-value]
