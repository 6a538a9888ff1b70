"""``[tool.streamtool]`` in the nearest pyproject.toml: option defaults for a project.

The command runs in a real subprocess inside a project folder (or a folder below it), as a
user's shell runs it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from streamtool.cli.main import COMMANDS, app, find_pyproject
from streamtool.cli.settings import (
    SETTINGS,
    ProjectDefaults,
    SettingsError,
    command_defaults,
    read_table,
)

from .conftest import RECORDINGS
from .serve_helpers import STREAMTOOL, start_listening

REC = RECORDINGS / "anthropic-text-then-tool-use.jsonl"
PARSER_ENV = ("STREAMTOOL_PARSER", "AUTOBYTEUS_STREAM_PARSER")
ENV = {k: v for k, v in os.environ.items() if k not in PARSER_ENV}


def project(root: Path, table: str) -> Path:
    """A project folder with ``table`` in its pyproject.toml; returns a folder inside it."""
    (root / "pyproject.toml").write_text(f'[project]\nname = "demo"\n\n{table}\n', "utf-8")
    inside = root / "src" / "deeper"
    inside.mkdir(parents=True, exist_ok=True)
    return inside


def run(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*STREAMTOOL, *args], cwd=cwd, env={**ENV, **env}, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip


def parser_of(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["parser"])


def test_defaults_apply_flags_and_the_environment_win(tmp_path: Path) -> None:
    here = project(tmp_path, '[tool.streamtool]\nparser = "passthrough"\nconverter = "anthropic"')
    replay = ["replay", str(REC), "--format", "json"]
    assert parser_of(run(*replay, cwd=here)) == "passthrough"  # found from a folder below
    assert parser_of(run(*replay, "--parser", "xml", cwd=here)) == "xml"  # a flag wins
    assert parser_of(run(*replay, cwd=here, AUTOBYTEUS_STREAM_PARSER="json")) == "json"
    done = run("inspect", str(REC), "--format", "json", cwd=here)
    assert json.loads(done.stdout)["facts"]["parser"] == "passthrough"
    # check takes the parser its golden files name: the file's parser is not check's
    done = run("check", str(REC), cwd=here)
    assert done.returncode == 0 and "1 match" in done.stdout, done.stdout + done.stderr
    # a pyproject.toml without the table stops the search: the project above is not this one's
    inner = here / "inner"
    inner.mkdir()
    (inner / "pyproject.toml").write_text('[project]\nname = "inner"\n', "utf-8")
    assert parser_of(run(*replay, cwd=inner)) == "api_tool_call"


def test_serve_and_proxy_take_their_settings(tmp_path: Path) -> None:
    here = project(
        tmp_path,
        '[tool.streamtool]\ntape = "captures/agent"\n\n'
        '[tool.streamtool.serve]\nspeed = "max"\nmatch-ignore = ["metadata2.request_id"]',
    )
    # the tape: one exchange recorded with one request id
    tape = here / "tape"
    tape.mkdir()
    lines = REC.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header["request"]["body"]["metadata2"] = {"request_id": "a1", "kept": 1}
    (tape / "0001-anthropic.jsonl").write_text(
        "\n".join([json.dumps(header), *lines[1:]]) + "\n", "utf-8"
    )
    (tape / "index.jsonl").write_text(
        json.dumps({"seq": 1, "file": "0001-anthropic.jsonl"}) + "\n", "utf-8"
    )
    proc, first, origin = start_listening([*STREAMTOOL, "serve", "tape", "--port", "0"], cwd=here)
    try:
        body = dict(header["request"]["body"], metadata2={"request_id": "b2", "kept": 1})
        reply = httpx.post(origin + "/v1/messages", json=body, timeout=20)
        assert reply.status_code == 200  # the other request id is ignored
        body["metadata2"]["kept"] = 2
        assert httpx.post(origin + "/v1/messages", json=body, timeout=20).status_code == 404
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    done = run("serve", "--help", cwd=here)
    assert "[default: max]" in done.stdout  # the project's defaults are shown as such
    done = run("proxy", "--help", cwd=here)
    assert "[default: captures/agent]" in done.stdout


@pytest.mark.parametrize(
    "table, message",
    [
        ('[tool.streamtool]\nspeed = "fast"', "[tool.streamtool] speed: must be a number > 0"),
        ("[tool.streamtool]\nspeeed = 2", "[tool.streamtool] speeed: not a setting (known: "),
        ('[tool.streamtool]\nparser = "yaml"', "[tool.streamtool] parser: unknown parser 'yaml'"),
        (
            '[tool.streamtool.serve]\nmatch-ignore = ["a..b"]',
            "[tool.streamtool.serve] match-ignore: 'a..b' is not a field path",
        ),
        (
            "[tool.streamtool.replay]\ntape = 'x'",
            "[tool.streamtool.replay] tape: replay has no such option (only proxy)",
        ),
        ("[tool.streamtool.srve]\nspeed = 2", "[tool.streamtool.srve]: not a streamtool command"),
        ("[tool.streamtool]\nspeed = ", "not valid TOML (Invalid value (at line 5, column 9))"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_file_and_the_key(
    tmp_path: Path, table: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In this process, through click's default_map as ``main()`` gives it."""
    monkeypatch.chdir(project(tmp_path, table))
    done = CliRunner().invoke(
        app,
        ["replay", str(REC), "--format", "json"],
        default_map=ProjectDefaults(COMMANDS, find_pyproject()),
    )
    assert done.exit_code == 2 and done.stdout == ""
    assert done.stderr.startswith(f"streamtool: error: {tmp_path / 'pyproject.toml'}: ")
    assert message in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr


def test_a_bad_value_stops_the_command_not_the_version(tmp_path: Path) -> None:
    here = project(tmp_path, '[tool.streamtool]\nspeed = "fast"')
    done = run("replay", str(REC), "--format", "json", cwd=here)
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr
    assert done.stderr == (
        f"streamtool: error: {tmp_path / 'pyproject.toml'}: [tool.streamtool] speed: must be a "
        "number > 0 or 'max', not 'fast'\n"
    )
    assert run("--version", cwd=here).returncode == 0  # the root reads nothing


def test_the_command_table_wins_and_other_commands_are_left_alone() -> None:
    table = {"speed": "1", "parser": "xml", "serve": {"speed": "max"}}
    path = Path("pyproject.toml")
    assert command_defaults(table, "serve", path, COMMANDS) == {"speed": "max"}
    assert command_defaults(table, "replay", path, COMMANDS) == {"speed": "1", "parser": "xml"}
    assert command_defaults(table, "ls", path, COMMANDS) == {}
    with pytest.raises(SettingsError, match=r"\[tool.streamtool.serve\] parser: serve has no"):
        command_defaults({"serve": {"parser": "xml"}}, "ls", path, COMMANDS)
    assert set(SETTINGS) == {"parser", "converter", "speed", "match-ignore", "tape"}


@pytest.mark.parametrize(
    "text",
    [
        '[tool.streamtool]\nspeed = "max"',
        '[ tool . "streamtool" ]\nspeed = "max"',
        'tool.streamtool.speed = "max"',
        '[tool]\nstreamtool = { speed = "max" }',
        '[tool]\nstreamtool.speed = "max"',
    ],
)
def test_every_way_toml_writes_the_table_is_read(tmp_path: Path, text: str) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text(f'{text}\n\n[project.scripts]\nstreamtool = "x:y"\n', "utf-8")
    assert read_table(path) == {"speed": "max"}
    path.write_text('[project.scripts]\nstreamtool = "x:y"\n', "utf-8")
    assert read_table(path) == {}


def test_every_setting_names_an_option_of_each_of_its_commands() -> None:
    from streamtool.cli.main import load_command

    for key, setting in SETTINGS.items():
        for command in setting.commands:
            params = {p.name: p for p in load_command(command).params}
            assert setting.param in params, (key, command)
            option = params[setting.param]
            assert f"--{key}" in option.opts or key == "tape", (key, command, option.opts)
