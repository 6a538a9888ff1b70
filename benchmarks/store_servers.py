"""An S3 server for the store benchmarks: moto's threaded server on 127.0.0.1, and a TCP relay
in front of it that holds every request for a fixed delay, as a store across a network would.

    with moto_s3() as endpoint, DelayRelay(endpoint, 0.030) as far:
        ...  # AWS_ENDPOINT_URL=far.url: every request waits 30 ms before moto sees it

The relay delays each burst of bytes from the client (an HTTP request, on a kept-alive
connection) by the delay, in order; responses flow back as they come. moto checks no
signature: any key is accepted.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

BUCKET = "streamtool-bench"


@contextmanager
def moto_s3(bucket: str = BUCKET) -> Iterator[str]:
    """moto's S3 on 127.0.0.1 (a free port), in a process of its own (its CPU is not the
    benchmark's), with ``bucket`` made; yields its origin and sets the AWS variables for it
    (restored after)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _SERVE],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    origin = proc.stdout.readline().strip()
    saved = {k: os.environ.get(k) for k in _VARS}
    os.environ.update(
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_ENDPOINT_URL=origin,
    )
    try:
        import urllib.request

        urllib.request.urlopen(urllib.request.Request(f"{origin}/{bucket}", method="PUT"))
        yield origin
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        proc.terminate()
        proc.wait(10)


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
_VARS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL")


class DelayRelay:
    """A TCP relay on 127.0.0.1 to ``upstream`` (``http://host:port``) that delays what the
    client sends by ``delay`` seconds (each burst, in order). ``.url`` is its origin."""

    def __init__(self, upstream: str, delay: float) -> None:
        self.host, port = upstream.removeprefix("http://").rsplit(":", 1)
        self.port = int(port)
        self.delay = delay
        self.url = ""
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="delay-relay")
        self._server: Any = None

    def __enter__(self) -> DelayRelay:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()

    async def _shutdown(self) -> None:
        """Stop listening, end every relayed connection, and wait for their tasks."""
        self._server.close()
        me = asyncio.current_task()
        tasks = [t for t in asyncio.all_tasks() if t is not me]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._relay, "127.0.0.1", 0)
        )
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        self._ready.set()
        self._loop.run_forever()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(self.host, self.port)
        except OSError:
            writer.close()
            return
        await asyncio.gather(
            self._pipe(reader, up_writer, self.delay), self._pipe(up_reader, writer, 0.0)
        )

    @staticmethod
    async def _pipe(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float
    ) -> None:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def send() -> None:
            while True:
                due, data = await queue.get()
                if not data:
                    break
                wait = due - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                writer.write(data)
                await writer.drain()

        sender = asyncio.ensure_future(send())
        try:
            while data := await reader.read(65536):
                queue.put_nowait((loop.time() + delay, data))
        except ConnectionError:
            pass
        finally:
            queue.put_nowait((0.0, b""))
            with suppress(ConnectionError, asyncio.CancelledError):
                await sender
            writer.close()
