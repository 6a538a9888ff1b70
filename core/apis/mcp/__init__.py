"""MCP over Streamable HTTP (the Model Context Protocol's HTTP transport): the ``mcp`` wire API.

An MCP server answers JSON-RPC 2.0 on one endpoint (``/mcp`` by convention, any path in
practice): a POST of one message is answered by ``application/json``, by a
``text/event-stream`` of messages ending with the response, or by ``202`` for a notification;
a GET opens a stream of server-initiated messages; a DELETE ends a session. Two protocol
generations share the transport: 2025-03-26 ... 2025-11-25 (an ``initialize`` handshake,
``MCP-Session-Id``, SSE event ids and resumption with ``Last-Event-ID``) and 2026-07-28
(stateless: no handshake and no sessions; ``Mcp-Method``/``Mcp-Name`` headers; results with a
``resultType``). Each HTTP exchange is one recording; a session is the exchanges of a tape.

This package holds everything about it: its row (below) and its parts as modules: ``detect``
(which requests and streams are MCP), ``decoder`` (the ``mcp`` converter), ``errors`` (a
JSON-RPC error body), ``jsonrpc`` and ``wire`` (the messages, and a body's events with where
they lie), ``session`` (a recorded session served again: ``serve``, tapes, the pytest plugin,
conform's expected answer), ``session_faults`` (the faults of a session that ``conform
--mutate`` and ``mutate`` apply).
"""

from ...plugins.wire_api import WireApi

API = WireApi(
    package=__name__,  # where its parts are
    id="mcp",
    name="mcp",
    label="MCP (Streamable HTTP)",
    error_style="jsonrpc",
    provider="mcp",
    # an MCP server has no official host: the proxy sends its requests to --upstream only
    base_url="",
    # the endpoint's conventional path (its route); any path whose request is JSON-RPC is MCP
    # too (the detect part claims it by its body or its MCP headers)
    path="/mcp",
    model_field="method",  # what names a request in a tape: its JSON-RPC method
    aliases=("model-context-protocol", "streamable-http"),
)
