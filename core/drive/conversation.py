"""A request's conversation, whatever wire API carried it: roles, text, tool calls and tool
results, read from (and written as) an OpenAI Chat, OpenAI Responses, Anthropic Messages or
Gemini request body. Sans-IO: plain data in, plain data out.

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

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

SYSTEM = "system"
USER = "user"
ASSISTANT = "assistant"
TOOL = "tool"
APIS = ("openai-chat", "openai-responses", "anthropic", "gemini")
# a Gemini function response's object holding only one of these string fields is that text
_RESULT_KEYS = ("output", "result", "content")


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
class _Builder:
    """Messages in, merged; calls numbered; results pointed at the calls they answer."""

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


def _text_of(content: Any, kinds: tuple[str, ...] = ("text",)) -> str:
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


def _chat(body: dict[str, Any], out: _Builder) -> None:
    for m in body.get("messages") or []:
        if not isinstance(m, dict):
            continue
        role = m.get("role")
        content = m.get("content")
        if role in ("system", "developer"):
            out.add(SYSTEM, _text_of(content))
        elif role == "user":
            out.add(USER, _text_of(content))
        elif role == "assistant":
            calls = []
            for c in m.get("tool_calls") or []:
                fn = c.get("function") if isinstance(c, dict) else None
                if isinstance(fn, dict):
                    calls.append((c.get("id"), str(fn.get("name", "")), fn.get("arguments", "")))
            legacy = m.get("function_call")
            if isinstance(legacy, dict):
                calls.append((None, str(legacy.get("name", "")), legacy.get("arguments", "")))
            out.add(ASSISTANT, _text_of(content), calls)
        elif role in ("tool", "function"):
            call_id = m.get("tool_call_id")
            name = m.get("name") if role == "function" else None
            out.add(TOOL, results=[(call_id, name, _text_of(content))])


_RESPONSES_TEXT = ("input_text", "output_text", "text")


def _turns(value: Any, out: _Builder) -> Iterator[dict[str, Any]]:
    """The objects of a list of turns (anything else in it skipped); a bare string is one
    user turn, added to ``out``."""
    if isinstance(value, str):
        out.add(USER, value)
        return
    for item in value or []:
        if isinstance(item, dict):
            yield item


def _responses(body: dict[str, Any], out: _Builder) -> None:
    instructions = body.get("instructions")
    if isinstance(instructions, str):
        out.add(SYSTEM, instructions)
    for item in _turns(body.get("input"), out):
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            text = _text_of(item.get("content"), _RESPONSES_TEXT)
            if role in ("system", "developer"):
                out.add(SYSTEM, text)
            elif role == "user":
                out.add(USER, text)
            elif role == "assistant":
                out.add(ASSISTANT, text)
        elif kind == "function_call":
            call = (item.get("call_id"), str(item.get("name", "")), item.get("arguments", ""))
            out.add(ASSISTANT, calls=[call])
        elif kind == "function_call_output":
            output = item.get("output")
            text = output if isinstance(output, str) else _text_of(output, _RESPONSES_TEXT)
            out.add(TOOL, results=[(item.get("call_id"), None, text)])


def _anthropic(body: dict[str, Any], out: _Builder) -> None:
    out.add(SYSTEM, _text_of(body.get("system")))
    for m in body.get("messages") or []:
        if not isinstance(m, dict):
            continue
        role, content = m.get("role"), m.get("content")
        if isinstance(content, str):
            out.add(USER if role == "user" else ASSISTANT, content)
            continue
        blocks = [b for b in content or [] if isinstance(b, dict)]
        if role == "assistant":
            calls = [
                (b.get("id"), str(b.get("name", "")), b.get("input", {}))
                for b in blocks
                if b.get("type") == "tool_use"
            ]
            out.add(ASSISTANT, _text_of(blocks), calls)
            continue
        results = [
            (b.get("tool_use_id"), None, _text_of(b.get("content")))
            for b in blocks
            if b.get("type") == "tool_result"
        ]
        if results:
            out.add(TOOL, results=results)
        out.add(USER, _text_of(blocks))


def _gemini_result(response: Any) -> str:
    if isinstance(response, dict) and len(response) == 1:
        key, value = next(iter(response.items()))
        if key in _RESULT_KEYS and isinstance(value, str):
            return value
    return canonical_arguments(response)


def _gemini(body: dict[str, Any], out: _Builder) -> None:
    system = body.get("systemInstruction", body.get("system_instruction"))
    if isinstance(system, dict):
        out.add(SYSTEM, "".join(_gemini_texts(system.get("parts"))))
    elif isinstance(system, str):
        out.add(SYSTEM, system)
    for c in _turns(body.get("contents"), out):
        parts = [p for p in c.get("parts") or [] if isinstance(p, dict)]
        text = "".join(_gemini_texts(parts))
        if c.get("role") == "model":
            calls = []
            for p in parts:
                fc = p.get("functionCall", p.get("function_call"))
                if isinstance(fc, dict):
                    calls.append((fc.get("id"), str(fc.get("name", "")), fc.get("args", {})))
            out.add(ASSISTANT, text, calls)
            continue
        results = []
        for p in parts:
            fr = p.get("functionResponse", p.get("function_response"))
            if isinstance(fr, dict):
                results.append((fr.get("id"), fr.get("name"), _gemini_result(fr.get("response"))))
        if results:
            out.add(TOOL, results=results)
        out.add(USER, text)


def _gemini_texts(parts: Any) -> list[str]:
    return [
        p["text"]
        for p in parts or []
        if isinstance(p, dict) and isinstance(p.get("text"), str) and not p.get("thought")
    ]


_READERS = {
    "openai-chat": _chat,
    "openai-responses": _responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
}


def read_conversation(api: str, body: Any) -> Conversation:
    """The conversation of a request body sent to ``api`` (an id of :data:`APIS`); a body
    that is not a JSON object holds none. ``KeyError`` for another API."""
    reader = _READERS[api]
    out = _Builder()
    if isinstance(body, dict):
        reader(body, out)
    return tuple(out.messages)


# -- writing -----------------------------------------------------------------------------------
def _ids(conversation: Conversation, prefix: str) -> list[str]:
    n = sum(len(m.calls) for m in conversation)
    return [f"{prefix}{i:04d}" for i in range(n)]


def _arguments(call: Call) -> Any:
    try:
        return json.loads(call.arguments)
    except ValueError:
        return call.arguments


def _names(conversation: Conversation) -> list[str]:
    return [c.name for m in conversation for c in m.calls]


def request_body(conversation: Conversation, api: str, model: str = "model") -> dict[str, Any]:
    """The conversation as a streaming request body of ``api``: what a client of that API
    would send (ids made up: ``call_0000``, ``toolu_0000``...)."""
    names = _names(conversation)
    if api == "openai-chat":
        ids = _ids(conversation, "call_")
        messages: list[dict[str, Any]] = []
        n = 0
        for m in conversation:
            if m.role == TOOL:
                for r in m.results:
                    cid = ids[r.call] if r.call is not None else "call_none"
                    messages.append({"role": "tool", "tool_call_id": cid, "content": r.text})
            elif m.role == ASSISTANT:
                msg: dict[str, Any] = {"role": "assistant", "content": m.text or None}
                if m.calls:
                    msg["tool_calls"] = [
                        {
                            "id": ids[n + i],
                            "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments},
                        }
                        for i, c in enumerate(m.calls)
                    ]
                    n += len(m.calls)
                messages.append(msg)
            else:
                messages.append({"role": m.role, "content": m.text})
        return {"model": model, "messages": messages, "stream": True}
    if api == "openai-responses":
        ids = _ids(conversation, "call_")
        items: list[dict[str, Any]] = []
        n = 0
        for m in conversation:
            if m.role == TOOL:
                for r in m.results:
                    cid = ids[r.call] if r.call is not None else "call_none"
                    items.append({"type": "function_call_output", "call_id": cid, "output": r.text})
                continue
            if m.text or not m.calls:
                kind = "output_text" if m.role == ASSISTANT else "input_text"
                items.append(
                    {
                        "type": "message",
                        "role": m.role,
                        "content": [{"type": kind, "text": m.text}],
                    }
                )
            for c in m.calls:
                items.append(
                    {
                        "type": "function_call",
                        "call_id": ids[n],
                        "name": c.name,
                        "arguments": c.arguments,
                    }
                )
                n += 1
        return {"model": model, "input": items, "stream": True}
    if api == "anthropic":
        ids = _ids(conversation, "toolu_")
        body: dict[str, Any] = {"model": model, "max_tokens": 1024, "stream": True}
        msgs: list[dict[str, Any]] = []
        n = 0
        for m in conversation:
            if m.role == SYSTEM:
                body["system"] = m.text
            elif m.role == ASSISTANT:
                blocks: list[dict[str, Any]] = [{"type": "text", "text": m.text}] if m.text else []
                for c in m.calls:
                    blocks.append(
                        {"type": "tool_use", "id": ids[n], "name": c.name, "input": _arguments(c)}
                    )
                    n += 1
                msgs.append({"role": "assistant", "content": blocks})
            elif m.role == TOOL:
                msgs.append(
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": ids[r.call] if r.call is not None else "toolu_none",
                                "content": r.text,
                            }
                            for r in m.results
                        ],
                    }
                )
            else:
                msgs.append({"role": "user", "content": m.text})
        body["messages"] = msgs
        return body
    if api == "gemini":
        ids = _ids(conversation, "fc_")
        out: dict[str, Any] = {}
        contents: list[dict[str, Any]] = []
        n = 0
        for m in conversation:
            if m.role == SYSTEM:
                out["systemInstruction"] = {"parts": [{"text": m.text}]}
            elif m.role == ASSISTANT:
                parts: list[dict[str, Any]] = [{"text": m.text}] if m.text else []
                for c in m.calls:
                    call = {"id": ids[n], "name": c.name, "args": _arguments(c)}
                    parts.append({"functionCall": call})
                    n += 1
                contents.append({"role": "model", "parts": parts})
            elif m.role == TOOL:
                contents.append(
                    {
                        "role": "user",
                        "parts": [
                            {
                                "functionResponse": {
                                    "id": ids[r.call] if r.call is not None else "fc_none",
                                    "name": names[r.call] if r.call is not None else "",
                                    "response": {"output": r.text},
                                }
                            }
                            for r in m.results
                        ],
                    }
                )
            else:
                contents.append({"role": "user", "parts": [{"text": m.text}]})
        out["contents"] = contents
        return out
    raise KeyError(api)
