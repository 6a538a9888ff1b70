"""A small real upstream for the proxy tests (starlette on 127.0.0.1), beside ``serve``.

It answers what ``serve`` does not: non-generating endpoints, compressed bodies, echoed request
headers, a stream that never ends (to see the proxy cancel it), a body that echoes a secret.
"""

from __future__ import annotations

import gzip
import json
import threading
from typing import Any


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
