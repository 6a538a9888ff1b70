"""A recorded MCP session served again: ``serve TAPE``, a tape in the pytest plugin, conform.

Sans-IO: :class:`Player` is given the tape's exchanges (each a whole recording) and answers one
HTTP request at a time (method, path, headers, parsed body) with a :class:`Reply`: the status,
the headers, the body's reads (in parts, a part waiting for the client's answer to a server
request before it is sent), and what the request did to the sessions. The network edge
(``streamtool.core.net.sessions``) sends it.

The rules, as the transport's specification has them:

- A POST of requests is matched to a recorded exchange by its JSON-RPC method and params: the
  JSON-RPC ids, the session id, the progress token and ``_meta`` never count (nor a
  2026-07-28 retry's ``inputResponses``: its ``requestState`` tells the round; nor what an
  ``initialize`` says of the client: any client may start the session). Exchanges with
  the same request are played in recorded order, then again from the first. The answer is the
  recorded one, byte for byte, but for the values that are the client's: the ids of its
  requests, its progress tokens, its session id.
- A POST of notifications or of answers to the server's requests is accepted (202).
- Sessions (the 2025 generation, when the recorded server issued session ids): an
  ``initialize`` answered with a session id starts a new session under a fresh id; a later
  request without it is refused 400, with an unknown or ended one 404. DELETE ends a session; a
  recorded 404 played to a session's request ends it too (the server forgot it).
- SSE event ids are served as recorded; a GET with ``Last-Event-ID`` plays the recorded
  resumption from that event (or the recorded stream's events after it); a GET without it
  plays the recorded GET stream and keeps it open until its session ends.
- 2026-07-28: no sessions, GET and DELETE are 405, an ``initialize`` is answered with
  ``-32022`` (unsupported protocol version) when the tape holds only that generation.
- A request nothing recorded answers gets a JSON-RPC error naming the closest recorded
  exchange and where they differ.
"""

from __future__ import annotations

import copy
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ...exchange.playback import DROPPED_HEADERS
from ...exchange.tape_match import Exchange, Matcher, MatchRules
from ...model.records import RecordedExchange
from ...outputs.conformance import Expected
from . import jsonrpc as rpc
from .wire import Event, Reads, dumps, events_of, is_sse, splice, with_data

GEN_2025 = "2025"
MODERN = "2026-07-28"
UNSUPPORTED_VERSION = -32022  # the code of an unsupported protocol version (2026-07-28)
METHOD_NOT_FOUND = -32601
NO_MATCH = -32603  # what streamtool answers a request no recording answers
INVALID_REQUEST = -32600
JSON = ("content-type", "application/json")
SSE = ("content-type", "text/event-stream")
_NONE = "-"  # the key of the one session of a server that issues no session ids


def new_session_id() -> str:
    """A session id as the specification asks: globally unique, hard to guess."""
    return secrets.token_hex(16)


@dataclass(slots=True)
class Recorded:
    """One recorded exchange, ready to be served."""

    name: str
    order: int
    verb: str
    path: str
    headers: dict[str, str]  # the request's, lower-case names
    body: Any  # the request's JSON
    status: int
    response: list[tuple[str, str]]  # the response headers a client gets (lower-case names)
    reads: Reads
    complete: bool  # the recording ended properly
    generation: str
    session: str | None  # the recorded session id (the response's, else the request's)
    sse: bool
    events: list[Event]

    @property
    def last_event_id(self) -> str | None:
        return self.headers.get(rpc.LAST_EVENT_HEADER)


def recorded(exchange: RecordedExchange, order: int) -> Recorded:
    """A recording as the player serves it."""
    header = exchange.header
    request = header.request
    verb = str(request.get("method") or "POST").upper()
    raw_headers = request.get("headers")
    headers = {str(k).lower(): str(v) for k, v in (raw_headers or {}).items() if isinstance(v, str)}
    url = request.get("url")
    path = urlsplit(url).path if isinstance(url, str) and url else "/"
    body = request.get("body")
    status = header.response.get("status")
    status = status if isinstance(status, int) and 200 <= status <= 599 else 200
    answered = header.response.get("headers")
    answered = answered if isinstance(answered, dict) else {}
    response = [
        (str(k).lower(), v)
        for k, v in answered.items()
        if isinstance(v, str) and str(k).lower() not in DROPPED_HEADERS
    ]
    reads: Reads = [
        (c.t, c.data.encode("utf-8") if isinstance(c.data, str) else c.data)
        for c in exchange.chunks
    ]
    sse = is_sse(answered)
    session = rpc.header(answered, rpc.SESSION_HEADER) or headers.get(rpc.SESSION_HEADER)
    return Recorded(
        name=exchange.name,
        order=order,
        verb=verb,
        path=path or "/",
        headers=headers,
        body=body if verb == "POST" else None,
        status=status,
        response=response,
        reads=reads,
        complete=exchange.end is not None and exchange.end.reason == "complete",
        generation=rpc.generation(headers, body),
        session=session,
        sse=sse,
        events=events_of(b"".join(d for _, d in reads), sse),
    )


# -- what a request is matched by ----------------------------------------------------------
def match_body(body: Any) -> Any:
    """What matching compares of a POSTed body: each message's method and params, without the
    ``_meta`` (the progress token lives there) and a retry's ``inputResponses``."""

    def one(message: Any) -> Any:
        method = message.get("method")
        if method == "initialize":  # the client's name and capabilities are its own
            return {"method": method}
        params = rpc.params(message)
        kept = {k: v for k, v in params.items() if k not in ("_meta", "inputResponses")}
        return {"method": method, "params": kept}

    messages = rpc.messages_of(body)
    if isinstance(body, list):
        return [one(m) for m in messages]
    return one(body) if isinstance(body, dict) else None


def _endpoint(verb: str, path: str, generation: str, resumes: bool = False) -> str:
    if verb == "GET":
        return f"GET {path} {'resume' if resumes else generation}"
    if verb == "DELETE":
        return f"DELETE {path}"
    return f"POST {path} {generation}"


# -- replies -------------------------------------------------------------------------------
@dataclass(slots=True)
class Part:
    """Reads sent together; ``wait``: first, the client's answer to a server request (its
    key), or as long as the edge's timeout allows."""

    reads: Reads
    wait: str | None = None


@dataclass(slots=True)
class Reply:
    """What a request gets, and what it did."""

    status: int
    headers: list[tuple[str, str]]
    parts: list[Part] = field(default_factory=list)
    name: str | None = None  # the recording it plays (None: streamtool's own answer)
    cut: bool = False  # drop the connection after the body (the recording was cut off)
    hold: str | None = None  # keep the stream open until this session ends (a GET stream)
    answered: list[str] = field(default_factory=list)  # server requests answered (keys)
    ended: str | None = None  # the session this request ended
    note: str = ""  # one line for the log

    @property
    def size(self) -> int:
        return sum(len(d) for part in self.parts for _, d in part.reads)


def _json_reply(status: int, message: Any, headers: list[tuple[str, str]], note: str) -> Reply:
    data = dumps(message).encode("utf-8")
    return Reply(status, [JSON, *headers], [Part([(None, data)])], note=note)


def _error(status: int, request_id: Any, code: int, message: str, data: Any = None) -> Reply:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    body = {"jsonrpc": "2.0", "id": request_id, "error": error}
    return _json_reply(status, body, [], f"{status}: {message}")


@dataclass(slots=True)
class Session:
    """A session as served: its id, and the client's values for the recorded ones."""

    id: str | None  # None: the server issues no session ids (or 2026-07-28)
    recorded: str | None = None  # the recorded session it plays
    alive: bool = True
    ids: dict[str, Any] = field(default_factory=dict)  # recorded request id -> the client's
    tokens: dict[str, Any] = field(default_factory=dict)  # recorded progress token -> client's

    @property
    def key(self) -> str:
        return self.id or _NONE


# -- the player ----------------------------------------------------------------------------
class Player:
    """Answers MCP requests from a tape's recorded exchanges (see the module's docstring).

    ``new_id`` makes session ids (a test may make them predictable). Not thread-safe: the edge
    calls it from one event loop."""

    def __init__(
        self,
        exchanges: Sequence[RecordedExchange],
        *,
        new_id: Callable[[], str] = new_session_id,
    ) -> None:
        self.exchanges = [recorded(e, n) for n, e in enumerate(exchanges)]
        self.by_name = {r.name: r for r in self.exchanges}
        self.new_id = new_id
        self.matcher = Matcher(
            [Exchange(r.name, self._endpoint_of(r), self._body_of(r)) for r in self.exchanges],
            MatchRules(ignore=()),
        )
        self.generations = {r.generation for r in self.exchanges if r.verb == "POST"}
        # the recorded server issued session ids: requests must carry a live one
        self.uses_sessions = any(
            r.session is not None and r.generation == GEN_2025 for r in self.exchanges
        )
        self.sessions: dict[str, Session] = {}
        self.shared = Session(None)  # no session ids: every request is of this one
        self.served: list[str] = []  # the recordings played, in order
        self.misses: list[str] = []  # why requests were not matched

    @staticmethod
    def _endpoint_of(rec: Recorded) -> str:
        return _endpoint(rec.verb, rec.path, rec.generation, rec.last_event_id is not None)

    @staticmethod
    def _body_of(rec: Recorded) -> Any:
        if rec.verb == "GET" and rec.last_event_id is not None:
            return {"last-event-id": rec.last_event_id}
        if rec.verb == "POST":
            requests = [m for m in rpc.messages_of(rec.body) if rpc.kind(m) == rpc.REQUEST]
            return match_body(rec.body) if requests else None  # notifications: not matched
        return {}

    @property
    def paths(self) -> list[str]:
        """The paths the recorded session was served at."""
        return list(dict.fromkeys(r.path for r in self.exchanges))

    # -- a request ----------------------------------------------------------------------------
    def handle(self, verb: str, path: str, headers: dict[str, str], body: Any) -> Reply:
        """The reply to one request (``headers``: lower-case names; ``body``: parsed JSON)."""
        verb = verb.upper()
        if verb == "POST":
            return self._post(path, headers, body)
        generation = rpc.generation(headers, None)
        if generation == MODERN or (verb in ("GET", "DELETE") and self.generations == {MODERN}):
            reply = _error(
                405, None, INVALID_REQUEST, f"{verb} is not served: 2026-07-28 is stateless"
            )
            reply.headers.append(("allow", "POST"))
            return reply
        session, refusal = self._session_of(headers, initialize=False)
        if refusal is not None:
            return refusal
        assert session is not None
        if verb == "DELETE":
            return self._delete(path, session)
        if verb == "GET":
            return self._get(path, headers, session)
        return _error(405, None, INVALID_REQUEST, f"{verb} is not an MCP method")

    def _session_of(
        self, headers: dict[str, str], *, initialize: bool
    ) -> tuple[Session | None, Reply | None]:
        if not self.uses_sessions:
            return self.shared, None
        if initialize:
            return None, None  # made once the recorded answer names one
        given = headers.get(rpc.SESSION_HEADER)
        if given is None:
            return None, _error(400, None, INVALID_REQUEST, "Bad Request: Missing session ID")
        session = self.sessions.get(given)
        if session is None or not session.alive:
            return None, _error(404, None, INVALID_REQUEST, "Session not found")
        return session, None

    def _post(self, path: str, headers: dict[str, str], body: Any) -> Reply:
        messages = rpc.messages_of(body)
        if not messages or any(rpc.kind(m) == rpc.INVALID for m in messages):
            return _error(400, None, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message")
        generation = rpc.generation(headers, body)
        requests = [m for m in messages if rpc.kind(m) == rpc.REQUEST]
        initialize = any(m.get("method") == "initialize" for m in requests)
        if generation == MODERN:
            session: Session | None = self.shared
        else:
            session, refusal = self._session_of(headers, initialize=initialize)
            if refusal is not None:
                return refusal
        if not requests:  # notifications, answers to the server's requests: accepted
            live = session or self.shared
            keys = [f"{live.key}:{rpc.id_text(m['id'])}" for m in messages if rpc.is_answer(m)]
            return Reply(202, self._session_header(live), answered=keys, note="202 accepted")
        first = requests[0]
        if initialize and GEN_2025 not in self.generations and MODERN in self.generations:
            return _error(
                400,
                first.get("id"),
                UNSUPPORTED_VERSION,
                "Unsupported protocol version: this server speaks 2026-07-28 only",
                {"supported": [MODERN], "requested": rpc.params(first).get("protocolVersion")},
            )
        found = self.matcher.match(_endpoint("POST", path, generation), match_body(body))
        if found is None:
            return self._miss(path, generation, body, first)
        rec = self.by_name[found.name]
        if initialize:
            session = self._start(rec)
        assert session is not None
        return self._play(rec, session, requests)

    def _start(self, rec: Recorded) -> Session:
        """A new session for a recorded ``initialize`` (a fresh id when it issued one)."""
        if not self.uses_sessions:
            return self.shared
        issued = rpc.header(dict(rec.response), rpc.SESSION_HEADER)
        if issued is None:
            return self.shared
        session = Session(self.new_id(), recorded=issued)
        self.sessions[session.id or _NONE] = session
        return session

    def _miss(self, path: str, generation: str, body: Any, first: dict[str, Any]) -> Reply:
        endpoint = _endpoint("POST", path, generation)
        method = first.get("method")
        known = any(
            isinstance(m, dict) and m.get("method") == method
            for r in self.exchanges
            if r.generation == generation
            for m in rpc.messages_of(r.body)
        )
        if not known:
            code, why = METHOD_NOT_FOUND, f"the tape holds no {method} request"
            where = [p for p in self.paths]
            if path not in where:
                why = f"the tape holds no MCP exchange at {path} (it holds {', '.join(where)})"
            elif not any(r.generation == generation for r in self.exchanges):
                why += f" of the {generation} generation"
        else:
            code = NO_MATCH
            why = self.matcher.miss(endpoint, match_body(body), f"{path}").message
            why = why.replace("request on", f"{method} request on", 1)
        if generation in self.generations:  # else: the server does not speak it (a probe)
            self.misses.append(why)
        return _error(200, first.get("id"), code, f"streamtool serve: {why}")

    def _get(self, path: str, headers: dict[str, str], session: Session) -> Reply:
        resumes = headers.get(rpc.LAST_EVENT_HEADER)
        if resumes is not None:
            found = self.matcher.match(
                _endpoint("GET", path, GEN_2025, True), {"last-event-id": resumes}
            )
            if found is not None:
                return self._play(self.by_name[found.name], session, [])
            return self._resume(resumes, session)
        found = self.matcher.match(_endpoint("GET", path, GEN_2025), {})
        if found is None:
            reply = _error(405, None, INVALID_REQUEST, "Method Not Allowed: no GET stream recorded")
            reply.headers.append(("allow", "POST, DELETE"))
            return reply
        reply = self._play(self.by_name[found.name], session, [])
        if reply.status < 300:
            reply.hold = session.key
            reply.cut = False
        return reply

    def _resume(self, last: str, session: Session) -> Reply:
        """The events a recorded stream sent after the event ``last``: a resumption nobody
        recorded (the stream was dropped by a fault)."""
        for rec in self.exchanges:
            at = next((i for i, e in enumerate(rec.events) if e.id == last), None)
            if at is None or not rec.sse:
                continue
            rest = rec.events[at + 1 :]
            edits = self._edits(rest, session, rec.sse, base=rest[0].start if rest else 0)
            reads: Reads = [(None, b"".join(e.raw for e in rest))] if rest else []
            reads = splice(reads, edits) if reads else reads
            self.served.append(rec.name)
            headers = [SSE, *self._session_header(session)]
            return Reply(200, headers, [Part(reads)], name=rec.name, note=f"resumes {last}")
        return _error(404, None, INVALID_REQUEST, f"no recorded event has the id {last!r}")

    def _delete(self, path: str, session: Session) -> Reply:
        found = self.matcher.match(_endpoint("DELETE", path, GEN_2025), {})
        status = self.by_name[found.name].status if found is not None else 200
        if status < 300 and session.id is not None:
            session.alive = False
        ended = session.id if status < 300 else None
        headers = self._session_header(session)
        return Reply(status, headers, name=found.name if found else None, ended=ended)

    # -- playing a recorded exchange ----------------------------------------------------------
    def _session_header(self, session: Session) -> list[tuple[str, str]]:
        return [(rpc.SESSION_HEADER, session.id)] if session.id is not None else []

    def _play(self, rec: Recorded, session: Session, requests: list[dict[str, Any]]) -> Reply:
        self.served.append(rec.name)
        recorded_requests = [m for m in rpc.messages_of(rec.body) if rpc.kind(m) == rpc.REQUEST]
        for mine, theirs in zip(recorded_requests, requests, strict=False):
            session.ids[rpc.id_text(mine["id"])] = theirs["id"]
            token = _token(mine)
            if token is not None and _token(theirs) is not None:
                session.tokens[rpc.id_text(token)] = _token(theirs)
        headers = [(k, v) for k, v in rec.response if k != rpc.SESSION_HEADER]
        headers += self._session_header(session)
        parts = self._parts(rec, session)
        ended = None
        if rec.status == 404 and session.id is not None:
            session.alive = False  # the recorded server had forgotten the session
            ended = session.id
        what = ", ".join(rpc.describe(m) for m in requests) or rec.verb
        return Reply(
            rec.status,
            headers,
            parts,
            name=rec.name,
            cut=not rec.complete and rec.status < 400,
            ended=ended,
            note=f"{what} -> {rec.name} ({rec.status})",
        )

    def _parts(self, rec: Recorded, session: Session) -> list[Part]:
        """The body's reads with the client's values in, cut where a server request waits for
        the client's answer."""
        cuts: list[tuple[int, str]] = []  # (offset just past a server request, its key)
        if rec.sse:
            for event in rec.events:
                if rpc.kind(event.message) == rpc.REQUEST:
                    cuts.append((event.end, f"{session.key}:{rpc.id_text(event.message['id'])}"))
        parts: list[Part] = []
        start = 0
        wait: str | None = None
        for offset, key in [*cuts, (len(b"".join(d for _, d in rec.reads)), None)]:
            reads = _between(rec.reads, start, offset)
            events = [e for e in rec.events if start <= e.start and e.end <= offset]
            reads = splice(reads, self._edits(events, session, rec.sse, base=start))
            if parts:  # a part sent after a wait starts at once
                first = next((t for t, _ in reads if t is not None), 0.0)
                reads = [(None if t is None else max(t - first, 0.0), d) for t, d in reads]
            if reads or wait is not None:
                parts.append(Part(reads, wait))
            start, wait = offset, key
        return parts

    def _edits(
        self, events: list[Event], session: Session, sse: bool, *, base: int
    ) -> list[tuple[int, int, bytes]]:
        edits = []
        for event in events:
            changed = self._rewritten(event.message, session)
            if changed is not None:
                data = with_data(event, dumps(changed), sse)
                edits.append((event.start - base, event.end - base, data))
        return edits

    @staticmethod
    def _rewritten(message: Any, session: Session) -> Any:
        """The message with the client's ids and progress tokens, or None when it is as
        recorded."""
        if isinstance(message, list):
            changed = [Player._rewritten(m, session) for m in message]
            if all(c is None for c in changed):
                return None
            return [c if c is not None else m for c, m in zip(changed, message, strict=True)]
        what = rpc.kind(message)
        if what in (rpc.RESULT, rpc.ERROR):
            key = rpc.id_text(message["id"])
            if key in session.ids and session.ids[key] != message["id"]:
                return {**message, "id": session.ids[key]}
        elif what == rpc.NOTIFICATION and message["method"] == "notifications/progress":
            token = rpc.params(message).get("progressToken")
            recorded_token = rpc.id_text(token) if token is not None else None
            if recorded_token in session.tokens and session.tokens[recorded_token] != token:
                out = copy.deepcopy(message)
                out["params"]["progressToken"] = session.tokens[recorded_token]
                return out
        return None


def _token(message: dict[str, Any]) -> Any:
    meta = rpc.params(message).get("_meta")
    return meta.get("progressToken") if isinstance(meta, dict) else None


def _between(reads: Reads, start: int, stop: int) -> Reads:
    """The reads' bytes from ``start`` to ``stop`` (a read cut there keeps its time)."""
    out: Reads = []
    offset = 0
    for t, data in reads:
        lo, hi = offset, offset + len(data)
        offset = hi
        if hi <= start or lo >= stop:
            continue
        piece = data[max(start - lo, 0) : min(stop, hi) - lo]
        if piece:
            out.append((t, piece))
    return out


# -- what a client of the session should have understood (conform) -----------------------
TEXT_METHODS = ("tools/call", "resources/read", "prompts/get")


def result_text(result: Any) -> str:
    """The text a result carries, one line per item: a tool's text content, a resource's
    text contents, a prompt's text messages."""
    if not isinstance(result, dict):
        return ""
    texts: list[str] = []
    for key in ("content", "contents", "messages"):
        items = result.get(key)
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict) and isinstance(item.get("content"), dict):
                item = item["content"]  # a prompt's message
            if isinstance(item, dict) and isinstance(item.get("text"), str):
                texts.append(item["text"])
    return "\n".join(texts)


def _answer_of(rec: Recorded, request: dict[str, Any]) -> Any:
    """The answer to ``request`` in its exchange's own body, if it is there."""
    key = rpc.id_text(request["id"])
    for event in rec.events:
        for message in rpc.messages_of(event.message):
            if rpc.is_answer(message) and rpc.id_text(message["id"]) == key:
                return message
    return None


def expected(exchanges: Sequence[RecordedExchange]) -> Expected:
    """What a client that runs the recorded session understands: ``text``, the text of each
    final result of a ``tools/call``, ``resources/read`` or ``prompts/get`` in the order the
    client asked (one line per text item), and ``tool_calls``, each tool call answered (its
    ``name`` and ``arguments``). A round answered ``input_required`` is not final: the call
    sent again is. An answer that came on another exchange (a resumed stream) counts where it
    was asked."""
    played = [recorded(e, n) for n, e in enumerate(exchanges)]
    resumed: dict[tuple[str, str], Any] = {}  # (recorded session, id) -> an answer on a GET
    for rec in played:
        if rec.verb == "GET":
            for event in rec.events:
                for message in rpc.messages_of(event.message):
                    if rpc.is_answer(message):
                        resumed[(rec.session or _NONE, rpc.id_text(message["id"]))] = message
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for rec in played:
        for request in rpc.messages_of(rec.body) if rec.verb == "POST" else []:
            if rpc.kind(request) != rpc.REQUEST or request["method"] not in TEXT_METHODS:
                continue
            answer = _answer_of(rec, request)
            if answer is None and rec.status < 400:  # its stream was resumed by a GET
                answer = resumed.get((rec.session or _NONE, rpc.id_text(request["id"])))
            result = answer.get("result") if isinstance(answer, dict) else None
            if answer is None or (
                isinstance(result, dict) and result.get("resultType") == "input_required"
            ):
                continue  # not answered here (a 404), or not final (asked for input)
            if request["method"] == "tools/call":
                arguments = rpc.params(request).get("arguments")
                arguments = {} if arguments is None else arguments
                calls.append({"name": rpc.target(request), "arguments": arguments})
            text = result_text(result)
            if text:
                texts.append(text)
    return Expected(text="\n".join(texts), tool_calls=calls, finish_reason=None)
