"""The library API: the README's example runs, and every exported name resolves."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import streamtool.core

from .helpers import fresh_python_prints

ROOT = Path(__file__).resolve().parent.parent


def _readme_example() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Python API", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "the Python API section has no python example"
    return match.group(1)


def test_readme_python_api_example_runs() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _readme_example()],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "get_weather {'city': 'Paris', 'unit': 'celsius'}"
    assert lines[1] == "get_weather {'city': 'Tokyo', 'unit': 'celsius'}"
    assert lines[2].endswith("segments started; tool_calls")
    assert int(lines[2].split()[0]) >= 2


def test_every_exported_name_resolves() -> None:
    for name in streamtool.core.__all__:
        assert getattr(streamtool.core, name) is not None, name
    assert sorted(dir(streamtool.core)) == sorted(streamtool.core.__all__)


def test_importing_the_library_stays_light() -> None:
    code = (
        "import sys, streamtool.core\n"
        "heavy = [m for m in ('openai', 'anthropic', 'starlette', 'uvicorn', 'httpx')"
        " if m in sys.modules]\n"
        "print(','.join(heavy))"
    )
    assert fresh_python_prints(code) == ""


def test_unknown_name_is_an_attribute_error() -> None:
    try:
        streamtool.core.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:  # pragma: no cover - the assertion is the failure
        raise AssertionError("no AttributeError")
