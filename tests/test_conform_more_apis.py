"""``conform`` with the real SDKs of Bedrock and Cohere as its clients: each reads the bundled
recordings, whole and cut, as streamtool's replay does."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from streamtool.cli.main import app

from .conftest import RECORDINGS

CLIENTS = Path(__file__).parent / "clients"


@pytest.mark.parametrize(
    ("sdk", "client", "names"),
    [
        (
            "boto3",
            "bedrock_converse_client.py",
            ["bedrock-converse-parallel-tool-calls", "bedrock-converse-reasoning-then-text"],
        ),
        ("cohere", "cohere_client.py", ["cohere-tool-plan-parallel-tool-calls"]),
    ],
)
def test_conform_with_the_sdk_as_the_client(sdk: str, client: str, names: list[str]) -> None:
    pytest.importorskip(sdk)
    args = [a for n in names for a in ("-r", str(RECORDINGS / f"{n}.jsonl"))]
    result = CliRunner().invoke(
        app,
        [
            "conform",
            *args,
            "--chunkings",
            "2",
            "--format",
            "json",
            "--",
            sys.executable,
            str(CLIENTS / client),
        ],
    )
    assert result.exit_code == 0, result.output
    runs = json.loads(result.output)["results"]
    assert len(runs) == 2 * len(names)
    assert {r["status"] for r in runs} == {"pass"}
