"""A Realtime session as ``replay`` draws it, and as ``serve`` matches a client against it.

:class:`Outline` builds the tree of a session from its messages (both directions) and control
frames: the client's events beside the server's, each response with its text, its audio
transcript, its audio (counted in bytes and seconds, never shown), its function and MCP calls
(arguments as streamed), errors, usage and rate limits. The Responses API over WebSocket speaks
the same shapes (``response.create`` in, ``response.*`` events out) and draws its sessions with it.

:func:`normalize_client_event` is what ``serve`` compares a client's event with the recorded one
by (ids, event ids and audio payloads left out); :func:`mismatch_event` is the ``error``
event a client event that matches nothing gets, before the close (:data:`MISMATCH_CLOSE`).
Sans-IO.
"""

from __future__ import annotations

import json
from typing import Any

from ...engine.session import Node, control_node
from ...model.records import Control
from .decoder import BETA_NAMES

# the close a session that went off the recording ends with: the code OpenAI closes a session
# with for a request it cannot take, and a reason of its ``<type>.<code>`` form
MISMATCH_CODE = "streamtool_unmatched_event"
MISMATCH_CLOSE = (4000, f"invalid_request_error.{MISMATCH_CODE}")
# the end of a response, in Realtime and in the Responses API
TERMINAL = frozenset(
    {
        "response.done",
        "response.completed",
        "response.failed",
        "response.incomplete",
        "response.cancelled",
    }
)
# audio formats (a session's ``audio.output.format.type``, or the beta's names): bytes a second
_BYTES_PER_SECOND = {
    "audio/pcm": 48000,
    "pcm16": 48000,
    "audio/pcmu": 8000,
    "audio/pcma": 8000,
    "g711_ulaw": 8000,
    "g711_alaw": 8000,
}
SHORT = 72  # the longest text a client event's line quotes


def b64_size(data: str) -> int:
    """The number of bytes a base64 text decodes to (without decoding it)."""
    n = len(data)
    pad = 2 if data.endswith("==") else 1 if data.endswith("=") else 0
    return max(0, n * 3 // 4 - pad)


def _short(text: Any, limit: int = SHORT) -> str:
    text = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _seconds(nbytes: int, rate: int) -> str:
    return f"{nbytes:,} bytes, {nbytes / rate:.2f} s"


class Outline:
    """The outline of an OpenAI Realtime (or Responses over WebSocket) session."""

    def __init__(self, header: Any = None) -> None:
        self._nodes: list[Node] = []
        self._response: Node | None = None  # the response streaming now
        self._last_response: Node | None = None
        self._items: dict[str, Node] = {}  # item id -> its node in the response
        self._parts: dict[tuple[str, str], Node] = {}  # (item id, text|transcript) -> node
        self._audio: dict[str, list[int]] = {}  # item id -> [bytes, node index]
        self._calls: dict[str, list[Any]] = {}  # item id -> [node, arguments, deltas]
        self._rate = 48000
        self._input_audio = 0  # bytes of audio the client appended since its last other event

    # -- input -----------------------------------------------------------------------------
    def message(self, direction: str, t: float | None, obj: Any, size: int) -> None:
        if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
            self._add(Node(direction, "(not a JSON event)", f"{size:,} bytes", t=t))
            return
        kind = str(BETA_NAMES.get(obj["type"], obj["type"]))
        if direction == "client":
            self._client(kind, obj, t)
        else:
            self._server(kind, obj, t)

    def control(self, record: Control) -> None:
        node = control_node(record)
        holder = self._response if record.kind == "ping" else None
        target = holder.children if holder is not None else self._nodes
        last = target[-1] if target else None
        if (
            record.kind == "ping"
            and last is not None
            and last.kind == "ping"
            and last.label == node.label
        ):
            last.count += 1
            return
        target.append(node)

    def nodes(self) -> list[Node]:
        return self._nodes

    # -- the client's events ---------------------------------------------------------------
    def _client(self, kind: str, obj: dict[str, Any], t: float | None) -> None:
        if kind == "input_audio_buffer.append":
            audio = obj.get("audio")
            size = b64_size(audio) if isinstance(audio, str) else 0
            last = self._nodes[-1] if self._nodes else None
            if last is not None and last.kind == "client" and last.label == kind:
                last.count += 1
                self._input_audio += size
            else:
                self._input_audio = size
                last = Node("client", kind, t=t)
                self._nodes.append(last)
            last.detail = f"audio {_seconds(self._input_audio, self._rate)}"
            return
        if kind == "session.update":
            self._formats(obj.get("session"))
        self._nodes.append(Node("client", kind, client_detail(kind, obj), t=t))

    # -- the server's events ---------------------------------------------------------------
    def _server(self, kind: str, obj: dict[str, Any], t: float | None) -> None:
        if kind in ("session.created", "session.updated"):
            self._formats(obj.get("session"))
        if kind in ("response.created", "response.in_progress", "response.queued"):
            if kind == "response.created" or self._response is None:
                self._open_response(obj, t)
            return
        response = self._response
        if kind in TERMINAL:
            self._close_response(kind, obj, t)
            return
        if kind == "rate_limits.updated":
            self._rate_limits(obj)
            return
        if kind == "error":
            node = Node("error", "error", error_detail(obj), t=t)
            (response.children if response is not None else self._nodes).append(node)
            return
        if response is not None and self._response_event(response, kind, obj):
            return
        last = self._nodes[-1] if self._nodes else None
        if last is not None and last.kind == "server" and last.label == kind:
            last.count += 1
            return
        detail = server_detail(kind, obj)
        if (
            kind == "conversation.item.done"
            and last is not None
            and last.label == "conversation.item.added"
            and last.detail == detail
        ):
            last.label = "conversation.item.added, .done"  # the same item, added and done
            return
        self._nodes.append(Node("server", kind, detail, t=t))

    def _formats(self, session: Any) -> None:
        """The output audio's format a session says (GA: nested; beta: a name)."""
        if not isinstance(session, dict):
            return
        audio = session.get("audio")
        fmt: Any = None
        if isinstance(audio, dict) and isinstance(audio.get("output"), dict):
            fmt = audio["output"].get("format")
        if fmt is None:
            fmt = session.get("output_audio_format")
        name = fmt.get("type") if isinstance(fmt, dict) else fmt
        if isinstance(name, str) and name in _BYTES_PER_SECOND:
            self._rate = _BYTES_PER_SECOND[name]
            if isinstance(fmt, dict) and type(fmt.get("rate")) is int and name == "audio/pcm":
                self._rate = 2 * fmt["rate"]

    def _open_response(self, obj: dict[str, Any], t: float | None) -> None:
        response = obj.get("response")
        rid = response.get("id") if isinstance(response, dict) else None
        node = Node("response", f"response {rid}" if isinstance(rid, str) else "response", t=t)
        node.detail = "streaming"
        self._nodes.append(node)
        self._response = node
        self._items.clear()
        self._parts.clear()

    def _close_response(self, kind: str, obj: dict[str, Any], t: float | None) -> None:
        node = self._response
        if node is None:
            self._open_response(obj, t)
            node = self._response
        assert node is not None
        response = obj.get("response")
        response = response if isinstance(response, dict) else {}
        status = response.get("status") or kind.rpartition(".")[2]
        start = node.t
        took = f", {t - start:.2f} s" if t is not None and start is not None else ""
        node.detail = f"{status}{took}"
        details = response.get("status_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        if isinstance(reason, str) and reason:
            node.detail += f" ({reason})"
        for call_node, arguments, deltas in self._calls.values():
            if call_node in node.children and not call_node.detail:
                call_node.detail = _call_detail(arguments, deltas)
        usage = response.get("usage")
        if isinstance(usage, dict):
            node.children.append(Node("usage", "usage", usage_detail(usage), t=t))
        self._last_response = node
        self._response = None

    def _rate_limits(self, obj: dict[str, Any]) -> None:
        limits = obj.get("rate_limits")
        shown = []
        for limit in limits if isinstance(limits, list) else []:
            if isinstance(limit, dict):
                name = limit.get("name")
                shown.append(f"{name} {limit.get('remaining')}/{limit.get('limit')}")
        detail = ", ".join(shown)
        if self._response is not None:
            self._response.children.append(Node("rate_limits", "rate limits", detail))
        elif self._last_response is not None and self._nodes[-1] is self._last_response:
            label = "rate limits (after the response ended)"
            self._last_response.children.append(Node("rate_limits", label, detail))
        else:
            self._nodes.append(Node("rate_limits", "rate limits", detail))

    def _response_event(self, response: Node, kind: str, obj: dict[str, Any]) -> bool:
        """An event of the response streaming now, drawn into it; ``False`` for any other."""
        item_id = obj.get("item_id")
        if kind == "response.output_item.added":
            self._item(response, obj.get("item"))
            return True
        if kind == "response.output_item.done":
            item = obj.get("item")
            if isinstance(item, dict) and isinstance(item.get("id"), str):
                self._item_done(response, item)
            return True
        if not isinstance(item_id, str):
            return kind.startswith("response.")
        if kind in ("response.output_text.delta", "response.output_audio_transcript.delta"):
            delta = obj.get("delta")
            if isinstance(delta, str):
                part = "text" if kind == "response.output_text.delta" else "transcript"
                self._text(response, item_id, part).detail += delta
            return True
        if kind in ("response.output_text.done", "response.output_audio_transcript.done"):
            part = "text" if kind == "response.output_text.done" else "transcript"
            field = obj.get("text" if part == "text" else "transcript")
            node = self._text(response, item_id, part)
            if not node.detail and isinstance(field, str):
                node.detail = field
            return True
        if kind == "response.output_audio.delta":
            delta = obj.get("delta")
            self._add_audio(response, item_id, b64_size(delta) if isinstance(delta, str) else 0)
            return True
        if kind in ("response.function_call_arguments.delta", "response.mcp_call_arguments.delta"):
            call = self._calls.get(item_id)
            delta = obj.get("delta")
            if call is not None and isinstance(delta, str):
                call[1] += delta
                call[2] += 1
            return True
        if kind in ("response.function_call_arguments.done", "response.mcp_call_arguments.done"):
            call = self._calls.get(item_id)
            final = obj.get("arguments")
            if call is not None and isinstance(final, str) and final.startswith(call[1]):
                call[1] = final
            return True
        if kind == "response.mcp_call.failed":
            response.children.append(Node("error", "MCP call failed", item_id))
            return True
        return kind.startswith("response.")

    def _item(self, response: Node, item: Any) -> None:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            return
        item_id = item["id"]
        kind = item.get("type")
        if kind in ("function_call", "mcp_call", "mcp_approval_request"):
            name = item.get("name")
            if kind == "function_call":
                label = f"function call {name} ({item.get('call_id')})"
            elif kind == "mcp_call":
                label = f"MCP call {name} @{item.get('server_label')}"
            else:
                label = f"MCP approval request {name} @{item.get('server_label')}"
            node = Node("call", label)
            response.children.append(node)
            self._calls[item_id] = [node, "", 0]
        elif kind == "mcp_list_tools":
            node = Node("note", f"MCP tools of {item.get('server_label')}")
            response.children.append(node)
            self._items[item_id] = node

    def _item_done(self, response: Node, item: dict[str, Any]) -> None:
        item_id = item["id"]
        kind = item.get("type")
        call = self._calls.get(item_id)
        if call is not None:
            final = item.get("arguments")
            if isinstance(final, str) and final.startswith(call[1]):
                call[1] = final
            call[0].detail = _call_detail(call[1], call[2])
            if kind == "mcp_call":
                output = item.get("output") if item.get("error") is None else item.get("error")
                if output is not None:
                    call[0].detail += f" → {_short(output)}"
            return
        if kind == "mcp_list_tools":
            tools = item.get("tools")
            names = [t.get("name") for t in tools if isinstance(t, dict)] if tools else []
            node = self._items.get(item_id)
            if node is not None:
                node.detail = ", ".join(str(n) for n in names)
            return
        if kind == "message":
            for index, part in enumerate(item.get("content") or []):
                if not isinstance(part, dict):
                    continue
                if part.get("type") == "output_text" and isinstance(part.get("text"), str):
                    node = self._text(response, item_id, "text")
                    node.detail = node.detail or part["text"]
                elif part.get("type") == "output_audio" and isinstance(part.get("transcript"), str):
                    node = self._text(response, item_id, "transcript")
                    node.detail = node.detail or part["transcript"]
                del index

    def _text(self, response: Node, item_id: str, part: str) -> Node:
        node = self._parts.get((item_id, part))
        if node is None:
            label = "text" if part == "text" else "audio transcript"
            node = Node(part, label)
            response.children.append(node)
            self._parts[(item_id, part)] = node
        return node

    def _add_audio(self, response: Node, item_id: str, size: int) -> None:
        node = self._parts.get((item_id, "audio"))
        if node is None:
            node = Node("audio", "audio", count=0)
            response.children.append(node)
            self._parts[(item_id, "audio")] = node
            self._audio[item_id] = [0]
        total = self._audio[item_id]
        total[0] += size
        node.count += 1
        node.detail = f"{_seconds(total[0], self._rate)} in {node.count} deltas"

    def _add(self, node: Node) -> None:
        self._nodes.append(node)


def _call_detail(arguments: str, deltas: int) -> str:
    shown = arguments if arguments else "(no arguments)"
    streamed = f"  ({deltas} delta{'s' if deltas != 1 else ''})" if deltas else ""
    return f"{shown}{streamed}"


def client_detail(kind: str, obj: dict[str, Any]) -> str:
    """What a client event's line says about it."""
    if kind == "session.update":
        session = obj.get("session")
        if not isinstance(session, dict):
            return ""
        said = []
        if isinstance(session.get("instructions"), str):
            said.append(f"instructions {_short(session['instructions'], 40)!r}")
        modalities = session.get("output_modalities") or session.get("modalities")
        if isinstance(modalities, list):
            said.append("output " + "+".join(str(m) for m in modalities))
        tools = session.get("tools")
        if isinstance(tools, list) and tools:
            said.append("tools " + ", ".join(str(_tool_name(x)) for x in tools))
        return "; ".join(said)
    if kind == "conversation.item.create":
        return item_detail(obj.get("item"))
    if kind == "response.create":
        nested = obj.get("response")
        response: dict[str, Any] = nested if isinstance(nested, dict) else obj
        said = []
        model = response.get("model")
        if isinstance(model, str):
            said.append(model)
        items = response.get("input")
        if isinstance(items, str):
            said.append(repr(_short(items, 48)))
        elif isinstance(items, list) and items:
            said.append(f"input: {item_detail(items[-1])}")
        if isinstance(response.get("instructions"), str):
            said.append(f"instructions {_short(response['instructions'], 40)!r}")
        tools = response.get("tools")
        if isinstance(tools, list) and tools:
            said.append("tools " + ", ".join(str(_tool_name(x)) for x in tools))
        return "; ".join(said)
    return ""


def _tool_name(tool: Any) -> Any:
    if not isinstance(tool, dict):
        return tool
    return tool.get("name") or tool.get("server_label") or tool.get("type")


def item_detail(item: Any) -> str:
    """A conversation item in a few words: a message's role and text, a function output."""
    if not isinstance(item, dict):
        return ""
    kind = item.get("type")
    if kind == "function_call_output":
        return f"function_call_output {item.get('call_id')}: {_short(item.get('output'), 48)}"
    if kind == "message" or "role" in item:
        content = item.get("content")
        if isinstance(content, str):
            return f"{item.get('role')}: {_short(content, 56)!r}"
        texts = []
        for part in content if isinstance(content, list) else []:
            if not isinstance(part, dict):
                continue
            if isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif isinstance(part.get("audio"), str):
                texts.append(f"<audio {b64_size(part['audio']):,} bytes>")
        return f"{item.get('role')}: {_short(' '.join(texts), 56)!r}"
    return str(kind or "")


def server_detail(kind: str, obj: dict[str, Any]) -> str:
    if kind in ("conversation.item.added", "conversation.item.done"):
        return item_detail(obj.get("item"))
    if kind == "conversation.item.input_audio_transcription.completed":
        return repr(_short(obj.get("transcript"), 56))
    return ""


def error_detail(obj: dict[str, Any]) -> str:
    err = obj.get("error")
    err = err if isinstance(err, dict) else obj
    label = ".".join(str(x) for x in (err.get("type"), err.get("code")) if x)
    message = err.get("message")
    return f"{label}: {message}" if label else str(message)


def usage_detail(usage: dict[str, Any]) -> str:
    def side(name: str) -> str:
        total = usage.get(f"{name}_tokens")
        details = usage.get(f"{name}_token_details") or usage.get(f"{name}_tokens_details")
        extra = []
        if isinstance(details, dict):
            for key in ("text_tokens", "audio_tokens", "cached_tokens", "reasoning_tokens"):
                if isinstance(details.get(key), int) and details[key]:
                    extra.append(f"{key.removesuffix('_tokens')} {details[key]}")
        return f"{name} {total}" + (f" ({', '.join(extra)})" if extra else "")

    return f"{side('input')}, {side('output')}, total {usage.get('total_tokens')}"


# -- matching a client against a recorded session (serve) ---------------------------------------
def normalize_client_event(obj: Any) -> Any:
    """A client event as ``serve`` compares it: without ids (``id``, ``event_id``, every
    ``*_id``) and without audio payloads (a field named ``audio`` holding base64)."""
    if isinstance(obj, dict):
        out = {}
        for key, value in obj.items():
            if key == "id" or key.endswith("_id"):
                continue
            if key == "audio" and isinstance(value, str):
                continue
            out[key] = normalize_client_event(value)
        return out
    if isinstance(obj, list):
        return [normalize_client_event(v) for v in obj]
    return obj


def mismatch_event(message: str, client_event_id: Any = None) -> dict[str, Any]:
    """The ``error`` event a client event that matches nothing recorded gets."""
    return {
        "type": "error",
        "event_id": "event_streamtool_unmatched",
        "error": {
            "type": "invalid_request_error",
            "code": MISMATCH_CODE,
            "message": message,
            "param": None,
            "event_id": client_event_id if isinstance(client_event_id, str) else None,
        },
    }
