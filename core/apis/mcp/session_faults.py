"""The faults of an MCP session, applied to a recorded one: ``conform --mutate``, ``serve
--mutate``, the pytest plugin's ``--stream-tape-mutate``, ``streamtool mutate TAPE``.

Each fault is a catalogue entry (``mcp_session_expired``...: the session kind) and a function
here that edits the tape's exchanges (sans-IO: whole recordings in, whole recordings out) so
that the player (:mod:`.player`), serving the result as it serves any tape, behaves as a
server with that fault would: a 404 recorded before a request and a second handshake after it,
a stream cut after its priming event and the GET that resumes it, notifications and a ``ping``
request before a response, JSON bodies for SSE streams and back, the session rewritten as a
stateless 2026-07-28 server answers it, an ``input_required`` round before a tool call's
result. What the client gets in the end (every result) is what the recorded session got.

A fault applies to the generation of the protocol it belongs to: the 2025 generation's session,
resumption and server-request faults do not apply to a 2026-07-28 session, and the
``input_required`` round trip applies to 2026-07-28 only (:func:`applicable` says which apply,
:func:`not_applicable` why one does not).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import msgspec

from ...model.quirk_ids import QuirkId
from ...model.records import Chunk, End, RecordedExchange
from . import jsonrpc as rpc
from .player import GEN_2025, MODERN
from .wire import Event, dumps, events_of, is_sse

RETRY_MS = 200  # the retry a dropped stream's priming event asks for
PING_ID = "streamtool-ping-1"  # the id of the server request a fault sends
STATE = "streamtool-input-required-1"  # the requestState of the round a fault adds
ASKED = "streamtool"  # the key of the input request a fault adds


class NotApplicable(ValueError):
    """The fault does not apply to this session (the message says why)."""


# -- reading and making exchanges -------------------------------------------------------------
def _verb(ex: RecordedExchange) -> str:
    return str(ex.header.request.get("method") or "POST").upper()


def _req_headers(ex: RecordedExchange) -> dict[str, Any]:
    found = ex.header.request.get("headers")
    return found if isinstance(found, dict) else {}


def _resp_headers(ex: RecordedExchange) -> dict[str, Any]:
    found = ex.header.response.get("headers")
    return found if isinstance(found, dict) else {}


def _body(ex: RecordedExchange) -> Any:
    return ex.header.request.get("body")


def _status(ex: RecordedExchange) -> int:
    status = ex.header.response.get("status")
    return status if isinstance(status, int) else 200


def _generation(ex: RecordedExchange) -> str:
    return rpc.generation(_req_headers(ex), _body(ex))


def _data(ex: RecordedExchange) -> bytes:
    return b"".join(
        c.data.encode("utf-8") if isinstance(c.data, str) else c.data for c in ex.chunks
    )


def _events(ex: RecordedExchange) -> list[Event]:
    return events_of(_data(ex), is_sse(_resp_headers(ex)))


def _requests(ex: RecordedExchange) -> list[dict[str, Any]]:
    if _verb(ex) != "POST":
        return []
    return [m for m in rpc.messages_of(_body(ex)) if rpc.kind(m) == rpc.REQUEST]


def _method(ex: RecordedExchange) -> str | None:
    found = _requests(ex)
    return str(found[0]["method"]) if found else None


def _answers(ex: RecordedExchange) -> bool:
    """A POST of requests whose 200 answer carries the response to one of them."""
    asked = {rpc.id_text(m["id"]) for m in _requests(ex)}
    if not asked or _status(ex) != 200:
        return False
    for event in _events(ex):
        for message in rpc.messages_of(event.message):
            if rpc.is_answer(message) and rpc.id_text(message["id"]) in asked:
                return True
    return False


def _named(ex: RecordedExchange, suffix: str) -> str:
    return f"{ex.name}+{suffix}"


def _with(
    ex: RecordedExchange,
    *,
    name: str | None = None,
    request: dict[str, Any] | None = None,
    response: dict[str, Any] | None = None,
    chunks: list[Chunk] | None = None,
    end: End | None | bool = True,
) -> RecordedExchange:
    """A copy of an exchange with some of its parts replaced (``end=True``: its own)."""
    header = msgspec.structs.replace(
        ex.header,
        request=copy.deepcopy(ex.header.request if request is None else request),
        response=copy.deepcopy(ex.header.response if response is None else response),
    )
    kept_end = ex.end if end is True else end
    return RecordedExchange(
        name or ex.name,
        header,
        list(ex.chunks) if chunks is None else chunks,
        kept_end if not isinstance(kept_end, bool) else None,
    )


def _response(status: int, headers: dict[str, Any]) -> dict[str, Any]:
    return {"status": status, "headers": headers}


def _json_headers(ex: RecordedExchange) -> dict[str, Any]:
    headers = {
        k: v
        for k, v in _resp_headers(ex).items()
        if k.lower() not in ("content-type", "content-length", "transfer-encoding", "cache-control")
        and k.lower() != "x-accel-buffering"
    }
    headers["content-type"] = "application/json"
    return headers


def _sse_headers(ex: RecordedExchange) -> dict[str, Any]:
    headers = {
        k: v
        for k, v in _resp_headers(ex).items()
        if k.lower() not in ("content-type", "content-length")
    }
    headers["content-type"] = "text/event-stream"
    headers.setdefault("cache-control", "no-cache, no-transform")
    return headers


def _one_read(data: bytes, t: float | None) -> list[Chunk]:
    return [Chunk(t, data.decode("utf-8"))] if data else []


def _first_t(ex: RecordedExchange) -> float | None:
    return next((c.t for c in ex.chunks if c.t is not None), None)


def _newline(ex: RecordedExchange) -> bytes:
    data = _data(ex)
    return b"\r\n" if b"\r\n" in data else b"\n"


def _sse_event(message: Any, newline: bytes, event_id: str | None = None) -> bytes:
    lines = [] if event_id is None else [b"id: " + event_id.encode()]
    lines += [b"event: message", b"data: " + dumps(message).encode("utf-8")]
    return newline.join(lines) + newline + newline


def _cut_reads(ex: RecordedExchange, offset: int) -> tuple[list[Chunk], list[Chunk]]:
    """The exchange's reads before and after a byte offset of its body (a read cut there is
    in both, with its time)."""
    before: list[Chunk] = []
    after: list[Chunk] = []
    pos = 0
    for c in ex.chunks:
        data = c.data.encode("utf-8") if isinstance(c.data, str) else c.data
        lo, hi = pos, pos + len(data)
        pos = hi
        if hi <= offset:
            before.append(c)
        elif lo >= offset:
            after.append(c)
        else:
            before.append(_chunk(c.t, data[: offset - lo]))
            after.append(_chunk(c.t, data[offset - lo :]))
    return before, after


def _chunk(t: float | None, data: bytes) -> Chunk:
    try:
        return Chunk(t, data.decode("utf-8"))
    except UnicodeDecodeError:
        return Chunk(t, data)


# -- the faults ------------------------------------------------------------------------------
Tape = list[RecordedExchange]
Fault = Callable[[Tape], Tape]


def _first(tape: Tape, generation: str, want: Callable[[RecordedExchange], bool]) -> int:
    """The index of the first tools/call of ``generation`` that ``want``s, else of any
    request other than the handshake."""
    others = [
        i
        for i, ex in enumerate(tape)
        if _generation(ex) == generation
        and _method(ex) not in (None, "initialize", "server/discover")
        and want(ex)
    ]
    calls = [i for i in others if _method(tape[i]) == "tools/call"]
    if calls:
        return calls[0]
    if others:
        return others[0]
    raise NotApplicable(f"the session has no {generation} request it applies to")


def session_expired(tape: Tape) -> Tape:
    """A 404 for the first tools/call of a session, then a new handshake and the call again."""
    inits = [
        i
        for i, ex in enumerate(tape)
        if _method(ex) == "initialize" and rpc.header(_resp_headers(ex), rpc.SESSION_HEADER)
    ]
    if not inits:
        raise NotApplicable("the server issued no session id: it has no session to end")
    init = inits[0]
    target = _first(
        tape,
        GEN_2025,
        lambda ex: rpc.header(_req_headers(ex), rpc.SESSION_HEADER) is not None,
    )
    if target < init:
        raise NotApplicable("no request follows the handshake")
    ex = tape[target]
    error = {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "Session not found"},
    }
    headers = {"content-type": "application/json"}
    gone = _with(
        ex,
        name=_named(ex, "404"),
        response=_response(404, headers),
        chunks=_one_read(dumps(error).encode(), _first_t(ex) or 0.001),
        end=End(_first_t(ex) or 0.001, "error", "HTTP 404: Session not found"),
    )
    again = [gone]
    session = [
        e
        for e in tape[init:target]
        if _method(e) == "initialize"
        or (_verb(e) == "GET" and rpc.header(_req_headers(e), rpc.LAST_EVENT_HEADER) is None)
        or any(m.get("method") == "notifications/initialized" for m in rpc.messages_of(_body(e)))
    ]
    again += [_with(e, name=_named(e, "again")) for e in session]
    return tape[:target] + again + tape[target:]


def stream_dropped_after_priming(tape: Tape) -> Tape:
    """The first SSE response of a request cut after its priming event (with a ``retry``); the
    rest, the response with it, comes on the GET that resumes from it."""

    def fits(ex: RecordedExchange) -> bool:
        return is_sse(_resp_headers(ex)) and _answers(ex)

    target = _first(tape, GEN_2025, fits)
    ex = tape[target]
    events = _events(ex)
    newline = _newline(ex)
    primer = next((e for e in events if e.priming and e.id is not None), None)
    if primer is None:  # a server without an event store: a priming event of the fault's own
        event_id = f"{ex.name}-resume"
        head = b"id: " + event_id.encode() + newline + b"data: " + newline
        head += f"retry: {RETRY_MS}".encode() + newline + newline
        before: list[Chunk] = _one_read(head, _first_t(ex) or 0.0)
        after = list(ex.chunks)
    else:
        event_id = primer.id or ""
        before, after = _cut_reads(ex, primer.end)
        if primer.retry is None:  # the retry the client waits before it resumes
            earlier, _ = _cut_reads(ex, primer.start)
            raw = primer.raw.rstrip(b"\r\n") + newline + f"retry: {RETRY_MS}".encode()
            at = before[-1].t if before else _first_t(ex)
            before = earlier + _one_read(raw + newline + newline, at)
    last_t = next((c.t for c in reversed(before) if c.t is not None), 0.0)
    dropped = _with(
        ex, name=_named(ex, "dropped"), chunks=before, end=End(last_t, "complete", None)
    )
    request_headers = {
        k: v
        for k, v in _req_headers(ex).items()
        if k.lower() not in ("content-type", "content-length", rpc.LAST_EVENT_HEADER)
    }
    request_headers["accept"] = "text/event-stream"
    request_headers[rpc.LAST_EVENT_HEADER] = event_id
    start = after[0].t if after and after[0].t is not None else 0.0
    rest = [Chunk(None if c.t is None else max(c.t - start, 0.0) + 0.001, c.data) for c in after]
    request = {"method": "GET", "url": ex.header.request.get("url"), "headers": request_headers}
    request["body"] = None
    end_t = rest[-1].t if rest else 0.001
    resumed = _with(
        ex,
        name=_named(ex, "resumed"),
        request=request,
        chunks=rest,
        end=End(end_t, "complete", None),
    )
    return tape[:target] + [dropped, resumed] + tape[target + 1 :]


def messages_before_response(tape: Tape) -> Tape:
    """A progress notification (when the request asked for one), a log message and a ``ping``
    request before the first tools/call's response; the client's answer to the ping after."""
    target = _first(tape, GEN_2025, _answers)
    ex = tape[target]
    request = _requests(ex)[0]
    newline = _newline(ex)
    sse = is_sse(_resp_headers(ex))
    added: list[Any] = []
    meta = rpc.params(request).get("_meta")
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    if token is not None:
        added.append(
            {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": token, "progress": 0, "message": "streamtool: begun"},
            }
        )
    added.append(
        {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": "info", "data": "streamtool: a log message before the response"},
        }
    )
    added.append({"jsonrpc": "2.0", "id": PING_ID, "method": "ping"})
    inserted = b"".join(_sse_event(m, newline) for m in added)
    events = _events(ex)
    if sse:
        answer = next(
            e for e in events if any(rpc.is_answer(m) for m in rpc.messages_of(e.message))
        )
        before, after = _cut_reads(ex, answer.start)
        at = after[0].t if after else _first_t(ex)
        chunks = before + _one_read(inserted, at) + after
        headers = dict(_resp_headers(ex))
    else:  # a JSON answer: the same message as the stream's last event
        body = b"".join(e.raw for e in events)
        message = rpc.messages_of(events[0].message) if events else []
        tail = b"".join(_sse_event(m, newline) for m in message) if message else body
        chunks = _one_read(inserted, _first_t(ex)) + _one_read(tail, _first_t(ex))
        headers = _sse_headers(ex)
    response = _response(_status(ex), headers)
    mutated = _with(ex, name=_named(ex, "messages"), response=response, chunks=chunks)
    answer_headers = {
        k: v for k, v in _req_headers(ex).items() if k.lower() not in ("content-length",)
    }
    pong = {
        "method": "POST",
        "url": ex.header.request.get("url"),
        "headers": answer_headers,
        "body": {"jsonrpc": "2.0", "id": PING_ID, "result": {}},
    }
    accepted = {k: v for k, v in _resp_headers(ex).items() if k.lower() == rpc.SESSION_HEADER}
    answered = _with(
        ex,
        name=_named(ex, "pong"),
        request=pong,
        response=_response(202, accepted),
        chunks=[],
        end=End(0.001, "complete", None),
    )
    return tape[:target] + [mutated, answered] + tape[target + 1 :]


def json_instead_of_sse(tape: Tape) -> Tape:
    """Every SSE answer of a request as one JSON body (the response alone), every JSON answer
    as an SSE stream."""
    out: Tape = []
    changed = 0
    for ex in tape:
        if not _answers(ex):
            out.append(ex)
            continue
        events = _events(ex)
        if is_sse(_resp_headers(ex)):
            asked = {rpc.id_text(m["id"]) for m in _requests(ex)}
            answers = [
                m
                for e in events
                for m in rpc.messages_of(e.message)
                if rpc.is_answer(m) and rpc.id_text(m["id"]) in asked
            ]
            body = answers[0] if len(answers) == 1 else answers
            t = next((c.t for c in reversed(ex.chunks) if c.t is not None), None)
            chunks = _one_read(dumps(body).encode("utf-8"), t)
            response = _response(_status(ex), _json_headers(ex))
        else:
            messages = rpc.messages_of(events[0].message) if events else []
            newline = b"\n"
            chunks = _one_read(b"".join(_sse_event(m, newline) for m in messages), _first_t(ex))
            response = _response(_status(ex), _sse_headers(ex))
        out.append(_with(ex, name=_named(ex, "reframed"), response=response, chunks=chunks))
        changed += 1
    if not changed:
        raise NotApplicable("no request was answered with a response")
    return out


def stateless_server(tape: Tape) -> Tape:
    """The session as a server of 2026-07-28 only answers it: ``server/discover`` (from the
    handshake's answer), every request stateless and its result with a ``resultType``; the
    handshake, the session's GET streams, DELETE and the client's answers go (the server
    refuses them); a stream's resumption becomes part of its stream."""
    legacy = [ex for ex in tape if _generation(ex) == GEN_2025]
    init = next((ex for ex in legacy if _method(ex) == "initialize" and _answers(ex)), None)
    if init is None:
        raise NotApplicable("the session has no 2025 handshake to answer statelessly")
    out: Tape = [_discover(init)]
    resumed = _resumptions(tape)
    for ex in tape:
        if _generation(ex) != GEN_2025:
            out.append(ex)
            continue
        method = _method(ex)
        if method is None or method == "initialize":
            continue  # notifications, answers, GET streams and DELETE: no such thing
        out.append(_stateless(ex, resumed.get(ex.name)))
    return out


def _resumptions(tape: Tape) -> dict[str, RecordedExchange]:
    """The GET that resumes each POST's stream, by the POST's name."""
    found: dict[str, RecordedExchange] = {}
    for ex in tape:
        last = rpc.header(_req_headers(ex), rpc.LAST_EVENT_HEADER)
        if _verb(ex) != "GET" or last is None:
            continue
        for other in tape:
            if any(e.id == last for e in _events(other)) and _verb(other) == "POST":
                found[other.name] = ex
    return found


def _modern_meta(message: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(message)
    params = out.setdefault("params", {})
    meta = params.setdefault("_meta", {})
    meta[rpc.VERSION_META] = MODERN
    return out


def _modern_headers(headers: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    out = {
        k: v
        for k, v in headers.items()
        if k.lower() not in (rpc.SESSION_HEADER, rpc.VERSION_HEADER, "content-length")
    }
    out[rpc.VERSION_HEADER] = MODERN
    out[rpc.METHOD_HEADER] = request["method"]
    name = rpc.target(request)
    if request["method"] in rpc.NAMED and name is not None:
        out[rpc.NAME_HEADER] = name
    return out


# 2026-07-28: the methods whose results carry caching hints (required on the wire)
CACHEABLE = frozenset(
    {
        "prompts/list",
        "resources/list",
        "resources/read",
        "resources/templates/list",
        "server/discover",
        "tools/list",
    }
)


def _complete(message: Any, method: str) -> Any:
    """A result as 2026-07-28 has it: with its ``resultType`` (and, for a method whose result
    may be cached, the hints the SDKs default to: stale at once, private)."""
    if rpc.kind(message) == rpc.RESULT and isinstance(message.get("result"), dict):
        result = dict(message["result"])
        result.setdefault("resultType", "complete")
        if method in CACHEABLE:
            result.setdefault("ttlMs", 0)
            result.setdefault("cacheScope", "private")
        return {**message, "result": result}
    return message


def _stateless(ex: RecordedExchange, resumption: RecordedExchange | None) -> RecordedExchange:
    request = _requests(ex)[0]
    modern = _modern_meta(request)
    req = dict(ex.header.request)
    req["headers"] = _modern_headers(_req_headers(ex), request)
    req["body"] = modern
    sse = is_sse(_resp_headers(ex))
    events = _events(ex) + (_events(resumption) if resumption is not None else [])
    kept = [
        _complete(m, request["method"])
        for e in events
        for m in rpc.messages_of(e.message)
        if rpc.kind(m) in (rpc.NOTIFICATION, rpc.RESULT, rpc.ERROR)
    ]
    t = next((c.t for c in reversed(ex.chunks) if c.t is not None), None)
    headers = {k: v for k, v in _resp_headers(ex).items() if k.lower() not in (rpc.SESSION_HEADER,)}
    if sse:
        newline = _newline(ex)
        data = b"".join(_sse_event(m, newline) for m in kept)
    else:
        data = dumps(kept[0] if len(kept) == 1 else kept).encode("utf-8") if kept else b""
    return _with(
        ex,
        name=_named(ex, "stateless"),
        request=req,
        response=_response(_status(ex), headers),
        chunks=_one_read(data, t),
        end=End(t, "complete", None) if ex.end is not None else None,
    )


def _discover(init: RecordedExchange) -> RecordedExchange:
    """``server/discover`` answered with what the handshake's answer said."""
    result: dict[str, Any] = {}
    for event in _events(init):
        for m in rpc.messages_of(event.message):
            if rpc.kind(m) == rpc.RESULT and isinstance(m.get("result"), dict):
                result = m["result"]
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "server/discover",
        "params": {"_meta": {rpc.VERSION_META: MODERN}},
    }
    answer: dict[str, Any] = {
        "supportedVersions": [MODERN],
        "capabilities": result.get("capabilities", {}),
        "resultType": "complete",
        "ttlMs": 0,
        "cacheScope": "private",
    }
    if isinstance(result.get("instructions"), str):
        answer["instructions"] = result["instructions"]
    if isinstance(result.get("serverInfo"), dict):
        answer["_meta"] = {"io.modelcontextprotocol/serverInfo": result["serverInfo"]}
    req = dict(init.header.request)
    req["headers"] = _modern_headers(_req_headers(init), request)
    req["body"] = request
    headers = {"content-type": "application/json"}
    t = _first_t(init)
    return _with(
        init,
        name=_named(init, "discover"),
        request=req,
        response=_response(200, headers),
        chunks=_one_read(dumps({"jsonrpc": "2.0", "id": 1, "result": answer}).encode(), t),
        end=End(t, "complete", None),
    )


def input_required(tape: Tape) -> Tape:
    """The first 2026-07-28 tools/call answered ``input_required`` first (an elicitation to
    answer), then, sent again with the answer and the ``requestState``, with its result."""

    def plain(ex: RecordedExchange) -> bool:
        if not _answers(ex) or _method(ex) != "tools/call":
            return False
        params = rpc.params(_requests(ex)[0])
        return "requestState" not in params

    target = _first(tape, MODERN, plain)
    ex = tape[target]
    request = _requests(ex)[0]
    if request["method"] != "tools/call":
        raise NotApplicable("the session has no 2026-07-28 tool call to ask about")
    asked = {
        ASKED: {
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": "streamtool asks before the call goes on: go on?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"confirm": {"type": "boolean"}},
                    "required": ["confirm"],
                },
            },
        }
    }
    result = {"inputRequests": asked, "requestState": STATE, "resultType": "input_required"}
    message = {"jsonrpc": "2.0", "id": request["id"], "result": result}
    headers = {
        k: v
        for k, v in _resp_headers(ex).items()
        if k.lower() not in ("content-type", "content-length", "transfer-encoding")
    }
    headers["content-type"] = "application/json"
    t = _first_t(ex) or 0.001
    first = _with(
        ex,
        name=_named(ex, "input-required"),
        response=_response(200, headers),
        chunks=_one_read(dumps(message).encode("utf-8"), t),
        end=End(t, "complete", None),
    )
    retry = copy.deepcopy(request)
    retry["params"]["inputResponses"] = {ASKED: {"action": "accept", "content": {"confirm": True}}}
    retry["params"]["requestState"] = STATE
    req = dict(ex.header.request)
    req["body"] = retry
    again = _with(ex, name=_named(ex, "retried"), request=req)
    return tape[:target] + [first, again] + tape[target + 1 :]


# the faults by quirk id (what makes each quirk generatable), and the generation each belongs to
FAULTS: dict[str, tuple[Fault, str]] = {
    QuirkId.MCP_SESSION_EXPIRED: (session_expired, GEN_2025),
    QuirkId.MCP_STREAM_DROPPED_AFTER_PRIMING: (stream_dropped_after_priming, GEN_2025),
    QuirkId.MCP_MESSAGES_BEFORE_RESPONSE: (messages_before_response, GEN_2025),
    QuirkId.MCP_JSON_INSTEAD_OF_SSE: (json_instead_of_sse, ""),
    QuirkId.MCP_STATELESS_SERVER: (stateless_server, GEN_2025),
    QuirkId.MCP_INPUT_REQUIRED: (input_required, MODERN),
}


def generations(tape: Tape) -> set[str]:
    """The protocol generations the session's requests speak."""
    return {_generation(ex) for ex in tape if _requests(ex)}


def not_applicable(tape: Tape, quirk_id: str) -> str | None:
    """Why a fault does not apply to the session (None when it does)."""
    fault, generation = FAULTS[quirk_id]
    if generation and generation not in generations(tape):
        other = "2026-07-28" if generation == GEN_2025 else "2025"
        return f"a fault of the {generation} generation; the session speaks {other}"
    try:
        fault(tape)
    except NotApplicable as exc:
        return str(exc)
    return None


def applicable(tape: Tape) -> list[str]:
    """The faults that apply to the session, in the catalogue's order."""
    return [qid for qid in FAULTS if not_applicable(tape, qid) is None]


def apply(tape: Tape, quirk_id: str) -> Tape:
    """The session with one fault applied (:class:`NotApplicable` when it does not apply)."""
    why = not_applicable(tape, quirk_id)
    if why is not None:
        raise NotApplicable(why)
    return FAULTS[quirk_id][0](tape)


def apply_all(tape: Tape, quirk_ids: list[str]) -> tuple[Tape, dict[str, list[str]]]:
    """The session with every fault of ``quirk_ids`` that applies, in the catalogue's order,
    each to what the ones before left (one that no longer applies is left out); and the faults
    applied, under the session's first exchange's name."""
    done: list[str] = []
    for qid in FAULTS:
        if qid not in quirk_ids:
            continue
        try:
            tape = apply(tape, qid)
        except NotApplicable:
            continue
        done.append(qid)
    return tape, ({tape[0].name: done} if done and tape else {})
