"""Gemini streamGenerateContent requests: the body ``record`` sends (tools and tool choice in
Gemini's shape), the key (``x-goog-api-key``, or ``?key=`` when asked) and ``alt=sse``, and a
conversation read from, and written as, a Gemini request body.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...drive.conversation import (
    ASSISTANT,
    SYSTEM,
    TOOL,
    USER,
    call_arguments,
    canonical_arguments,
    numbered,
    turns,
)
from ...exchange.requests import RequestOptions, ToolDef, add_tools, text_parts

if TYPE_CHECKING:
    from ...drive.conversation import Builder, Conversation

KEY_HEADER = "x-goog-api-key"
KEY_PREFIX = ""
KEY_QUERY = "key"
QUERY = (("alt", "sse"),)  # the stream as server-sent events
# a function response's object holding only one of these string fields is that text
_RESULT_KEYS = ("output", "result", "content")


def format_tools(tools: Sequence[ToolDef]) -> list[dict[str, Any]]:
    return [
        {
            "functionDeclarations": [
                {"name": t.name, "description": t.description, "parameters": t.parameters}
                for t in tools
            ]
        }
    ]


def format_tool_choice(choice: str) -> dict[str, Any]:
    """``auto|required|none|NAME`` as ``toolConfig``."""
    modes = {"auto": "AUTO", "required": "ANY", "none": "NONE"}
    if choice in modes:
        return {"functionCallingConfig": {"mode": modes[choice]}}
    return {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [choice]}}


def build_body(
    opts: RequestOptions, system: str | None, messages: list[dict[str, Any]], stream_usage: bool
) -> dict[str, Any]:
    contents = [
        {
            "role": "model" if m["role"] in ("assistant", "model") else "user",
            "parts": text_parts(m.get("content")),
        }
        for m in messages
    ]
    body: dict[str, Any] = {"contents": contents}
    if system is not None:
        body["systemInstruction"] = {"parts": [{"text": system}]}
    if opts.max_tokens is not None:
        body["generationConfig"] = {"maxOutputTokens": opts.max_tokens}
    return add_tools(body, opts, format_tools, format_tool_choice, "toolConfig")


# -- a request's conversation ----------------------------------------------------------------
def _texts(parts: Any) -> list[str]:
    return [
        p["text"]
        for p in parts or []
        if isinstance(p, dict) and isinstance(p.get("text"), str) and not p.get("thought")
    ]


def _result(response: Any) -> str:
    if isinstance(response, dict) and len(response) == 1:
        key, value = next(iter(response.items()))
        if key in _RESULT_KEYS and isinstance(value, str):
            return value
    return canonical_arguments(response)


def read_conversation(body: dict[str, Any], out: Builder) -> None:
    system = body.get("systemInstruction", body.get("system_instruction"))
    if isinstance(system, dict):
        out.add(SYSTEM, "".join(_texts(system.get("parts"))))
    elif isinstance(system, str):
        out.add(SYSTEM, system)
    for c in turns(body.get("contents"), out):
        parts = [p for p in c.get("parts") or [] if isinstance(p, dict)]
        text = "".join(_texts(parts))
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
                results.append((fr.get("id"), fr.get("name"), _result(fr.get("response"))))
        if results:
            out.add(TOOL, results=results)
        out.add(USER, text)


def request_body(conversation: Conversation, model: str) -> dict[str, Any]:
    """The body (the model is named in the path, not here)."""
    out: dict[str, Any] = {}
    contents: list[dict[str, Any]] = []
    for m, calls, results in numbered(conversation, "fc_"):
        if m.role == SYSTEM:
            out["systemInstruction"] = {"parts": [{"text": m.text}]}
        elif m.role == ASSISTANT:
            parts: list[dict[str, Any]] = [{"text": m.text}] if m.text else []
            parts += (
                {"functionCall": {"id": cid, "name": c.name, "args": call_arguments(c)}}
                for c, cid in calls
            )
            contents.append({"role": "model", "parts": parts})
        elif m.role == TOOL:
            answers = [
                {"functionResponse": {"id": cid, "name": name, "response": {"output": r.text}}}
                for r, cid, name in results
            ]
            contents.append({"role": "user", "parts": answers})
        else:
            contents.append({"role": "user", "parts": [{"text": m.text}]})
    out["contents"] = contents
    return out
