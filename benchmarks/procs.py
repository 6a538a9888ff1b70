"""The benchmarks' ``streamtool`` processes: started with a limit on open files, their log in a
file, and waited on until they answer."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from streamtool.core.recording.reader import Source

STREAMTOOL = [sys.executable, "-c", "from streamtool.cli.main import main; main()"]


TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (``/proc/<pid>/stat``, fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def exit_on_terminate() -> None:
    """A terminated benchmark (``kill``, a CI's timeout) ends as an interrupted one does: its
    ``finally`` blocks run and stop the processes it started, none left serving."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))


class Process:
    """A process that serves on 127.0.0.1: its origin read from the first line it writes to
    stderr, or ``url`` when given; ``name`` says which in an error (the command's last word)."""

    def __init__(
        self,
        command: list[str],
        url: str | None = None,
        name: str = "",
        env: dict[str, str] | None = None,
    ) -> None:
        self.proc = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
        self.pid = self.proc.pid
        if url is None:
            assert self.proc.stderr is not None
            line = self.proc.stderr.readline()
            found = re.search(r"(http://127\.0\.0\.1:\d+)", line)
            if not found:
                self.proc.kill()
                raise SystemExit(f"{name or command[-1]} did not start: {line!r}")
            url = found.group(1)
        self.url = url

    @classmethod
    def streamtool(cls, args: list[str]) -> Process:
        """``streamtool ARGS``, on a free port unless ARGS name one."""
        port = [] if "--port" in args else ["--port", "0"]
        return cls([*STREAMTOOL, *args, *port], name=args[0])

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def body_of(path: Path) -> bytes:
    """A recording's body: every byte of its reads, joined."""
    return b"".join(
        c.data if isinstance(c.data, bytes) else c.data.encode() for c in Source(path).chunks()
    )


def proxy_args(out: str | Path, *extra: str, upstream: str | None = None) -> list[str]:
    """The arguments of a quiet ``streamtool proxy`` on a free port writing to ``out``
    (``extra``: more options), to ``upstream`` when given."""
    args = ["proxy", "--port", "0", "--view", "none", "--out", str(out), *extra]
    return [*args, "--upstream", upstream] if upstream else args


def wait_answering(port: int) -> None:
    """Until 127.0.0.1:``port`` takes a connection (bound before the process says so)."""
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
            return
        except OSError:
            time.sleep(0.05)


def start_limited(args: list[str], nofile: int, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``streamtool ARGS --port 0`` with at most ``nofile`` open files, its stderr in ``log`` (a
    pipe left unread would fill up); gives the process and its origin once it answers."""
    code = (
        f"import resource; resource.setrlimit(resource.RLIMIT_NOFILE, ({nofile}, {nofile})); "
        "from streamtool.cli.main import main; main()"
    )
    with log.open("wb") as err:
        proc = subprocess.Popen([sys.executable, "-c", code, *args, "--port", "0"], stderr=err)
    deadline = time.monotonic() + 30
    while not (found := re.search(r"(http://127\.0\.0\.1:(\d+))", log.read_text())):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(f"{args[0]} did not start: {log.read_text()[-500:]}")
        time.sleep(0.05)
    wait_answering(int(found.group(2)))
    return proc, found.group(1)
