"""The quirk catalogue covers every quirk id the library can report, and docs/quirks.md is it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from streamtool.core.converters import gemini
from streamtool.core.quirk_ids import QuirkId
from streamtool.core.quirks import (
    CATALOGUE,
    SEVERITIES,
    catalogue_markdown,
    lookup,
    quirk_ids_source,
)

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "core"

# Calls whose first argument is a quirk id.
EMITTERS = {"quirk", "note_quirk", "_note", "Quirk", "Note", "_quirk"}

# Ids built at run time, by their f-string, with every value the code can give them.
DYNAMIC = {
    "f'gemini_{reason.lower()}'": sorted(f"gemini_{r.lower()}" for r in gemini._ERROR_FINISHES),
    "f'kimi_tokens_in_{stream}'": ["kimi_tokens_in_content", "kimi_tokens_in_reasoning"],
    "f'reasoning_field_{field}'": [
        "reasoning_field_reasoning_content",
        "reasoning_field_reasoning",
        "reasoning_field_reasoning_details",
    ],
}

# Arguments that forward an id given by a caller whose own call site is scanned.
FORWARDED = {
    ("converters/base.py", "quirk_id"),  # Converter.quirk builds the Quirk
    ("handlers/base.py", "quirk_id"),  # Handler.note_quirk builds the Quirk
    ("replay.py", "q"),  # the engine passes on the converters' and handlers' quirks
    ("converters/kimi_k2.py", "note.kind"),  # kimi_tokens' Note(...) sites are scanned
    ("converters/kimi_k2.py", "piece"),  # its _note(piece) takes one of those Notes
}


class Unresolved(Exception):
    pass


def _values(node: ast.expr, func: ast.AST | None, where: str) -> list[str]:
    """The ids an emitter's first argument can take."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        return _values(node.body, func, where) + _values(node.orelse, func, where)
    text = ast.unparse(node)
    if isinstance(node, ast.JoinedStr):
        if text in DYNAMIC:
            return list(DYNAMIC[text])
        raise Unresolved(f"{where}: dynamic quirk id {text}")
    if (where.split(":")[0], text) in FORWARDED:
        return []
    if isinstance(node, ast.Name) and func is not None:
        found: list[str] = []
        for sub in ast.walk(func):
            if isinstance(sub, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == node.id for t in sub.targets
            ):
                found += _values(sub.value, None, where)
        if found:
            return found
    raise Unresolved(f"{where}: quirk id {text}")


def scan(source: str, name: str) -> set[str]:
    """Every quirk id a module's source can report (raises Unresolved for an unknown form)."""
    tree = ast.parse(source)
    ids: set[str] = set()

    def visit(node: ast.AST, func: ast.AST | None) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else func
            if isinstance(child, ast.Call) and child.args:
                f = child.func
                fname = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
                is_error = any(
                    k.arg == "error" and isinstance(k.value, ast.Constant) and k.value.value
                    for k in child.keywords
                )
                if fname in EMITTERS and not is_error:
                    ids.update(_values(child.args[0], func, f"{name}:{child.lineno}"))
            visit(child, inner)

    visit(tree, None)
    return ids


def emitted_ids() -> set[str]:
    ids: set[str] = set()
    for path in sorted(CORE.rglob("*.py")):
        if path.name == "quirks.py":
            continue
        ids |= scan(path.read_text(encoding="utf-8"), path.relative_to(CORE).as_posix())
    return ids


def test_every_quirk_id_in_core_has_a_catalogue_entry():
    ids = emitted_ids()
    # the scanner sees the converters, the tracker, the handlers and the Kimi scanner
    for known in ("oai_tool_index_missing", "oai_args_cumulative", "tool_args_duplicate_key"):
        assert known in ids
    assert "kimi_call_end_missing" in ids
    assert "kimi_stray_text" not in ids  # an error kind (Note(..., error=True)), not a quirk
    missing = sorted(ids - CATALOGUE.keys())
    assert missing == [], f"quirk ids without a catalogue entry in core/quirks.py: {missing}"


def test_the_scanner_finds_new_ids_and_refuses_forms_it_cannot_read():
    src = (
        "class C:\n"
        "    def f(self, x):\n"
        "        self.quirk('brand_new_quirk', 'd')\n"
        "        kind = 'a_quirk' if x else 'b_quirk'\n"
        "        self.quirk(kind)\n"
        "        Note('an_error', 'm', error=True)\n"
    )
    assert scan(src, "x.py") == {"brand_new_quirk", "a_quirk", "b_quirk"}
    with pytest.raises(Unresolved):
        scan("def f(self, y):\n    self.quirk(f'q_{y}')\n", "x.py")
    with pytest.raises(Unresolved):
        scan("def f(self, y):\n    self.quirk(y.name)\n", "x.py")


def test_entries_are_well_formed():
    assert len(CATALOGUE) >= 80
    for info in CATALOGUE.values():
        assert info.severity in SEVERITIES, info
        assert info.explanation and "\n" not in info.explanation, info
        assert not info.explanation.endswith("."), info  # the docs add the full stop
        assert info.reference.startswith("Q-"), info
        assert "#" in info.reference, info  # a public issue or pull request
        assert info.anchor == info.id
    # the ids the fidelity work reports are known in advance
    for future in (
        "responses_item_id_rotation",
        "anthropic_content_in_message_start",
        "unknown_event",
        "text_mismatch",
    ):
        assert future in CATALOGUE


def test_lookup_of_an_unknown_id_is_a_warning_not_a_crash():
    info = lookup("never_heard_of_it")
    assert info.severity == "warn"
    assert "not in" in info.explanation
    assert lookup("oai_parallel_same_index").severity == "error"


def test_docs_quirks_md_is_generated_from_the_catalogue():
    doc = (ROOT / "docs" / "quirks.md").read_text(encoding="utf-8")
    assert doc == catalogue_markdown(), (
        "docs/quirks.md is stale: python -m streamtool.core.quirks > docs/quirks.md"
    )
    for quirk_id in CATALOGUE:
        assert f"\n## {quirk_id}\n" in doc


def test_quirk_ids_is_generated_from_the_catalogue():
    assert [str(q) for q in QuirkId] == list(CATALOGUE)
    source = (ROOT / "core" / "quirk_ids.py").read_text(encoding="utf-8")
    assert source == quirk_ids_source(), (
        "core/quirk_ids.py is stale: python -m streamtool.core.quirks --ids > core/quirk_ids.py"
    )
