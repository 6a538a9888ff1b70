"""Upstreams for the tests of what a tape writer must survive: a plain chat stream for any
request, one that echoes a SigV4 ``Authorization`` in its body and headers, and raw answers
(an unknown status, a body labelled gzip that is not) sent byte for byte."""

from __future__ import annotations

import json
from typing import Any

from .proxy_helpers import chunked

# what every request of :func:`chat_app` gets, read by read
CHAT_EVENTS = [
    {"id": "c1", "object": "chat.completion.chunk", "model": "gpt-x", "choices": [choice]}
    for choice in (
        {"index": 0, "delta": {"role": "assistant", "content": "Hel"}, "finish_reason": None},
        {"index": 0, "delta": {"content": "lo"}, "finish_reason": None},
        {"index": 0, "delta": {}, "finish_reason": "stop"},
    )
]
CHAT_BODY = (
    "".join(f"data: {json.dumps(e)}\n\n" for e in CHAT_EVENTS) + "data: [DONE]\n\n"
).encode()


# what a request that says ``big`` gets: 64 events of about 1 KB each
BIG_BODY = (
    "".join(
        "data: "
        + json.dumps({**CHAT_EVENTS[1], "choices": [{"index": 0, "delta": {"content": "y" * 900}}]})
        + "\n\n"
        for _ in range(64)
    )
    + "data: [DONE]\n\n"
).encode()


def chat_request(content: str, model: str = "gpt-x") -> dict[str, Any]:
    return {"model": model, "stream": True, "messages": [{"role": "user", "content": content}]}


def chat_app() -> Any:
    """Any POST: the same short chat completion stream, one event per write (a request that
    says ``big``: :data:`BIG_BODY`)."""
    import anyio
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    async def answer(request: Request) -> StreamingResponse:
        body = BIG_BODY if b"big" in await request.body() else CHAT_BODY

        async def gen() -> Any:
            for part in body.split(b"\n\n")[:-1]:
                yield part + b"\n\n"
                await anyio.sleep(0.005)

        return StreamingResponse(gen(), media_type="text/event-stream")

    return Starlette(routes=[Route("/{path:path}", answer, methods=["POST"])])


def sigv4_echo_app() -> Any:
    """A Bedrock-like upstream that echoes the SigV4 ``Credential=`` and ``Signature=`` of the
    request's ``Authorization`` in a response header and in its body (as some gateways put it
    in an error or a debug field)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    async def answer(request: Request) -> Response:
        await request.body()
        auth = request.headers.get("authorization", "")
        params = auth.partition(" ")[2]
        echoed = ", ".join(
            p.strip() for p in params.split(",") if p.strip().startswith(("Credential", "Sig"))
        )
        event = {"type": "message_delta", "debug": f"signed with {echoed}"}
        body = f"data: {json.dumps(event)}\n\ndata: [DONE]\n\n".encode()
        return Response(body, media_type="text/event-stream", headers={"x-amzn-debug-auth": echoed})

    return Starlette(routes=[Route("/{path:path}", answer, methods=["POST"])])


def raw_answer(status_line: bytes, headers: list[bytes], body: bytes) -> bytes:
    """An HTTP/1.1 response with a chunked body of one chunk, as raw bytes; the connection is
    closed after it (the client does not keep it, so the upstream's thread ends at once)."""
    head = b"HTTP/1.1 " + status_line + b"\r\n" + b"".join(h + b"\r\n" for h in headers)
    head += b"connection: close\r\ntransfer-encoding: chunked\r\n\r\n"
    return head + chunked(body) + b"0\r\n\r\n"
