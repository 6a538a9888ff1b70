"""JSON-RPC 2.0 messages as MCP sends them, and the transport's headers (sans-IO, plain data).

A message is a JSON object with ``"jsonrpc": "2.0"``: a *request* (``method`` and ``id``), a
*notification* (``method``, no ``id``), a *result* or an *error* (``id``, and ``result`` or
``error``). :func:`kind` tells them apart, :func:`describe` names one for people (``request
tools/call #4``), :func:`generation` says which protocol generation a request speaks.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

REQUEST = "request"
NOTIFICATION = "notification"
RESULT = "result"
ERROR = "error"
INVALID = "invalid"  # an object that is no JSON-RPC message

# the stateless generation (2026-07-28): no handshake, no sessions, every request self-contained
MODERN = ("2026-07-28",)
# the key of a 2026-07-28 request's _meta that names its protocol version
VERSION_META = "io.modelcontextprotocol/protocolVersion"
# the methods whose request names its target in the Mcp-Name header (2026-07-28)
NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
# the client's request headers (lower case)
SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"
METHOD_HEADER = "mcp-method"
NAME_HEADER = "mcp-name"
LAST_EVENT_HEADER = "last-event-id"


def kind(message: Any) -> str:
    """What a message is: :data:`REQUEST`, :data:`NOTIFICATION`, :data:`RESULT`,
    :data:`ERROR` or :data:`INVALID`."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return INVALID
    if isinstance(message.get("method"), str):
        return REQUEST if "id" in message else NOTIFICATION
    if "id" in message:
        if "error" in message:
            return ERROR
        if "result" in message:
            return RESULT
    return INVALID


def is_answer(message: Any) -> bool:
    """A result or an error: the answer to a request."""
    return kind(message) in (RESULT, ERROR)


def params(message: Any) -> dict[str, Any]:
    """A message's ``params`` (``{}`` when it has none, or they are not an object)."""
    found = message.get("params") if isinstance(message, dict) else None
    return found if isinstance(found, dict) else {}


def target(message: Any) -> str | None:
    """What a request acts on: the tool or prompt's ``name``, the resource's ``uri``."""
    found = params(message).get(NAMED.get(str(message.get("method")), "name"))
    return found if isinstance(found, str) else None


def id_text(value: Any) -> str:
    """A JSON-RPC id as text (``4``, ``"a-1"``)."""
    return str(value) if not isinstance(value, str) else value


def describe(message: Any) -> str:
    """One line naming a message: ``request tools/call add #4``, ``notification
    notifications/progress``, ``result #4``, ``error #4 -32600``."""
    what = kind(message)
    if what in (REQUEST, NOTIFICATION):
        name = target(message)
        line = f"{what} {message['method']}" + (f" {name}" if name else "")
        return line + (f" #{id_text(message['id'])}" if what == REQUEST else "")
    if what == RESULT:
        result = message.get("result")
        kind_of = result.get("resultType") if isinstance(result, dict) else None
        shown = f" ({kind_of})" if isinstance(kind_of, str) and kind_of != "complete" else ""
        return f"result #{id_text(message['id'])}{shown}"
    if what == ERROR:
        error = message.get("error")
        code = error.get("code") if isinstance(error, dict) else None
        return f"error #{id_text(message['id'])}" + (f" {code}" if code is not None else "")
    return "not a JSON-RPC message"


def messages_of(body: Any) -> list[Any]:
    """The messages of a body: one, or the items of a batch."""
    if isinstance(body, list):
        return list(body)
    return [] if body is None else [body]


def header(headers: Mapping[str, Any] | None, name: str) -> str | None:
    """A request or response header by its lower-case name (a recording keeps them as a dict;
    letter case of the recorded names does not matter)."""
    if not headers:
        return None
    value = headers.get(name)
    if value is None:
        value = next((v for k, v in headers.items() if k.lower() == name), None)
    return value if isinstance(value, str) else None


def generation(headers: Mapping[str, Any] | None, body: Any) -> str:
    """``"2026-07-28"`` (stateless) or ``"2025"`` (the handshake and sessions) for a request:
    its ``MCP-Protocol-Version`` header, else its body's ``_meta`` protocol version, else the
    version its ``initialize`` asks for."""
    version = header(headers, VERSION_HEADER)
    if version is None:
        for message in messages_of(body):
            meta = params(message).get("_meta")
            if isinstance(meta, dict) and isinstance(meta.get(VERSION_META), str):
                version = meta[VERSION_META]
                break
            if isinstance(message, dict) and message.get("method") == "initialize":
                asked = params(message).get("protocolVersion")
                version = asked if isinstance(asked, str) else None
                break
    return "2026-07-28" if version in MODERN else "2025"


def _clip(text: str, size: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= size else text[: size - 1] + "…"


def gist(message: Any) -> str:
    """What a message says in a few words, for people: a progress notification's
    ``1/2 day 1``, a log message's ``info: ...``, a result's first text, an error's message."""
    what = kind(message)
    found = params(message)
    if what == NOTIFICATION and message["method"] == "notifications/progress":
        done, total = found.get("progress"), found.get("total")
        shown = f"{done}/{total}" if total is not None else f"{done}"
        note = found.get("message")
        return shown + (f" {_clip(note)}" if isinstance(note, str) and note else "")
    if what == NOTIFICATION and message["method"] == "notifications/message":
        data = found.get("data")
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        return f"{found.get('level', '?')}: {_clip(text)}"
    if what == REQUEST and "arguments" in found:
        return _clip(json.dumps(found["arguments"], ensure_ascii=False))
    if what == REQUEST and isinstance(found.get("message"), str):  # elicitation/create
        return _clip(found["message"])
    if what == RESULT and isinstance(message.get("result"), dict):
        return _clip(_first_text(message["result"]))
    if what == ERROR and isinstance(message.get("error"), dict):
        return _clip(str(message["error"].get("message", "")))
    return ""


def _first_text(result: dict[str, Any]) -> str:
    """The first text a result carries (a tool's content, a resource's, a prompt's message)."""
    for key in ("content", "contents", "messages"):
        items = result.get(key)
        if not isinstance(items, list):
            continue
        for item in items:
            if isinstance(item, dict) and isinstance(item.get("content"), dict):
                item = item["content"]
            if isinstance(item, dict) and isinstance(item.get("text"), str):
                return str(item["text"])
    return ""


def payload(message: Any) -> Any:
    """What a message carries besides its envelope: its ``params``, ``result`` or ``error``."""
    if not isinstance(message, dict):
        return message
    for key in ("params", "result", "error"):
        if key in message:
            return message[key]
    return None
