"""A real MCP server for the tests: the ``mcp`` SDK's own server (FastMCP; ``MCPServer`` in the
2.x line) over Streamable HTTP, on 127.0.0.1 in a background thread.

It has what an MCP session shows: tools (one reporting progress and logging as it goes, one
asking the user through an elicitation, one that closes its SSE stream halfway so the client
resumes with ``Last-Event-ID``), a static resource and a resource template, a prompt. An
in-memory event store gives SSE event ids, priming events and resumption (the SDK's
``EventStore`` interface). The 2.x server answers both protocol generations at one endpoint
(the 2025 handshake with sessions, and the stateless 2026-07-28); the 1.x server the first.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import mcp
from pydantic import BaseModel

from streamtool.core.net.listen import ServerThread

try:  # the 2.x line
    from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve

    V2 = True
except ImportError:  # the 1.x line
    from mcp.server.fastmcp import Context  # type: ignore[no-redef]
    from mcp.server.fastmcp import FastMCP as MCPServer  # type: ignore[no-redef,assignment]

    V2 = False

from mcp.server.streamable_http import EventStore

SDK_VERSION = getattr(mcp, "__version__", None)
if SDK_VERSION is None:
    from importlib.metadata import version

    SDK_VERSION = version("mcp")
RETRY_MS = 200  # the retry an SSE stream's priming event asks for


class MemoryEventStore(EventStore):
    """Every SSE event kept in memory, replayed after the id a client resumes from."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, Any]] = []  # (event id, stream id, message)
        self._ids = itertools.count(1)

    async def store_event(self, stream_id: Any, message: Any) -> Any:
        event_id = f"{stream_id}-{next(self._ids)}"
        self.events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id: Any, send_callback: Any) -> Any:
        found = next((i for i, e in enumerate(self.events) if e[0] == last_event_id), None)
        if found is None:
            return None
        stream_id = self.events[found][1]
        for event_id, stream, message in self.events[found + 1 :]:
            if stream == stream_id and message is not None:
                await send_callback(_event_message(message, event_id))
        return stream_id


def _event_message(message: Any, event_id: Any) -> Any:
    from mcp.server.streamable_http import EventMessage

    return EventMessage(message, event_id)


class Booking(BaseModel):
    confirm: bool
    seats: int = 1


def ask(city: str) -> Any:
    """The question the booking tool's answer is resolved by (2.x)."""
    return Elicit(f"Book a seat for {city}?", Booking)


def build_server(name: str = "weather-desk", *, store: bool = True) -> Any:
    """The server: tools, resources and a prompt."""
    kwargs: dict[str, Any] = {}
    if not V2 and store:
        kwargs = {"event_store": MemoryEventStore(), "retry_interval": RETRY_MS}
    server = MCPServer(name, **kwargs)

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    async def forecast(city: str, days: int, ctx: Context) -> str:  # type: ignore[type-arg]
        """The forecast for a city, day by day (progress and log messages as it goes)."""
        lines = []
        for day in range(1, days + 1):
            await ctx.info(f"day {day} of {days} for {city}")
            await ctx.report_progress(day, days, f"day {day}")
            lines.append(f"day {day}: {18 + day}°C")
        return f"{city}: " + "; ".join(lines)

    if V2:
        # asked through a resolver: an elicitation request in the middle of the call (the 2025
        # generation), an input_required result and a retry of the call (2026-07-28)
        @server.tool()
        async def book(city: str, answer: Annotated[Booking, Resolve(ask)]) -> str:
            """Book a seat: the user is asked to confirm (an elicitation)."""
            if answer.confirm:
                return f"booked {answer.seats} seat(s) for {city}"
            return "not booked"

    else:

        @server.tool()
        async def book(city: str, ctx: Context) -> str:  # type: ignore[type-arg]
            """Book a seat: the user is asked to confirm (an elicitation)."""
            answer = await ctx.elicit(f"Book a seat for {city}?", Booking)
            data = getattr(answer, "data", None)
            if getattr(answer, "action", None) == "accept" and data is not None and data.confirm:
                return f"booked {data.seats} seat(s) for {city}"
            return f"not booked ({getattr(answer, 'action', '?')})"

    @server.tool()
    async def patient(steps: int, ctx: Context) -> str:  # type: ignore[type-arg]
        """Works in steps; closes its SSE stream after the first (the client resumes)."""
        import anyio

        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step}")
            if step == 1:
                await ctx.close_sse_stream()
                await anyio.sleep(RETRY_MS / 1000 * 2)
        return f"done in {steps} steps"

    @server.resource("config://units")
    def units() -> str:
        """The units the desk reports in."""
        return "metric"

    @server.resource("weather://{city}/today")
    def today(city: str) -> str:
        """Today's weather in a city."""
        return f"{city}: sunny, 21°C"

    @server.prompt()
    def summarize(city: str) -> str:
        """Ask for a weather summary."""
        return f"Summarize the weather in {city} in one sentence."

    return server


def asgi_app(
    server: Any, *, json_response: bool = False, stateless: bool = False, store: bool = True
) -> Any:
    """The server's Streamable HTTP app (at ``/mcp``)."""
    if V2:
        kwargs: dict[str, Any] = {"json_response": json_response, "stateless_http": stateless}
        if store:
            kwargs.update(event_store=MemoryEventStore(), retry_interval=RETRY_MS)
        return server.streamable_http_app(**kwargs)
    server.settings.json_response = json_response
    server.settings.stateless_http = stateless
    return server.streamable_http_app()


def _settings(app: Any) -> Any:
    import uvicorn

    return uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)


@contextmanager
def mcp_server(
    *, json_response: bool = False, stateless: bool = False, store: bool = True
) -> Iterator[ServerThread]:
    """The server on 127.0.0.1 (``.url`` + ``/mcp`` is its endpoint), stopped on exit."""
    app = asgi_app(
        build_server(store=store), json_response=json_response, stateless=stateless, store=store
    )
    with ServerThread(app, settings=_settings, name="the MCP server") as server:
        yield server


def client_module() -> Any:
    """``tests/clients/mcp_client.py``, the SDK client the tests and conform run (imported by
    its path: the clients are scripts)."""
    import importlib.util
    import sys
    from pathlib import Path

    name = "streamtool_tests_mcp_client"
    if name not in sys.modules:
        path = Path(__file__).parent / "clients" / "mcp_client.py"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def run_client(url: str, client: str = "session", mode: str = "auto", resume: bool = False) -> Any:
    """The SDK client's session against ``url`` (in this process), as it prints it."""
    import asyncio

    return asyncio.run(client_module().run_session(url, client, mode, resume))
