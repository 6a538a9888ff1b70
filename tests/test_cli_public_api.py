"""The command line uses no private name of typer, click, rich or pygments: nothing imported from a
``_`` module or under a ``_`` name, and no ``_`` attribute of theirs read, set or overridden."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

import streamtool.cli

CLI = Path(streamtool.cli.__file__).parent
MODULES = sorted(p.stem for p in CLI.glob("*.py"))
LIBRARIES = ("typer", "click", "rich", "pygments")


def _private(name: str) -> bool:
    dunder = name.startswith("__") and name.endswith("__")
    return name.startswith("_") and not dunder and name != "_abc_impl"  # (set by ABCMeta)


def _library_names(cls: type) -> set[str]:
    """The private names the library classes among ``cls``'s bases define or annotate."""
    names: set[str] = set()
    for base in cls.__mro__[1:]:
        if base.__module__.split(".")[0] in LIBRARIES:
            defined = (*vars(base), *getattr(base, "__annotations__", {}))
            names |= {n for n in defined if _private(n)}
    return names


@pytest.mark.parametrize("name", MODULES)
def test_no_private_name_of_a_library(name: str) -> None:
    path = CLI / f"{name}.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            parts = node.module.split(".")
            if parts[0] in LIBRARIES:
                assert not any(_private(p) for p in parts), (path.name, node.lineno)
                assert not any(_private(a.name) for a in node.names), (path.name, node.lineno)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] in LIBRARIES:
                    assert not any(_private(p) for p in parts), (path.name, node.lineno)
    if name == "__main__":
        return  # (importing it runs the command)
    # the classes built on a library's: no private name of the library's classes overridden,
    # read or set
    module = importlib.import_module(f"streamtool.cli.{name}")
    for _, cls in inspect.getmembers(module, inspect.isclass):
        if cls.__module__ != module.__name__:
            continue
        theirs = _library_names(cls)
        if not theirs:
            continue
        assert not theirs & set(vars(cls)), (cls.__name__, theirs & set(vars(cls)))
        source = ast.parse(inspect.getsource(cls))
        used = {n.attr for n in ast.walk(source) if isinstance(n, ast.Attribute)}
        assert not theirs & used, (cls.__name__, theirs & used)


def test_the_check_sees_the_classes_built_on_typer() -> None:
    from streamtool.cli.main import LazyGroup
    from streamtool.cli.params import PlainArgument, PlainOption

    for cls in (LazyGroup, PlainOption, PlainArgument):
        assert _library_names(cls)  # typer's classes have private names to keep away from
    assert "_runtime_param" in _library_names(PlainOption)
    assert "_usage_display_name" in _library_names(PlainArgument)
