"""Citations normalized across providers: in the summary, in the transcript under their text
segment, and in the tree under their text."""

from __future__ import annotations

import os
from typing import Any

import pytest
from typer.testing import CliRunner

from streamtool.cli.main import app
from streamtool.core.apis.anthropic.citations import from_anthropic
from streamtool.core.apis.gemini.citations import from_gemini_grounding
from streamtool.core.apis.openai_chat.citations import from_openai_annotation, from_search_results
from streamtool.core.drive.replay_file import replay_file
from streamtool.core.outputs.transcript import build_transcript

from .conftest import RECORDINGS
from .wire_helpers import assert_chunking_invariant

PY314 = "https://www.python.org/downloads/release/python-3140/"
CASES: dict[str, list[dict[str, Any]]] = {
    "anthropic-thinking-web-search-then-tool-call.jsonl": [
        {
            "segment": "seg_2",
            "url": "https://www.python.org/downloads/release/python-3130/",
            "title": "Python Release Python 3.13.0 | Python.org",
            "cited_text": "Python 3.13.0 Release Date: Oct. 7, 2024 This is the stable release of "
            "Python 3.13.0 ",
        }
    ],
    "xai-responses-server-side-custom-tool-call.jsonl": [
        {
            "segment": "seg_1",
            "url": "https://x.com/ThePSF/status/1975432118825201722",
            "title": "1",
            "start": 0,
            "end": 100,
        }
    ],
    "openai-chat-search-annotations.jsonl": [
        {
            "segment": "seg_1",
            "url": PY314 + "?utm_source=openai",
            "title": "Python Release Python 3.14.0 | Python.org",
            "start": 74,
            "end": 159,
        }
    ],
    "perplexity-sonar-citations-search-results.jsonl": [
        {"segment": "seg_1", "url": PY314, "title": "Python Release Python 3.14.0 | Python.org"},
        {
            "segment": "seg_1",
            "url": "https://docs.python.org/3/whatsnew/3.14.html",
            "title": "What's new in Python 3.14 — Python 3.14.0 documentation",
        },
        {
            "segment": "seg_1",
            "url": "https://peps.python.org/pep-0745/",
            "title": "PEP 745 – Python 3.14 Release Schedule",
        },
    ],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_summary_lists_the_normalized_citations(name: str) -> None:
    summary = assert_chunking_invariant(RECORDINGS / name)
    assert summary["citations"] == CASES[name]


def test_gemini_grounding_supports_cite_their_chunks() -> None:
    engine = replay_file(RECORDINGS / "gemini-grounding-metadata-citations.jsonl", transcript=True)
    cited = engine.citations()
    assert [(c["title"], c["start"], c["end"]) for c in cited] == [
        ("python.org", 0, 46),
        ("docs.python.org", 47, 127),
        ("python.org", 47, 127),
    ]
    assert cited[0]["cited_text"] == "Python 3.14.0 was released on October 7, 2025."
    assert all(c["url"].startswith("https://vertexaisearch.cloud.google.com/") for c in cited)


def test_transcript_keeps_citations_under_their_text_segment() -> None:
    transcript = build_transcript(
        replay_file(RECORDINGS / "openai-chat-search-annotations.jsonl", transcript=True)
    )
    (text,) = [s for s in transcript["segments"] if s["type"] == "text"]
    assert text["metadata"]["citations"][0]["url"] == PY314 + "?utm_source=openai"
    assert text["metadata"]["annotations"][0]["type"] == "url_citation"


def test_tree_shows_citations_under_their_text() -> None:
    path = RECORDINGS / "perplexity-sonar-citations-search-results.jsonl"
    env = dict(os.environ, COLUMNS="200", NO_COLOR="1")
    result = CliRunner().invoke(app, ["replay", str(path), "--format", "text"], env=env)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    cites = [line for line in lines if "cites [" in line]
    assert len(cites) == 3
    assert "Python Release Python 3.14.0 | Python.org <" + PY314 + ">" in cites[0]
    text_line = next(i for i, line in enumerate(lines) if "Python 3.14.0 was released" in line)
    assert text_line < lines.index(cites[0])


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            {
                "type": "char_location",
                "cited_text": "The grass is green.",
                "document_index": 0,
                "document_title": "My Document",
                "start_char_index": 0,
                "end_char_index": 20,
            },
            {"title": "My Document", "start": 0, "end": 20, "cited_text": "The grass is green."},
        ),
        (
            {
                "type": "page_location",
                "cited_text": "p. 3",
                "document_index": 1,
                "document_title": "Report.pdf",
                "start_page_number": 3,
                "end_page_number": 4,
            },
            {"title": "Report.pdf", "cited_text": "p. 3"},
        ),
        (
            {
                "type": "search_result_location",
                "source": "https://example.com/a",
                "title": "A",
                "cited_text": "x",
                "search_result_index": 0,
                "start_block_index": 0,
                "end_block_index": 1,
            },
            {"url": "https://example.com/a", "title": "A", "cited_text": "x"},
        ),
    ],
)
def test_anthropic_citation_types(raw: dict[str, Any], expected: dict[str, Any]) -> None:
    assert from_anthropic(raw) == expected


def test_openai_annotation_types() -> None:
    assert from_openai_annotation(
        {"type": "file_citation", "file_id": "file-1", "filename": "a.pdf", "index": 12}
    ) == {"file_id": "file-1", "title": "a.pdf", "start": 12}
    assert from_openai_annotation(
        {
            "type": "container_file_citation",
            "container_id": "cntr_1",
            "file_id": "cfile_2",
            "filename": "out.csv",
            "start_index": 3,
            "end_index": 9,
        }
    ) == {"file_id": "cfile_2", "title": "out.csv", "start": 3, "end": 9}
    assert from_openai_annotation({"type": "file_path", "file_id": "f", "index": 0}) is None


def test_urls_only_and_chunks_without_supports() -> None:
    assert from_search_results(None, ["https://a.example", 3]) == [{"url": "https://a.example"}]
    grounding = {"groundingChunks": [{"web": {"uri": "https://b.example", "title": "b"}}]}
    assert from_gemini_grounding(grounding) == [{"url": "https://b.example", "title": "b"}]
