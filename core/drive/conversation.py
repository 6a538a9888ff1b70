"""A request's conversation, whatever wire API carried it: roles, text, tool calls and tool
results, read from (and written as) a request body of any API whose request part can: its
package's ``request`` module with ``read_conversation(body, builder)`` (a JSON object's messages
added to a :class:`Builder`) and ``request_body(conversation, model)`` (the streaming request body
a client of the API would send). :data:`APIS` names those APIs. Sans-IO: plain data in, plain data
out.

What the neutral form keeps is what a conversation means across APIs, and only that:

- a message's role (``system``, ``user``, ``assistant``, ``tool``: the results of tool calls),
  its text (the text parts joined, surrounding whitespace dropped), the calls an assistant
  message makes (name and parsed arguments) and the results a ``tool`` message gives;
- a result points at the call it answers by that call's position in the conversation (0: the
  first call made), not by id: each API spells ids its own way (``call_``, ``toolu_``, none), and
  a recording re-emitted in another API gives the client other ids;
- consecutive messages of one role are one message (Anthropic's tool results share a user
  message, Chat sends one ``tool`` message per result, Responses one item per call).

Left out: reasoning (thinking blocks, reasoning items, thought parts), images and other media,
the tool definitions, the model and the sampling parameters.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ..plugins import api_table, find_api, part

SYSTEM = "system"
USER = "user"
ASSISTANT = "assistant"
TOOL = "tool"


@dataclass(frozen=True, slots=True)
class Call:
    """A tool call: its name and its arguments as canonical JSON (the raw text when they are
    not JSON)."""

    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Result:
    """A tool result: the position of the call it answers (None: no call it could answer) and
    its text."""

    call: int | None
    text: str


@dataclass(frozen=True, slots=True)
class Message:
    role: str
    text: str = ""
    calls: tuple[Call, ...] = ()
    results: tuple[Result, ...] = ()

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "text": self.text}
        if self.calls:
            out["calls"] = [{"name": c.name, "arguments": c.arguments} for c in self.calls]
        if self.results:
            out["results"] = [{"call": r.call, "text": r.text} for r in self.results]
        return out


Conversation = tuple[Message, ...]


def canonical_arguments(value: Any) -> str:
    """Arguments as one string whatever their spelling: JSON text is parsed first."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def as_json(conversation: Conversation) -> list[dict[str, Any]]:
    """The conversation as plain JSON (what a miss compares and shows)."""
    return [m.as_json() for m in conversation]


def last_input(conversation: Conversation) -> str:
    """What a script's ``match`` reads: the text of the last user message, or the results of
    the last tool message (one per line), whichever comes last."""
    for message in reversed(conversation):
        if message.role == USER:
            return message.text
        if message.role == TOOL:
            return "\n".join(r.text for r in message.results)
    return ""


# -- reading -----------------------------------------------------------------------------------
class Builder:
    """Messages in, merged; calls numbered; results pointed at the calls they answer: what an
    API's ``read_conversation(body, builder)`` adds a request body's messages to."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.calls: list[tuple[str | None, str]] = []  # (id, name) by position
        self.answered: set[int] = set()

    def add(
        self,
        role: str,
        text: str = "",
        calls: Iterable[tuple[str | None, str, Any]] = (),
        results: Iterable[tuple[str | None, str | None, str]] = (),
    ) -> None:
        """``calls``: (id, name, arguments); ``results``: (call id, tool name, text)."""
        made = []
        for call_id, name, arguments in calls:
            self.calls.append((call_id, name))
            made.append(Call(name, canonical_arguments(arguments)))
        given = [Result(self._answers(cid, name), text_) for cid, name, text_ in results]
        text = text.strip()
        if not (text or made or given):
            return
        last = self.messages[-1] if self.messages else None
        if last is not None and last.role == role:
            joined = "\n".join(t for t in (last.text, text) if t)
            self.messages[-1] = Message(
                role, joined, last.calls + tuple(made), last.results + tuple(given)
            )
        else:
            self.messages.append(Message(role, text, tuple(made), tuple(given)))

    def _answers(self, call_id: str | None, name: str | None) -> int | None:
        """The call a result answers: the one with its id, else the first unanswered call of its
        name, else the first unanswered call."""
        found: int | None = None
        if call_id:
            found = next((i for i, (cid, _) in enumerate(self.calls) if cid == call_id), None)
        if found is None and name:
            found = next(
                (i for i, (_, n) in enumerate(self.calls) if n == name and i not in self.answered),
                None,
            )
        if found is None:
            found = next((i for i in range(len(self.calls)) if i not in self.answered), None)
        if found is not None:
            self.answered.add(found)
        return found


def text_of(content: Any, kinds: tuple[str, ...] = ("text",)) -> str:
    """The text of a content value: a string, or the text of its parts of the given types."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p["text"]
            for p in content
            if isinstance(p, dict) and p.get("type") in kinds and isinstance(p.get("text"), str)
        )
    return ""


def turns(value: Any, out: Builder) -> Iterator[dict[str, Any]]:
    """The objects of a list of turns (anything else in it skipped); a bare string is one
    user turn, added to ``out``."""
    if isinstance(value, str):
        out.add(USER, value)
        return
    for item in value or []:
        if isinstance(item, dict):
            yield item


@functools.cache
def _part(api: str) -> ModuleType | None:
    """The request part of the API ``api`` names when it reads and writes conversations."""
    row = find_api(api)
    module = part(row, "request") if row is not None else None
    if module is None or not all(
        callable(getattr(module, f, None)) for f in ("read_conversation", "request_body")
    ):
        return None
    return module


def has_conversation(api: str) -> bool:
    """Whether the API ``api`` names reads and writes conversations (its request part does)."""
    return _part(api) is not None


def conversation_apis() -> tuple[str, ...]:
    """The ids of the APIs whose request part reads and writes a conversation, in the table's
    order (every API's request part is imported: for listing them, not for one look-up)."""
    return tuple(api.id for api in api_table() if has_conversation(api.id))


def __getattr__(name: str) -> tuple[str, ...]:
    if name == "APIS":  # read when first asked for: it imports the API packages' request parts
        return conversation_apis()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _reader(api: str) -> ModuleType:
    module = _part(api)
    if module is None:
        raise KeyError(api)
    return module


def read_conversation(api: str, body: Any) -> Conversation:
    """The conversation of a request body sent to ``api`` (an id of :data:`APIS`); a body
    that is not a JSON object holds none. ``KeyError`` for another API."""
    reader = _reader(api).read_conversation
    out = Builder()
    if isinstance(body, dict):
        reader(body, out)
    return tuple(out.messages)


# -- writing -----------------------------------------------------------------------------------
def call_ids(conversation: Conversation, prefix: str) -> list[str]:
    """Made-up ids of the conversation's calls, by position: ``call_0000``..."""
    n = sum(len(m.calls) for m in conversation)
    return [f"{prefix}{i:04d}" for i in range(n)]


def call_arguments(call: Call) -> Any:
    """A call's arguments parsed (the raw text when they are not JSON)."""
    try:
        return json.loads(call.arguments)
    except ValueError:
        return call.arguments


def call_names(conversation: Conversation) -> list[str]:
    """The names of the conversation's calls, by position."""
    return [c.name for m in conversation for c in m.calls]


def numbered(
    conversation: Conversation, prefix: str
) -> Iterator[tuple[Message, list[tuple[Call, str]], list[tuple[Result, str, str]]]]:
    """Each message with its calls and its results numbered as a request body writes them:
    ``(message, [(call, its id)], [(result, the id and the name of the call it answers)])``,
    the ids made up by position (:func:`call_ids`; ``<prefix>none`` and no name for a result
    that answers no call)."""
    ids = call_ids(conversation, prefix)
    names = call_names(conversation)
    n = 0
    for m in conversation:
        calls = list(zip(m.calls, ids[n : n + len(m.calls)], strict=True))
        n += len(m.calls)
        results = [
            (r, ids[r.call], names[r.call]) if r.call is not None else (r, f"{prefix}none", "")
            for r in m.results
        ]
        yield m, calls, results


def request_body(conversation: Conversation, api: str, model: str = "model") -> dict[str, Any]:
    """The conversation as a streaming request body of ``api``: what a client of that API
    would send (ids made up: ``call_0000``, ``toolu_0000``...). ``KeyError`` for an API not
    in :data:`APIS`."""
    body: dict[str, Any] = _reader(api).request_body(conversation, model)
    return body
