"""No module of streamtool reads another module's private names.

A name that starts with one underscore is its module's own: another module that needs it gets a
public spelling of it. Read from the source (``ast``), for every module of ``core`` and ``cli``:

- ``from .x import _y`` (or ``from streamtool... import _y``);
- ``x._y`` where ``x`` is an imported module;
- ``obj._y`` on any other object (not ``self``, ``cls`` or ``super()``) when this module never
  defines ``_y`` itself (a function, class, assignment or ``__slots__`` entry of that name), so
  that ``_y`` belongs to a class of another module. A subclass that uses the protected hooks of
  its base (``self._emit(...)``, ``super()._payload(...)``) is that class's own business.

The named tuple's public methods (``_replace``, ``_asdict``...) are public despite their spelling.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAMEDTUPLE_API = {"_replace", "_asdict", "_fields", "_make", "_field_defaults"}
OWN = {"self", "cls"}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _modules() -> list[Path]:
    return sorted(p for top in ("core", "cli") for p in (ROOT / top).rglob("*.py"))


def _ours(module: str | None, level: int) -> bool:
    return level > 0 or (module or "").split(".")[0] == "streamtool"


def _defined(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__slots__" for t in node.targets
        ):  # __slots__ entries
            names.update(
                c.value
                for c in ast.walk(node.value)
                if isinstance(c, ast.Constant) and isinstance(c.value, str)
            )
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr", "hasattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):  # a name read or set by getattr/setattr
            names.add(node.args[1].value)
    return names


def _is_own(value: ast.expr) -> bool:
    if isinstance(value, ast.Name):
        return value.id in OWN
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "super"
    )


def _reach_ins(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    where = path.relative_to(ROOT)
    found: list[str] = []
    module_names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if _ours(node.module, node.level) and _private(alias.name):
                    found.append(f"{where}:{node.lineno}: imports {alias.name}")
                if _ours(node.module, node.level) and not _private(alias.name):
                    # a submodule imported by name (``from . import x``) as well as any object
                    module_names.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                module_names.add(alias.asname or alias.name.split(".")[0])
    defined = _defined(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not _private(node.attr):
            continue
        if node.attr in NAMEDTUPLE_API or _is_own(node.value):
            continue
        owner = node.value
        if isinstance(owner, ast.Name) and owner.id in module_names:
            found.append(f"{where}:{node.lineno}: reads {owner.id}.{node.attr}")
        elif node.attr not in defined:
            found.append(f"{where}:{node.lineno}: reads {ast.unparse(owner)}.{node.attr}")
    return found


def test_no_module_reads_another_module_s_private_names():
    found = [hit for path in _modules() for hit in _reach_ins(path)]
    # the interpreter's own exit, not a module of this project's
    found = [hit for hit in found if not hit.endswith("os._exit")]
    assert not found, "\n".join(found)
