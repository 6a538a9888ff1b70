"""Recording Amazon Bedrock: ``record`` signs with SigV4 through botocore, and ``Capture``
records a boto3 client; both against a local server that serves a bundled Bedrock stream."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from benchmarks.raw_http import http_server
from streamtool.core.exchange.playback import Playback
from streamtool.core.net.capture import Capture
from streamtool.core.net.server import serving
from streamtool.core.recording.reader import Source

from .conftest import RECORDINGS
from .serve_helpers import STREAMTOOL, body_of, replayed

boto3 = pytest.importorskip("boto3")
botocore_auth = pytest.importorskip("botocore.auth")
botocore_awsrequest = pytest.importorskip("botocore.awsrequest")
botocore_credentials = pytest.importorskip("botocore.credentials")

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
ACCESS_KEY = "AKIDEXAMPLE"
SECRET_KEY = "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY"
TOKEN = "FwoGZXIvYXdzEXAMPLESESSIONTOKEN"
CONVERSE = RECORDINGS / "bedrock-converse-parallel-tool-calls.jsonl"


def record_bedrock(url: str, out: Path, prompt: str = "hi") -> list[str]:
    """The arguments of a ``streamtool record`` of ``prompt`` to the Bedrock model at ``url``."""
    return [
        "record",
        "--provider",
        "bedrock",
        "--model",
        MODEL,
        "--prompt",
        prompt,
        "--base-url",
        url,
        "--view",
        "none",
        "-o",
        str(out),
    ]


def meaning(path: Path) -> dict[str, Any]:
    return replayed(path, ("text", "reasoning", "invocations", "finish_reason", "errors"))


@pytest.fixture
def aws_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    env = {
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_SESSION_TOKEN": TOKEN,
        "AWS_REGION": "eu-west-3",
        "AWS_CONFIG_FILE": str(tmp_path / "no-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-credentials"),
    }
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


class _Served:
    """A local server that answers one Bedrock stream and keeps the request it got."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []


@pytest.fixture
def bedrock_server() -> Iterator[tuple[str, _Served]]:
    served = _Served(body_of(CONVERSE))

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            content = self.rfile.read(int(self.headers.get("content-length", "0")))
            served.requests.append(("POST", self.path, dict(self.headers.items()), content))
            self.send_response(200)
            self.send_header("content-type", "application/vnd.amazon.eventstream")
            self.send_header("content-length", str(len(served.body)))
            self.end_headers()
            half = len(served.body) // 2  # two writes: the body comes in more than one read
            self.wfile.write(served.body[:half])
            self.wfile.flush()
            self.wfile.write(served.body[half:])

        def log_message(self, *args: Any) -> None:
            pass

    with http_server(Handler) as url:
        yield url, served


def _signature_is_valid(url: str, request: tuple[str, str, dict[str, str], bytes]) -> bool:
    """Recompute the SigV4 signature of what the server received, with botocore."""
    method, path, headers, content = request
    lowered = {k.lower(): v for k, v in headers.items()}
    auth = lowered["authorization"]
    fields = dict(part.strip().split("=", 1) for part in auth.split(" ", 1)[1].split(","))
    signed = fields["SignedHeaders"].split(";")
    _, date, region, service, _ = fields["Credential"].split("/")
    aws = botocore_awsrequest.AWSRequest(
        method=method,
        url=url + path,
        data=content,
        headers={k: lowered[k] for k in signed if k != "host"},
    )
    aws.context["timestamp"] = lowered["x-amz-date"]
    creds = botocore_credentials.Credentials(ACCESS_KEY, SECRET_KEY, TOKEN)
    signer = botocore_auth.SigV4Auth(creds, service, region)
    canonical = signer.canonical_request(aws)
    expected = signer.signature(signer.string_to_sign(aws, canonical), aws)
    return bool(expected == fields["Signature"])


def test_record_signs_with_sigv4_and_keeps_the_bytes(
    aws_env: dict[str, str], bedrock_server: tuple[str, _Served], tmp_path: Path
) -> None:
    url, served = bedrock_server
    out = tmp_path / "rec.jsonl"
    from typer.testing import CliRunner

    from streamtool.cli.main import app

    result = CliRunner().invoke(
        app,
        record_bedrock(url, out, "Weather in Paris and Tokyo?"),
    )
    assert result.exit_code == 0, result.output
    [request] = served.requests
    headers = {k.lower(): v for k, v in request[2].items()}
    assert (
        headers["authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/")
        and "/eu-west-3/bedrock/aws4_request" in headers["authorization"]
    )
    assert headers["x-amz-security-token"] == TOKEN
    assert request[1] == "/model/" + MODEL.replace(":", "%3A") + "/converse-stream"
    assert _signature_is_valid(url, request)
    # the recording: the served bytes exactly, no credential anywhere in the file
    assert body_of(out) == served.body
    text = out.read_text()
    for secret in (SECRET_KEY, TOKEN, headers["authorization"]):
        assert secret not in text
    header = json.loads(text.splitlines()[0])
    assert header["api"] == "converse-stream" and header["provider"] == "bedrock"
    assert header["request"]["headers"]["Authorization"] == "[redacted]"
    assert meaning(out) == meaning(CONVERSE)


def test_record_without_botocore_is_a_one_line_error(tmp_path: Path) -> None:
    out = tmp_path / "rec.jsonl"
    code = (
        "import sys; sys.modules['botocore'] = None\n"
        "from streamtool.cli.main import main\n"
        "sys.argv = ['streamtool', 'record', '--provider', 'bedrock-converse', '--model', 'm',"
        " '--prompt', 'hi', '-o', sys.argv[1]]\n"
        "main()\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", code, str(out)], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "streamtool[bedrock]" in lines[0]
    assert "Traceback" not in done.stderr
    assert not out.exists()


def test_record_without_credentials_is_a_one_line_error(
    aws_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from streamtool.cli.main import app

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    out = tmp_path / "rec.jsonl"
    result = CliRunner().invoke(
        app,
        ["record", "--provider", "bedrock", "--model", "m", "--prompt", "hi", "-o", str(out)],
    )
    assert result.exit_code == 2
    assert "no AWS credentials" in result.output and "Traceback" not in result.output
    assert not out.exists()


# -- Capture around a boto3 client ---------------------------------------------------------------
def _client(url: str) -> Any:
    from botocore.config import Config

    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=url,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        config=Config(retries={"max_attempts": 1}, read_timeout=10, connect_timeout=5),
    )


@pytest.mark.parametrize(
    "name",
    [
        "bedrock-converse-parallel-tool-calls",
        "bedrock-converse-throttling-mid-stream",
        "bedrock-invoke-claude-parallel-tool-calls",
    ],
)
def test_capture_records_a_boto3_client_byte_exact(name: str, tmp_path: Path) -> None:
    bundled = RECORDINGS / f"{name}.jsonl"
    capture = Capture(tmp_path / "captures")
    with serving([bundled], Playback(speed=None)) as server:
        client = capture.botocore(_client(server.url))
        if "converse" in name:
            response = client.converse_stream(
                modelId=MODEL, messages=[{"role": "user", "content": [{"text": "hi"}]}]
            )
            stream = response["stream"]
        else:
            response = client.invoke_model_with_response_stream(
                modelId=MODEL, body=json.dumps({"anthropic_version": "bedrock-2023-05-31"})
            )
            stream = response["body"]
        try:
            events = list(stream)
        except Exception:  # botocore raises the exception frame
            events = []
        assert events or "throttling" in name
        client.close()
    [path] = capture.paths
    assert body_of(path) == body_of(bundled)
    assert meaning(path) == meaning(bundled)
    source = Source(path)
    list(source.chunks())  # the end record comes after them
    assert source.header.provider == "bedrock"
    assert source.header.api == Source(bundled).header.api
    assert source.end is not None and source.end.reason == "complete"
    lines = path.read_text()
    assert SECRET_KEY not in lines and '"b64"' in lines


# -- writers: two at once, and a real kill -9 ------------------------------------------------------
def test_two_boto3_clients_captured_at_once_write_two_whole_recordings(tmp_path: Path) -> None:
    bundled = RECORDINGS / "bedrock-converse-parallel-tool-calls.jsonl"
    capture = Capture(tmp_path / "captures")
    errors: list[BaseException] = []
    with serving([bundled], Playback(speed=None, rechunk=97)) as server:
        barrier = threading.Barrier(2)

        def one() -> None:
            try:
                client = capture.botocore(_client(server.url))
                barrier.wait(timeout=10)
                stream = client.converse_stream(
                    modelId=MODEL, messages=[{"role": "user", "content": [{"text": "hi"}]}]
                )["stream"]
                assert list(stream)
                client.close()
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)

        threads = [threading.Thread(target=one) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
    assert errors == []
    assert len(capture.paths) == 2 and len(set(capture.paths)) == 2
    for path in capture.paths:
        assert body_of(path) == body_of(bundled)
        assert meaning(path) == meaning(bundled)


def _bytes_so_far(path: Path) -> int:
    """Body bytes in the whole chunk lines written so far."""
    import base64

    if not path.exists():
        return 0
    total = 0
    for line in path.read_bytes().split(b"\n"):
        try:
            obj = json.loads(line)
        except ValueError:
            continue  # the line being written
        if obj.get("type") == "chunk":
            total += (
                len(base64.b64decode(obj["b64"])) if "b64" in obj else len(obj["text"].encode())
            )
    return total


def test_kill_9_mid_stream_leaves_every_read_on_disk(
    aws_env: dict[str, str], tmp_path: Path
) -> None:
    import os
    import signal
    import time

    bundled = RECORDINGS / "bedrock-converse-parallel-tool-calls.jsonl"
    body = body_of(bundled)
    keep = len(body) // 2
    out = tmp_path / "killed.jsonl"
    with serving([bundled], Playback(speed=None, stall=30.0, stall_after=keep)) as server:
        proc = subprocess.Popen(
            [*STREAMTOOL, *record_bedrock(server.url, out)],
            env={**os.environ, **aws_env},
            stderr=subprocess.PIPE,
        )
        try:
            deadline = time.monotonic() + 30
            while _bytes_so_far(out) < keep:
                if proc.poll() is not None:  # ended before the stall: say why
                    why = proc.stderr.read().decode(errors="replace")  # type: ignore[union-attr]
                    pytest.fail(f"record exited {proc.returncode} mid-stream: {why}")
                assert time.monotonic() < deadline
                time.sleep(0.02)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.stderr.close()  # type: ignore[union-attr]
    assert proc.returncode == -signal.SIGKILL
    source = Source(out)
    data = b"".join(
        c.data if isinstance(c.data, bytes) else c.data.encode() for c in source.chunks()
    )
    assert data == body[:keep]
    assert source.header.api == "converse-stream" and source.end is None
    assert SECRET_KEY not in out.read_text()


def test_capture_leaves_a_call_that_does_not_stream_unrecorded(tmp_path: Path) -> None:
    capture = Capture(tmp_path / "captures")
    with serving([CONVERSE], Playback(speed=None)) as server:
        client = capture.botocore(_client(server.url))
        from botocore.exceptions import ClientError

        with pytest.raises(ClientError):  # serve answers only the streamed routes
            client.converse(modelId=MODEL, messages=[{"role": "user", "content": [{"text": "x"}]}])
        stream = client.converse_stream(
            modelId=MODEL, messages=[{"role": "user", "content": [{"text": "hi"}]}]
        )["stream"]
        assert list(stream)
    assert [p.name for p in capture.paths] == ["001-bedrock-converse-stream.jsonl"]
