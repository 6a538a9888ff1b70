"""Tapes for tests: hand-built exchanges and the two-turn tool loops the SDK tests run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.generators import recording_header
from streamtool.core.model.records import Chunk, End
from streamtool.core.recording.tape_index import IndexEntry, append_entry

from .clients.weather_tool import ANTHROPIC_TOOLS, OPENAI_TOOLS
from .helpers import run_captured
from .serve_helpers import chunks_of, recording

# a pytest run in a child process, of a sample project or one test of this suite's: no cache
# written into the project, and without hypothesis's pytest plugin (this suite's property tests
# need it, those runs do not; it costs about 0.8 s of every child run's start)
CHILD_PYTEST = (
    sys.executable,
    "-m",
    "pytest",
    "-p",
    "no:cacheprovider",
    "-p",
    "no:hypothesispytest",
)


def run_child_pytest(
    project: Path, args: list[str], env: dict[str, str], timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    """pytest (CHILD_PYTEST, quiet) run in ``project`` with ``env``, its output captured."""
    return run_captured([*CHILD_PYTEST, "-q", *args], cwd=project, env=env, timeout=timeout)


def notes_of(path: Path) -> list[dict[str, Any]]:
    """The JSON lines a child test wrote to ``path`` (none when it wrote no file)."""
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line) for line in lines]


OPENAI_QUESTION = "What's the weather in Paris and in Tokyo right now?"
ANTHROPIC_QUESTION = "What's the weather in Lisbon? Say what you do first."
OPENAI_MODEL = "gpt-4o-2024-08-06"
ANTHROPIC_MODEL = "claude-sonnet-4-6"
# turn 1 answers with tool calls, turn 2 with text: bundled recordings' bodies
OPENAI_TURN1 = "openai-parallel-tool-calls"
OPENAI_TURN2 = "openai-text-usage-chunk-utf8-split"
ANTHROPIC_TURN1 = "anthropic-text-then-tool-use"


def weather(arguments: dict[str, Any], temperature: str = "21°C") -> str:
    """The tool the loops run: deterministic, so a test can change its result on purpose."""
    return f"Weather in {arguments['city']}: sunny, result: {temperature}"


def anthropic_text_reads(text: str) -> list[tuple[float, str]]:
    """A short Anthropic Messages text stream, one event per read."""

    def event(name: str, data: dict[str, Any]) -> str:
        return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"

    message = {
        "id": "msg_01TurnTwoAnswer",
        "type": "message",
        "role": "assistant",
        "model": ANTHROPIC_MODEL,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 480, "output_tokens": 1},
    }
    half = len(text) // 2
    return [
        (0.30, event("message_start", {"type": "message_start", "message": message})),
        (
            0.31,
            event(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            ),
        ),
        *[
            (
                0.35 + i / 10,
                event(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": piece},
                    },
                ),
            )
            for i, piece in enumerate((text[:half], text[half:]))
        ],
        (0.6, event("content_block_stop", {"type": "content_block_stop", "index": 0})),
        (
            0.61,
            event(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": 14},
                },
            ),
        ),
        (0.62, event("message_stop", {"type": "message_stop"})),
    ]


def write_exchange(
    folder: Path,
    name: str,
    *,
    url: str,
    body: Any,
    reads: list[tuple[float | None, str | bytes]],
    provider: str = "openai",
    api: str = "chat.completions",
    status: int = 200,
    index: int | None = None,
) -> Path:
    """A recording of one exchange (request body included), and its index entry when ``index``
    is given."""
    folder.mkdir(parents=True, exist_ok=True)
    header = recording_header(
        provider, api, url=url, body=body, status=status, recorded_at="2026-11-22T10:00:00Z"
    )
    lines = [json.dumps(header)]
    lines += [json.dumps(Chunk(t, d).to_record()) for t, d in reads]
    last = next((t for t, _ in reversed(reads) if t is not None), 0.0)
    lines.append(json.dumps(End(last, "complete", None).to_record()))
    path = folder / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    if index is not None:
        append_entry(
            folder,
            IndexEntry(
                seq=index,
                file=name,
                api=api,
                provider=provider,
                path="/" + url.split("/", 3)[-1],
                model=body.get("model") if isinstance(body, dict) else None,
                status=status,
                end="complete",
                chunks=len(reads),
            ),
        )
    return path


def recorded_reads(name: str) -> list[tuple[float | None, str | bytes]]:
    from streamtool.core.recording.reader import Source

    return [(c.t, c.data) for c in Source(recording(name)).chunks()]


def body_bytes(path: Path) -> bytes:
    return b"".join(chunks_of(path))


# -- the loops -----------------------------------------------------------------------------------
def openai_turn2_messages(calls: list[dict[str, Any]], temperature: str) -> list[dict[str, Any]]:
    """The messages of turn 2: the question, the assistant's tool calls, one result per call."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": OPENAI_QUESTION}]
    messages.append({"role": "assistant", "content": None, "tool_calls": calls})
    for call in calls:
        args = json.loads(call["function"]["arguments"])
        messages.append(
            {"role": "tool", "tool_call_id": call["id"], "content": weather(args, temperature)}
        )
    return messages


def run_openai_loop(client: Any, temperature: str = "21°C") -> dict[str, Any]:
    """Turn 1: a tool call; the client runs the tool and sends the result; turn 2: the answer."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": OPENAI_QUESTION}]
    with client.chat.completions.stream(
        model=OPENAI_MODEL, messages=messages, tools=OPENAI_TOOLS
    ) as stream:
        first = stream.get_final_completion().choices[0].message
    calls = [
        {
            "id": c.id,
            "type": "function",
            "function": {"name": c.function.name, "arguments": c.function.arguments},
        }
        for c in first.tool_calls or []
    ]
    with client.chat.completions.stream(
        model=OPENAI_MODEL,
        messages=openai_turn2_messages(calls, temperature),
        tools=OPENAI_TOOLS,
    ) as stream:
        second = stream.get_final_completion().choices[0].message
    return {"calls": calls, "text": second.content}


def anthropic_turn2_messages(
    text: str, calls: list[dict[str, Any]], temperature: str
) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += [{"type": "tool_use", **c} for c in calls]
    results = [
        {"type": "tool_result", "tool_use_id": c["id"], "content": weather(c["input"], temperature)}
        for c in calls
    ]
    return [
        {"role": "user", "content": ANTHROPIC_QUESTION},
        {"role": "assistant", "content": content},
        {"role": "user", "content": results},
    ]


def run_anthropic_loop(client: Any, temperature: str = "21°C") -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": ANTHROPIC_QUESTION}]
    with client.messages.stream(
        model=ANTHROPIC_MODEL, max_tokens=1024, messages=messages, tools=ANTHROPIC_TOOLS
    ) as stream:
        first = stream.get_final_message()
    text = "".join(b.text for b in first.content if b.type == "text")
    calls = [
        {"id": b.id, "name": b.name, "input": b.input}
        for b in first.content
        if b.type == "tool_use"
    ]
    with client.messages.stream(
        model=ANTHROPIC_MODEL,
        max_tokens=1024,
        messages=anthropic_turn2_messages(text, calls, temperature),
        tools=ANTHROPIC_TOOLS,
    ) as stream:
        second = stream.get_final_message()
    answer = "".join(b.text for b in second.content if b.type == "text")
    return {"calls": calls, "first_text": text, "text": answer}


# -- hand-built tapes (what the proxy records) -----------------------------------------------------
OPENAI_CALLS = [
    {
        "id": "call_9sLwQeP2kR7tYb3Nf6Hj1Dx0",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city":"Paris","unit":"celsius"}'},
    },
    {
        "id": "call_Ab4Xk2Lm9Qw7Er1Ty5Ui8Op3",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city":"Tokyo","unit":"celsius"}'},
    },
]
ANTHROPIC_ANSWER = "Lisbon is sunny at 21°C right now."


def openai_tape(folder: Path, *, index: bool = True) -> list[Path]:
    url = "https://api.openai.com/v1/chat/completions"
    turn1 = {"model": OPENAI_MODEL, "messages": [{"role": "user", "content": OPENAI_QUESTION}]}
    turn1 |= {"tools": OPENAI_TOOLS, "stream": True}
    turn2 = dict(turn1, messages=openai_turn2_messages(OPENAI_CALLS, "21°C"))
    turns = [(turn1, OPENAI_TURN1), (turn2, OPENAI_TURN2)]
    return [
        write_exchange(
            folder,
            f"{seq:04d}-openai-chat-gpt-4o.jsonl",
            url=url,
            body=body,
            reads=recorded_reads(recorded),
            index=seq if index else None,
        )
        for seq, (body, recorded) in enumerate(turns, 1)
    ]


def anthropic_tape(folder: Path, first_text: str, calls: list[dict[str, Any]]) -> list[Path]:
    url = "https://api.anthropic.com/v1/messages"
    turn1 = {"model": ANTHROPIC_MODEL, "max_tokens": 1024, "stream": True}
    turn1 |= {"messages": [{"role": "user", "content": ANTHROPIC_QUESTION}]}
    turn1 |= {"tools": ANTHROPIC_TOOLS}
    turn2 = dict(turn1, messages=anthropic_turn2_messages(first_text, calls, "21°C"))
    kw: dict[str, Any] = {"url": url, "provider": "anthropic", "api": "messages"}
    return [
        write_exchange(
            folder,
            "0001-anthropic-messages-claude.jsonl",
            body=turn1,
            reads=recorded_reads(ANTHROPIC_TURN1),
            index=1,
            **kw,
        ),
        write_exchange(
            folder,
            "0002-anthropic-messages-claude.jsonl",
            body=turn2,
            reads=list(anthropic_text_reads(ANTHROPIC_ANSWER)),
            index=2,
            **kw,
        ),
    ]
