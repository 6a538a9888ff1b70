"""Messages that said the wrong thing, or not enough (issue 46, item 5): each one as a user meets
it, through the command itself; and the docs that disagreed with the commands."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import openai
import pytest

from streamtool.core.plugins import api_table
from streamtool.core.recording.recorder import classify, origin

from .conftest import RECORDINGS, ROOT
from .proxy_helpers import proxy_to

STREAMTOOL = [sys.executable, "-c", "from streamtool.cli.main import main; main()"]
REC = RECORDINGS / "openai-parallel-tool-calls.jsonl"


def run(
    *args: str, stdin: bytes | None = None, cwd: Path | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "CI")}
    return subprocess.run(
        [*STREAMTOOL, *args],
        input=stdin.decode("latin-1") if stdin is not None else None,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=timeout,
    )


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    return proc.stderr.removeprefix("streamtool: error: ").rstrip("\n")


# -- serve refuses what replay refuses ------------------------------------------------------------
def test_serve_refuses_binary_data_as_replay_does(tmp_path: Path) -> None:
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes((i * 151 + 7) % 256 for i in range(2000)))
    replayed = one_error_line(run("replay", str(junk)))
    served = one_error_line(run("serve", str(junk), "--port", "0", timeout=20))
    assert served == replayed == f"{junk}: not a stream: its 2,000 bytes are binary data, not text"
    # a raw body of text in a dialect nobody knows is still served (on any endpoint)
    (tmp_path / "odd.sse").write_text('data: {"hello": "world"}\n\n')
    assert "cannot tell which API" in run("replay", str(tmp_path / "odd.sse")).stderr


# -- check - --------------------------------------------------------------------------------------
def test_check_of_stdin_points_to_a_command_that_works(tmp_path: Path) -> None:
    golden = tmp_path / "piped.golden.json"
    missing = run("check", "-", "--golden", str(golden), stdin=REC.read_bytes(), cwd=tmp_path)
    assert missing.returncode == 1
    hint = missing.stdout.split("create it with: ", 1)[1].split(" (with the recording", 1)[0]
    assert hint.startswith("streamtool check --update") and "--golden" in hint
    created = run(*hint.split()[1:], stdin=REC.read_bytes(), cwd=tmp_path)
    assert created.returncode == 0, created.stdout + created.stderr
    assert golden.is_file()
    golden.write_text(golden.read_text().replace("Tokyo", "Kyoto"))
    drift = run("check", "-", "--golden", str(golden), stdin=REC.read_bytes(), cwd=tmp_path)
    assert drift.returncode == 1
    again = drift.stdout.split("if the change is intended, run: ", 1)[1].split(" (with", 1)[0]
    assert run(*again.split()[1:], stdin=REC.read_bytes(), cwd=tmp_path).returncode == 0
    assert "Tokyo" in golden.read_text()


def test_check_of_nothing_is_an_error_not_a_file_checked(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    proc = run("check", str(tmp_path / "empty"))
    assert one_error_line(proc).endswith("no recordings (*.jsonl, *.sse) or golden files in it")
    assert proc.stdout == ""
    shutil.copy(REC, tmp_path)
    shutil.copy(REC.with_name("openai-parallel-tool-calls.golden.json"), tmp_path)
    both = run("check", str(tmp_path / REC.name), str(tmp_path / "nope"))
    assert both.returncode == 2
    assert both.stdout.splitlines()[-1] == "1 checked: 1 match, 1 path with nothing to check"


# -- a URL where a file goes ----------------------------------------------------------------------
@pytest.mark.parametrize("command", ["replay", "inspect", "check", "ls", "serve", "report"])
def test_a_url_given_as_a_file_is_named_whole_with_what_to_do(command: str) -> None:
    url = "https://api.openai.com/v1/chat/completions"
    said = one_error_line(run(command, url, timeout=20))
    assert said.startswith(f"{url}: a URL, not a file: record its stream first ")
    assert "streamtool record --base-url URL" in said


# -- a bad line's reason --------------------------------------------------------------------------
def test_a_bad_lines_reason_is_whole(tmp_path: Path) -> None:
    header = REC.read_text().splitlines()[0]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(header + '\n{"type": "chunk", "t": 0.1, "text": "a\tb"}\n')
    said = one_error_line(run("replay", str(bad)))
    assert said == f"{bad}:2: not JSON (Invalid control character at column 39)"
    bad.write_text(header + '\n{"type": "chunk", "t": 0.1, "text": "ab}\n{"type": "end"}\n')
    assert re.search(r"not JSON \(Invalid control character at column \d+\)$", one_error_line(
        run("ls", str(bad))
    ))  # fmt: skip
    bad.write_text(header + '\n{"type": "chunk", "t": 0.1 "text": "ab"}\n')
    assert one_error_line(run("replay", str(bad))).endswith("not JSON (Expecting ',' delimiter)")


# -- mutate names what the user named -------------------------------------------------------------
def test_mutate_names_its_output_never_its_temporary_file(tmp_path: Path) -> None:
    output = tmp_path / (
        "m" * 245 + ".jsonl"
    )  # a name the folder takes; its temporary's is too long
    said = one_error_line(
        run("mutate", str(REC), "--quirk", "oai_tool_index_missing", "-o", str(output))
    )
    assert said.startswith(f"{output}: ") and ".tmp" not in said
    assert not output.exists() and list(tmp_path.iterdir()) == []


def test_mutate_does_not_rename_over_a_device() -> None:
    before = os.stat(os.devnull)
    said = one_error_line(
        run("mutate", str(REC), "--quirk", "oai_tool_index_missing", "-o", os.devnull, "--force")
    )
    assert said == f"{os.devnull}: is not a regular file (a device, FIFO or socket)"
    after = os.stat(os.devnull)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)


# -- conform: a client that exited 0 did not crash ------------------------------------------------
def test_conform_does_not_call_a_client_that_exited_0_a_crash() -> None:
    proc = run(
        "conform", "-r", str(REC), "--chunkings", "1", "--format", "json", "--", "echo", "hello"
    )
    assert proc.returncode == 1, proc.stderr
    [result] = json.loads(proc.stdout)["results"]
    fields = {d["field"]: d["message"] for d in result["differences"]}
    assert set(fields) == {"request", "output"}, fields
    assert fields["output"] == (
        "the client exited 0 without printing a JSON object (its last line: hello)"
    )
    assert result["quirks"] == []  # nothing the stream did explains it
    table = run("conform", "-r", str(REC), "--chunkings", "1", "--", "echo", "hello")
    row = next(line for line in table.stdout.splitlines() if line.startswith("openai-parallel"))
    assert row.split()[1:] == ["output,", "request"] and "crash" not in table.stdout


# -- where a connection was tried -----------------------------------------------------------------
def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_connection_errors_say_where_they_tried(tmp_path: Path) -> None:
    port = _closed_port()
    proc = run(
        "record", "-p", "openai-chat", "-m", "m", "--prompt", "hi", "-o", str(tmp_path / "r.jsonl"),
        "--base-url", f"http://127.0.0.1:{port}/v1?key=secret", "--view", "none",
    )  # fmt: skip
    assert proc.returncode == 1
    assert f"could not connect to http://127.0.0.1:{port}: " in proc.stderr
    assert "secret" not in proc.stderr
    out = tmp_path / "caps"
    upstream = f"http://127.0.0.1:{port}"
    with proxy_to(out, upstream) as px:
        client = openai.OpenAI(base_url=px.url + "/v1", api_key="sk-x", max_retries=0)
        with pytest.raises(openai.APIStatusError) as caught:
            client.chat.completions.create(model="m", messages=[], stream=True)
    assert f"the upstream {upstream} could not be reached" in str(caught.value)


def test_origin_keeps_no_path_or_query() -> None:
    assert (
        origin("https://user:pw@api.example.com:8443/v1/x?key=k") == "https://api.example.com:8443"
    )
    assert origin("http://[::1]:9/v1") == "http://[::1]:9"
    request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions?key=k")
    reason, message = classify(httpx.ConnectError("refused", request=request), 0)
    assert (reason, message) == ("error", "could not connect to http://127.0.0.1:9: refused")
    assert classify(httpx.ConnectError("refused"), 0)[1] == "could not connect: refused"


def test_a_port_in_use_points_to_port_0(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proxy = ["proxy", "--view", "none", "-o", str(tmp_path / "tape")]
        for command in (["serve", str(REC)], proxy):
            said = one_error_line(run(*command, "--port", str(port), timeout=20))
            assert said == (
                f"cannot listen on 127.0.0.1:{port}: address already in use; another program "
                "listens there: another --port, or --port 0 for any free one"
            )


# -- replay --sample ------------------------------------------------------------------------------
def test_a_samples_tree_is_headed_by_its_name_not_its_installed_path() -> None:
    env = {**os.environ, "COLUMNS": "80"}
    proc = subprocess.run(
        [*STREAMTOOL, "replay", "--sample", "write-file", "--speed", "max"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == "sample write-file"
    summary = json.loads(run("replay", "--sample", "write-file", "--format", "json").stdout)
    assert summary["source"].endswith("openai-write-file.jsonl")  # scripts get the file


# -- the docs and the commands --------------------------------------------------------------------
def test_serves_routes_are_documented_for_every_api() -> None:
    page = (ROOT / "docs" / "record.md").read_text(encoding="utf-8")
    table = page.split("| API (recordings of) | route |", 1)[1].split("\n\n", 1)[0]
    for api in api_table():
        assert api.route in table, f"serve's route for {api.id} ({api.route}) is not documented"
    assert "boto3.client(" in table and "cohere.ClientV2(" in table


def test_the_proxy_views_default_is_what_its_help_says() -> None:
    from typer.testing import CliRunner

    from streamtool.cli.journal import make_view
    from streamtool.cli.main import app

    result = CliRunner().invoke(app, ["proxy", "--help"], env={"COLUMNS": "200"})
    said = " ".join(result.stdout.split())
    assert "Default: journal (off a terminal: a line per exchange as it ends)" in said
    journal = make_view("journal")
    assert journal is not None and not journal.tree  # what --view's absence becomes


def test_no_page_points_to_a_readme_section_that_is_not_there() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    headings = set(re.findall(r"^#+ (.+)$", readme, re.M))
    for doc in sorted((ROOT / "docs").glob("*.md")):
        for name in re.findall(r'"([^"]+)" in the README', doc.read_text(encoding="utf-8")):
            assert name in headings, f"{doc.name} points to the README's {name!r}"


def test_the_module_paths_the_docs_name_exist() -> None:
    """``core/...`` and ``cli/...`` paths, and the modules the layout table names per folder."""
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        for path in re.findall(r"`((?:core|cli)/[\w/.]*?)(?::\w+)?`", text):
            assert (ROOT / path).exists() or (ROOT / f"{path}.py").exists(), (doc.name, path)
    # the layout table: each name a row gives is a module of its folder(s), or a command's
    from streamtool.cli.main import COMMANDS

    layout = (ROOT / "docs" / "recording-format.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (`core/[\w/]+/`(?:, `core/[\w/]+/`)*) \| (.*?) \|", layout, re.M)
    assert len(rows) >= 10
    for folders, what in rows:
        where = [ROOT / f for f in re.findall(r"`([^`]+)`", folders)]
        for name in re.findall(r"`(\w+)`", what):
            found = any((f / f"{name}.py").exists() or (f / name).is_dir() for f in where)
            assert found or name in COMMANDS, f"recording-format.md: {folders} has no {name}"


def test_nothing_names_a_design_document_the_project_lacks() -> None:
    sources = [ROOT / "pyproject.toml", *ROOT.glob("core/**/*.py"), *ROOT.glob("cli/*.py")]
    for path in sources:
        for name in re.findall(r"\b([A-Z][A-Z_-]+\.md)\b", path.read_text(encoding="utf-8")):
            assert (ROOT / name).exists() or (ROOT / "docs" / name).exists(), (path, name)
