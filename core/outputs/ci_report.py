"""``--format junit`` and ``--format github`` of ``check``, ``inspect`` and ``conform``. Sans-IO.

Each command's report (the JSON document its ``--format json`` prints) becomes a list of
:class:`CiCase` — one test case each: a recording and its golden file, an inspected recording,
a conform run — and the cases are written out:

- **JUnit XML** (:func:`junit`): ``<testsuites>`` holding one ``<testsuite>`` of ``<testcase
  classname name time>`` elements, each with at most one ``<failure>``, ``<error>`` or
  ``<skipped>`` (``message``, ``type``, the details as text) and a ``<system-out>``; the counts
  on both suite elements. The shape of the JUnit schema CI servers read (the one pytest's
  ``xunit2`` output follows): no attribute or element beyond it, nothing random (no timestamp,
  no host name), characters XML 1.0 cannot hold written as ``\\uXXXX``.
- **GitHub workflow commands** (:func:`github`): one ``::error file=F,line=L,title=T::message``
  line (``::warning``, ``::notice``) per finding, escaped as the runner's toolkit escapes them
  (``%25``, ``%0D``, ``%0A``; ``%3A``, ``%2C`` in properties), then one plain summary line. In a
  GitHub Actions job each becomes an annotation on that line of that file.

The line of a finding: in a recording (JSON lines: the header is line 1, read ``i`` line
``i + 2``, then the end record; a WebSocket session's message or control frame ``i`` the same),
the read where a quirk or an error was first met (the end record for what the end showed); in a
golden file, the first line the drift changes (its diff's first hunk); in a message naming
``file:line``, that line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from xml.etree import ElementTree as ET

from ..model.records import read_noun

FORMATS = ("junit", "github")
# what a status becomes: a failure (the check failed), an error (unusable input), a skip
FAILURE, ERROR, SKIPPED, PASSED = "failure", "error", "skipped", "passed"
LEVELS = {"error": "error", "warn": "warning", "warning": "warning", "info": "notice"}
MAX_DETAIL_LINES = 60  # lines of a diff an annotation carries (the JUnit text keeps them all)

# characters XML 1.0 cannot hold: the C0 controls but tab, LF and CR; surrogates; U+FFFE/F
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@")


@dataclass(slots=True)
class Annotation:
    """One finding of a case, shown on a line of a file (GitHub's annotations)."""

    level: str  # error, warning, notice
    message: str
    file: str | None = None
    line: int | None = None
    title: str | None = None


@dataclass(slots=True)
class CiCase:
    """One test case: its outcome, what JUnit shows of it, and its annotations."""

    name: str
    classname: str
    outcome: str = PASSED  # passed, failure, error, skipped
    kind: str = ""  # the failure's type: drift, missing, quirk ids...
    message: str = ""
    details: str = ""
    output: str = ""  # <system-out>: what the case found besides its outcome
    time: float = 0.0
    annotations: list[Annotation] = field(default_factory=list)


# -- writing -----------------------------------------------------------------------------------
def xml_text(text: str) -> str:
    """``text`` with the characters XML 1.0 cannot hold written as ``\\uXXXX``."""
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def junit(suite: str, cases: Sequence[CiCase]) -> str:
    """The cases as a JUnit XML document (UTF-8 text, with its declaration)."""
    counts = {
        "tests": len(cases),
        "failures": sum(c.outcome == FAILURE for c in cases),
        "errors": sum(c.outcome == ERROR for c in cases),
        "skipped": sum(c.outcome == SKIPPED for c in cases),
    }
    total = f"{sum(c.time for c in cases):.3f}"
    attrs = {"name": suite, **{k: str(v) for k, v in counts.items()}, "time": total}
    # the schema's <testsuites> counts no skipped tests
    root = ET.Element("testsuites", {k: v for k, v in attrs.items() if k != "skipped"})
    suite_el = ET.SubElement(root, "testsuite", attrs)
    for case in cases:
        el = ET.SubElement(
            suite_el,
            "testcase",
            {
                "classname": xml_text(case.classname),
                "name": xml_text(case.name),
                "time": f"{case.time:.3f}",
            },
        )
        if case.outcome != PASSED:
            outcome = ET.SubElement(
                el, case.outcome, {"message": xml_text(case.message), "type": xml_text(case.kind)}
            )
            if case.details:
                outcome.text = xml_text(case.details)
        if case.output:
            ET.SubElement(el, "system-out").text = xml_text(case.output)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"


_SURROGATE = re.compile("[\ud800-\udfff]")


def _data(text: str) -> str:
    text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)  # not UTF-8: escaped
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_command(a: Annotation) -> str:
    """One annotation as a GitHub workflow command line."""
    props = []
    if a.file:
        props.append(f"file={_prop(a.file)}")
        if a.line is not None:
            props.append(f"line={a.line}")
    if a.title:
        props.append(f"title={_prop(a.title)}")
    head = f"::{a.level}" + (" " + ",".join(props) if props else "")
    return f"{head}::{_data(a.message)}"


def github(cases: Iterable[CiCase], summary: str) -> str:
    """Every annotation of ``cases`` as a workflow command, then the summary line."""
    lines = [workflow_command(a) for case in cases for a in case.annotations]
    lines.append(_data(summary))
    return "\n".join(lines) + "\n"


def _clip(text: str, lines: int = MAX_DETAIL_LINES) -> str:
    kept = text.rstrip("\n").split("\n")
    if len(kept) <= lines:
        return "\n".join(kept)
    return "\n".join(kept[:lines] + [f"... ({len(kept) - lines} more lines)"])


def _where(message: str, *paths: str | None) -> tuple[str | None, int | None]:
    """The file (one of ``paths``) a message starts with, and its line (``file:line: ...``)."""
    for path in paths:
        if path and message.startswith(path + ":"):
            rest = message[len(path) + 1 :]
            number = re.match(r"(\d+):", rest)
            return path, int(number.group(1)) if number else None
    return (next((p for p in paths if p), None), None)


def drift_line(diff: str) -> int | None:
    """The first line of the golden file (the diff's old side) that a drift changes."""
    line: int | None = None
    for text in diff.splitlines():
        hunk = _HUNK.match(text)
        if hunk:
            line = int(hunk.group(1))
            continue
        if line is None or text.startswith(("---", "+++")):
            continue
        if text.startswith(("-", "+")):
            return max(line, 1)
        line += 1
    return None


# -- check -------------------------------------------------------------------------------------
_CHECK_OUTCOME = {"drift": FAILURE, "missing": FAILURE, "orphan": FAILURE, "error": ERROR}


def check_cases(doc: dict[str, Any]) -> list[CiCase]:
    """``check``'s report (``CheckReport.to_dict()``): a case per recording (per golden file
    for an orphan)."""
    cases: list[CiCase] = []
    for f in doc["files"]:
        status = f["status"]
        recording, golden = f.get("recording"), f.get("golden")
        subject = recording or golden or "-"
        case = CiCase(
            name=subject,
            classname="streamtool.check",
            outcome=_CHECK_OUTCOME.get(status, PASSED),
            kind=status,
            message=f.get("message") or status,
            details=f.get("diff") or "",
        )
        if status != "match":
            case.output = f"{status}: {subject}" + (f" -> {golden}" if recording else "")
        message = case.message
        if status == "drift":
            file, line = golden, drift_line(f.get("diff") or "")
            message = f"{subject} no longer replays as its golden file says\n{message}"
            if f.get("diff"):
                message += "\n" + _clip(f["diff"])
        elif status == "error":
            file, line = _where(message, recording, golden)
        else:
            file, line = (golden if status == "orphan" else recording), None
        if case.outcome != PASSED:
            title = f"streamtool check: {status}"
            case.annotations.append(Annotation("error", message, file, line, title))
        cases.append(case)
    return cases


def check_summary(doc: dict[str, Any]) -> str:
    parts = [f"{n} {status}" for status, n in doc["counts"].items() if n]
    return f"{len(doc['files'])} checked: {', '.join(parts) or 'nothing'}"


def render_check(doc: dict[str, Any], fmt: str) -> str:
    cases = check_cases(doc)
    if fmt == "junit":
        return junit("streamtool check", cases)
    return github(cases, check_summary(doc))


# -- inspect -----------------------------------------------------------------------------------
def _read_line(result: dict[str, Any], read: int | None) -> int | None:
    """The line of a recording that holds read ``read``, or its end record (``read`` None:
    met at the end); None for a raw body, or a recording without an end record."""
    facts = result.get("facts", {})
    if facts.get("raw_body"):
        return None
    if read is None:
        if facts.get("end_reason") is None:
            return None
        reads = result.get("timing", {}).get("reads")  # the result may leave the rows out
        read = reads if isinstance(reads, int) else len(result.get("reads", []))
    return read + 2


class InspectReport:
    """``inspect``'s files, as they are inspected: :meth:`add` each result (with what
    ``--fail-on`` met in it), :meth:`unusable` each file that could not be read; then
    :meth:`render`."""

    def __init__(self) -> None:
        self.cases: list[CiCase] = []

    def add(self, result: dict[str, Any], failing: Sequence[str] = ()) -> None:
        source = str(result.get("source") or "-")
        case = CiCase(name=source, classname="streamtool.inspect")
        found: list[str] = []
        hits = list(dict.fromkeys(failing))
        unit = read_noun(bool(result.get("facts", {}).get("websocket")))
        for q in result.get("quirks", []):
            where = f"{unit} {q.get('read')}" if q.get("read") is not None else "at the end"
            text = f"{q['id']} ({q.get('severity')}, {where}): {q.get('explanation', '')}"
            if q.get("detail"):
                text += f" [{q['detail']}]"
            found.append(text)
            level = LEVELS.get(str(q.get("severity")), "notice")
            if q["id"] in hits:
                level = "error"
            line = _read_line(result, q.get("read"))
            case.annotations.append(Annotation(level, text, source, line, f"quirk {q['id']}"))
        for e in result.get("errors", []):
            where = f"{unit} {e.get('read')}" if e.get("read") is not None else "at the end"
            text = f"{e.get('kind')} ({where}): {e.get('message', '')}"
            found.append(text)
            line = _read_line(result, e.get("read"))
            case.annotations.append(
                Annotation("error", text, source, line, f"stream error {e.get('kind')}")
            )
        if hits:
            case.outcome, case.kind = FAILURE, ",".join(hits)
            case.message = f"--fail-on met: {', '.join(hits)}"
            case.details = "\n".join(found)
        case.output = "\n".join(found)
        self.cases.append(case)

    def unusable(self, path: str, message: str) -> None:
        file, line = _where(message, path)
        case = CiCase(
            name=path, classname="streamtool.inspect", outcome=ERROR, kind="unusable",
            message=message,
        )  # fmt: skip
        case.annotations.append(Annotation("error", message, file, line, "streamtool inspect"))
        self.cases.append(case)

    def summary(self) -> str:
        failed = sum(c.outcome == FAILURE for c in self.cases)
        unusable = sum(c.outcome == ERROR for c in self.cases)
        found = sum(len(c.annotations) for c in self.cases if c.outcome != ERROR)
        return (
            f"{len(self.cases)} inspected: {found} findings, {failed} met --fail-on, "
            f"{unusable} unusable"
        )

    def render(self, fmt: str) -> str:
        if fmt == "junit":
            return junit("streamtool inspect", self.cases)
        return github(self.cases, self.summary())


# -- conform -----------------------------------------------------------------------------------
_CONFORM_OUTCOME = {"pass": PASSED, "fail": FAILURE, "not applicable": SKIPPED}


def conform_cases(doc: dict[str, Any]) -> list[CiCase]:
    """``conform``'s document (``--format json``): a case per recording and chunking."""
    cases: list[CiCase] = []
    client = " ".join(doc.get("command", []))
    for r in doc["results"]:
        differences = r.get("differences", [])
        quirks = [q["id"] for q in r.get("quirks", [])]
        case = CiCase(
            name=f"{r['recording']} [{r['chunking']}]",
            classname=f"streamtool.conform.{r.get('api') or 'unknown'}",
            outcome=_CONFORM_OUTCOME.get(r["status"], ERROR),
            kind=",".join(d["field"] for d in differences) or r["status"],
            message="; ".join(d["message"] for d in differences) or r.get("note", ""),
        )
        if case.outcome == FAILURE:
            lines = [f"{d['field']}: {d['message']}" for d in differences]
            if quirks:
                lines.append("quirks of the recording that may explain it: " + ", ".join(quirks))
            case.details = "\n".join(lines)
            text = f"{client} fails on {r['recording']} cut {r['chunking']}: " + case.message
            if quirks:
                text += f" (quirks: {', '.join(quirks)})"
            case.annotations.append(
                Annotation("error", text, r.get("path"), None, "streamtool conform")
            )
        case.output = "requests: " + ", ".join(r.get("requests", [])) if r.get("requests") else ""
        cases.append(case)
    return cases


def conform_summary(doc: dict[str, Any]) -> str:
    s = doc.get("summary", {})
    return (
        f"{len(doc['results'])} runs: {s.get('passed', 0)} passed, {s.get('failed', 0)} failed, "
        f"{s.get('not_applicable', 0)} not applicable"
    )


def render_conform(doc: dict[str, Any], fmt: str) -> str:
    cases = conform_cases(doc)
    if fmt == "junit":
        return junit("streamtool conform", cases)
    return github(cases, conform_summary(doc))
