"""Cutting text the way providers stream it. Sans-IO, deterministic.

Providers send text and tool-call arguments in pieces of one or a few tokens. :func:`tokens`
cuts a text into token-sized pieces (a word with its leading space, a long word in pieces of
at most seven letters, a number in up to three digits, punctuation in runs of up to three,
whitespace runs): joined, they are the text. :func:`groups` joins them ``n`` at a time, for
providers that send several tokens per event.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r" ?[^\W\d_]{1,7}| ?\d{1,3}| ?[^\w\s]{1,3}|\s{1,4}|.", re.DOTALL)


def tokens(text: str) -> list[str]:
    """``text`` in token-sized pieces (``"".join(tokens(t)) == t``)."""
    return _TOKEN.findall(text)


def groups(text: str, n: int) -> list[str]:
    """``text`` in pieces of ``n`` tokens."""
    parts = tokens(text)
    if n <= 1:
        return parts
    return ["".join(parts[i : i + n]) for i in range(0, len(parts), n)]


def cut(text: str, n: int, pieces: list[str] | None) -> list[str]:
    """The pieces a part is sent in: the ones it asks for, else ``n`` tokens at a time."""
    if pieces is not None:
        return [p for p in pieces if p]
    return groups(text, n)
