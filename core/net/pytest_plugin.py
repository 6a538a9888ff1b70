"""streamtool's pytest plugin: record an agent's streams once, replay them chunk for chunk.

Loaded by pytest through the ``pytest11`` entry point and inert until a test asks for the
``stream_tape`` fixture: it only adds its command-line options and its marker. A test that uses
the fixture gets, while it runs, ``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL`` and
``GOOGLE_GEMINI_BASE_URL`` pointed at a local server answering from the test's tape (request
matching, :mod:`.tape`), so code that builds its own SDK client is captured without changes.

``--stream-tape-mode`` (pytest-recording's vocabulary):

- ``none`` (default): replay only; a request that matches no recorded exchange fails the test
  with the tape's message (the closest exchange and the first difference);
- ``once``: a tape that does not exist yet is recorded; an existing one is replayed;
- ``new``: recorded exchanges are replayed, missing ones recorded and added;
- ``all``: every exchange is recorded again.

Recording goes to the provider's own host or to ``--stream-tape-upstream`` through the forwarding
edge the proxy uses (secrets scrubbed before anything is written). A recording test works on a
copy of its tape, which takes the tape's place only when the test passes. Replayed bodies are
sent byte for byte at ``--stream-tape-speed`` and, with ``--stream-tape-rechunk=SEED``, cut at
pseudo-random points. The tape of a test is ``tapes/<test module>/<test name>/`` beside the test
file; ``@pytest.mark.stream_tape("name")`` names it (``tapes/<test module>/name/``, shared by
the tests that use the name) and ``@pytest.mark.stream_tape(path="...")`` places it (relative to
the test file). With pytest-xdist each worker runs its own server.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

MODES = ("none", "once", "new", "all")
DUMMY_KEY = "streamtool-tape"  # the API key SDKs get when replaying: the local server needs none
BASE_URL_VARS = ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "GOOGLE_GEMINI_BASE_URL")
KEY_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY")
_CALL_REPORT = pytest.StashKey[Any]()
_TAPE = pytest.StashKey["StreamTape"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("stream_tape", "streamtool tapes (the stream_tape fixture)")
    group.addoption(
        "--stream-tape-mode",
        choices=MODES,
        default="none",
        help="none: replay only (default); once: record tapes that do not exist yet; "
        "new: record the exchanges a tape lacks; all: record every tape again.",
    )
    group.addoption(
        "--stream-tape-upstream",
        metavar="URL",
        default=None,
        help="Record from this server instead of the providers' own hosts (api.openai.com, "
        "api.anthropic.com, generativelanguage.googleapis.com).",
    )
    group.addoption(
        "--stream-tape-speed",
        metavar="max|1|N",
        default="max",
        help="Replay pacing: max (no waiting, default), 1 (as recorded), N times faster.",
    )
    group.addoption(
        "--stream-tape-rechunk",
        metavar="SEED",
        type=int,
        default=None,
        help="Cut every replayed body into reads at pseudo-random points drawn from SEED.",
    )
    group.addoption(
        "--stream-tape-mutate",
        metavar="ID,ID|all",
        default=None,
        help="Apply these catalogue quirks to every replayed stream they apply to.",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "stream_tape(name=None, *, path=None): the tape the stream_tape fixture serves "
        "(default: tapes/<test module>/<test name>/ beside the test file).",
    )
    from ..speed import parse_speed

    try:
        parse_speed(config.getoption("--stream-tape-speed"))
    except ValueError as exc:
        raise pytest.UsageError(str(exc).replace("--speed", "--stream-tape-speed")) from None
    upstream = config.getoption("--stream-tape-upstream")
    if upstream is not None:
        from .proxy import parse_upstreams

        try:
            parse_upstreams([upstream])
        except ValueError as exc:
            raise pytest.UsageError(
                str(exc).replace("--upstream", "--stream-tape-upstream")
            ) from None
    if config.getoption("--stream-tape-mutate") is not None:
        from .mutations import parse_mutate

        try:
            parse_mutate(config.getoption("--stream-tape-mutate"))
        except ValueError as exc:
            raise pytest.UsageError(str(exc).replace("--mutate", "--stream-tape-mutate")) from None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.when != "call":
        return
    item.stash[_CALL_REPORT] = report
    tape = item.stash.get(_TAPE, None)
    if tape is None or not tape.misses:
        return
    message = "stream_tape: a request matched no recorded exchange of " + str(tape.folder)
    message += "".join(f"\n  {m}" for m in tape.misses)
    if report.passed:
        # the code under test may have swallowed the HTTP 404: the test still fails
        report.outcome = "failed"
        report.longrepr = message
    else:
        report.sections.append(("stream_tape", message))


class StreamTape:
    """What the ``stream_tape`` fixture gives a test: ``base_url`` (and the SDK-specific
    ``openai_base_url``...), ``folder`` (the tape), ``mode``, ``recording`` (whether missing
    exchanges are recorded), ``exchanges`` (the recordings served so far, in order) and
    ``recorded`` (those recorded by this test)."""

    def __init__(self, folder: Path, mode: str, recording: bool, base_url: str) -> None:
        self.folder = folder
        self.mode = mode
        self.recording = recording
        self.base_url = base_url
        self.misses: list[str] = []
        self.mutated: dict[
            str, list[str]
        ] = {}  # recording -> quirks applied (--stream-tape-mutate)
        self._library: Any = None

    @property
    def openai_base_url(self) -> str:
        return self.base_url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.base_url

    @property
    def gemini_base_url(self) -> str:
        return self.base_url

    @property
    def exchanges(self) -> list[str]:
        """The recordings served so far (replayed or recorded), in order."""
        return list(self._library.served) if self._library is not None else []

    @property
    def recorded(self) -> list[str]:
        """The recordings this test added to its tape, in order."""
        return list(self._library.recorded) if self._library is not None else []

    def __repr__(self) -> str:
        how = "recording" if self.recording else "replaying"
        return f"<StreamTape {how} {self.folder} at {self.base_url}>"


def _tape_folder(request: pytest.FixtureRequest) -> Path:
    here = request.path.parent
    module = request.path.stem
    marker = request.node.get_closest_marker("stream_tape")
    if marker is not None:
        path = marker.kwargs.get("path")
        if path is not None:
            p = Path(path)
            return p if p.is_absolute() else here / p
        name = marker.kwargs.get("name", marker.args[0] if marker.args else None)
        if name:
            return here / "tapes" / module / str(name)
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name).strip("_") or "test"
    return here / "tapes" / module / name


def _has_tape(folder: Path) -> bool:
    """A tape exists once its folder does (a test that sent no request has an empty tape)."""
    return folder.is_dir()


class _Switch:
    """The worker's replay server app: answers with the current test's tape."""

    def __init__(self) -> None:
        self.app: Any = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        app = self.app
        if app is None:
            await send({"type": "http.response.start", "status": 503, "headers": []})
            await send({"type": "http.response.body", "body": b"no stream_tape test is running"})
            return
        await app(scope, receive, send)


@pytest.fixture(scope="session")
def _stream_tape_server() -> Iterator[tuple[Any, _Switch]]:
    """One replay server per test process (per xdist worker), started when first needed."""
    from .listen import ServerThread

    switch = _Switch()
    with ServerThread(switch) as server:
        yield server, switch


@pytest.fixture
def stream_tape(request: pytest.FixtureRequest) -> Iterator[StreamTape]:
    """Serve the test's tape (recording what the mode asks for) while the test runs; see the
    module's docstring."""
    from ..records import RecordingError
    from ..speed import parse_speed
    from .library import NoMatch
    from .playback import Playback
    from .proxy import OFFICIAL, Upstreams
    from .server import create_app
    from .tape import MissRecorder, TapeLibrary, load_tape

    config = request.config
    mode: str = config.getoption("--stream-tape-mode")
    folder = _tape_folder(request)
    exists = _has_tape(folder)
    record = mode in ("new", "all") or (mode == "once" and not exists)
    if not record and not exists:
        pytest.fail(
            f"stream_tape: no tape at {folder}; record it with --stream-tape-mode=once",
            pytrace=False,
        )
    server, switch = request.getfixturevalue("_stream_tape_server")
    tape = StreamTape(folder, mode, record, server.url)
    served_from = folder
    staging: Path | None = None
    if record:
        # a copy of the tape (new) or an empty one (once, all): in place only if the test passes
        staging = folder.with_name(f".{folder.name}.recording")
        shutil.rmtree(staging, ignore_errors=True)
        if mode == "new" and exists:
            shutil.copytree(folder, staging)
        else:
            staging.mkdir(parents=True)
        served_from = staging

    class _Noting(TapeLibrary):
        def choose(self, incoming: Any) -> Any:
            try:
                return super().choose(incoming)
            except NoMatch as exc:
                if not record:
                    tape.misses.append(exc.message)
                raise

    try:
        loaded = load_tape(served_from)
    except (RecordingError, ValueError) as exc:
        pytest.fail(f"stream_tape: {exc}", pytrace=False)
    library = _Noting(loaded.recordings, served_from, loaded.rules)
    mutate = config.getoption("--stream-tape-mutate")
    if mutate is not None:
        from .mutations import mutate_library, parse_mutate

        tape.mutated = mutate_library(library, parse_mutate(mutate) or [])
    tape._library = library
    on_miss = None
    if record:
        upstream = config.getoption("--stream-tape-upstream")
        on_miss = MissRecorder(library, upstream or OFFICIAL["openai"])
        if not upstream:
            on_miss.upstreams = Upstreams()  # each API's own host

    playback = Playback(
        speed=parse_speed(config.getoption("--stream-tape-speed")),
        rechunk_seed=config.getoption("--stream-tape-rechunk"),
    )
    switch.app = create_app(library, playback, None, on_miss)
    request.node.stash[_TAPE] = tape
    saved = _environment(server.url, dummy_keys=not record)
    try:
        yield tape
    finally:
        _restore(saved)
        switch.app = None
    if staging is None:
        return
    _settle(staging)
    report = request.node.stash.get(_CALL_REPORT, None)
    if report is None or not report.passed:
        shutil.rmtree(staging, ignore_errors=True)
        request.node.add_report_section(
            "teardown", "stream_tape", f"the test failed: {folder} was left as it was"
        )
        return
    _install(staging, folder)


def _environment(base_url: str, *, dummy_keys: bool) -> dict[str, str | None]:
    """Point the SDKs at ``base_url``; returns what to restore."""
    saved: dict[str, str | None] = {}
    values = {
        "OPENAI_BASE_URL": base_url + "/v1",
        "ANTHROPIC_BASE_URL": base_url,
        "GOOGLE_GEMINI_BASE_URL": base_url,
    }
    if dummy_keys:
        values.update({k: DUMMY_KEY for k in KEY_VARS if not os.environ.get(k)})
    for key, value in values.items():
        saved[key] = os.environ.get(key)
        os.environ[key] = value
    return saved


def _restore(saved: dict[str, str | None]) -> None:
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def _settle(staging: Path, timeout: float = 5.0) -> None:
    """Wait until every exchange the test started is finished on disk: its recording indexed,
    or (a failed one) removed. A client can have read the last byte a moment before the server
    closes the recording."""
    import time

    from ..recording.tape_index import read_index
    from ..records import RecordingError

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        files = {p.name for p in staging.glob("*.jsonl") if p.name != "index.jsonl"}
        try:
            indexed = {e.file for e in read_index(staging)}
        except (RecordingError, ValueError):  # a line being written: look again
            indexed = set()
        if files <= indexed:
            return
        time.sleep(0.01)


def _install(staging: Path, folder: Path) -> None:
    """Put the recorded tape in place of ``folder``; the old one is removed only after."""
    old = folder.with_name(f".{folder.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    folder.parent.mkdir(parents=True, exist_ok=True)
    if folder.exists():
        folder.rename(old)
    staging.rename(folder)
    shutil.rmtree(old, ignore_errors=True)
