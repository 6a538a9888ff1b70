"""Real servers for the store tests, on 127.0.0.1, each started once per test session (per
xdist worker) and shared: moto's S3 (threaded, in this process) and Azurite, the Azure Blob
emulator (a process of its own; its test is skipped when it is not installed). Each test gets
a bucket (a container) of its own, the variables pointing at the server, and a cache folder of
its own.

    def test_x(s3: S3) -> None:
        url = s3.url("tape")  # s3://<the test's bucket>/tape
    def test_y(az: Azure) -> None:
        url = az.url("tape")  # az://<the test's container>/tape
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

pytest.importorskip("obstore")
pytest.importorskip("moto.server")

_BUCKETS = itertools.count()
_SERVE = """
import logging, sys, threading
from moto.server import ThreadedMotoServer
logging.getLogger("werkzeug").setLevel(logging.WARNING)  # a line per request costs its CPU
server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
server.start()
host, port = server.get_host_and_port()
print(f"http://{host}:{port}", flush=True)
threading.Event().wait()
"""


@dataclass
class Store:
    """An object store of a test: its endpoint, the bucket (or container) made for the test,
    and the variables that point obstore at it."""

    endpoint: str
    bucket: str
    env: dict[str, str]
    scheme: ClassVar[str]

    def url(self, prefix: str) -> str:
        return f"{self.scheme}://{self.bucket}/{prefix}"


class S3(Store):
    scheme = "s3"


def aws_env(endpoint: str, cache: Path) -> dict[str, str]:
    return {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "streamtool-test",
        "AWS_SECRET_ACCESS_KEY": "streamtool-test",
        "AWS_DEFAULT_REGION": "us-east-1",
        "STREAMTOOL_CACHE": str(cache),
    }


def make_bucket(endpoint: str, name: str) -> None:
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/{name}", method="PUT")).close()


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """moto's S3 on 127.0.0.1, one per test session (per xdist worker)."""
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def s3(moto_endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> S3:
    bucket = f"tapes-{os.getpid()}-{next(_BUCKETS)}"
    make_bucket(moto_endpoint, bucket)
    env = aws_env(moto_endpoint, tmp_path / "cache")
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return S3(moto_endpoint, bucket, env)


class Azure(Store):
    scheme = "az"


@pytest.fixture(scope="session")
def azurite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Azurite's Blob service on 127.0.0.1 (a free port), in memory, with an account and a
    key of this session's (no key in any file); the variables that point obstore at it."""
    exe = shutil.which("azurite-blob")
    if exe is None:
        pytest.skip("Azurite is not installed (npm install -g azurite): no az:// server")
    pytest.importorskip("azure.storage.blob", reason="azure-storage-blob makes the containers")
    account, key = "streamtool", base64.b64encode(os.urandom(32)).decode()
    folder = tmp_path_factory.mktemp("azurite")
    log = folder / "out.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [exe, "--blobHost", "127.0.0.1", "--blobPort", "0", "--inMemoryPersistence"]
            + ["--disableTelemetry", "--silent", "--skipApiVersionCheck"],
            cwd=folder,  # anything it writes
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "AZURITE_ACCOUNTS": f"{account}:{key}"},
        )
    try:
        endpoint = _listening(proc, log)
        yield {
            "AZURE_STORAGE_USE_EMULATOR": "true",
            "AZURITE_BLOB_STORAGE_URL": endpoint,
            "AZURE_STORAGE_ACCOUNT_NAME": account,
            "AZURE_STORAGE_ACCOUNT_KEY": key,
        }
    finally:
        proc.terminate()
        proc.wait(10)


def _listening(proc: subprocess.Popen[bytes], log: Path) -> str:
    """The origin Azurite says it listens on (it prints it once it does)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        for line in text.splitlines():
            if "successfully listens on " in line:
                return line.rsplit("listens on ", 1)[1].strip()
        assert proc.poll() is None, f"Azurite stopped: {text}"
        time.sleep(0.05)
    raise AssertionError(f"Azurite did not start: {log.read_text(errors='replace')}")


@pytest.fixture
def az(azurite: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Azure:
    """A container of the test's own in Azurite, and the variables that reach it."""
    from azure.storage.blob import BlobServiceClient

    account, key = azurite["AZURE_STORAGE_ACCOUNT_NAME"], azurite["AZURE_STORAGE_ACCOUNT_KEY"]
    endpoint = f"{azurite['AZURITE_BLOB_STORAGE_URL']}/{account}"
    container = f"tapes-{os.getpid()}-{next(_BUCKETS)}"
    BlobServiceClient(
        endpoint, credential={"account_name": account, "account_key": key}
    ).create_container(container)
    env = {**azurite, "STREAMTOOL_CACHE": str(tmp_path / "cache")}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return Azure(endpoint, container, env)


class OwnMoto:
    """A moto server in a process of its own (a test stops it, or sets its environment)."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _SERVE],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={**os.environ, **(env or {})},
        )
        assert self.proc.stdout is not None
        self.endpoint = self.proc.stdout.readline().strip()
        assert self.endpoint.startswith("http://127.0.0.1:"), self.endpoint

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


RECORDINGS = Path(__file__).resolve().parents[1] / "recordings"


def a_tape(folder: Path, n: int = 6) -> list[Path]:
    """A tape folder of ``n`` bundled recordings (with their index, as a proxy writes)."""
    from streamtool.core.recording.tape_index import IndexEntry, append_entries

    folder.mkdir(parents=True)
    chosen = sorted(p for p in RECORDINGS.glob("openai-*.jsonl"))[:n]
    entries = []
    for seq, src in enumerate(chosen, start=1):
        name = f"{seq:04d}-{src.name}"
        (folder / name).write_bytes(src.read_bytes())
        entries.append(IndexEntry(seq=seq, file=name, recorded_at="2026-11-20T10:00:00Z"))
    append_entries(folder, entries)
    return [folder / e.file for e in entries]


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_quietly(target: object) -> threading.Thread:
    thread = threading.Thread(target=target, daemon=True)  # type: ignore[arg-type]
    thread.start()
    return thread


def served_pulled_and_verified(url: str, files: list[Path], pulled: Path) -> None:
    """The store tape at ``url`` (holding ``files``): a request of its first recording is served
    with that recording's stream; ``tape pull`` brings every recording byte for byte into
    ``pulled``; ``tape verify`` finds each exchange's object matching its hash."""
    import json
    from urllib.parse import urlsplit

    import httpx
    from typer.testing import CliRunner

    from streamtool.cli.main import app
    from streamtool.core.net.tape import serving_tape
    from streamtool.core.recording.tape_index import read_index

    lines = [json.loads(line) for line in files[0].read_text().splitlines()]
    request = lines[0]["request"]
    with serving_tape(url) as server:
        r = httpx.post(server.url + urlsplit(request["url"]).path, json=request["body"], timeout=30)
    assert r.status_code == 200, r.text
    assert r.text == "".join(x["text"] for x in lines if x["type"] == "chunk")
    done = CliRunner().invoke(app, ["tape", "pull", url, str(pulled)])
    assert done.exit_code == 0, done.output
    got = sorted(sha256_of(pulled / e.file) for e in read_index(pulled))
    assert got == sorted(sha256_of(f) for f in files)
    verified = CliRunner().invoke(app, ["tape", "verify", url])
    checked = f"{len(files)} exchanges checked, 0 not matching"
    assert verified.exit_code == 0 and checked in verified.stdout, verified.output
