"""The quirk catalogue holds every quirk id the library can report, and docs/quirks.md is it."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from streamtool.core.model import Quirk
from streamtool.core.model.quirk_ids import QuirkId
from streamtool.core.model.quirks import (
    CATALOGUE,
    SEVERITIES,
    catalogue_markdown,
    lookup,
    quirk_ids_source,
)

ROOT = Path(__file__).resolve().parent.parent


def test_the_quirk_ids_are_the_catalogue_s():
    # the code reports a quirk by a QuirkId member (mypy refuses a bare string, and a member the
    # enum lacks), so an id the catalogue does not hold cannot be reported
    assert [str(q) for q in QuirkId.members()] == list(CATALOGUE)
    source = (ROOT / "core" / "model" / "quirk_ids.py").read_text(encoding="utf-8")
    assert source == quirk_ids_source(), (
        "core/model/quirk_ids.py is stale: "
        "python -m streamtool.core.model.quirks --ids > core/model/quirk_ids.py"
    )


def test_the_quirk_ids_are_a_closed_set_of_strings():
    # the text of an id gives its member; any other text is refused, as an enum would
    assert QuirkId("eof_no_done") is QuirkId.EOF_NO_DONE
    with pytest.raises(ValueError, match="'eof_no_dne' is not a quirk id"):
        QuirkId("eof_no_dne")
    assert pickle.loads(pickle.dumps(QuirkId.EOF_NO_DONE)) is QuirkId.EOF_NO_DONE
    assert type(QuirkId.EOF_NO_DONE.value) is str and QuirkId.EOF_NO_DONE.value == "eof_no_done"
    assert len(set(QuirkId.members())) == len(QuirkId.members()) == len(CATALOGUE)


def test_a_member_is_its_id():
    quirk = Quirk(QuirkId.OAI_TOOL_INDEX_MISSING, "d")
    assert quirk.id == "oai_tool_index_missing" and f"{quirk.id}" == "oai_tool_index_missing"
    assert json.dumps(quirk.to_dict()) == json.dumps(Quirk("oai_tool_index_missing", "d").to_dict())
    assert CATALOGUE[QuirkId.OAI_TOOL_INDEX_MISSING] is CATALOGUE["oai_tool_index_missing"]
    assert lookup(QuirkId.OAI_TOOL_INDEX_MISSING).severity == "error"


def test_entries_are_well_formed():
    assert len(CATALOGUE) >= 80
    for info in CATALOGUE.values():
        assert info.severity in SEVERITIES, info
        assert info.explanation and "\n" not in info.explanation, info
        assert not info.explanation.endswith("."), info  # the docs add the full stop
        # a catalogue section and a public issue or pull request; for an API the catalogue
        # does not cover yet, where its official SDK defines the shape, or the section of its
        # specification that sets the rule (MCP) and a public thread that shows it broken
        assert info.reference.startswith(("Q-", "SDK: ", "Spec: ")), info
        if info.reference.startswith(("Q-", "Spec: ")):
            assert "#" in info.reference, info
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
        "docs/quirks.md is stale: python -m streamtool.core.model.quirks > docs/quirks.md"
    )
    for quirk_id in CATALOGUE:
        assert f"\n## {quirk_id}\n" in doc
