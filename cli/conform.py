"""``streamtool conform -- COMMAND``: check a stream client against recordings cut every way."""

import json
import shutil
import sys
import textwrap
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .choices import check_apis, complete_api, complete_mutate, did_you_mean
from .errors import fail, user_errors
from .main import app

if TYPE_CHECKING:
    from streamtool.core.net.conform import Chunking, Result


class Format(StrEnum):
    table = "table"
    json = "json"
    junit = "junit"
    github = "github"


def _client(ctx: typer.Context, value: list[str]) -> list[str]:
    """COMMAND starts with a program: an option there is one conform does not have (options it
    does not know are left in COMMAND, for the client's own, which follow its program)."""
    if value and value[0].startswith("-") and value[0] != "-":
        options = [name for param in ctx.command.params for name in param.opts if name[0] == "-"]
        raise typer.BadParameter(
            f"no such option: {value[0]}{did_you_mean(value[0].split('=')[0], options)}; the "
            "client's command goes after --",
            param_hint="COMMAND",
        )
    return value


@app.command(
    context_settings={"ignore_unknown_options": True},
)
def conform(
    command: Annotated[
        list[str],
        typer.Argument(
            callback=_client,
            help="The client to check, after --: it prints "
            '{"text", "tool_calls": [{"name", "arguments"}], "finish_reason"}.',
            show_default=False,
        ),
    ],
    recordings: Annotated[
        list[Path] | None,
        typer.Option(
            "--recordings",
            "-r",
            help="Recordings or folders of them (repeatable; default: the bundled ones).",
        ),
    ] = None,
    count: Annotated[
        int,
        typer.Option(
            "--chunkings",
            help="How many ways to cut each stream: whole, 1 byte, then random cuts.",
        ),
    ] = 5,
    seed: Annotated[int, typer.Option("--seed", help="The first seed of the random cuts.")] = 1,
    api: Annotated[
        list[str] | None,
        typer.Option(
            "--api",
            callback=check_apis,
            autocompletion=complete_api,
            help="Only recordings of this API, by its converter's name (repeatable): "
            "openai-chat, anthropic, gemini, gemini-interactions, bedrock-converse, cohere...",
        ),
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds one client run may take.")
    ] = 60.0,
    jobs: Annotated[int, typer.Option("--jobs", help="Client runs at a time.")] = 1,
    fmt: Annotated[
        Format,
        typer.Option(
            "--format",
            help="table (for people), json (for scripts), junit (JUnit XML) or github (GitHub "
            "Actions annotations).",
        ),
    ] = Format.table,
    mutate: Annotated[
        str | None,
        typer.Option(
            "--mutate",
            autocompletion=complete_mutate,
            help="Check the client against the recordings with quirks applied: all, or ID,ID "
            "(one run per recording × applicable quirk × chunking).",
        ),
    ] = None,
) -> None:
    """Serve each recording to COMMAND, cut K ways, and compare what it prints with the replay.

    COMMAND runs once per recording and chunking with STREAMTOOL_BASE_URL, OPENAI_BASE_URL,
    ANTHROPIC_BASE_URL and GOOGLE_GEMINI_BASE_URL pointing at a local server (and
    STREAMTOOL_MODEL set to the recording's model). Recordings of an API the client does not
    call are reported as not applicable. Exit codes: 0 all passed, 1 a run failed, 2 unusable
    input.
    """
    try:
        _run(command, recordings, count, seed, api, timeout, jobs, fmt, mutate)
    except KeyboardInterrupt:
        # Runner.run has killed the running clients and stopped the server by now
        sys.stderr.write("streamtool: conform interrupted; its clients and server are stopped\n")
        raise typer.Exit(130) from None


def _run(
    command: list[str],
    recordings: list[Path] | None,
    count: int,
    seed: int,
    api: list[str] | None,
    timeout: float,
    jobs: int,
    fmt: Format,
    mutate: str | None,
) -> None:
    from streamtool.core.net.conform import (
        ClientDidNotStart,
        Runner,
        bundled_recordings,
        chunkings,
        load_cases,
    )

    if not command:
        fail("give the client command after --, e.g. streamtool conform -- python client.py")
    exe = command[0]
    if shutil.which(exe) is None:
        fail(f"cannot run {exe!r}: no such program")
    if timeout <= 0:
        fail("--timeout must be a number of seconds > 0")
    if jobs < 1:
        fail("--jobs must be at least 1")
    try:
        plans = chunkings(count, seed)
    except ValueError as exc:
        fail(str(exc))
    paths: list[Path | str]
    if recordings:
        paths = list(recordings)
    else:
        bundled = bundled_recordings()
        if bundled is None:
            fail("no bundled recordings were found: pass recordings with --recordings")
        paths = [bundled]
    with user_errors():
        cases = load_cases(paths)
    if api:
        wanted = {a.strip() for item in api for a in item.split(",") if a.strip()}
        cases = [c for c in cases if c.api in wanted]
        if not cases:
            fail(f"no recording of API {', '.join(sorted(wanted))} among those given")
    if mutate is not None:
        from streamtool.core.net.mutated_library import mutated_cases, parse_mutate

        try:
            ids = parse_mutate(mutate) or []
        except ValueError as exc:
            fail(str(exc))
        cases = mutated_cases(cases, ids)
        if not cases:
            fail(f"no quirk of --mutate {mutate} applies to the recordings given")
    from .progress import progress

    try:
        with progress(len(cases) * len(plans), "conform") as advance:
            runner = Runner(
                command, cases, plans, timeout=timeout, jobs=jobs, on_result=lambda _: advance(1)
            )
            results = runner.run()
    except ClientDidNotStart as exc:
        fail(str(exc))
    if fmt is Format.json:
        sys.stdout.write(json.dumps(_document(command, plans, results), ensure_ascii=False) + "\n")
    elif fmt in (Format.junit, Format.github):
        from streamtool.core.outputs.ci_report import render_conform

        sys.stdout.write(render_conform(_document(command, plans, results), fmt.value))
    else:
        _print_table(plans, results)
        if mutate is not None:
            _print_quirks(results)
    if not any(r.status != "not applicable" for r in results):
        if fmt is Format.table:
            sys.stderr.write("streamtool: error: no recording applies to this client\n")
        raise typer.Exit(2)
    raise typer.Exit(1 if any(r.status == "fail" for r in results) else 0)


def _counts(results: "list[Result]") -> dict[str, int]:
    return {
        "passed": sum(r.status == "pass" for r in results),
        "failed": sum(r.status == "fail" for r in results),
        "not_applicable": sum(r.status == "not applicable" for r in results),
    }


def _document(
    command: list[str], plans: "list[Chunking]", results: "list[Result]"
) -> dict[str, Any]:
    from streamtool.core.net.mutated_library import by_quirk

    doc = {
        "command": command,
        "chunkings": [p.name for p in plans],
        "results": [r.to_dict() for r in results],
        "summary": _counts(results),
    }
    quirks = by_quirk(results)
    if quirks:
        doc["quirks"] = quirks
    return doc


def _print_quirks(results: "list[Result]") -> None:
    """Per quirk applied: pass, or what differed (``--mutate``)."""
    from streamtool.core.net.mutated_library import by_quirk

    rows = by_quirk(results)
    if not rows:
        return
    width = max(len(q) for q in rows)
    out = ["", "Per quirk (recording × chunking runs):"]
    for qid, row in rows.items():
        differs = ", ".join(row["differs"])  # type: ignore[arg-type]
        verdict = "pass" if not row["failed"] else f"FAIL: {differs}"
        if not row["passed"] and not row["failed"]:
            verdict = "fails unmutated too"
        out.append(
            f"  {qid:<{width}}  {row['passed']:>3} passed {row['failed']:>3} failed  {verdict}"
        )
    failed = sum(1 for r in rows.values() if r["failed"])
    judged = sum(1 for r in rows.values() if r["failed"] or r["passed"])
    out.append(
        f"{len(rows)} quirks applied: {judged - failed} survived, {failed} broke the client "
        "(a run counts only where the client passed the recording unmutated)"
    )
    sys.stdout.write("\n".join(out) + "\n")


def _print_table(plans: "list[Chunking]", results: "list[Result]") -> None:
    """A row per recording, a column per chunking; then what differs, one paragraph per
    recording, wrapped to the width (off a terminal: one line each, nothing cut)."""
    from rich.text import Text

    from .fit import Col, available_width, build_table, fit, make_console, print_plain

    width = available_width()
    rows: dict[str, dict[str, Result]] = {}
    for r in results:
        rows.setdefault(r.case.name, {})[r.chunking] = r

    def cell(run: "Result | None", fields: bool) -> Text:
        if run is None or run.status == "not applicable":
            return Text("n/a", style="dim")
        if run.status == "pass":
            return Text("pass", style="green")
        assert run.verdict is not None
        if not fields:
            return Text("FAIL", style="red")
        return Text(", ".join(sorted({d.field for d in run.verdict.differences})), style="red")

    def columns(fields: bool) -> list[Col]:
        # the recording's name keeps what tells it apart; a cell names the fields that differ,
        # on more lines if need be, never cut inside one
        cols = [Col("recording", list(rows), minimum=20, grow=0, names=True)]
        for plan in plans:
            cells = [cell(by.get(plan.name), fields) for by in rows.values()]
            word = max(len(w) for c in cells for w in c.plain.split())
            cols.append(Col(plan.name, cells, minimum=word, wrap=True))
        return cols

    detailed = columns(fields=True)
    if any(w < (c.minimum or 0) for c, w in fit(detailed, width)):
        detailed = columns(fields=False)  # too narrow for the fields: FAIL (what differs says)
    table, used = build_table(detailed, width)
    console = make_console(width, used)
    print_plain(console, table)

    def say(text: str, indent: str = "  ", style: str | None = None) -> None:
        if width is None:
            lines = [indent + text]
        else:  # a paragraph: its next lines indented under its first
            lines = textwrap.wrap(
                text, width, initial_indent=indent, subsequent_indent=indent + "  ",
                break_on_hyphens=False,
            )  # fmt: skip
        for line in lines:
            console.print(line, markup=False, style=style, soft_wrap=True)

    failures = [r for r in results if r.status == "fail"]
    if failures:
        console.print()
        console.print("[bold]What differs[/bold]")
    # the same differences under several chunkings are shown once, with the chunkings listed
    groups: dict[tuple[str, str], list[Result]] = {}
    for r in failures:
        assert r.verdict is not None
        groups.setdefault((r.case.name, r.verdict.summary()), []).append(r)
    for (name, summary), group in groups.items():
        runs = [r for r in results if r.case.name == name]
        cuts = ", ".join(r.chunking for r in group)
        line = f"{name} [{cuts}]: {summary}"
        if any(r.status == "pass" for r in runs):
            passed = ", ".join(r.chunking for r in runs if r.status == "pass")
            line += f" (passes {passed}: the client depends on how the stream is cut)"
        say(line)
        for quirk in group[0].quirks():
            say(f"quirk {quirk.id} ({quirk.severity}): {quirk.explanation}", "    ")
    na = [r for r in results if r.status == "not applicable"]
    notes = sorted({r.note for r in na if r.note})
    counts = _counts(results)
    console.print()
    console.print(
        f"{counts['passed']} passed, {counts['failed']} failed, "
        f"{counts['not_applicable']} not applicable (recording × chunking)",
        markup=False,
    )
    for note in notes:
        say(f"not applicable: {note}", style="dim")
