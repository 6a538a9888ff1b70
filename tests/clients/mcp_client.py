"""An MCP client of the ``mcp`` SDK as an agent would run it, and a ``streamtool conform``
client: the server at ``STREAMTOOL_BASE_URL`` + ``/mcp``.

It runs one session against the weather desk (``tests/mcp_app.py``): list the tools, call
``add``, ``forecast`` (progress and log messages) and ``book`` (the server asks to confirm: the
answer is yes, two seats), read two resources, get a prompt. Then it prints what it understood
as conform reads it: ``text``, the text of every result in order (one line per item), and
``tool_calls``, the calls made (``name``, ``arguments``).

``MCP_CLIENT=session`` (the default) drives ``ClientSession`` over the streamable HTTP
transport, as the 1.x line does (``streamablehttp_client``; ``streamable_http_client`` in
2.x): the 2025 generation. ``MCP_CLIENT=client`` drives the 2.x line's ``Client``, whose
``MCP_MODE`` (``auto``, the default: 2026-07-28 when the server speaks it; ``legacy``) picks
the generation. ``MCP_RESUME=1`` also calls ``patient``, whose stream the server closes after
its first step (the client resumes it with ``Last-Event-ID``).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

import mcp.types as types

TIMEOUT = float(os.environ.get("MCP_TIMEOUT", "20"))


async def elicit(context: Any, params: Any) -> Any:
    return types.ElicitResult(action="accept", content={"confirm": True, "seats": 2})


def _texts(result: Any) -> list[str]:
    out = []
    for item in getattr(result, "content", None) or getattr(result, "contents", None) or []:
        if isinstance(getattr(item, "text", None), str):
            out.append(item.text)
    for message in getattr(result, "messages", None) or []:
        if isinstance(getattr(message.content, "text", None), str):
            out.append(message.content.text)
    return out


async def session(peer: Any, progress: list[Any], resume: bool) -> dict[str, Any]:
    """The calls, on a ClientSession or a Client (the same methods)."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []

    async def noted(done: float, total: float | None, message: str | None) -> None:
        progress.append([done, total, message])

    await peer.list_tools()
    for name, arguments in (
        ("add", {"a": 2, "b": 3}),
        ("forecast", {"city": "Oslo", "days": 2}),
        ("book", {"city": "Oslo"}),
    ):
        result = await peer.call_tool(name, arguments, progress_callback=noted)
        calls.append({"name": name, "arguments": arguments})
        texts += _texts(result)
    if resume:  # the server closes this call's stream: the client resumes it
        result = await peer.call_tool("patient", {"steps": 2})
        calls.append({"name": "patient", "arguments": {"steps": 2}})
        texts += _texts(result)
    for uri in ("config://units", "weather://Oslo/today"):
        texts += _texts(await peer.read_resource(uri))
    texts += _texts(await peer.get_prompt("summarize", {"city": "Oslo"}))
    return {"text": "\n".join(texts), "tool_calls": calls}


async def with_session(url: str, progress: list[Any], resume: bool, mode: str) -> dict[str, Any]:
    import warnings

    from mcp import ClientSession
    from mcp.client import streamable_http

    # the 1.x line's transport (deprecated in 1.30 for its new name, the only one in 2.x)
    connect = getattr(streamable_http, "streamablehttp_client", None)
    connect = connect or streamable_http.streamable_http_client
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Use `streamable_http_client`", DeprecationWarning)
        transport = connect(url)
    async with (
        transport as streams,
        ClientSession(streams[0], streams[1], elicitation_callback=elicit) as peer,
    ):
        await peer.initialize()
        return await session(peer, progress, resume)


async def with_client(url: str, progress: list[Any], resume: bool, mode: str) -> dict[str, Any]:
    from mcp import Client

    async with Client(url, mode=mode, elicitation_callback=elicit) as peer:
        return await session(peer, progress, resume)


async def run_session(
    url: str, client: str = "session", mode: str = "auto", resume: bool = False
) -> dict[str, Any]:
    """The session against the MCP server at ``url``; what the client understood (and the
    progress it was told of)."""
    progress: list[Any] = []
    run = with_client if client == "client" else with_session
    answer = await asyncio.wait_for(run(url, progress, resume, mode), TIMEOUT)
    answer["progress"] = progress
    return answer


if __name__ == "__main__":
    try:
        url = os.environ["STREAMTOOL_BASE_URL"] + os.environ.get("MCP_PATH", "/mcp")
        answer = run_session(
            url,
            os.environ.get("MCP_CLIENT", "session"),
            os.environ.get("MCP_MODE", "auto"),
            bool(os.environ.get("MCP_RESUME")),
        )
        print(json.dumps(asyncio.run(answer), ensure_ascii=False))
    except BaseException as exc:  # what broke the session, as the last line
        while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
        sys.stderr.write(f"{type(exc).__name__}: {exc}\n")
        sys.exit(1)
