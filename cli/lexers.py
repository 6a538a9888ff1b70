"""Pygments lexers for the code the tree shows, chosen from a file's path and made once.

Making a pygments lexer compiles every regular expression of its language: about 20 ms for
Python, more than lexing the lines the tree shows. Most of that goes to two kinds of pattern:
huge Unicode character classes (Python's identifiers are ``[<1,557 ranges>][<1,912 ranges>]*``)
and keyword lists, which pygments turns into nested optimised patterns (``a(?:s(?:sert)?|...)``)
that take several times longer to compile than the plain alternation they stand for. Lexing
then tries the rules of the current state in order at every position: about 30 failed matches
per token for Python.

Most code is ASCII, and on ASCII text a character class matches exactly the ASCII characters it
contains. So :func:`lexer_for` lexes ASCII text with a copy of the language's lexer whose Unicode
classes are cut to their ASCII part, whose rules are compiled when first needed, whose keyword
lists are set lookups (or plain alternations, longest word first: the same match, the longest
listed word that fits), and which tries at each position only the rules that can match the
character there (:mod:`.lexer_rules`): the same tokens, made in a fraction of the time and
lexed about five times as fast. Other text gets pygments' own lexer.

pygments is imported on first use, never by importing this module.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from typing import Any

_LEXERS = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "jsx",
    ".ts": "typescript",
    ".tsx": "tsx",
    ".json": "json",
    ".toml": "toml",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".md": "markdown",
    ".sh": "bash",
    ".bash": "bash",
    ".rs": "rust",
    ".go": "go",
    ".c": "c",
    ".h": "c",
    ".cpp": "cpp",
    ".cc": "cpp",
    ".hpp": "cpp",
    ".java": "java",
    ".rb": "ruby",
    ".html": "html",
    ".css": "css",
    ".sql": "sql",
    ".txt": "text",
    ".diff": "diff",
    ".patch": "diff",
}

LEXER_OPTIONS: dict[str, Any] = {"stripnl": False, "ensurenl": True, "tabsize": 4}

# character classes shorter than this are left alone: cutting them saves nothing
MIN_CLASS_CHARS = 50


@lru_cache(maxsize=256)
def lexer_for_path(path: str | None) -> str:
    """The pygments lexer name for a file path, chosen from its extension ("text" if unknown)."""
    if not path:
        return "text"
    name = os.path.basename(path)
    ext = os.path.splitext(name)[1].lower()
    if ext in _LEXERS:
        return _LEXERS[ext]
    from pygments.lexers import find_lexer_class_for_filename

    try:
        cls = find_lexer_class_for_filename(name)
    except Exception:  # pragma: no cover - pygments' guess failing is not our error
        cls = None
    if cls is None or not getattr(cls, "aliases", None):
        return "text"
    return str(cls.aliases[0])


def lexer_for(name: str, text: str) -> Any:
    """The lexer to highlight ``text`` with: the quick copy of ``name``'s lexer for ASCII text
    (when the language has one), else pygments' own."""
    if text.isascii():
        lexer = quick_lexer(name)
        if lexer is not None:
            return lexer
    return full_lexer(name)


@lru_cache(maxsize=64)
def full_lexer(name: str) -> Any:
    """pygments' lexer for ``name`` (the plain text lexer if pygments has none)."""
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        return get_lexer_by_name(name, **LEXER_OPTIONS)
    except ClassNotFound:  # pragma: no cover - names come from _LEXERS or pygments itself
        return get_lexer_by_name("text", **LEXER_OPTIONS)


@lru_cache(maxsize=64)
def quick_lexer(name: str) -> Any:
    """A lexer that gives the same tokens as ``name``'s on ASCII text, quicker to make and to
    run; ``None`` when the language's lexer is no ``RegexLexer`` (its own is as good)."""
    cls = quick_lexer_class(name)
    return None if cls is None else cls(**LEXER_OPTIONS)


def quick_lexer_class(name: str) -> type | None:
    """``name``'s lexer class, quicker to make and to run, the same tokens on ASCII text:
    its Unicode classes cut to ASCII, its rules made when first needed and tried only where they
    can match (:mod:`.lexer_rules`); ``None`` if it is no ``RegexLexer``."""
    from pygments.lexer import RegexLexer

    cls = _lexer_class(name)
    if cls is None or not issubclass(cls, RegexLexer) or getattr(cls, "token_variants", False):
        return None
    from . import lexer_rules

    rules = lexer_rules.Rules(ascii_tokendefs(cls), cls.flags)
    namespace: dict[str, Any] = {"_rules": rules, "_tokens": rules.states, "__module__": __name__}
    if cls.get_tokens_unprocessed is RegexLexer.get_tokens_unprocessed:
        # (a class with a loop of its own, or around pygments', gets the made-when-needed rules)
        namespace["get_tokens_unprocessed"] = lexer_rules.get_tokens_unprocessed
    return type(f"Quick{cls.__name__}", (cls,), namespace)


def _lexer_class(name: str) -> Any:
    """pygments' lexer class for ``name`` (``None`` if it has none)."""
    from pygments.lexers import find_lexer_class_by_name
    from pygments.util import ClassNotFound

    try:
        return find_lexer_class_by_name(name)
    except ClassNotFound:
        return None


def ascii_tokendefs(cls: Any) -> dict[str, list[Any]]:
    """``cls``'s token definitions with its large Unicode classes cut to their ASCII part (on
    ASCII text, the same matches), unless it ignores case."""
    tokendefs: dict[str, list[Any]] = cls.get_tokendefs()
    if cls.flags & re.IGNORECASE:
        # a class's non-ASCII letters can match ASCII ones when case is ignored (K, k and the
        # Kelvin sign): their ASCII part alone would not be the same class
        return tokendefs
    classes = _unicode_classes()
    tokens: dict[str, list[Any]] = {}
    for state, rules in tokendefs.items():
        new_rules = []
        for rule in rules:
            if type(rule) is tuple and isinstance(rule[0], str) and _cased(rule[0]):
                regex = rule[0]
                for big, small in classes:
                    if big in regex:
                        regex = regex.replace(big, small)
                if regex != rule[0]:
                    rule = (regex, *rule[1:])
            new_rules.append(rule)
        tokens[state] = new_rules
    return tokens


def _cased(regex: str) -> bool:
    """``regex`` sets no case-insensitive flag of its own (case-insensitively, a class's ASCII
    part is not the class)."""
    return "(?i" not in regex


@lru_cache(maxsize=1)
def _unicode_classes() -> tuple[tuple[str, str], ...]:
    """pygments' large Unicode character classes (the contents of a ``[...]``), longest first,
    each with the part of it that matches ASCII characters."""
    from pygments import unistring

    names = [*unistring.cats, "xid_start", "xid_continue"]
    texts = {getattr(unistring, n) for n in names}
    big = sorted((t for t in texts if len(t) >= MIN_CLASS_CHARS), key=len, reverse=True)
    return tuple((text, ascii_part(text)) for text in big)


# a character no ASCII text contains: stands for a class with no ASCII member
NO_ASCII = "\\u0100"


def ascii_part(class_text: str) -> str:
    """The ASCII members of the character class ``[class_text]``, as class contents.

    pygments writes its classes in code point order, so the ASCII members come first: the text
    up to the first non-ASCII character, where a range running past ASCII (``~-¡``) is cut to end
    at the last ASCII character.
    """
    for i, ch in enumerate(class_text):
        if ord(ch) >= 0x80:
            head = class_text[:i]
            if _ends_in_open_range(head):
                head += "\\x7f"
            return head or NO_ASCII
    return class_text


def _ends_in_open_range(head: str) -> bool:
    """``head`` ends with the ``-`` of a range (not an escaped ``\\-``, not the class's start)."""
    if not head.endswith("-") or len(head) < 2:
        return False
    backslashes = len(head[:-1]) - len(head[:-1].rstrip("\\"))
    return backslashes % 2 == 0
