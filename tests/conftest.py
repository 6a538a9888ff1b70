"""Shared test fixtures.

The real-provider corpus lives beside the project (``../shared/corpus``) on development machines
and in CI; a user's clone has none, so every test that needs it skips cleanly without it.
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RECORDINGS = ROOT / "recordings"
CORPUS = ROOT.parent / "shared" / "corpus"

# A suite started in the background by a shell without job control (``python -m pytest &`` in a
# script) inherits SIGINT ignored, and so would every process it starts: the tests that press
# Ctrl-C in a command would find it deaf. The suite's processes (and through them the commands
# the tests start) take SIGINT as Python does by default.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# A shell that keeps bytecode out of the tree (PYTHONDONTWRITEBYTECODE, python -B) would have
# every worker compile the test modules and rewrite their asserts at every run (half of a
# worker's collection, some 10 s of CPU each): the suite's own processes keep that bytecode in
# the temporary folder instead (the standard library's sys.pycache_prefix, which pytest's
# rewriting honours), so the tree stays as clean. What runs is the same source.
if sys.dont_write_bytecode and sys.pycache_prefix is None:
    sys.pycache_prefix = str(Path(tempfile.gettempdir()) / "streamtool-tests-pycache")
    sys.dont_write_bytecode = False


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "slow: takes long (installs into new venvs); runs in the suite all the same "
        "(-m 'not slow' leaves it out)",
    )


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The ``slow`` tests (minutes each when their venvs are made from nothing) run first, each
    at the head of another worker's share: ``--dist worksteal`` first hands each worker an equal
    run of the collection, in order, and later takes only from the end of a share. A slow test
    collected in the middle of a share would start minutes into the run and end alone, the
    other workers idle. Only the order changes: every test runs as it would."""
    slow = [item for item in items if item.get_closest_marker("slow")]
    if not slow or len(slow) == len(items):
        return
    rest = [item for item in items if not item.get_closest_marker("slow")]
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    starts, left = [], len(items)
    for i in range(workers):  # worksteal's shares: what is left, split among the workers left
        starts.append(len(items) - left)
        left -= left // (workers - i)
    at = {starts[k % workers] + k // workers: item for k, item in enumerate(slow)}
    if len(at) < len(slow) or max(at) >= len(items):  # shares too small to tell apart
        items[:] = slow + rest
        return
    others = iter(rest)
    items[:] = [at[i] if i in at else next(others) for i in range(len(items))]


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker more than the cores this process may use. About a quarter of the
    suite's time is spent waiting (on the processes, servers and sockets the tests start), which
    the extra worker fills (2 cores: 4:15 with 3 workers, 4:57 with 2, 4:34 with 4)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cores = os.cpu_count() or 1
    return cores + 1


def corpus_files(pattern: str = "*/*.sse") -> list[Path]:
    """Corpus captures matching ``pattern`` (empty when the corpus is absent)."""
    if not CORPUS.is_dir():
        return []
    return sorted(CORPUS.glob(pattern))


def corpus_meta(path: Path) -> dict:
    import json

    meta = path.with_suffix(".meta.json")
    return json.loads(meta.read_text()) if meta.exists() else {}


def corpus_api(path: Path) -> str:
    return str(corpus_meta(path).get("api", ""))


@pytest.fixture
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip("the shared provider corpus (../shared/corpus) is not present")
    return CORPUS


def corpus_params(pattern: str = "*/*.sse", api: str | None = None) -> list:
    """pytest parameters over corpus files; one skipped parameter when the corpus is absent."""
    files = [p for p in corpus_files(pattern) if api is None or corpus_api(p) == api]
    if not files:
        return [pytest.param(None, marks=pytest.mark.skip(reason="corpus not present"))]
    return [pytest.param(p, id=f"{p.parent.name}/{p.stem}") for p in files]


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    """A chat completions upstream (``odd_upstreams.chat_app``) on 127.0.0.1, one per module;
    its URL (a module may define an upstream of its own)."""
    from streamtool.core.net.listen import ServerThread

    from .odd_upstreams import chat_app

    with ServerThread(chat_app()) as server:
        yield server.url


@pytest.fixture(scope="module")
def streams():
    """A local HTTP server that serves streams to the official SDKs (see ``sdk_reference``)."""
    from .sdk_reference import serving

    with serving() as served:
        yield served


@pytest.fixture(autouse=True)
def _outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """The suite's tests say for themselves whether they run "in CI" (``CI`` changes what the
    pytest plugin and ``check`` do): the ``CI`` of the machine running the suite reaches none
    of them, nor the processes they start."""
    monkeypatch.delenv("CI", raising=False)
