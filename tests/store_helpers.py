"""A real S3 server for the store tests: moto's threaded server on 127.0.0.1, started once per
test session (per xdist worker) and shared; each test gets a bucket of its own, the AWS
variables pointing at the server, and a cache folder of its own.

    def test_x(s3: S3) -> None:
        url = s3.url("tape")  # s3://<the test's bucket>/tape
"""

from __future__ import annotations

import hashlib
import itertools
import os
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

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
class S3:
    endpoint: str
    bucket: str
    env: dict[str, str]

    def url(self, prefix: str) -> str:
        return f"s3://{self.bucket}/{prefix}"


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


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_quietly(target: object) -> threading.Thread:
    thread = threading.Thread(target=target, daemon=True)  # type: ignore[arg-type]
    thread.start()
    return thread
