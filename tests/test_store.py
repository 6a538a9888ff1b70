"""Tapes on object storage, against a real S3 server (moto's, on 127.0.0.1; never a mock of the
client): the layout, push and pull byte for byte, many writers at once, a kill -9 mid-upload, a
server gone mid-pull, bad credentials and a missing bucket, the verified cache, expiry, and the
commands that read a store URL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from streamtool.cli.main import app
from streamtool.core.exchange.playback import Playback
from streamtool.core.exchange.store_layout import (
    EntryRef,
    Expiry,
    entry_key,
    is_store_url,
    match_key,
    parse_duration,
    parse_entry_key,
    split_url,
)
from streamtool.core.net.server import serving
from streamtool.core.net.store import StoreTape, checkout
from streamtool.core.net.store_ops import pull, push
from streamtool.core.net.tape import serving_tape
from streamtool.core.recording.tape_index import read_index

from .serve_helpers import STREAMTOOL, recording, run_streamtool, start_listening
from .store_helpers import (
    RECORDINGS,
    S3,
    OwnMoto,
    a_tape,
    aws_env,
    make_bucket,
    moto_endpoint,
    s3,
    sha256_of,
)
from .tape_helpers import CHILD_PYTEST

__all__ = ["moto_endpoint", "s3"]  # the fixtures, used by name

UPSTREAM = recording("openai-text-usage-chunk-utf8-split")


def ask(prompt: str) -> dict:
    return {
        "model": "gpt-4o-mini",
        "stream": True,
        "messages": [{"role": "user", "content": prompt}],
    }


def cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return run_streamtool(*args, env=env, timeout=timeout)


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


# -- the layout (sans-IO) ------------------------------------------------------------------------
hexes = st.text("0123456789abcdef", min_size=64, max_size=64)
stamps = st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1)).map(
    lambda d: d.strftime("%Y%m%dT%H%M%SZ")
)


@given(key=hexes, digest=hexes, when=stamps)
def test_an_entry_key_names_its_request_time_and_recording(
    key: str, digest: str, when: str
) -> None:
    path = entry_key(key, when, digest)
    assert parse_entry_key(path) == EntryRef(when, digest, key)
    assert path.startswith(f"index/{key[:2]}/{key}/")


@given(
    st.dictionaries(
        st.text(min_size=1, max_size=8), st.integers() | st.text(max_size=8), max_size=6
    )
)
def test_the_match_key_ignores_key_order_and_the_ignored_fields(body: dict) -> None:
    reordered = dict(reversed(list(body.items())))
    assert match_key("/chat/completions", body) == match_key("/chat/completions", reordered)
    assert match_key("/chat/completions", body) == match_key(
        "/chat/completions", {**body, "stream": True, "seed": 7}
    )
    assert match_key("/chat/completions", body) != match_key("/responses", body)


def test_objects_a_person_put_in_the_index_are_not_entries() -> None:
    assert parse_entry_key("index/ab/notes.txt") is None
    assert (
        parse_entry_key("index/ab/" + "c" * 64 + "/20260101T000000Z-" + "d" * 64 + ".json") is None
    )
    assert is_store_url("s3://b/p") and is_store_url("memory://x") and not is_store_url("tapes/x")
    assert split_url("s3://bucket/a/b/") == ("s3://bucket", "a/b")


def test_expiry_names_the_exchange_and_its_age() -> None:
    assert parse_duration("7d") == 7 * 86400 and parse_duration("12h") == 12 * 3600
    with pytest.raises(ValueError):
        parse_duration("soon")
    rule = Expiry(parse_duration("7d"), "fail")
    now = datetime(2026, 12, 1, tzinfo=UTC)
    age = rule.expired(datetime(2026, 11, 20, tzinfo=UTC), now)
    assert age is not None
    assert rule.message("0001-x", age).startswith(
        "0001-x was recorded 11 days ago, past the tape's max_age of 7 days"
    )
    assert rule.expired(datetime(2026, 11, 28, tzinfo=UTC), now) is None
    with pytest.raises(ValueError):
        Expiry(1.0, "explode")


# -- push, pull, ls, verify, gc -------------------------------------------------------------------
def test_push_then_pull_gives_the_recordings_byte_for_byte(s3: S3, tmp_path: Path) -> None:
    files = a_tape(tmp_path / "tape")
    url = s3.url("team/weather")
    first = push(tmp_path / "tape", url)
    assert (first.added, first.present) == (len(files), 0)
    again = push(tmp_path / "tape", url)  # pushed twice: nothing added, nothing duplicated
    assert (again.added, again.present) == (0, len(files))
    assert len(StoreTape(url).listing().refs) == len(files)

    entries = pull(url, tmp_path / "pulled")
    got = sorted(sha256_of(tmp_path / "pulled" / e.file) for e in entries)
    assert got == sorted(sha256_of(f) for f in files)
    assert [e.file for e in read_index(tmp_path / "pulled")] == [e.file for e in entries]
    # pulled again after a push of one more: the same folder updated, every file replaced whole
    more = a_tape(tmp_path / "more", len(files) + 1)[-1]
    StoreTape(url).publish_file(more, {"recorded_at": "2026-11-21T10:00:00Z"})
    (tmp_path / "pulled" / entries[0].file).write_bytes(b"edited by hand\n")
    entries = pull(url, tmp_path / "pulled")
    assert len(entries) == len(files) + 1
    got = sorted(sha256_of(tmp_path / "pulled" / e.file) for e in entries)
    assert got == sorted(sha256_of(f) for f in [*files, more])
    assert not list((tmp_path / "pulled").glob(".*.part"))
    # a folder that holds something else is never pulled into
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    with pytest.raises(Exception, match="exists and is not empty"):
        pull(url, tmp_path / "mine")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("kind", ["s3", "file", "memory"])
def test_an_object_there_already_is_never_overwritten(s3: S3, tmp_path: Path, kind: str) -> None:
    """The conditional create every writer relies on, on each kind of store (az://:
    test_store_azure.py)."""
    import obstore
    from obstore.exceptions import AlreadyExistsError

    url = {
        "s3": s3.url("kept"),
        "file": f"file://{tmp_path / 'store'}",
        "memory": f"memory://kept-{os.getpid()}",
    }[kind]
    push(a_tape(tmp_path / "tape", 2)[0].parent, url)
    tape = StoreTape(url)
    ref = tape.listing().refs[0]
    for relative in (ref.path, f"recordings/{ref.recording}.jsonl"):
        held = tape.get_bytes(relative)
        with pytest.raises(AlreadyExistsError):
            obstore.put(tape.store, tape.key(relative), b"another writer's\n", mode="create")
        assert held is not None and tape.get_bytes(relative) == held


def test_tape_ls_and_ls_of_a_url_list_one_row_per_exchange(s3: S3, tmp_path: Path) -> None:
    files = a_tape(tmp_path / "tape", 4)
    url = s3.url("ls")
    push(tmp_path / "tape", url)
    rows = json.loads(CliRunner().invoke(app, ["tape", "ls", url, "--format", "json"]).stdout)
    assert len(rows) == 4 and {r["recording"] for r in rows} == {sha256_of(f) for f in files}
    listed = CliRunner().invoke(app, ["ls", url, "--format", "json"])
    assert listed.exit_code == 0, listed.output
    from_url = json.loads(listed.stdout)
    from_folder = json.loads(
        CliRunner().invoke(app, ["ls", str(tmp_path / "tape"), "--format", "json"]).stdout
    )
    assert len(from_url) == len(from_folder) == 4
    assert all(r["file"].startswith(url + "/") for r in from_url)
    strip = ("file",)
    assert sorted(
        json.dumps({k: v for k, v in r.items() if k not in strip}, sort_keys=True) for r in from_url
    ) == sorted(
        json.dumps({k: v for k, v in r.items() if k not in strip}, sort_keys=True)
        for r in from_folder
    )


def test_verify_names_each_exchange_whose_recording_does_not_match(s3: S3, tmp_path: Path) -> None:
    import obstore

    a_tape(tmp_path / "tape", 3)
    url = s3.url("verify")
    push(tmp_path / "tape", url)
    ok = CliRunner().invoke(app, ["tape", "verify", url])
    assert ok.exit_code == 0 and "3 exchanges checked, 0 not matching" in ok.stdout
    tape = StoreTape(url)
    bad = tape.listing().refs[1]
    obstore.put(tape.store, tape.key(f"recordings/{bad.recording}.jsonl"), b"tampered\n")
    result = CliRunner().invoke(app, ["tape", "verify", url])
    assert result.exit_code == 1
    assert f"exchange 2 ({bad.path}): its recording does not match its hash" in result.stdout
    assert "1 not matching" in result.stdout


def test_gc_lists_until_delete_and_leaves_newer_exchanges(s3: S3, tmp_path: Path) -> None:
    a_tape(tmp_path / "tape", 3)
    url = s3.url("gc")
    push(tmp_path / "tape", url)
    tape = StoreTape(url)
    tape.put_recording(b'{"type":"header"}\n')  # a killed writer's: named by no entry
    dry = CliRunner().invoke(app, ["tape", "gc", url, "--older-than", "3"])
    assert (
        dry.exit_code == 0 and "3 exchanges and 0 unnamed recordings would be removed" in dry.stdout
    )
    assert len(tape.listing().refs) == 3  # a dry run removes nothing
    done = CliRunner().invoke(app, ["tape", "gc", url, "--older-than", "3", "--delete"])
    assert done.exit_code == 0 and "3 exchanges" in done.stdout and "removed" in done.stdout
    assert tape.listing().refs == []
    young = CliRunner().invoke(app, ["tape", "gc", url, "--older-than", "100000"])
    assert "0 exchanges" in young.stdout


# -- the cache ----------------------------------------------------------------------------------
def test_a_damaged_cache_file_is_fetched_again_and_a_pulled_tape_serves_offline(
    s3: S3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = a_tape(tmp_path / "tape", 3)
    url = s3.url("cache")
    push(tmp_path / "tape", url)
    first = checkout(url)
    digest = sha256_of(files[0])
    cached = first.tape.cache.path(digest)
    assert cached.is_file()
    cached.write_bytes(cached.read_bytes()[:-10] + b"corrupted!")  # damaged on disk
    again = checkout(url)
    served = [again.folder / e.file for e in read_index(again.folder)]
    assert sorted(sha256_of(p) for p in served) == sorted(sha256_of(f) for f in files)
    assert sha256_of(cached) == digest  # fetched again, not served damaged
    # the store gone: the last listing and the cached recordings serve the tape
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    offline = checkout(url)
    assert offline.listing.offline and len(read_index(offline.folder)) == 3


# -- writers ------------------------------------------------------------------------------------
def test_an_exchange_is_in_the_store_as_soon_as_it_is_complete(s3: S3, tmp_path: Path) -> None:
    url = s3.url("record-on-miss")
    with (
        serving([UPSTREAM], Playback(speed=None)) as up,
        serving_tape(url, record_missing=True, upstream=up.url) as server,
    ):
        r = httpx.post(server.url + "/v1/chat/completions", json=ask("hello"), timeout=30)
        assert r.status_code == 200
        deadline = time.monotonic() + 10
        while not StoreTape(url).listing().refs and time.monotonic() < deadline:
            time.sleep(0.05)
        refs = StoreTape(url).listing().refs  # the server still runs: visible already
        assert len(refs) == 1
        assert refs[0].key == match_key("/chat/completions", ask("hello"))
    # another reader of the store serves it, byte for byte
    with serving_tape(url) as replay:
        again = httpx.post(replay.url + "/v1/chat/completions", json=ask("hello"), timeout=30)
        assert again.status_code == 200 and again.content == r.content


def test_eight_proxies_record_200_exchanges_into_one_s3_tape(s3: S3, tmp_path: Path) -> None:
    """8 proxy processes, 25 exchanges each, all at once, into one tape: every exchange is
    there once, each entry names its own recording (whose bytes match its hash and whose
    request is the entry's)."""
    url = s3.url("many")
    procs = []
    with serving([UPSTREAM], Playback(speed=None)) as up:
        try:
            command = [*STREAMTOOL, "proxy", "--port", "0", "--out", url, "--upstream", up.url]
            with ThreadPoolExecutor(8) as pool:  # started at once
                procs = list(
                    pool.map(
                        lambda _: start_listening(
                            [*command, "--view", "none"], env=s3.env, timeout=60
                        ),
                        range(8),
                    )
                )
            prompts = [f"proxy {p} request {i}" for p in range(8) for i in range(25)]
            attempts: list[int] = []  # every exchange sent (a retried one twice)

            def send(i: int) -> str:
                origin = procs[i % 8][2]
                for _ in range(3):
                    attempts.append(i)
                    r = httpx.post(
                        origin + "/v1/chat/completions", json=ask(prompts[i]), timeout=60
                    )
                    # the upstream here (one thread, on a machine under load) may drop a kept-alive
                    # connection as the proxy reuses it: that exchange fails and is not kept
                    if r.status_code != 502:
                        break
                return "ok" if r.status_code == 200 else f"{r.status_code} {r.text[:300]}"

            with ThreadPoolExecutor(16) as pool:
                assert set(pool.map(send, range(len(prompts)))) == {"ok"}
        finally:
            for proc, _, _ in procs:
                proc.send_signal(signal.SIGINT)
            for proc, _, _ in procs:
                proc.wait(30)
    tape = StoreTape(url)
    refs = tape.listing().refs
    # one entry per exchange made (a retry, after a dropped upstream connection, is another)
    assert len(refs) == len(attempts) and len({r.recording for r in refs}) == len(attempts)
    assert {r.key for r in refs} == {match_key("/chat/completions", ask(p)) for p in prompts}
    paths = tape.fetch([r.recording for r in refs])
    for ref in refs:
        head = json.loads(paths[ref.recording].read_bytes().split(b"\n", 1)[0])
        assert match_key("/chat/completions", head["request"]["body"]) == ref.key
        assert sha256_of(paths[ref.recording]) == ref.recording
    assert len(tape.recordings()) == len(attempts)  # no stray object


KILLED_WRITER = """
import sys
from streamtool.core.net.store import StoreTape
from pathlib import Path
tape = StoreTape(sys.argv[1])
for path in sorted(Path(sys.argv[2]).glob("*.jsonl")):
    tape.publish_file(path, {"recorded_at": "2026-11-20T10:00:00Z"})
    print(path.name, flush=True)
"""


def test_a_writer_killed_mid_upload_leaves_nothing_partial(s3: S3, tmp_path: Path) -> None:
    from benchmarks.store_servers import DelayRelay

    big = tmp_path / "big"
    big.mkdir()
    header, *rest = UPSTREAM.read_bytes().split(b"\n", 1)
    for i in range(30):  # large recordings, each a different request: uploads take a while
        head = json.loads(header)
        head["request"]["body"] = ask(f"big {i}")
        filler = json.dumps({"type": "chunk", "t": 0.1, "text": "x" * 400_000}).encode() + b"\n"
        (big / f"{i:04d}-big.jsonl").write_bytes(
            json.dumps(head).encode() + b"\n" + filler * 3 + rest[0]
        )
    url = s3.url("killed")
    with DelayRelay(s3.endpoint, 0.05) as far:
        proc = subprocess.Popen(
            [sys.executable, "-c", KILLED_WRITER, url, str(big)],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, **s3.env, "AWS_ENDPOINT_URL": far.url},
        )
        assert proc.stdout is not None
        proc.stdout.readline()  # one exchange is in
        time.sleep(0.15)  # the next upload is under way
        proc.kill()  # SIGKILL
        proc.wait(10)
    tape = StoreTape(url)
    refs = tape.listing().refs
    assert 1 <= len(refs) < 30
    stored = tape.recordings()
    for ref in refs:
        assert ref.recording in stored
    for digest in stored:  # every object holds a whole recording: its bytes match its name
        data = tape.get_bytes(f"recordings/{digest}.jsonl")
        assert data is not None and sha256_of_bytes(data) == digest
    # what is visible serves: every entry's recording ends with its end record
    for path in tape.fetch([r.recording for r in refs]).values():
        assert json.loads(path.read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[-1])["type"] == "end"


def sha256_of_bytes(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


# -- failures: one line each -----------------------------------------------------------------
def test_a_server_stopped_mid_pull_leaves_nothing_cut(tmp_path: Path) -> None:
    from benchmarks.store_servers import DelayRelay

    own = OwnMoto()
    env = aws_env(own.endpoint, tmp_path / "cache")
    try:
        make_bucket(own.endpoint, "pulled")
        url = "s3://pulled/tape"
        folder = tmp_path / "tape"
        folder.mkdir()
        head, rest = UPSTREAM.read_bytes().split(b"\n", 1)
        for i in range(150):
            h = json.loads(head)
            h["request"]["body"] = ask(f"pull {i}")
            (folder / f"{i:04d}-x.jsonl").write_bytes(json.dumps(h).encode() + b"\n" + rest)
        assert cli("tape", "push", str(folder), url, env=env).returncode == 0
        # 0.3 s a request: the 150 recordings take several rounds of parallel fetches
        with DelayRelay(own.endpoint, 0.3) as far:
            proc = subprocess.Popen(
                [*STREAMTOOL, "tape", "pull", url, str(tmp_path / "out")],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env={**os.environ, **env, "AWS_ENDPOINT_URL": far.url},
            )
            deadline = time.monotonic() + 60
            while not any((tmp_path / "cache").rglob("*.jsonl")):  # the pull has begun
                assert proc.poll() is None and time.monotonic() < deadline, "no fetch began"
                time.sleep(0.02)
            own.stop()  # the server goes away mid-pull
            out, err = proc.communicate(timeout=120)
    finally:
        own.stop()
    result = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    line = one_line_error(result)
    assert line.startswith(f"streamtool: error: {url}")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    for cached in (tmp_path / "cache").rglob("*.jsonl"):  # the cache holds whole recordings only
        assert sha256_of(cached) == cached.stem


def test_wrong_credentials_and_a_missing_bucket_are_one_line_each(s3: S3, tmp_path: Path) -> None:
    for args in (
        ("tape", "ls", "s3://no-such-bucket-here/tape"),
        ("proxy", "--port", "0", "--out", "s3://no-such-bucket-here/tape"),
        ("tape", "push", str(RECORDINGS), "s3://no-such-bucket-here/tape"),
    ):
        missing = cli(*args, env=s3.env)
        assert one_line_error(missing).endswith("no such bucket 'no-such-bucket-here'"), args
    own = OwnMoto({"INITIAL_NO_AUTH_ACTION_COUNT": "0"})  # this one checks credentials
    try:
        env = {**s3.env, "AWS_ENDPOINT_URL": own.endpoint, "AWS_ACCESS_KEY_ID": "AKIAWRONGKEY"}
        for args in (
            ("tape", "ls", "s3://tapes/x"),
            ("ls", "s3://tapes/x"),
            ("serve", "s3://tapes/x"),
        ):
            line = one_line_error(cli(*args, env=env))
            assert "the store refused the credentials (InvalidAccessKeyId, HTTP 403)" in line
    finally:
        own.stop()


def test_a_store_set_up_without_conditional_writes_is_refused_in_one_line(s3: S3) -> None:
    """obstore's S3 setting that turns if-none-match off: a writer would overwrite another's
    objects, so nothing is written."""
    env = {**s3.env, "AWS_CONDITIONAL_PUT": "disabled"}
    line = one_line_error(cli("tape", "push", str(RECORDINGS), s3.url("plain"), env=env))
    assert line.endswith(
        "the store is set up without conditional writes (create an object only if it is absent),"
        " which a tape's writers need: unset AWS_CONDITIONAL_PUT"
    ), line
    assert StoreTape(s3.url("plain")).recordings() == {}


# -- serving a store tape: misses, expiry --------------------------------------------------------
def test_a_miss_names_the_differing_field_and_the_command_that_records_it(
    s3: S3, tmp_path: Path
) -> None:
    url = s3.url("miss")
    with (
        serving([UPSTREAM], Playback(speed=None)) as up,
        serving_tape(url, record_missing=True, upstream=up.url) as writer,
    ):
        httpx.post(
            writer.url + "/v1/chat/completions", json=ask("the weather in Paris"), timeout=30
        )
    with serving_tape(url) as server:
        r = httpx.post(
            server.url + "/v1/chat/completions", json=ask("the weather in Lyon"), timeout=30
        )
    message = r.json()["error"]["message"]
    assert r.status_code == 404
    assert "messages[0].content differs" in message
    assert "--record-missing" in message and "streamtool proxy --out" in message


@pytest.mark.parametrize("on_expiry", ["warn", "fail", "rerecord"])
def test_an_expired_exchange_is_warned_about_refused_or_recorded_again(
    s3: S3, tmp_path: Path, on_expiry: str
) -> None:
    from streamtool.core.net.tape import load_tape

    a_tape(tmp_path / "tape", 2)  # recorded 2026-11-20
    settings = {"max_age": "1d", "on_expiry": on_expiry}
    (tmp_path / "tape" / "tape.json").write_text(json.dumps(settings))
    url = s3.url(f"expiry-{on_expiry}")
    push(tmp_path / "tape", url)  # the settings go with the tape, and come back with a pull
    pull(url, tmp_path / "pulled")
    assert json.loads((tmp_path / "pulled" / "tape.json").read_text()) == settings
    assert len(load_tape(tmp_path / "pulled").expired) == 2
    library = load_tape(url)
    assert len(library.expired) == 2
    assert all("past the tape's max_age of 1 day" in m and "days ago" in m for m in library.expired)
    assert len(library.recordings) == (2 if on_expiry == "warn" else 0)


# -- the pytest plugin on a store ---------------------------------------------------------------
SAMPLE = """
import os

import httpx


def test_weather(stream_tape):
    url = os.environ["OPENAI_BASE_URL"] + "/chat/completions"
    body = {"model": "gpt-4o-mini", "stream": True,
            "messages": [{"role": "user", "content": os.environ.get("PROMPT", "weather?")}]}
    r = httpx.post(url, json=body, headers={"authorization": "Bearer x"}, timeout=30)
    assert r.status_code == 200, r.text
"""


def test_the_plugin_records_into_a_store_then_replays_in_ci_and_lists_unused(
    s3: S3, tmp_path: Path
) -> None:
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    url = s3.url("suite")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "OPENAI_"))}
    base.pop("CI", None)
    base.update(s3.env)

    def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*CHILD_PYTEST, "-q", "-p", "no:xdist", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            env={**base, **env},
        )

    with serving([UPSTREAM], Playback(speed=None)) as up:
        made = run(
            "--stream-tape-store",
            url,
            "--stream-tape-mode=once",
            f"--stream-tape-upstream={up.url}",
        )
        assert made.returncode == 0, made.stdout + made.stderr
    assert not list(tmp_path.glob("tapes"))  # nothing beside the test: the tape is in the store
    refs = StoreTape(f"{url}/test_sample/test_weather").listing().refs
    assert len(refs) == 1
    # in CI, on another machine (an empty cache): replayed from the store
    replayed = run(
        "--stream-tape-store",
        url,
        "--stream-tape-mode=new",
        CI="true",
        STREAMTOOL_CACHE=str(tmp_path / "c2"),
    )
    assert replayed.returncode == 0, replayed.stdout
    # a changed request in CI: the test fails naming the field and how to record it
    missed = run("--stream-tape-store", url, CI="true", PROMPT="other")
    assert missed.returncode == 1
    assert (
        "messages[0].content differs" in missed.stdout and "--stream-tape-mode=new" in missed.stdout
    )
    assert "1 exchange no test used" in missed.stdout
    strict = run(
        "--stream-tape-store", url, "--stream-tape-unused", "fail", CI="true", PROMPT="other"
    )
    assert strict.returncode == 1 and "--stream-tape-unused fail" in strict.stdout
