"""``record`` and ``Capture`` for Cohere v2 and Gemini Interactions: the request each builds
reaches ``serve``, and the recording holds the served bytes exactly, with no credential."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from streamtool.cli.main import app
from streamtool.core.exchange.playback import Playback
from streamtool.core.net.capture import Capture
from streamtool.core.net.server import serving
from streamtool.core.recording.reader import Source

from .conftest import RECORDINGS
from .serve_helpers import body_of, replayed

KEY = "fake-local-key-3f9a1c"


def meaning(path: Path) -> dict[str, Any]:
    return replayed(
        path, ("converter", "text", "reasoning", "invocations", "finish_reason", "usage", "errors")
    )


@pytest.mark.parametrize(
    ("provider", "name", "key_env", "sent_body"),
    [
        ("cohere", "cohere-tool-plan-parallel-tool-calls", "CO_API_KEY", "messages"),
        (
            "gemini-interactions",
            "gemini-interactions-parallel-function-calls",
            "GEMINI_API_KEY",
            "input",
        ),
    ],
)
def test_record_against_serve_is_byte_exact(
    provider: str,
    name: str,
    key_env: str,
    sent_body: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bundled = RECORDINGS / f"{name}.jsonl"
    out = tmp_path / "rec.jsonl"
    monkeypatch.setenv(key_env, KEY)
    with serving([bundled], Playback(speed=None)) as server:
        result = CliRunner().invoke(
            app,
            [
                "record",
                "--provider",
                provider,
                "--model",
                "m-1",
                "--prompt",
                "Weather in Paris and Tokyo?",
                "--base-url",
                server.url,
                "--view",
                "none",
                "-o",
                str(out),
            ],
        )
    assert result.exit_code == 0, result.output
    assert body_of(out) == body_of(bundled)
    assert meaning(out) == meaning(bundled)
    text = out.read_text()
    assert KEY not in text
    header = json.loads(text.splitlines()[0])
    assert header["request"]["body"]["stream"] is True
    assert sent_body in header["request"]["body"]


def _captured_like_bundled(tmp_path: Path, bundled: Path, read: Any) -> tuple[Any, Path]:
    """What ``read(serve's URL, a capture's httpx client)`` gave with ``bundled`` served, and
    the one recording the capture wrote; checks it holds the bundled body and meaning and no
    key."""
    capture = Capture(tmp_path / "captures", module="httpx")
    with serving([bundled], Playback(speed=None)) as server:
        got = read(server.url, capture.client(timeout=10))
    [path] = capture.paths
    assert body_of(path) == body_of(bundled)
    assert meaning(path) == meaning(bundled)
    assert KEY not in path.read_text()
    return got, path


def test_capture_around_the_cohere_sdk(tmp_path: Path) -> None:
    cohere = pytest.importorskip("cohere")
    bundled = RECORDINGS / "cohere-tool-plan-parallel-tool-calls.jsonl"

    def read(url: str, http: Any) -> list[str]:
        client = cohere.ClientV2(api_key=KEY, base_url=url, httpx_client=http)
        hi = [{"role": "user", "content": "hi"}]
        return [e.type for e in client.chat_stream(model="command-a-03-2025", messages=hi)]

    kinds, path = _captured_like_bundled(tmp_path, bundled, read)
    assert kinds[0] == "message-start" and kinds[-1] == "message-end"
    header = Source(path).header
    assert (header.provider, header.api) == ("cohere", "v2.chat")


def test_capture_around_google_genai_interactions(tmp_path: Path) -> None:
    genai = pytest.importorskip("google.genai")
    from google.genai import types

    bundled = RECORDINGS / "gemini-interactions-thought-search-text.jsonl"

    def read(url: str, http: Any) -> list[str]:
        options = types.HttpOptions(base_url=url, httpx_client=http)
        client = genai.Client(api_key=KEY, http_options=options)
        stream = client.interactions.create(model="gemini-3-flash-preview", input="hi", stream=True)
        return [e.event_type for e in stream]

    kinds, path = _captured_like_bundled(tmp_path, bundled, read)
    assert kinds[0] == "interaction.created" and kinds[-1] == "interaction.completed"
    assert Source(path).header.api == "interactions"


def test_the_interactions_request_body() -> None:
    from streamtool.core.exchange.requests import RequestOptions, ToolDef, build_request

    tool = ToolDef("get_weather", "Weather", {"type": "object", "properties": {}})
    prepared = build_request(
        RequestOptions(
            provider="gemini-interactions",
            model="gemini-3-flash-preview",
            messages=[
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Weather?"},
                {"role": "assistant", "content": "Where?"},
                {"role": "user", "content": "Paris"},
            ],
            tools=[tool],
            tool_choice="get_weather",
            max_tokens=64,
        ),
        {"GEMINI_API_KEY": KEY},
    )
    assert prepared.url == "https://generativelanguage.googleapis.com/v1beta/interactions"
    assert prepared.headers["x-goog-api-key"] == KEY and KEY in prepared.secrets
    assert prepared.body == {
        "model": "gemini-3-flash-preview",
        "input": [
            {"role": "user", "content": "Weather?"},
            {"role": "model", "content": "Where?"},
            {"role": "user", "content": "Paris"},
        ],
        "stream": True,
        "system_instruction": "Be brief.",
        "generation_config": {
            "max_output_tokens": 64,
            "tool_choice": {"allowed_tools": {"mode": "any", "tools": ["get_weather"]}},
        },
        "tools": [
            {
                "type": "function",
                "name": "get_weather",
                "description": "Weather",
                "parameters": {"type": "object", "properties": {}},
            }
        ],
    }


def test_bedrock_region_and_signing_mode() -> None:
    from streamtool.core.exchange.requests import RequestOptions, build_request
    from streamtool.core.net.aws import region_for

    assert region_for("https://bedrock-runtime.ap-south-1.amazonaws.com/model/m/converse", {}) == (
        "ap-south-1"
    )
    assert region_for(
        "http://127.0.0.1:9/model/m/converse-stream", {"AWS_REGION": "eu-west-1"}
    ) == ("eu-west-1")
    assert region_for("http://127.0.0.1:9/x", {}) == "us-east-1"
    opts = RequestOptions(provider="bedrock", model="m", prompt="hi")
    assert build_request(opts, {}).sigv4 == "required"
    with_key = build_request(opts, {"AWS_BEARER_TOKEN_BEDROCK": KEY})
    assert with_key.sigv4 is None and with_key.headers["authorization"] == f"Bearer {KEY}"
    opts.base_url = "http://127.0.0.1:8787"
    assert build_request(opts, {}).sigv4 == "optional"
