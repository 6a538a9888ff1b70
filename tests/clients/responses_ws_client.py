"""The openai SDK's Responses-over-WebSocket client (``client.responses.connect()``): it asks for
the weather in Paris, answers the function call the model makes in its next ``response.create``,
and prints ``{"text", "tool_calls", "finish_reason"}``. The SDK reaches the server through
``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``."""

from __future__ import annotations

import json
import os

import openai
from weather_tool import FLAT_TOOLS

MODEL = os.environ.get("STREAMTOOL_MODEL", "gpt-5")
TOOLS = FLAT_TOOLS


def converse(conn: object) -> dict[str, object]:
    """The session: the weather asked for, each function call answered in the next
    ``response.create``; what the client read."""
    text: list[str] = []
    calls: list[dict[str, object]] = []
    finish = None
    items: list[dict[str, object]] = [{"role": "user", "content": "What's the weather in Paris?"}]
    while True:
        conn.response.create(model=MODEL, input=items, tools=TOOLS)  # type: ignore[attr-defined]
        asked = []
        for event in conn:  # type: ignore[attr-defined]
            if event.type == "error":
                raise SystemExit(f"error event: {event.error.message}")
            if event.type == "response.output_text.delta":
                text.append(event.delta)
            elif event.type == "response.output_item.done" and event.item.type == "function_call":
                asked.append(event.item)
                arguments = json.loads(event.item.arguments)
                calls.append({"name": event.item.name, "arguments": arguments})
            elif event.type in ("response.completed", "response.failed", "response.incomplete"):
                finish = event.response.status
                break
        if not asked:
            return {"text": "".join(text), "tool_calls": calls, "finish_reason": finish}
        items = [
            *(
                {
                    "type": "function_call",
                    "call_id": c.call_id,
                    "name": c.name,
                    "arguments": c.arguments,
                }
                for c in asked
            ),
            *(
                {
                    "type": "function_call_output",
                    "call_id": c.call_id,
                    "output": json.dumps({"temperature_c": 18}),
                }
                for c in asked
            ),
        ]


def main() -> None:
    client = openai.OpenAI(max_retries=0)
    with client.responses.connect() as conn:
        answer = converse(conn)
    print(json.dumps(answer))


if __name__ == "__main__":
    main()
