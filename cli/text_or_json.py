"""``--format text|json`` of the commands that list (``ls``, ``tape``) or compare (``diff``):
a module of its own, so that the commands that do not take it (``replay``, ``--help``...) do
not build its enum at start-up."""

from enum import StrEnum


class TextOrJson(StrEnum):
    """A ``--format`` of text for people or JSON for scripts."""

    text = "text"
    json = "json"
