"""``--format junit`` and ``--format github`` of ``check``, ``inspect`` and ``conform``.

The JUnit documents are read back with the standard library's XML parser and held to the JUnit
schema CI servers read (the junit-10.xsd that pytest's own ``xunit2`` output is validated
against): its elements and attributes only, the required ones there, the counts right. The
GitHub lines are workflow commands whose ``file`` and ``line`` point at the line of the file
the finding is about.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from hypothesis import given, settings
from hypothesis import strategies as st

from streamtool.core.outputs.ci_report import (
    Annotation,
    CiCase,
    github,
    junit,
    workflow_command,
    xml_text,
)

from .conftest import RECORDINGS
from .serve_helpers import STREAMTOOL

CLIENTS = Path(__file__).parent / "clients"
SUREFIRE_TIME = re.compile(r"(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]{0,3})?")
# junit-10.xsd: what each element may carry (its "errors" child is spelled "error" by every
# producer and consumer, pytest included)
SUITES_ATTRS = {"name", "time", "tests", "failures", "errors"}
SUITE_ATTRS = {
    "name", "tests", "failures", "errors", "group", "time", "skipped", "timestamp", "hostname",
    "id", "package", "file", "log", "url", "version",
}  # fmt: skip
SUITE_REQUIRED = {"name", "tests", "failures", "errors"}
CASE_ATTRS = {"name", "time", "classname", "group"}
CASE_CHILDREN = {"skipped", "error", "failure", "system-out", "system-err"}
OUTCOME_ATTRS = {"type", "message"}


def junit_shape(text: str) -> list[dict[str, Any]]:
    """Parse a JUnit document and hold it to the schema; its test cases, as dicts."""
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    root = ET.fromstring(text.encode("utf-8"))
    assert root.tag == "testsuites" and set(root.attrib) <= SUITES_ATTRS
    assert not (root.text or "").strip()
    cases: list[dict[str, Any]] = []
    for suite in root:
        assert suite.tag == "testsuite"
        assert SUITE_REQUIRED <= set(suite.attrib) <= SUITE_ATTRS
        assert SUREFIRE_TIME.fullmatch(suite.attrib["time"])
        own: list[dict[str, Any]] = []
        for case in suite:
            assert case.tag == "testcase", case.tag
            assert "name" in case.attrib and set(case.attrib) <= CASE_ATTRS
            children = [c.tag for c in case]
            assert set(children) <= CASE_CHILDREN
            outcomes = [c for c in case if c.tag in ("skipped", "error", "failure")]
            assert len(outcomes) <= 1
            for c in outcomes:
                assert set(c.attrib) <= OUTCOME_ATTRS
            own.append(
                {
                    **case.attrib,
                    "outcome": outcomes[0].tag if outcomes else "passed",
                    "message": outcomes[0].get("message") if outcomes else None,
                    "details": (outcomes[0].text or "") if outcomes else "",
                    "out": "".join(c.text or "" for c in case if c.tag == "system-out"),
                }
            )
        counts = {
            "tests": len(own),
            "failures": sum(c["outcome"] == "failure" for c in own),
            "errors": sum(c["outcome"] == "error" for c in own),
            "skipped": sum(c["outcome"] == "skipped" for c in own),
        }
        assert {k: int(suite.attrib[k]) for k in counts} == counts
        for k in ("tests", "failures", "errors"):
            assert int(root.attrib[k]) == counts[k]
        cases += own
    return cases


COMMAND = re.compile(r"^::(error|warning|notice)(?: ([^:]*))?::(.*)$")


def annotations(text: str) -> list[dict[str, Any]]:
    """The workflow commands of ``text``: level, properties, message (unescaped)."""
    out = []
    for line in text.split("\n"):  # the runner's lines (\u2028 and the like are text)
        m = COMMAND.match(line)
        if not m:
            continue
        props = dict(p.split("=", 1) for p in m.group(2).split(",")) if m.group(2) else {}
        props = {k: unescape(v) for k, v in props.items()}
        out.append({"level": m.group(1), **props, "message": unescape(m.group(3))})
    return out


def unescape(text: str) -> str:
    for code, char in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
        text = text.replace(code, char)
    return text


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*STREAMTOOL, *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


# -- check -------------------------------------------------------------------------------------
def test_check_junit_and_github(tmp_path: Path) -> None:
    for name in (
        "openai-parallel-tool-calls",
        "anthropic-text-then-tool-use",
        "openai-text-usage-chunk-utf8-split",
    ):
        for suffix in (".jsonl", ".golden.json"):
            src = RECORDINGS / f"{name}{suffix}"
            if src.exists():
                shutil.copy(src, tmp_path / src.name)
    # drift: the golden file says another city; missing: no golden file; orphan; an error
    golden = tmp_path / "openai-parallel-tool-calls.golden.json"
    golden.write_text(golden.read_text().replace("Tokyo", "Kyoto"))
    (tmp_path / "anthropic-text-then-tool-use.golden.json").unlink()
    shutil.copy(
        RECORDINGS / "openai-text-usage-chunk-utf8-split.golden.json", tmp_path / "gone.golden.json"
    )
    (tmp_path / "broken.jsonl").write_text('{"type": "header", "format": "nope"}\n')

    done = run("check", ".", "--format", "junit", cwd=tmp_path)
    assert done.returncode == 2, done.stderr  # as with text: an unusable file
    cases = {c["name"]: c for c in junit_shape(done.stdout)}
    assert cases["openai-parallel-tool-calls.jsonl"]["outcome"] == "failure"
    assert "Kyoto" in cases["openai-parallel-tool-calls.jsonl"]["details"]  # the diff
    assert cases["anthropic-text-then-tool-use.jsonl"]["outcome"] == "failure"
    assert cases["gone.golden.json"]["outcome"] == "failure"
    assert cases["broken.jsonl"]["outcome"] == "error"
    assert cases["openai-text-usage-chunk-utf8-split.jsonl"]["outcome"] == "passed"
    assert {c["classname"] for c in cases.values()} == {"streamtool.check"}

    done = run("check", ".", "--format", "github", cwd=tmp_path)
    assert done.returncode == 2
    found = {a["file"]: a for a in annotations(done.stdout)}
    drift = found["openai-parallel-tool-calls.golden.json"]
    assert drift["level"] == "error" and drift["title"] == "streamtool check: drift"
    # the line annotated is the golden file's line that changed
    assert "Kyoto" in golden.read_text().splitlines()[int(drift["line"]) - 1]
    assert "-" in drift["message"] and "Tokyo" in drift["message"]  # with its diff
    assert "no golden file" in found["anthropic-text-then-tool-use.jsonl"]["message"]
    assert "its recording is gone" in found["gone.golden.json"]["message"]
    broken = found["broken.jsonl"]
    assert broken["line"] == "1" and broken["title"] == "streamtool check: error"
    last = done.stdout.splitlines()[-1]
    assert last.startswith("5 checked: 1 match, 1 drift, 1 missing, 1 orphan")


# -- inspect -----------------------------------------------------------------------------------
def test_inspect_junit_and_github(tmp_path: Path) -> None:
    cut = RECORDINGS / "anthropic-overloaded-mid-stream.jsonl"
    usage = RECORDINGS / "openai-parallel-tool-calls.jsonl"
    done = run("inspect", str(cut), str(usage), "--fail-on", "warn", "--format", "github",
               cwd=tmp_path)  # fmt: skip
    assert done.returncode == 1  # as with text: --fail-on met
    found = annotations(done.stdout)
    by_title = {a["title"]: a for a in found}
    # an info quirk is a notice, on the line of the read where it was met
    note = by_title["quirk usage_only_chunk"]
    assert note["level"] == "notice" and note["file"] == str(usage)
    record = json.loads(usage.read_text().splitlines()[int(note["line"]) - 1])
    assert record["type"] == "chunk" and '"choices":[]' in record["text"].replace(" ", "")
    # the provider's error event: on its read; what the end showed: on the end record
    error = by_title["stream error provider_error"]
    assert error["level"] == "error"
    assert "overloaded_error" in cut.read_text().splitlines()[int(error["line"]) - 1]
    end = by_title["quirk model_stream_cut_mid_call"]
    assert end["level"] == "error"
    lines = cut.read_text().splitlines()
    assert int(end["line"]) == len(lines) and json.loads(lines[-1])["type"] == "end"
    assert done.stdout.splitlines()[-1].startswith("2 inspected:")

    done = run("inspect", str(cut), str(usage), "nope.jsonl", "--fail-on", "warn",
               "--format", "junit", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2
    cases = {c["name"]: c for c in junit_shape(done.stdout)}
    assert cases[str(cut)]["outcome"] == "failure"
    assert cases[str(cut)]["message"].startswith("--fail-on met: model_stream_cut_mid_call")
    assert cases[str(usage)]["outcome"] == "passed"
    assert "usage_only_chunk" in cases[str(usage)]["out"]
    assert cases["nope.jsonl"]["outcome"] == "error"


# -- conform -----------------------------------------------------------------------------------
def test_conform_junit_and_github(tmp_path: Path) -> None:
    args = [
        "conform", "-r", str(RECORDINGS / "openai-parallel-tool-calls.jsonl"),
        "-r", str(RECORDINGS / "anthropic-text-then-tool-use.jsonl"),
        "--mutate", "oai_tool_index_missing", "--chunkings", "2",
    ]  # fmt: skip
    client = ["--", sys.executable, str(CLIENTS / "chat_client.py"), "naive"]
    done = run(*args, "--format", "junit", *client, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    cases = {c["name"]: c for c in junit_shape(done.stdout)}
    mutated = "openai-parallel-tool-calls +oai_tool_index_missing"
    assert cases[f"{mutated} [whole]"]["outcome"] == "failure"
    assert "tool_calls" in cases[f"{mutated} [whole]"]["details"]
    assert cases["openai-parallel-tool-calls [whole]"]["outcome"] == "passed"
    assert cases["openai-parallel-tool-calls [whole]"]["classname"] == (
        "streamtool.conform.openai-chat"
    )

    done = run(*args, "--format", "github", *client, cwd=tmp_path)
    assert done.returncode == 1
    found = annotations(done.stdout)
    assert len(found) == 2  # the mutated recording, both cuts
    assert all(a["file"] == str(RECORDINGS / "openai-parallel-tool-calls.jsonl") for a in found)
    assert all("oai_tool_index_missing" in a["message"] for a in found)
    assert done.stdout.splitlines()[-1] == "4 runs: 2 passed, 2 failed, 0 not applicable"


# -- any text, any file name -------------------------------------------------------------------
_text = st.text(st.characters(exclude_categories=()), max_size=40)  # surrogates, controls too


@settings(max_examples=150, deadline=None)
@given(name=_text, message=_text, details=_text, file=_text, title=_text)
def test_any_text_makes_a_document_the_parser_reads_and_one_line_per_annotation(
    name: str, message: str, details: str, file: str, title: str
) -> None:
    case = CiCase(name, "c", "failure", "drift", message, details, output=details)
    case.annotations.append(Annotation("error", message, file or None, 3, title or None))
    (read,) = junit_shape(junit("s", [case]))
    # what XML can hold comes back as it was (a parser turns a CR line end into LF)
    assert read["name"] == xml_text(name)
    assert read["message"] == xml_text(message)
    assert read["details"] == xml_text(details).replace("\r\n", "\n").replace("\r", "\n")

    text = github([case], "summary")
    lines = text.split("\n")
    assert len(lines) == 3 and lines[1] == "summary" and lines[2] == ""
    assert lines[0] == workflow_command(case.annotations[0])
    (a,) = annotations(text)
    assert unescape_surrogates(message) == a["message"]
    if file:
        assert a["file"] == unescape_surrogates(file) and a["line"] == "3"


def unescape_surrogates(text: str) -> str:
    return re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", text)
