"""The pygments lexer for the code the tree shows: its language chosen from the file's path,
made once per language, in the background as soon as a file's path is known.

Making a pygments lexer compiles its language's regular expressions (tens of milliseconds for
Python), more than drawing a frame. :func:`prepare` starts making it in a thread of its own when
the tree learns a file's path, before the file's code arrives, so a frame finds it made;
:func:`lexer` gives it (waiting if it is still being made, making it if it was never prepared).
Lexers are made as rich's ``Syntax`` makes them from a name (no newline stripped, one added at
the end, tabs of ``TAB_SIZE`` columns).

pygments is imported on first use, never by importing this module.
"""

from __future__ import annotations

import os
import threading
from functools import lru_cache
from typing import Any

__all__ = ["TAB_SIZE", "lexer", "lexer_for_path", "prepare"]

# each language's common extensions (pygments' own guess, from its filename patterns, is used for
# any other extension: it is slower the first time, and for some of these it picks a dialect,
# e.g. tsql)
_EXTENSIONS = {
    "python": (".py", ".pyi"),
    "javascript": (".js", ".mjs", ".cjs"),
    "jsx": (".jsx",),
    "typescript": (".ts",),
    "tsx": (".tsx",),
    "json": (".json",),
    "toml": (".toml",),
    "yaml": (".yaml", ".yml"),
    "markdown": (".md",),
    "bash": (".sh", ".bash"),
    "rust": (".rs",),
    "go": (".go",),
    "c": (".c", ".h"),
    "cpp": (".cpp", ".cc", ".hpp"),
    "java": (".java",),
    "ruby": (".rb",),
    "html": (".html",),
    "css": (".css",),
    "sql": (".sql",),
    "text": (".txt",),
    "diff": (".diff", ".patch"),
}
_LEXERS = {ext: language for language, exts in _EXTENSIONS.items() for ext in exts}

TAB_SIZE = 4

_lexers: dict[str, Any] = {}
_making = threading.Lock()
_prepared: set[str] = set()


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


def lexer(name: str) -> Any:
    """pygments' lexer for the language ``name`` (the plain text lexer if pygments has none),
    made once."""
    made = _lexers.get(name)
    if made is None:
        with _making:
            made = _lexers.get(name)
            if made is None:
                made = _lexers[name] = _make(name)
    return made


def _make(name: str) -> Any:
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    options = {"stripnl": False, "ensurenl": True, "tabsize": TAB_SIZE}
    try:
        return get_lexer_by_name(name, **options)
    except ClassNotFound:  # pragma: no cover - names come from _LEXERS or pygments itself
        return get_lexer_by_name("text", **options)


def prepare(path: str | None) -> None:
    """Start making the lexer for the file at ``path`` in the background (once per language);
    rich's ``Syntax``, which will draw the code, is imported there too."""
    key = path or ""
    if key in _prepared:
        return
    _prepared.add(key)

    def make() -> None:
        import rich.syntax  # noqa: F401

        lexer(lexer_for_path(path))

    threading.Thread(target=make, name="lexer", daemon=True).start()
