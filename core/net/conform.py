"""Running a conformance check: recordings served, cut several ways, to a client command.

One HTTP server (127.0.0.1, a free port) serves every run under its own path prefix
(``/run/<n>``), so runs can go in parallel and each knows which endpoints its client called.
For each recording and each chunking the client command is started with ``STREAMTOOL_BASE_URL``,
``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL`` and ``GOOGLE_GEMINI_BASE_URL`` pointing at its
prefix, and its printed answer is judged by :mod:`streamtool.core.outputs.conformance`.

A client applies to a recording when its request reaches an endpoint that serves the
recording's API: an OpenAI-SDK client asked for an Anthropic recording calls
``/chat/completions``, which cannot serve it, and the pair is reported as not applicable (then
every other recording of that API is, without running the client again).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..drive.replay_file import replay_file
from ..exchange.playback import Playback
from ..model.quirks import QuirkInfo, lookup, severity_rank
from ..model.records import RecordedExchange, RecordingError
from ..outputs.conformance import ClientRun, Difference, Expected, Verdict, expected_from, judge
from ..plugins import WireApi, api_for_converter, part, served_api
from ..plugins.table import sdk_apis, sdk_base_urls
from .library import Library, Recording, expand_paths
from .library import load_recording as load_served
from .listen import ServerThread, session_settings
from .service import ServiceConfig, build_service
from .sessions import exchanges_of, session_app, session_part

WHOLE = 1 << 62  # a write size no body reaches: the whole body in one write
DUMMY_KEY = "streamtool-conform"  # the API key clients get: the local server needs none
NOT_APPLICABLE = "not applicable"
WEBSOCKET = "WEBSOCKET"  # how an upgrade is noted among the calls a client made
# a session's keep-alive: the server pings this often (a recorded long pause is served with pings)
SESSION_PING_INTERVAL = 2.0
ONE_WAY = (
    "a WebSocket session is played message by message, as recorded: the chunkings do not "
    "apply (it runs under the first)"
)


@dataclass(frozen=True, slots=True)
class Chunking:
    name: str
    playback: Playback


def chunkings(count: int, first_seed: int = 1) -> list[Chunking]:
    """The first ``count`` chunkings: the whole body in one read, one byte per read, then
    pseudo-random cuts from seeds ``first_seed``, ``first_seed + 1``, ..."""
    if count < 1:
        raise ValueError("--chunkings must be at least 1")
    plans = [
        Chunking("whole", Playback(speed=None, rechunk=WHOLE)),
        Chunking("1 byte", Playback(speed=None, rechunk=1)),
    ]
    seed = first_seed
    while len(plans) < count:
        plans.append(Chunking(f"seed {seed}", Playback(speed=None, rechunk_seed=seed)))
        seed += 1
    return plans[:count]


def bundled_recordings() -> Path | None:
    """The example recordings: the source tree's ``recordings/`` when streamtool runs from a
    checkout, else the samples installed with the package."""
    here = Path(__file__).resolve()
    checkout = here.parents[2] / "recordings"
    if checkout.is_dir():
        return checkout
    samples = here.parents[1] / "samples"
    return samples if samples.is_dir() else None


@dataclass(slots=True)
class Case:
    """One recording to check: how it is served and what it means. A recorded session (MCP:
    the exchanges of a tape) is one case, its exchanges in ``session``; ``skip`` says why a
    case does not apply (a fault of another protocol generation)."""

    name: str
    path: str
    served: Recording
    expected: Expected
    session: list[RecordedExchange] | None = None
    skip: str = ""

    @property
    def api(self) -> str | None:
        return self.served.api


def session_api(rec: Recording) -> WireApi | None:
    """The API of a recording when its exchanges form sessions (a ``player`` part)."""
    api = api_for_converter(rec.api)
    return api if api is not None and part(api, "player") is not None else None


def session_case(folder: str, recordings: list[Recording]) -> Case:
    """The recorded session of a tape as one case: served by its API's player, expected to be
    understood as its ``session`` part says."""
    api = session_api(recordings[0])
    assert api is not None
    exchanges = exchanges_of(recordings)
    expected = session_part(api).expected(exchanges)
    return Case(Path(folder).name, folder, recordings[0], expected, session=exchanges)


def load_cases(paths: Sequence[str | os.PathLike[str]]) -> list[Case]:
    """Recordings (files or folders) ready to check; the exchanges of a recorded session (a
    tape of MCP exchanges) are one case. Raises ``RecordingError`` on bad input."""
    cases: list[Case] = []
    seen: dict[str, str] = {}
    sessions: dict[str, list[Recording]] = {}  # a tape folder -> its session's recordings
    for path in expand_paths(paths):
        served = load_served(path)
        if session_api(served) is not None:
            sessions.setdefault(str(Path(path).parent), []).append(served)
            continue
        if served.name in seen:
            raise RecordingError(
                str(path),
                None,
                f"two recordings are named {served.name!r} (also {seen[served.name]})",
            )
        seen[served.name] = str(path)
        # no file tools: a client sees the tool arguments as sent, markers and all
        engine = replay_file(path, handler_options={"file_tools": {}})
        cases.append(Case(served.name, str(path), served, expected_from(engine)))
    for folder, recordings in sessions.items():
        case = session_case(folder, recordings)
        if case.name in seen:
            raise RecordingError(folder, None, f"two cases are named {case.name!r}")
        seen[case.name] = folder
        cases.append(case)
    return cases


class ClientDidNotStart(Exception):
    """The first run of the client exited with an error before sending any request: every
    other run would too (a missing script, a missing module), so conform stops there."""


@dataclass(slots=True)
class Result:
    case: Case
    chunking: str
    status: str  # pass, fail, not applicable
    verdict: Verdict | None = None
    note: str = ""  # why not applicable
    requests: list[str] = field(default_factory=list)

    def quirks(self) -> list[QuirkInfo]:
        """The catalogue entries of the quirks behind the differences, most severe first."""
        if self.verdict is None:
            return []
        found = [lookup(q) for q in self.verdict.quirks]
        return sorted(found, key=lambda q: severity_rank(q.severity))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "recording": self.case.name,
            "path": self.case.path,
            "api": self.case.api,
            "chunking": self.chunking,
            "status": self.status,
        }
        if self.verdict is not None:
            out["differences"] = [d.to_dict() for d in self.verdict.differences]
            out["quirks"] = [q.to_dict() for q in self.quirks()]
        if self.note:
            out["note"] = self.note
        out["requests"] = list(self.requests)
        return out


class _Dispatch:
    """An ASGI app routing ``/run/<key>/...`` to that run's app, noting the paths called."""

    def __init__(self) -> None:
        self.apps: dict[str, Any] = {}
        self.calls: dict[str, list[str]] = {}
        self.lock = threading.Lock()

    def add(self, key: str, app: Any) -> None:
        with self.lock:
            self.apps[key] = app
            self.calls[key] = []

    def remove(self, key: str) -> list[str]:
        with self.lock:
            self.apps.pop(key, None)
            return self.calls.pop(key, [])

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            return
        path: str = scope["path"]
        parts = path.split("/", 3)  # "", "run", key, rest
        app = None
        method = scope.get("method") or WEBSOCKET  # an upgrade is noted as a WebSocket session
        if len(parts) >= 3 and parts[1] == "run":
            with self.lock:
                app = self.apps.get(parts[2])
                if app is not None:
                    self.calls[parts[2]].append(f"{method} /{parts[3] if len(parts) > 3 else ''}")
        if app is None:
            kind = "websocket.http" if scope["type"] == "websocket" else "http"
            if kind == "websocket.http":
                await receive()  # websocket.connect
            await send({"type": f"{kind}.response.start", "status": 404, "headers": []})
            await send({"type": f"{kind}.response.body", "body": b"not a conformance run"})
            return
        rest = "/" + (parts[3] if len(parts) > 3 else "")
        inner = dict(scope)
        inner["path"] = rest
        inner["raw_path"] = rest.encode("utf-8")
        await app(inner, receive, send)


def client_env(base: str, case: Case, chunking: str) -> dict[str, str]:
    """The environment a client runs with: every SDK's base URL pointed at ``base``."""
    env = dict(os.environ)
    env.update(
        {
            "STREAMTOOL_BASE_URL": base,
            **sdk_base_urls(base),
            **{key: DUMMY_KEY for api in sdk_apis() for key in api.key_env},
            "STREAMTOOL_RECORDING": case.name,
            "STREAMTOOL_CHUNKING": chunking,
        }
    )
    if case.served.model and case.session is None:  # (a session has no model)
        env["STREAMTOOL_MODEL"] = case.served.model
    else:
        env.pop("STREAMTOOL_MODEL", None)
    return env


def _serves(case: Case, call: str, paths: Sequence[str] = ()) -> bool:
    """Whether the endpoint of a noted call (``"POST /v1/messages"``, ``"WEBSOCKET
    /v1/realtime"``) can serve the case: a recorded session of exchanges (MCP) at one of the
    ``paths`` it was recorded at, a WebSocket session only to an upgrade, a stream only to a
    request."""
    method, _, path = call.partition(" ")
    if case.session is not None:
        return path in paths
    if (method == WEBSOCKET) != (case.served.session is not None):
        return False
    api = served_api(path)
    if api is None:
        return False
    return case.api is None or case.api in api.converters


class Runner:
    """Runs ``command`` against every case under every chunking."""

    def __init__(
        self,
        command: Sequence[str],
        cases: Sequence[Case],
        plans: Sequence[Chunking],
        *,
        timeout: float = 60.0,
        jobs: int = 1,
        cwd: str | None = None,
        on_result: Callable[[Result], None] | None = None,
    ) -> None:
        self.command = list(command)
        self.cases = list(cases)
        self.plans = list(plans)
        self.timeout = timeout
        self.jobs = max(1, jobs)
        self.cwd = cwd
        self.on_result = on_result
        self._dispatch = _Dispatch()
        self._counter = 0
        self._lock = threading.Lock()
        self._foreign: dict[str | None, str] = {}  # API -> the call that showed it does not apply
        self._running: set[subprocess.Popen[bytes]] = set()  # client processes now running
        self._stopping = threading.Event()
        self._reached = False  # a run has sent a request: the client starts

    def run(self) -> list[Result]:
        """Every result, in order. Interrupted (``KeyboardInterrupt``), the running clients are
        killed and the server stopped before the interrupt goes on."""
        settings = session_settings(SESSION_PING_INTERVAL)
        with ServerThread(self._dispatch, settings=settings) as server:
            self._origin = server.url
            try:
                if self.jobs == 1:
                    groups = [self._run_case(case) for case in self.cases]
                else:
                    with ThreadPoolExecutor(self.jobs) as pool:
                        try:
                            groups = list(pool.map(self._run_case, self.cases))
                        except BaseException:
                            self.stop()  # before the pool waits for its threads
                            pool.shutdown(wait=True, cancel_futures=True)
                            raise
            except BaseException:
                self.stop()
                raise
        return [r for group in groups for r in group]

    def stop(self) -> None:
        """Run no more clients and kill those running (from any thread)."""
        self._stopping.set()
        with self._lock:
            running = list(self._running)
        for proc in running:
            proc.kill()

    def _key(self) -> str:
        with self._lock:
            self._counter += 1
            return str(self._counter)

    def _emit(self, result: Result) -> Result:
        if self.on_result is not None:
            with self._lock:
                self.on_result(result)
        return result

    def _run_case(self, case: Case) -> list[Result]:
        results: list[Result] = []
        if case.skip:
            return [
                self._emit(Result(case, p.name, NOT_APPLICABLE, note=case.skip)) for p in self.plans
            ]
        for i, plan in enumerate(self.plans):
            if i and case.served.session is not None:
                results.append(self._emit(Result(case, plan.name, NOT_APPLICABLE, note=ONE_WAY)))
                continue
            if self._stopping.is_set():
                break
            known = self._foreign.get(case.api)
            if known is not None:
                note = f"the client calls {known}, which does not serve {case.api} recordings"
                results.extend(
                    self._emit(Result(case, p.name, NOT_APPLICABLE, note=note))
                    for p in self.plans[i:]
                )
                break
            result = self._run_one(case, plan)
            if result.status == NOT_APPLICABLE:
                self._foreign.setdefault(case.api, result.requests[0])
                result.note = (
                    f"the client calls {result.requests[0]}, which does not serve "
                    f"{case.api} recordings"
                )
            results.append(self._emit(result))
        return results

    def _run_one(self, case: Case, plan: Chunking) -> Result:
        key = self._key()
        edge = player = None
        if case.session is not None:  # a recorded session: its player, in front of nothing
            api = session_api(case.served)
            assert api is not None
            edge = session_app(api.id, case.session, plan.playback)
            player = edge.players[api.id]
            app: Any = edge
        else:
            app = build_service(Library([case.served]), ServiceConfig(playback=plan.playback)).app
        self._dispatch.add(key, app)
        base = f"{self._origin}/run/{key}"
        try:
            run = self._spawn(client_env(base, case, plan.name))
        finally:
            calls = self._dispatch.remove(key)
        if calls:
            self._reached = True
        elif not self._reached and not run.timed_out and run.exit_code not in (0, None):
            self._stopping.set()
            said = run.stderr.strip().splitlines()
            raise ClientDidNotStart(
                f"the client could not start: {shlex.join(self.command)} exited with "
                f"{run.exit_code} before sending a request" + (f": {said[-1]}" if said else "")
            )
        paths = player.paths if player is not None else ()
        if calls and not any(_serves(case, c, paths) for c in calls):
            return Result(case, plan.name, NOT_APPLICABLE, requests=calls)
        verdict = judge(case.expected, run)
        if edge is not None and player is not None:  # what the client did to the session
            verdict.differences += [Difference("error", p) for p in edge.problems]
            verdict.differences += [
                Difference("error", f"a request the recorded session did not make: {m}")
                for m in player.misses
            ]
        if not calls:
            verdict.differences.insert(
                0, Difference("request", "the client sent no request to the base URL it was given")
            )
        status = "pass" if verdict.passed else "fail"
        return Result(case, plan.name, status, verdict, requests=calls)

    def _spawn(self, env: dict[str, str]) -> ClientRun:
        with self._lock:
            if self._stopping.is_set():
                return ClientRun(None, "", "stopped before it ran")
            proc = subprocess.Popen(
                self.command,
                env=env,
                cwd=self.cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            self._running.add(proc)
        try:
            out, err = proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            return ClientRun(None, _text(out), _text(err), timed_out=True, timeout=self.timeout)
        except BaseException:  # interrupted while it ran: it does not outlive the check
            proc.kill()
            proc.wait()
            raise
        finally:
            with self._lock:
                self._running.discard(proc)
        return ClientRun(proc.returncode, _text(out), _text(err))


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    if isinstance(data, str):
        return data
    return data.decode("utf-8", errors="replace")
