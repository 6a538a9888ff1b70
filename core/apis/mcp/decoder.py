"""The ``mcp`` converter: one MCP exchange (a POST, a GET stream, a DELETE) in, its JSON-RPC
messages out.

The recording's header holds what the client sent (the request body: one message, or a batch);
the body holds what the server answered: one JSON body (``application/json``), an SSE stream
whose events each carry a message (``event: message``), or nothing (``202`` for a notification
or a response, a DELETE). Every message becomes a ``message`` segment (what the tree draws), in
the order it was sent, the client's first; a ``tools/call`` request is also a tool call, so that
it is an invocation of the summary, whose ``result`` is the answer as sent. The summary's
``messages`` are every JSON-RPC message, as sent (:meth:`McpConverter.amend_summary`).

What the transport's rules say a server or a client must not do is reported from the catalogue
(``mcp_*``): a response on the GET stream, a priming event without an id, a stream that ended
before its response, a response that answers no request, a 2026-07-28 header that disagrees
with the body, a notification after the response, a session id missing or changed.
"""

from __future__ import annotations

import json
from typing import Any

from ...converters.base import Converter
from ...model import ChunkResponse
from ...model.quirk_ids import QuirkId
from ...model.records import Header
from ...model.vocabulary import ErrorKind
from ...wire import fastjson
from ...wire.sse import SSEComment, SSEEvent
from . import jsonrpc as rpc

CLIENT = "client"
SERVER = "server"


def pretty(message: Any) -> str:
    """What a message carries as the tree and the transcript show it (indented JSON, keys as
    sent)."""
    return json.dumps(message, ensure_ascii=False, indent=2)


class McpConverter(Converter):
    name = "mcp"

    def __init__(self) -> None:
        super().__init__()
        self.verb = "POST"  # the HTTP method of the exchange
        self.request_headers: dict[str, Any] = {}
        self.sent: list[Any] = []  # the client's messages (the request body)
        self.generation = "2025"
        self.resumes: str | None = None  # a GET's Last-Event-ID: it resumes a stream
        self.asked: dict[str, str] = {}  # id -> method of each request the client sent
        self.answered: set[str] = set()
        self.messages: list[Any] = []  # every JSON-RPC message, in order, as sent
        self.results: dict[str, dict[str, Any]] = {}  # tools/call id -> {"result" | "error"}
        self.last_event_id: str | None = None
        self._begun = False

    # -- the request (the header) -------------------------------------------------------------
    def use_header(self, header: Header) -> None:
        super().use_header(header)
        request = header.request
        self.verb = str(request.get("method") or "POST").upper()
        headers = request.get("headers")
        self.request_headers = headers if isinstance(headers, dict) else {}
        body = request.get("body")
        self.sent = rpc.messages_of(body) if self.verb == "POST" else []
        self.generation = rpc.generation(self.request_headers, body)
        self.resumes = rpc.header(self.request_headers, rpc.LAST_EVENT_HEADER)
        for message in self.sent:
            if rpc.kind(message) == rpc.REQUEST:
                self.asked[rpc.id_text(message["id"])] = message["method"]
        if self.generation != "2025":
            self._check_headers(body)
        response = header.response.get("headers")
        self._check_session(response if isinstance(response, dict) else {})

    def _check_headers(self, body: Any) -> None:
        """2026-07-28: the routing headers must say what the body says."""
        message = body if isinstance(body, dict) else None
        if message is None or rpc.kind(message) != rpc.REQUEST:
            return
        said = {
            "Mcp-Method": (rpc.header(self.request_headers, rpc.METHOD_HEADER), message["method"]),
        }
        if message["method"] in rpc.NAMED:
            said["Mcp-Name"] = (
                rpc.header(self.request_headers, rpc.NAME_HEADER),
                rpc.target(message),
            )
        meta = rpc.params(message).get("_meta")
        version = meta.get(rpc.VERSION_META) if isinstance(meta, dict) else None
        if version is not None:
            header_version = rpc.header(self.request_headers, rpc.VERSION_HEADER)
            said["MCP-Protocol-Version"] = (header_version, version)
        for name, (in_header, in_body) in said.items():
            if in_header is None or in_header.startswith("=?base64?"):
                continue  # a missing header is the server's to refuse; an encoded one is opaque
            if in_header != in_body:
                self.quirk(
                    QuirkId.MCP_HEADER_BODY_MISMATCH,
                    f"{name}: {in_header!r} in the header, {in_body!r} in the body",
                )
                return

    def _check_session(self, response: dict[str, Any]) -> None:
        """A session's request and its answer carry the same ``MCP-Session-Id``."""
        if self.generation != "2025":
            return
        asked = rpc.header(self.request_headers, rpc.SESSION_HEADER)
        answered = rpc.header(response, rpc.SESSION_HEADER)
        if asked is None and answered is None:
            return
        initialize = any(isinstance(m, dict) and m.get("method") == "initialize" for m in self.sent)
        if asked is None and not initialize:
            self.quirk(
                QuirkId.MCP_SESSION_ID_MISSING,
                "the request carries no MCP-Session-Id; the server answered in session "
                f"{answered!r}",
            )
        elif answered is not None and asked is not None and answered != asked:
            self.quirk(
                QuirkId.MCP_SESSION_ID_CHANGED,
                f"the request is of session {asked!r}, the answer of {answered!r}",
            )
        elif answered is None and asked is not None and not self.http_error:
            self.quirk(
                QuirkId.MCP_SESSION_ID_MISSING,
                f"the request is of session {asked!r}; the answer names no session",
            )

    def _begin(self) -> list[ChunkResponse]:
        """The client's messages, before anything the server sent."""
        if self._begun:
            return []
        self._begun = True
        out: list[ChunkResponse] = []
        for message in self.sent:
            self.messages.append(message)
            if rpc.kind(message) == rpc.REQUEST and message["method"] == "tools/call":
                out.append(self._call(message))
                continue
            out.append(ChunkResponse(messages=[self._entry(message, CLIENT)]))
        return out

    def _call(self, message: dict[str, Any]) -> ChunkResponse:
        """A ``tools/call`` request as a tool call (whole: it is sent at once)."""
        params = rpc.params(message)
        arguments = params.get("arguments")
        text = json.dumps({} if arguments is None else arguments, ensure_ascii=False)
        call_id = rpc.id_text(message["id"])
        tracked = self.tracker.open(call_id)
        delta = self.tracker.update(
            tracked,
            call_id=call_id,
            name=rpc.target(message) or "",
            arguments=text,
            complete=True,
            raw=True,
        )
        return ChunkResponse(tool_calls=[delta] if delta is not None else None)

    @staticmethod
    def _entry(message: Any, sender: str, **more: Any) -> dict[str, Any]:
        """A ``message`` segment's entry: what names the message, and its JSON."""
        entry: dict[str, Any] = {"label": rpc.describe(message), "from": sender}
        what = rpc.kind(message)
        entry["kind"] = what
        if isinstance(message, dict):
            if isinstance(message.get("method"), str):
                entry["method"] = message["method"]
            if "id" in message:
                entry["id"] = message["id"]
        said = rpc.gist(message)
        if said:
            entry["gist"] = said
        entry.update(more)
        carried = rpc.payload(message)
        if carried is not None:
            entry["text"] = pretty(carried)
        return entry

    # -- the answer (the body) ----------------------------------------------------------------
    def on_event(self, event: SSEEvent) -> list[ChunkResponse]:
        out = self._begin()
        if event.id is not None:
            self.last_event_id = event.id
        data = event.data
        if not data.strip():
            out.append(self._priming(event))
            return out
        try:
            payload: Any = fastjson.loads(data)
        except ValueError:
            self.error(ErrorKind.BAD_JSON, "an event whose data is not JSON", data[:200])
            return out
        for message in payload if isinstance(payload, list) else [payload]:
            out.append(self._message(message, event))
        return out

    def _priming(self, event: SSEEvent) -> ChunkResponse:
        """An event with empty data: a priming event (2025-11-25), the cursor of a stream."""
        if event.id is None:
            self.quirk(
                QuirkId.MCP_PRIMING_EVENT_WITHOUT_ID,
                "an event with empty data and no id: nothing to resume the stream from",
            )
        label = "priming event" + ("" if event.id is not None else " without id")
        if event.retry is not None:
            label += f" (retry {event.retry} ms)"
        entry: dict[str, Any] = {"label": label, "from": SERVER, "kind": "priming"}
        if event.id is not None:
            entry["event_id"] = event.id
        if event.retry is not None:
            entry["retry"] = event.retry
        return ChunkResponse(messages=[entry])

    def _message(self, message: Any, event: SSEEvent) -> ChunkResponse:
        what = rpc.kind(message)
        self.messages.append(message)
        if what == rpc.INVALID:
            self.error(ErrorKind.BAD_PAYLOAD, "not a JSON-RPC 2.0 message", message)
        elif what in (rpc.RESULT, rpc.ERROR):
            self._answer(message)
        elif what == rpc.NOTIFICATION and self.asked and self.answered >= set(self.asked):
            self.quirk(
                QuirkId.MCP_NOTIFICATION_AFTER_RESPONSE,
                f"{message['method']} after the response to #{', #'.join(sorted(self.asked))}",
            )
        more = {"event_id": event.id} if event.id is not None else {}
        chunks = ChunkResponse(messages=[self._entry(message, SERVER, **more)])
        return chunks

    def _answer(self, message: dict[str, Any]) -> None:
        key = rpc.id_text(message["id"])
        if self.verb == "GET" and self.resumes is None:
            self.quirk(
                QuirkId.MCP_RESPONSE_ON_GET_STREAM,
                f"the answer to #{key} came on the GET stream, which resumes no request's stream",
            )
        elif self.verb == "POST" and key not in self.asked and message["id"] is not None:
            self.quirk(
                QuirkId.MCP_RESPONSE_ID_UNKNOWN,
                f"an answer to #{key}; the client asked #{', #'.join(sorted(self.asked)) or '-'}",
            )
        self.answered.add(key)
        if "error" in message:
            error = message.get("error")
            code = error.get("code") if isinstance(error, dict) else None
            said = error.get("message") if isinstance(error, dict) else error
            self.error(ErrorKind.PROVIDER_ERROR, f"JSON-RPC error {code}: {said}", error)
            found = {"error": error}
        else:
            found = {"result": message.get("result")}
        if self.asked.get(key) == "tools/call":
            self.results[key] = found

    def on_comment(self, comment: SSEComment) -> list[ChunkResponse]:
        return self._begin()

    def on_finish(self) -> list[ChunkResponse]:
        out = self._begin()
        open_ = [key for key in self.asked if key not in self.answered]
        if open_ and not self.http_error and self.last_event_id is None:
            self.quirk(
                QuirkId.MCP_STREAM_ENDED_BEFORE_RESPONSE,
                f"no answer to #{', #'.join(open_)}, and no event id to resume from",
            )
            self.error(
                ErrorKind.TRUNCATED,
                f"the exchange ended without the answer to #{', #'.join(open_)}",
            )
        return out

    # -- the summary --------------------------------------------------------------------------
    def amend_summary(self, summary: dict[str, Any]) -> None:
        """Each ``tools/call`` invocation gets its ``result`` (or ``error``) as sent; the
        summary gets ``messages``, every JSON-RPC message as sent, the client's first."""
        for invocation in summary.get("invocations") or []:
            found = self.results.get(str(invocation.get("id")))
            invocation["result"] = None if found is None else found.get("result")
            if found is not None and "error" in found:
                invocation["error"] = found["error"]
        summary["messages"] = list(self.messages)
