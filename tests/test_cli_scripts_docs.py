"""What scripts rely on (issue 19, item 5) and what the docs promise (item 9)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from streamtool.cli.main import app

from .conftest import RECORDINGS, ROOT


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


# -- replay --strict -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "strict_code", "why"),
    [
        ("openai-parallel-tool-calls.jsonl", 0, None),
        ("openai-http-429-rate-limit.jsonl", 1, "the stream ended: error"),
        ("openrouter-error-in-stream.jsonl", 1, "the stream has 2 errors"),
        ("anthropic-overloaded-mid-stream.jsonl", 1, "the stream has "),
    ],
)
def test_strict_exits_1_when_the_stream_has_errors(name: str, strict_code: int, why: str) -> None:
    path = str(RECORDINGS / name)
    code, out, _ = invoke("replay", path, "--format", "json")
    assert code == 0  # without --strict a broken stream is shown, not failed
    code, out, err = invoke("replay", path, "--format", "json", "--strict")
    assert code == strict_code, err
    assert json.loads(out)["source"] == path  # the output is still printed in full
    if why:
        assert f"streamtool: warning: {path}: {why}" in err


def test_strict_exits_1_on_a_recording_that_was_cut_off(tmp_path) -> None:
    lines = (RECORDINGS / "openai-parallel-tool-calls.jsonl").read_text().splitlines()
    assert json.loads(lines[-1])["type"] == "end"
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:-1]) + "\n")
    code, _, err = invoke("replay", str(cut), "--format", "json", "--strict")
    assert code == 1
    assert "the recording was cut off (--strict)" in err
    assert invoke("replay", str(cut), "--format", "json")[0] == 0


# -- refused combinations --------------------------------------------------------------------
def test_emit_with_format_is_refused() -> None:
    path = str(RECORDINGS / "openai-parallel-tool-calls.jsonl")
    code, out, err = invoke("replay", path, "--emit", "openai-sse", "--format", "json")
    assert code == 2 and out == ""
    assert err == (
        "streamtool: error: --emit and --format cannot be used together: "
        "--emit replaces the --format output\n"
    )
    code, out, _ = invoke("replay", path, "--emit", "openai-sse")
    assert code == 0 and out.endswith("data: [DONE]\n\n")


def test_diff_of_one_file_alone_is_an_error() -> None:
    path = str(RECORDINGS / "openai-parallel-tool-calls.jsonl")
    code, out, err = invoke("diff", path)
    assert code == 2 and out == ""
    assert err.startswith("streamtool: error: diff needs two recordings (A B), or one recording")
    # one file through two parsers is a real comparison
    code, out, _ = invoke("diff", path, "--parser-b", "passthrough", "--format", "json")
    assert code == 1 and json.loads(out)["same_meaning"] is False


def test_replay_needs_a_file_or_a_sample() -> None:
    code, _, err = invoke("replay")
    assert code == 2 and "replay needs a FILE" in err
    code, _, err = invoke("replay", "x.jsonl", "--sample", "write-file")
    assert code == 2 and "not both" in err
    code, _, err = invoke("replay", "--sample", "nope")
    assert code == 2 and err.startswith("streamtool: error: no sample named 'nope'; samples: ")


# -- the docs --------------------------------------------------------------------------------
def _readme_block(title: str) -> str:
    text = (ROOT / "README.md").read_text()
    section = text.split(f"## {title}\n", 1)[1]
    return section.split("```sh\n", 1)[1].split("```", 1)[0]


def test_readme_development_commands_are_those_ci_runs() -> None:
    dev = [line.split("  #")[0].strip() for line in _readme_block("Development").splitlines()]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    for command in (
        "ruff check .",
        "ruff format --check .",
        "pip install -q --no-deps -e . --config-settings editable_mode=strict",
        "mypy -p streamtool.core -p streamtool.cli",
        "lint-imports",
    ):
        assert command in ci, command
        assert any(command in line for line in dev), command
    strict = next(i for i, line in enumerate(dev) if "editable_mode=strict" in line)
    mypy = next(i for i, line in enumerate(dev) if line.startswith("mypy "))
    # mypy after the strict install; the plain editable install back afterwards
    assert strict < mypy < dev.index("pip install -q --no-deps -e .")
    # the layer contracts are read from the README's own install, before any strict one
    lint = next(i for i, line in enumerate(dev) if line.endswith("lint-imports"))
    assert lint < strict


def test_the_layer_contracts_hold_on_the_readme_install() -> None:
    """``lint-imports`` finds the packages through the install this suite runs on (the
    README's ``pip install -e '.[test]'``: setuptools' editable finder), no strict install."""
    lint = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "kept, 0 broken" in done.stdout


def test_docs_name_no_design_document_the_project_lacks() -> None:
    for doc in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        for name in re.findall(r"\b([A-Z][A-Z_-]+\.md)\b", doc.read_text()):
            assert (ROOT / name).exists() or (ROOT / "docs" / name).exists(), (doc.name, name)


def test_the_curl_example_uses_the_default_parser() -> None:
    line = next(line for line in (ROOT / "README.md").read_text().splitlines() if "curl" in line)
    assert line.startswith("streamtool replay capture.sse ") and "--parser" not in line


def test_license_is_an_spdx_expression_with_a_setuptools_that_reads_it() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["license"] == "MIT"
    requires = meta["build-system"]["requires"]
    assert requires == ["setuptools>=77"]  # the first setuptools that reads an SPDX license


# -- one wording (item 4) ----------------------------------------------------------------------
def test_a_missing_file_is_no_such_file_or_folder_everywhere(tmp_path) -> None:
    missing = str(tmp_path / "nope.jsonl")
    for args in (
        ["replay", missing],
        ["diff", missing, str(RECORDINGS / "openai-parallel-tool-calls.jsonl")],
        ["check", missing],
        [
            "record",
            "-p",
            "openai-chat",
            "-m",
            "m",
            "--prompt",
            "x",
            "--tools",
            missing,
            "-o",
            str(tmp_path / "out.jsonl"),
        ],
    ):
        code, _, err = invoke(*args)
        assert code == 2, args
        assert err == f"streamtool: error: {missing}: no such file or folder\n", args


def test_secret_kinds_take_the_right_article() -> None:
    from streamtool.core.recording.secrets import _KEY_SHAPES, with_article

    said = {kind: with_article(kind) for kind, *_ in _KEY_SHAPES}
    assert said["Anthropic key"] == "an Anthropic key"
    assert said["OpenAI-style key"] == "an OpenAI-style key"
    assert said["xAI key"] == "an xAI key"
    assert said["Google API key"] == "a Google API key"
    assert said["Groq key"] == "a Groq key"


def test_a_golden_file_given_to_replay_is_named_as_one() -> None:
    golden = RECORDINGS / "openai-write-file.golden.json"
    code, out, err = invoke("replay", str(golden), "--format", "json")
    assert code == 2 and out == ""
    assert err == (
        f"streamtool: error: {golden}: is a golden file (the expected transcript), not a "
        f"recording: replay {RECORDINGS / 'openai-write-file.jsonl'}, or compare them with "
        "streamtool check\n"
    )


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b"", "the stream is empty: there is nothing to replay"),
        (bytes(range(256)) * 4, "not a stream: its 1,024 bytes are binary data, not text"),
        (b"hello\nworld\n", "no server-sent events in its 12 bytes (nor NDJSON, nor a JSON array)"),
    ],
)
def test_a_body_without_events_does_not_suggest_a_converter(
    tmp_path, body: bytes, said: str
) -> None:
    path = tmp_path / "capture.sse"
    path.write_bytes(body)
    code, _, err = invoke("replay", str(path))
    assert code == 2
    assert err.startswith(f"streamtool: error: {path}: {said}")
    assert "--converter" not in err and err.count("\n") == 1


def test_a_converter_that_understands_nothing_says_so_and_exits_1() -> None:
    path = RECORDINGS / "openai-write-file.jsonl"
    code, out, err = invoke("replay", str(path), "--converter", "gemini", "--format", "json")
    assert code == 1
    assert json.loads(out)["invocations"] == []  # the output is still there, for a look
    assert err == (
        f"streamtool: error: {path}: the gemini converter understood none of its 181 events: "
        "is the stream another API? (--converter auto tells it from the recording)\n"
    )
    assert invoke("replay", str(path), "--format", "json")[0] == 0
    # an HTTP error answer is understood: it is an error, not another API
    code, _, _ = invoke(
        "replay",
        str(RECORDINGS / "openai-http-429-rate-limit.jsonl"),
        "--converter",
        "anthropic",
        "--format",
        "json",
    )
    assert code == 0
