"""Two floors for ``bench_proxy``: what a relay costs before the proxy does any work of its own.

    python -m benchmarks.floor_relay tcp|http UPSTREAM_ORIGIN

Prints ``listening on http://127.0.0.1:PORT`` on stderr, then relays until it is terminated.

- ``tcp``: every connection piped to a new connection to the upstream, bytes as they come, both
  ways (asyncio streams; no HTTP read at all): the cost of the extra hop between processes;
- ``http``: the libraries the proxy is built on, used as their documentation shows and nothing
  more: uvicorn (its httptools protocol, the asyncio loop, as the proxy runs it) takes the
  request, an ``httpx.AsyncClient`` sends it upstream and the response's raw bytes go back as
  they are read. No recording, no checks, no scrubbing, no gathering of reads.

The proxy's own work is what it costs beyond the ``http`` floor (``bench_proxy``); its upstream
client is aiohttp now, so ``bench_mcp`` reads it against ``uvicorn-aiohttp`` below.

Two more, the same relay on other maintained libraries used as their documentation shows, to
tell whether another library would do better than the proxy's (``aiohttp`` is the proxy's
upstream client, a dependency of streamtool; ``httpx2`` comes with the openai SDK):

- ``aiohttp``: aiohttp's server (``web.StreamResponse``) and its client (``ClientSession``,
  the body read with ``content.iter_any()``), on the asyncio loop;
- ``uvicorn-aiohttp``: the ``http`` floor with aiohttp's client in place of httpx (the proxy's
  server kept, its upstream client changed);
- ``httpx2``: the ``http`` floor with httpx's successor ``httpx2`` as the client.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

# hop-by-hop headers (RFC 9110, 7.6.1) and the ones each side sets itself
_REQUEST_SKIP = {b"host", b"connection", b"keep-alive", b"transfer-encoding", b"content-length"}
_RESPONSE_SKIP = {b"connection", b"keep-alive", b"transfer-encoding"}


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def tcp_relay(upstream: str) -> None:
    host, port = upstream.removeprefix("http://").rsplit(":", 1)

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(host, int(port))
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))

    server = await asyncio.start_server(relay, "127.0.0.1", 0)
    print(f"listening on http://127.0.0.1:{server.sockets[0].getsockname()[1]}", file=sys.stderr)
    sys.stderr.flush()
    async with server:
        await server.serve_forever()


async def _request_body(receive: Any) -> bytes:
    """An ASGI request's whole body."""
    body = b""
    more = True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    return body


def http_app(upstream: str, client_library: str = "httpx") -> Any:
    import importlib

    httpx = importlib.import_module(client_library)
    client = httpx.AsyncClient(base_url=upstream, timeout=None)

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await client.aclose()
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = await _request_body(receive)
        headers = [(k, v) for k, v in scope["headers"] if k not in _REQUEST_SKIP]
        path = scope["raw_path"] + (b"?" + scope["query_string"] if scope["query_string"] else b"")
        request = client.build_request(
            scope["method"], path.decode(), headers=headers, content=body
        )
        response = await client.send(request, stream=True)
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": response.status_code,
                    "headers": [
                        (k, v) for k, v in response.headers.raw if k.lower() not in _RESPONSE_SKIP
                    ],
                }
            )
            async for data in response.aiter_raw():
                await send({"type": "http.response.body", "body": data, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            await response.aclose()

    return app


def uvicorn_aiohttp_app(upstream: str) -> Any:
    """The ``http`` floor's ASGI app with aiohttp's client in place of httpx."""
    from aiohttp import ClientSession

    client: list[ClientSession] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (message := await receive())["type"] != "lifespan.shutdown":
                if message["type"] == "lifespan.startup":
                    client.append(ClientSession(upstream, auto_decompress=False))
                    await send({"type": "lifespan.startup.complete"})
            await client[0].close()
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = await _request_body(receive)
        headers = [
            (k.decode("latin-1"), v.decode("latin-1"))
            for k, v in scope["headers"]
            if k not in _REQUEST_SKIP
        ]
        path = scope["raw_path"] + (b"?" + scope["query_string"] if scope["query_string"] else b"")
        async with client[0].request(
            scope["method"], path.decode(), headers=headers, data=body
        ) as answer:
            await send(
                {
                    "type": "http.response.start",
                    "status": answer.status,
                    "headers": [
                        (k, v) for k, v in answer.raw_headers if k.lower() not in _RESPONSE_SKIP
                    ],
                }
            )
            async for data in answer.content.iter_any():
                await send({"type": "http.response.body", "body": data, "more_body": True})
            await send({"type": "http.response.body", "body": b""})

    return app


def aiohttp_relay(upstream: str) -> None:
    import socket

    from aiohttp import ClientSession, web

    async def start(app: web.Application) -> None:
        # the raw bytes, as the other floors pass them (no decompression)
        app["client"] = ClientSession(upstream, auto_decompress=False)

    async def stop(app: web.Application) -> None:
        await app["client"].close()

    async def relay(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        headers = [
            (k, v) for k, v in request.headers.items() if k.lower().encode() not in _REQUEST_SKIP
        ]
        client: ClientSession = request.app["client"]
        async with client.request(
            request.method, request.rel_url, headers=headers, data=body
        ) as answer:
            response = web.StreamResponse(
                status=answer.status,
                headers=[
                    (k, v)
                    for k, v in answer.headers.items()
                    if k.lower().encode() not in _RESPONSE_SKIP | {b"content-length"}
                ],
            )
            await response.prepare(request)
            async for data in answer.content.iter_any():
                await response.write(data)
            await response.write_eof()
            return response

    app = web.Application()
    app.on_startup.append(start)
    app.on_cleanup.append(stop)
    app.router.add_route("*", "/{tail:.*}", relay)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    print(f"listening on http://127.0.0.1:{sock.getsockname()[1]}", file=sys.stderr)
    sys.stderr.flush()
    web.run_app(app, sock=sock, print=None, access_log=None, handle_signals=True)


def http_relay(upstream: str, client_library: str = "httpx") -> None:
    """uvicorn (httptools, asyncio) relaying through ``client_library``'s client."""
    import socket

    import uvicorn

    # TCP by name, as the proxy's listening socket: asyncio turns Nagle's algorithm off only on
    # sockets whose proto says TCP (else small writes wait for the client's delayed ACK)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    app = uvicorn_aiohttp_app(upstream) if client_library == "aiohttp" else None
    config = uvicorn.Config(
        app or http_app(upstream, client_library),
        http="httptools",
        loop="asyncio",
        ws="none",
        lifespan="on",
        log_level="warning",
        access_log=False,
        server_header=False,
        date_header=False,
    )
    print(f"listening on http://127.0.0.1:{sock.getsockname()[1]}", file=sys.stderr)
    sys.stderr.flush()
    uvicorn.Server(config).run(sockets=[sock])


def main() -> None:
    kind, upstream = sys.argv[1], sys.argv[2]
    if kind == "tcp":
        asyncio.run(tcp_relay(upstream))
    elif kind == "http":
        http_relay(upstream)
    elif kind == "httpx2":
        http_relay(upstream, "httpx2")
    elif kind == "aiohttp":
        aiohttp_relay(upstream)
    elif kind == "uvicorn-aiohttp":
        http_relay(upstream, "aiohttp")
    else:
        raise SystemExit(
            "usage: python -m benchmarks.floor_relay "
            "tcp|http|httpx2|aiohttp|uvicorn-aiohttp UPSTREAM_ORIGIN"
        )


if __name__ == "__main__":
    main()
