"""Append-only text kept compact: what a long stream's fragments cost once they are joined. Sans-IO.

A long stream brings its text and its tool-call arguments in hundreds of thousands of fragments of
a few dozen characters. Kept as they come, each costs a string object (about 50 bytes of header)
and a list slot besides its characters: two to three times the text itself. A :class:`TextBuffer`
joins every :data:`SEAL` fragments into one block as they arrive (each character is copied once
more, at C speed) and :meth:`TextBuffer.text` joins the blocks once, so what stays is about the
size of the text.
"""

from __future__ import annotations

SEAL = 256  # fragments joined into one block


class TextBuffer:
    """Text appended fragment by fragment; :meth:`text` is everything appended so far."""

    __slots__ = ("_blocks", "_tail")

    def __init__(self) -> None:
        self._blocks: list[str] = []  # joined runs of fragments, in order
        self._tail: list[str] = []  # the fragments since the last block

    def append(self, text: str) -> None:
        tail = self._tail
        tail.append(text)
        if len(tail) >= SEAL:
            self._blocks.append("".join(tail))
            tail.clear()

    def seal(self) -> None:
        """Join the fragments since the last block (no more are expected for a while)."""
        tail = self._tail
        if len(tail) > 1:
            self._blocks.append("".join(tail))
            tail.clear()

    def text(self) -> str:
        """Everything appended so far, as one string (kept as the only block from then on)."""
        blocks = self._blocks
        if self._tail:
            blocks.extend(self._tail)
            self._tail.clear()
        if len(blocks) > 1:
            joined = "".join(blocks)
            blocks.clear()
            blocks.append(joined)
        return blocks[0] if blocks else ""
