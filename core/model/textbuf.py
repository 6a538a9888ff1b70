"""Append-only text kept compact: what a long stream's fragments cost once they are joined. Sans-IO.

A long stream brings its text and its tool-call arguments in hundreds of thousands of fragments of
a few dozen characters. Kept as they come, each costs a string object (about 50 bytes of header)
and a list slot besides its characters: two to three times the text itself. A :class:`TextBuffer`
joins every :data:`SEAL` fragments into a small block as they arrive, and every :data:`SEAL`
small blocks into a large one (each character is copied twice more, at C speed), and
:meth:`TextBuffer.text` joins the blocks once: what stays is about the size of the text. Large
blocks (hundreds of kilobytes) are given back to the system when freed, so joining them at the
end does not leave their size behind as memory the process still holds.
"""

from __future__ import annotations

SEAL = 256  # fragments joined into one small block; small blocks joined into one large block


class TextPieces(tuple[str, ...]):
    """A string kept in pieces (the blocks of a :class:`TextBuffer`), for a writer that writes
    them one after another: :func:`~streamtool.core.outputs.json_text.iter_json` writes it as
    the one JSON string of the pieces joined, without joining them (which would hold the text
    twice while it copies)."""

    __slots__ = ()

    def joined(self) -> str:
        return "".join(self)


class TextBuffer:
    """Text appended fragment by fragment; :meth:`text` is everything appended so far.

    ``tail`` is the list of fragments since the last block: a caller on a hot path may append to
    it directly, and then calls :meth:`seal` once it holds :data:`SEAL` fragments (what
    :meth:`append` does).
    """

    __slots__ = ("_large", "_small", "tail")

    def __init__(self) -> None:
        # None until the first block of each size (thousands of short tool calls keep a
        # buffer each while they are open: two empty lists each would be most of it)
        self._large: list[str] | None = None
        self._small: list[str] | None = None
        self.tail: list[str] = []

    def append(self, text: str) -> None:
        tail = self.tail
        tail.append(text)
        if len(tail) >= SEAL:
            self.seal()

    def seal(self) -> None:
        """Join the fragments since the last block (no more are expected for a while)."""
        tail = self.tail
        if not tail:
            return
        small = self._small
        if small is None:
            small = self._small = []
        small.append("".join(tail) if len(tail) > 1 else tail[0])
        tail.clear()
        if len(small) >= SEAL:
            if self._large is None:
                self._large = []
            self._large.append("".join(small))
            small.clear()

    def blocks(self) -> list[str]:
        """Everything appended so far, as the blocks it is kept in (joined, they are
        :meth:`text`): for a writer that writes them one after another."""
        self.seal()
        return [*(self._large or ()), *(self._small or ())]

    def text(self) -> str:
        """Everything appended so far, as one string (kept as the only block from then on)."""
        large = self._large
        small = self._small
        tail = self.tail
        if large is not None and len(large) == 1 and not small and not tail:
            return large[0]
        if large is None and not small and len(tail) == 1:
            return tail[0]
        joined = "".join([*(large or ()), *(small or ()), *tail])
        self._small = None
        tail.clear()
        self._large = [joined] if joined else None
        return joined
