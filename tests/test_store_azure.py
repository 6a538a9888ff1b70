"""Tapes on Azure Blob Storage (``az://``), against Azurite, the Azure Blob emulator, on
127.0.0.1, reached through obstore as its documentation shows (``AZURE_STORAGE_USE_EMULATOR``):
a tape pushed by two writers at once, served, pulled byte for byte, verified and collected, and
an object there already never overwritten. Skipped when Azurite is not installed (``.ci/run``
installs it). Google Cloud Storage is read against its emulator in ``test_store_gcs.py``; no
emulator installable from PyPI or npm takes obstore's uploads (docs/store.md says why)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from typer.testing import CliRunner

from streamtool.cli.main import app
from streamtool.core.net.store import StoreTape
from streamtool.core.net.store_ops import push

from .store_helpers import Azure, a_tape, az, azurite, served_pulled_and_verified, sha256_of

__all__ = ["az", "azurite"]  # the fixtures, used by name


def test_a_tape_on_azure_is_pushed_served_pulled_and_never_overwritten(
    az: Azure, tmp_path: Path
) -> None:
    import obstore
    from obstore.exceptions import AlreadyExistsError

    files = a_tape(tmp_path / "tape", 4)
    url = az.url("team/weather")
    # two writers push the same tape at once: each exchange is one object, whole
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda _: push(tmp_path / "tape", url), range(2)))
    assert all(r.added + r.present == len(files) for r in results)
    tape = StoreTape(url)
    refs = tape.listing().refs
    assert sorted(r.recording for r in refs) == sorted(sha256_of(f) for f in files)

    # an object there already is never overwritten (the conditional create the layout needs)
    key = tape.key(refs[0].path)
    held = bytes(obstore.get(tape.store, key).bytes())
    with pytest.raises(AlreadyExistsError):
        obstore.put(tape.store, key, b"another writer's\n", mode="create", use_multipart=False)
    assert bytes(obstore.get(tape.store, key).bytes()) == held

    # served (a request of the tape answered with its recording's stream), pulled through the
    # command byte for byte, verified
    served_pulled_and_verified(url, files, tmp_path / "pulled")
    gone = CliRunner().invoke(app, ["tape", "gc", url, "--older-than", "1", "--delete"])
    assert gone.exit_code == 0, gone.output
    assert StoreTape(url).listing().refs == []


def test_a_missing_container_and_a_wrong_key_are_one_line_each(
    az: Azure, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    a_tape(tmp_path / "tape", 1)
    missing = CliRunner().invoke(app, ["tape", "ls", f"az://no-such-container-{az.bucket}/t"])
    assert missing.exit_code == 2
    assert missing.output.strip().endswith("no such container"), missing.output
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_KEY", "d3Jvbmcga2V5")
    refused = CliRunner().invoke(app, ["tape", "push", str(tmp_path / "tape"), az.url("t")])
    assert refused.exit_code == 2
    assert "the store refused the credentials" in refused.output, refused.output
    assert len(refused.output.strip().splitlines()) == 1
