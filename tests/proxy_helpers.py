"""A small real upstream for the proxy tests (starlette on 127.0.0.1), beside ``serve``.

It answers what ``serve`` does not: non-generating endpoints, compressed bodies, echoed request
headers, a stream that never ends (to see the proxy cancel it), a body that echoes a secret.
:class:`ScriptedUpstream` is lower still: raw bytes written in the reads and at the times a test
says, over plain TCP or TLS.
"""

from __future__ import annotations

import gzip
import json
import threading
from pathlib import Path
from typing import Any

from streamtool.core.net.proxy import ProxyConfig, ProxyThread, parse_upstreams


class Upstream:
    """State the tests inspect: requests seen, and whether a stream saw its client go away."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.cancelled = threading.Event()
        self.app = self._make_app()

    def _make_app(self) -> Any:
        import anyio
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import JSONResponse, Response, StreamingResponse
        from starlette.routing import Route

        state = self

        async def models(request: Request) -> Response:
            state.seen.append({"path": request.url.path, "headers": dict(request.headers)})
            return JSONResponse({"object": "list", "data": [{"id": "gpt-test", "object": "model"}]})

        async def echo(request: Request) -> Response:
            body = await request.body()
            state.seen.append(
                {
                    "path": request.url.path,
                    "query": request.url.query,
                    "headers": [(k.decode(), v.decode()) for k, v in request.headers.raw],
                    "body": body,
                }
            )
            return JSONResponse({"headers": dict(request.headers), "body": body.decode()})

        async def gzipped(request: Request) -> Response:
            await request.body()
            events = "".join(
                f'data: {{"choices":[{{"index":0,"delta":{{"content":"part {i} "}}}}]}}\n\n'
                for i in range(50)
            )
            raw = (events + "data: [DONE]\n\n").encode()
            if "gzip" in request.headers.get("accept-encoding", ""):
                return Response(
                    gzip.compress(raw, mtime=0),
                    headers={"content-encoding": "gzip", "content-type": "text/event-stream"},
                )
            return Response(raw, headers={"content-type": "text/event-stream"})

        async def endless(request: Request) -> Response:
            await request.body()

            async def gen() -> Any:
                try:
                    i = 0
                    while True:
                        yield f'data: {{"choices":[{{"index":0,"delta":{{"content":"{i}"}}}}]}}\n\n'
                        i += 1
                        await anyio.sleep(0.05)
                except BaseException:
                    state.cancelled.set()
                    raise

            return StreamingResponse(gen(), media_type="text/event-stream")

        async def echo_secret(request: Request) -> Response:
            """Streams back the request's bearer token: whole in one read, or split across two."""
            await request.body()
            token = request.headers.get("authorization", "").partition(" ")[2]
            half = len(token) // 2
            if request.url.path.startswith("/split/"):
                parts = [
                    f'data: {{"choices":[{{"index":0,"delta":{{"content":"again {token[:half]}',
                    f'{token[half:]}"}}}}]}}\n\n',
                ]
            else:
                parts = [
                    f'data: {{"choices":[{{"index":0,"delta":{{"content":"you sent {token}"}}}}]}}'
                    "\n\n"
                ]
            parts.append("data: [DONE]\n\n")

            async def gen() -> Any:
                for p in parts:
                    yield p.encode()
                    await anyio.sleep(0.02)

            return StreamingResponse(gen(), media_type="text/event-stream")

        return Starlette(
            routes=[
                Route("/v1/models", models, methods=["GET"]),
                Route("/gz/v1/chat/completions", gzipped, methods=["POST"]),
                Route("/endless/v1/chat/completions", endless, methods=["POST"]),
                Route("/secret/v1/chat/completions", echo_secret, methods=["POST"]),
                Route("/split/v1/chat/completions", echo_secret, methods=["POST"]),
                Route("/{path:path}", echo, methods=["POST", "GET", "PUT", "DELETE"]),
            ]
        )


def sse_json(body: bytes) -> list[Any]:
    out = []
    for line in body.decode().splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            out.append(json.loads(line[6:]))
    return out


class ScriptedUpstream:
    """A raw HTTP/1.1 server on 127.0.0.1 that answers every request with the same writes, each
    ``(pause in seconds, bytes)`` sent in one ``sendall`` after its pause: what arrives in one
    read of the proxy is up to the script. ``with ScriptedUpstream(writes) as up: up.url``.

    Keep-alive: a connection serves request after request; with ``close_on_reuse`` a second
    request on one connection is read and the connection closed without an answer (an
    upstream that dropped an idle connection as the request went out). ``tls``: a server
    ``ssl.SSLContext``. ``connections`` and ``requests`` (method, path, body) are counted.
    """

    def __init__(
        self,
        writes: list[tuple[float, bytes]],
        *,
        tls: Any = None,
        close_on_reuse: bool = False,
    ) -> None:
        self.writes = writes
        self.tls = tls
        self.close_on_reuse = close_on_reuse
        self.connections = 0
        self.requests: list[tuple[str, str, bytes]] = []
        self.url = ""
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> ScriptedUpstream:
        import socket

        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self._sock.settimeout(0.1)
        scheme = "https" if self.tls is not None else "http"
        self.url = f"{scheme}://127.0.0.1:{self._sock.getsockname()[1]}"
        accept = threading.Thread(target=self._accept, daemon=True)
        accept.start()
        self._threads.append(accept)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(5)
        self._sock.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _serve(self, conn: Any) -> None:
        import socket
        import time

        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.settimeout(5)
        try:
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True)
            buf = b""
            served = 0
            while not self._stop.is_set():
                while b"\r\n\r\n" not in buf:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                head, _, buf = buf.partition(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                length = 0
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                while len(buf) < length:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                body, buf = buf[:length], buf[length:]
                self.requests.append((method, path, body))
                served += 1
                if self.close_on_reuse and served > 1:
                    return
                for pause, data in self.writes:
                    if pause:
                        time.sleep(pause)
                    conn.sendall(data)
        except OSError:  # a TLS handshake the client refused, a reset
            return
        finally:
            conn.close()


def chunked(*events: bytes) -> bytes:
    """``events`` as HTTP chunks, one chunk each."""
    return b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events)


def proxy_to(out: Path, *upstreams: str) -> ProxyThread:
    """A proxy (in a thread) recording into ``out``, to ``upstreams`` (``[api=]URL`` each)."""
    return ProxyThread(ProxyConfig(out=out, upstreams=parse_upstreams(list(upstreams))))
