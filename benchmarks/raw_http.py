"""Raw sockets for the benchmarks that speak HTTP/1.1 by hand."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# the head of a chunked event stream that closes when it ends
STREAM_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
    b"connection: close\r\n\r\n"
)
LAST_CHUNK = b"0\r\n\r\n"


@contextmanager
def http_server(handler: type[BaseHTTPRequestHandler], poll: float = 0.5) -> Iterator[str]:
    """The standard library's threading HTTP server of ``handler`` on a free port of 127.0.0.1,
    serving in a thread (``poll``: how often it looks for shutdown); gives its URL, and shuts it
    down and closes it on leaving."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(poll,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def chunk(data: bytes) -> bytes:
    """``data`` as one HTTP/1.1 chunk."""
    return b"%x\r\n%s\r\n" % (len(data), data)


def recv_until(sock: socket.socket, marker: bytes, size: int = 65536) -> bytes:
    """What ``sock`` sends until ``marker`` has come, or until it closes (then the result lacks
    ``marker``)."""
    data = b""
    while marker not in data:
        piece = sock.recv(size)
        if not piece:
            break
        data += piece
    return data


def accept_each(sock: socket.socket, handle: Callable[[socket.socket], None]) -> None:
    """In a daemon thread, each connection ``sock`` accepts to ``handle``, until ``sock`` is
    closed."""

    def accept() -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            handle(conn)

    threading.Thread(target=accept, daemon=True).start()


def read_arrivals(
    url: str, body: dict, timeout: float
) -> tuple[threading.Thread, list[tuple[float, int]]]:
    """A thread streaming ``body`` POSTed to ``url`` (started) and the list it fills with
    ``(monotonic time, bytes so far)`` at every read: how a paced stream's reads arrive."""
    import httpx

    arrivals: list[tuple[float, int]] = []

    def stream() -> None:
        with httpx.Client(timeout=timeout) as client, client.stream("POST", url, json=body) as resp:
            got = 0
            for data in resp.iter_raw():
                got += len(data)
                arrivals.append((time.monotonic(), got))

    reader = threading.Thread(target=stream)
    reader.start()
    return reader, arrivals
