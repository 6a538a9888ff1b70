"""MCP over Streamable HTTP (the Model Context Protocol's HTTP transport): the ``mcp`` wire API.

An MCP server answers JSON-RPC 2.0 on one endpoint (``/mcp`` by convention, any path in
practice): a POST of one message is answered by ``application/json``, by a
``text/event-stream`` of messages ending with the response, or by ``202`` for a notification;
a GET opens a stream of server-initiated messages; a DELETE ends a session. Two protocol
generations share the transport: 2025-03-26 ... 2025-11-25 (an ``initialize`` handshake,
``MCP-Session-Id``, SSE event ids and resumption with ``Last-Event-ID``) and 2026-07-28
(stateless: no handshake and no sessions; ``Mcp-Method``/``Mcp-Name`` headers; results with a
``resultType``). Each HTTP exchange is one recording; a session is the exchanges of a tape.

Its row (``api.json``): an MCP server has no official host (an empty ``base_url``), so the proxy
sends its requests to ``--upstream`` only; its ``path`` is the endpoint's conventional one (its
route), and any path whose request is JSON-RPC is MCP too (the ``detect`` part claims it by its
body or its MCP headers); what names a request in a tape (its ``model_field``) is its JSON-RPC
method.

This package holds everything about it: its row and its parts as modules: ``detect``
(which requests and streams are MCP), ``decoder`` (the ``mcp`` converter), ``errors`` (a
JSON-RPC error body), ``jsonrpc`` and ``wire`` (the messages, and a body's events with where
they lie), ``session`` (a recorded session served again: ``serve``, tapes, the pytest plugin,
conform's expected answer), ``session_faults`` (the faults of a session that ``conform
--mutate`` and ``mutate`` apply).
"""

from ...plugins.wire_api import WireApi

API = WireApi.from_package(__name__)
