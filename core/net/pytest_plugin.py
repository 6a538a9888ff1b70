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
edge the proxy uses (secrets scrubbed before anything is written); an upstream on this machine
needs no key (the SDKs get the placeholder key they get when replaying). A recording test records
into a staging tape of its own (a hidden folder beside the tape); when the test passes, its finished
exchanges are moved into the tape under the tape's file lock, each with the tape's next sequence
number, so that any number of tests and xdist workers can record into one shared tape at once;
when it fails, they are thrown away and the tape is left as it was. In ``all`` mode a test's
exchanges replace, on success, the tape's exchanges for the same requests (a tape of its own:
the whole tape). In ``once`` mode a tape counts as recorded by the run that created it: the
other tests of that run (on any worker) that share it record into it too. Replayed bodies are
sent byte for byte at ``--stream-tape-speed`` and, with ``--stream-tape-rechunk=SEED``, cut at
pseudo-random points. The tape of a test is ``tapes/<test module>/<test name>/`` beside the test
file; ``@pytest.mark.stream_tape("name")`` names it (``tapes/<test module>/name/``, shared by
the tests that use the name) and ``@pytest.mark.stream_tape(path="...")`` places it (relative to
the test file). With pytest-xdist each worker runs its own server.

Volatile request fields (a request id, a time) are left out of matching with
``--stream-tape-match-ignore=PATH`` (every tape, repeatable) and
``@pytest.mark.stream_tape(match_ignore=[...])`` (a test's, or a module's through
``pytestmark``), as ``serve --match-ignore`` leaves them out.

``path`` may also name a script of turns (``.yaml``, ``.yml``, or ``.json`` holding one object;
see :mod:`streamtool.core.drive.script`): the test is then answered from the script, in the API
of each request's route (:class:`~.emitting.ScriptLibrary`), whatever the mode (nothing is
recorded), and a request no turn accepts fails the test as a tape's miss does.
"""

from __future__ import annotations

import os
import re
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

MODES = ("none", "once", "new", "all")
DUMMY_KEY = "streamtool-tape"  # the API key SDKs get when replaying: the local server needs none
_CALL_REPORT = pytest.StashKey[Any]()
_TAPE = pytest.StashKey["StreamTape"]()
_RUN = pytest.StashKey[str]()
# tape -> (its exchanges, those served): the exchanges no test used are listed at the end
_USAGE = pytest.StashKey[dict[str, tuple[set[str], set[str]]]]()
_EXPIRED = pytest.StashKey[dict[str, None]]()  # the expired exchanges met, in order
# a hidden file in a tape recorded in ``once`` mode: the run that created it (xdist's test run
# id, shared by its workers), so that the run's other tests record into it too
RUN_NOTE = ".recorded-by-run"


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
        "--stream-tape-match-ignore",
        metavar="PATH",
        action="append",
        default=[],
        help="A request field matching ignores (dotted path, e.g. metadata.request_id or "
        "messages.*.cache_control), for every tape; repeatable. A test adds its own with "
        "@pytest.mark.stream_tape(match_ignore=[...]).",
    )
    group.addoption(
        "--stream-tape-store",
        metavar="URL",
        default=None,
        help="Keep the tapes on object storage (s3://BUCKET/PREFIX, gs://, az://, file://): "
        "a test's tape is URL/<test module>/<test name>.",
    )
    group.addoption(
        "--stream-tape-unused",
        choices=("list", "fail", "ignore"),
        default="list",
        help="Exchanges of the tapes used that no test used: listed at the end (default), "
        "an error (fail), or not looked for (ignore).",
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
        "stream_tape(name=None, *, path=None, match_ignore=None): the tape the stream_tape "
        "fixture serves (default: tapes/<test module>/<test name>/ beside the test file); path "
        "may name a script of turns (.yaml, .yml, .json); match_ignore: request fields "
        "(dotted paths) matching ignores, besides --stream-tape-match-ignore's.",
    )
    from ..model.speed import parse_speed

    config.stash[_RUN] = os.environ.get("PYTEST_XDIST_TESTRUNUID") or uuid.uuid4().hex
    config.stash[_USAGE] = {}
    store = config.getoption("--stream-tape-store")
    if store is not None:
        from ..exchange.store_layout import is_store_url

        if not is_store_url(store):
            raise pytest.UsageError(
                f"--stream-tape-store {store!r}: not a store URL (s3://BUCKET/PREFIX, gs://, "
                "az://, file://)"
            )
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
    from ..exchange.tape_match import parse_ignore_path

    for path in config.getoption("--stream-tape-match-ignore"):
        try:
            parse_ignore_path(path)
        except ValueError as exc:
            raise pytest.UsageError(
                str(exc).replace("--match-ignore", "--stream-tape-match-ignore")
            ) from None
    if config.getoption("--stream-tape-mutate") is not None:
        from .mutated_library import parse_mutate

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
    what = (
        "turn" if isinstance(tape.folder, Path) and tape.folder.is_file() else "recorded exchange"
    )
    message = f"stream_tape: a request matched no {what} of {tape.folder}"
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
        # recording served so far -> the quirks it was served with (--stream-tape-mutate)
        self.mutated: dict[str, list[str]] = {}
        self.library: Any = None  # what serves the tape (its served and recorded exchanges)
        self._renamed: dict[str, str] = {}  # staged name -> name in the tape, once merged

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
        """The recordings served so far (replayed or recorded), in order: complete as soon as
        the client's call has returned."""
        if self.library is None:
            return []
        return [self._renamed.get(n, n) for n in self.library.served]

    @property
    def recorded(self) -> list[str]:
        """The recordings this test added to its tape, in order."""
        if self.library is None:
            return []
        return [self._renamed.get(n, n) for n in self.library.recorded]

    def __repr__(self) -> str:
        how = "recording" if self.recording else "replaying"
        return f"<StreamTape {how} {self.folder} at {self.base_url}>"


def _placing_marker(request: pytest.FixtureRequest) -> pytest.Mark | None:
    """The closest ``stream_tape`` marker that names or places the tape (one that only adds
    ``match_ignore`` does not)."""
    for marker in request.node.iter_markers("stream_tape"):
        if marker.args or marker.kwargs.get("name") or marker.kwargs.get("path") is not None:
            return marker
    return None


def _match_ignore(request: pytest.FixtureRequest) -> list[str]:
    """The fields matching ignores for this test: ``--stream-tape-match-ignore``'s, then those
    of its ``stream_tape`` markers (a string or a list each); a bad path fails the test."""
    from ..exchange.tape_match import parse_ignore_path

    paths = list(request.config.getoption("--stream-tape-match-ignore"))
    for marker in reversed(list(request.node.iter_markers("stream_tape"))):
        given = marker.kwargs.get("match_ignore")
        if given is None:
            continue
        items = [given] if isinstance(given, str) else list(given)
        for path in items:
            try:
                parse_ignore_path(str(path))
            except ValueError as exc:
                message = str(exc).replace("--match-ignore", "stream_tape(match_ignore=...)")
                pytest.fail(f"stream_tape: {message}", pytrace=False)
            paths.append(str(path))
    return list(dict.fromkeys(paths))


def _tape_folder(request: pytest.FixtureRequest) -> Any:
    """The test's tape: a folder, or a store URL (a marker's ``path``, or
    ``--stream-tape-store``)."""
    here = request.path.parent
    module = request.path.stem
    store = request.config.getoption("--stream-tape-store")
    marker = _placing_marker(request)
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name).strip("_") or "test"
    if marker is not None:
        path = marker.kwargs.get("path")
        if path is not None:
            if "://" in str(path):
                return str(path)
            p = Path(path)
            return p if p.is_absolute() else here / p
        named = marker.kwargs.get("name", marker.args[0] if marker.args else None)
        if named:
            name = str(named)
    if store is not None:
        from .pytest_store import tape_url

        return tape_url(store, module, name)
    return here / "tapes" / module / name


def _has_tape(folder: Any) -> bool:
    """A tape exists once it has an index or recordings (a test that sent no request left an
    empty index); a store tape, once it has an exchange."""
    if isinstance(folder, str):
        from .pytest_store import has_tape

        return has_tape(folder)
    from .tape import holds_recordings, is_tape

    return is_tape(folder) or holds_recordings(folder)


def _recorded_by(folder: Any, run: str) -> bool:
    if isinstance(folder, str):
        from .pytest_store import recorded_by

        return recorded_by(folder, run)
    try:
        return (folder / RUN_NOTE).read_text(encoding="utf-8").strip() == run
    except OSError:
        return False


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
    from ..exchange.tape_match import MatchRules
    from ..model.records import RecordingError
    from ..plugins.table import default_api
    from ..recording.tape_index import highest_seq
    from .proxy import OFFICIAL, Upstreams
    from .tape import MissRecorder, TapeLibrary, discard_staging, load_tape, merge_into

    config = request.config
    mode: str = config.getoption("--stream-tape-mode")
    run: str = config.stash[_RUN]
    folder = _tape_folder(request)
    if _is_script_path(folder):
        server, switch = request.getfixturevalue("_stream_tape_server")
        yield from _serve_script(request, folder, mode, server, switch)
        return
    match_ignore = _match_ignore(request)
    ci = _ci_is_set()
    if ci:
        mode = "none"  # in CI a tape is only replayed: what it lacks fails the test
    try:
        exists = _has_tape(folder)
    except RecordingError as exc:
        pytest.fail(f"stream_tape: {exc}", pytrace=False)
    record = mode in ("new", "all") or (
        mode == "once" and (not exists or _recorded_by(folder, run))
    )
    if not record and not exists:
        why = " (CI is set: tapes are recorded outside CI)" if ci else ""
        pytest.fail(
            f"stream_tape: no tape at {folder}{why}; record it with --stream-tape-mode=once",
            pytrace=False,
        )
    server, switch = request.getfixturevalue("_stream_tape_server")
    tape = StreamTape(folder, mode, record, server.url)

    # served: the tape, except in mode all (everything recorded again) and for a new tape
    rules = MatchRules.with_extra(match_ignore)
    try:
        loaded = load_tape(folder, match_ignore) if exists and mode != "all" else None
    except (RecordingError, ValueError) as exc:
        pytest.fail(f"stream_tape: {exc}", pytrace=False)
    staging: Path | None = None
    if record and isinstance(folder, str):
        from .pytest_store import staging as store_staging

        try:
            staging = store_staging(folder)
        except RecordingError as exc:
            pytest.fail(f"stream_tape: {exc}", pytrace=False)
    elif record:
        # this test's own staging tape, beside the tape: merged into it if the test passes
        try:
            folder.parent.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.recording-", dir=folder.parent))
        except OSError as exc:
            pytest.fail(f"stream_tape: cannot record next to {folder}: {exc}", pytrace=False)
    library = TapeLibrary(loaded.recordings if loaded is not None else [], staging or folder, rules)
    on_miss = None
    upstream: str | None = config.getoption("--stream-tape-upstream")
    if record:
        # numbered after the tape's exchanges: the names usually stay the same once merged
        after = highest_seq(folder) if exists and isinstance(folder, Path) else 0
        on_miss = MissRecorder(library, upstream or OFFICIAL[default_api().provider], after=after)
        if not upstream:
            on_miss.upstreams = Upstreams()  # each API's own host

    library.record_hint = (
        "--stream-tape-mode=new (with CI unset), or through streamtool proxy --out TAPE"
    )
    if loaded is not None:
        library.expired_matcher = loaded.expired_matcher
        library.expired = loaded.expired
    switch.app = _service(config, tape, library, on_miss).app
    request.node.stash[_TAPE] = tape
    # no key is needed to replay, nor to record from a server on this machine
    saved = _environment(server.url, dummy_keys=not record or _local(upstream))
    try:
        yield tape
    finally:
        _restore(saved)
        switch.app = None
        if loaded is not None:
            _note_usage(config, str(folder), loaded, library)
    if staging is None:
        return
    try:
        _settle(staging)
        report = request.node.stash.get(_CALL_REPORT, None)
        if report is None or not report.passed:
            request.node.add_report_section(
                "teardown", "stream_tape", f"the test failed: {folder} was left as it was"
            )
            return
        shared = _placing_marker(request) is not None
        drop = "none" if mode != "all" else ("same" if shared else "all")
        note = (RUN_NOTE, run) if mode == "once" else None
        try:
            if isinstance(folder, str):
                from .pytest_store import merge

                merge(folder, staging, drop=drop, note=run if mode == "once" else None)
            else:
                tape._renamed = merge_into(folder, staging, drop=drop, note=note, rules=rules)
        except RecordingError as exc:
            pytest.fail(f"stream_tape: {exc}", pytrace=False)
    finally:
        discard_staging(staging)


def _ci_is_set() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _note_usage(config: pytest.Config, where: str, loaded: Any, library: Any) -> None:
    """Count what the test used of its tape (for the exchanges no test used)."""
    usage = config.stash[_USAGE]
    names, used = usage.setdefault(where, (set(), set()))
    names.update(r.name for r in loaded.recordings)
    used.update(library.served)
    expired = config.stash.setdefault(_EXPIRED, {})
    for message in loaded.expired:  # past the tape's max_age (tape.json)
        expired[f"{where}: {message}"] = None


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    usage = config.stash.get(_USAGE, {})
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: its counts go to the controller
        workeroutput["stream_tape_usage"] = {
            k: [sorted(a), sorted(b)] for k, (a, b) in usage.items()
        }
        return
    if config.getoption("--stream-tape-unused") == "fail" and _unused(usage):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist: a worker's counts join the controller's."""
    output = getattr(node, "workeroutput", {})
    got = output.get("stream_tape_usage", {})
    expired = node.config.stash.setdefault(_EXPIRED, {})
    expired.update(dict.fromkeys(output.get("stream_tape_expired", [])))
    usage = node.config.stash[_USAGE]
    for where, (names, used) in got.items():
        mine = usage.setdefault(where, (set(), set()))
        mine[0].update(names)
        mine[1].update(used)


def _unused(usage: dict[str, tuple[set[str], set[str]]]) -> list[str]:
    return [
        f"{where}/{name}"
        for where, (names, used) in sorted(usage.items())
        for name in sorted(names - used)
    ]


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if hasattr(config, "workeroutput"):
        return
    met: dict[str, None] = config.stash.get(_EXPIRED, {})
    expired = list(met)
    if expired:
        n = len(expired)
        terminalreporter.section(f"stream_tape: {n} expired exchange{'s' * (n != 1)}", yellow=True)
        for line in expired:
            terminalreporter.line(f"  {line}")
    if config.getoption("--stream-tape-unused") == "ignore":
        return
    unused = _unused(config.stash.get(_USAGE, {}))
    if not unused:
        return
    fail = config.getoption("--stream-tape-unused") == "fail"
    n = len(unused)
    title = f"stream_tape: {n} exchange{'s' if n != 1 else ''} no test used"
    terminalreporter.section(title, red=fail, yellow=not fail)
    for line in unused:
        terminalreporter.line(f"  {line}")
    if fail:
        terminalreporter.line("--stream-tape-unused fail: the run fails")


def _is_script_path(path: Any) -> bool:
    from ..drive.script import SCRIPT_SUFFIXES, is_script

    if isinstance(path, str):
        return False
    return path.suffix.lower() in SCRIPT_SUFFIXES or is_script(path)


def _serve_script(
    request: pytest.FixtureRequest, path: Path, mode: str, server: Any, switch: _Switch
) -> Iterator[StreamTape]:
    """The stream_tape fixture for a script of turns: served as it is, nothing recorded."""
    from ..drive.script import ScriptError, load_script
    from .emitting import ScriptLibrary

    config = request.config
    if not path.is_file():
        pytest.fail(f"stream_tape: no script at {path}", pytrace=False)
    tape = StreamTape(path, mode, False, server.url)
    try:
        library = ScriptLibrary(load_script(path))
    except ScriptError as exc:
        pytest.fail(f"stream_tape: {exc}", pytrace=False)
    switch.app = _service(config, tape, library, None).app
    request.node.stash[_TAPE] = tape
    saved = _environment(server.url, dummy_keys=True)
    try:
        yield tape
    finally:
        _restore(saved)
        switch.app = None


def _service(config: pytest.Config, tape: StreamTape, library: Any, on_miss: Any) -> Any:
    """The service answering a test's requests from ``library``: its pacing and the quirks of
    ``--stream-tape-mutate`` from the options, and what nothing matched noted in
    ``tape.misses`` (a recording test records it instead)."""
    from ..exchange.playback import Playback
    from ..model.speed import parse_speed
    from .service import ServiceConfig, build_service

    playback = Playback(
        speed=parse_speed(config.getoption("--stream-tape-speed")),
        rechunk_seed=config.getoption("--stream-tape-rechunk"),
    )
    from .mutated_library import mutator

    settings = ServiceConfig(
        playback=playback,
        on_miss=on_miss,
        on_no_match=tape.misses.append,
        mutate=mutator(config.getoption("--stream-tape-mutate")),
    )
    service = build_service(library, settings)
    tape.mutated = service.mutated
    tape.library = library
    return service


def _local(upstream: str | None) -> bool:
    """Whether every request recorded goes to a server on this machine (``localhost``,
    127.0.0.0/8, ``::1``): ``--stream-tape-upstream`` names one for every API."""
    from urllib.parse import urlsplit

    from ..exchange.hostcheck import is_loopback
    from .proxy import parse_upstreams

    if upstream is None:
        return False
    upstreams = parse_upstreams([upstream])
    if upstreams.default is None:
        return False  # NAME=URL: the other APIs go to their official hosts
    return all(
        is_loopback(urlsplit(url).hostname or "")
        for url in (upstreams.default, *upstreams.rules.values())
    )


def _environment(base_url: str, *, dummy_keys: bool) -> dict[str, str | None]:
    """Point the SDKs at ``base_url``; returns what to restore."""
    saved: dict[str, str | None] = {}
    from ..plugins.table import sdk_apis, sdk_base_urls

    values = sdk_base_urls(base_url)
    if dummy_keys:
        # each SDK's first key variable (a second one would be a second key to some SDKs)
        keys = dict.fromkeys(a.key_env[0] for a in sdk_apis() if a.key_env)
        values.update({k: DUMMY_KEY for k in keys if not os.environ.get(k)})
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
    """Wait until every exchange the test started has ended on disk (indexed, or removed when
    it failed): a client can have read the last byte a moment before the server closes the
    recording."""
    import time

    from ..recording.tape_index import Tape

    deadline = time.monotonic() + timeout
    writing = Tape(staging, create=False)
    while writing.in_flight() and time.monotonic() < deadline:
        time.sleep(0.01)
