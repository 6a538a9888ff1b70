"""The anthropic SDK's own stream accumulator as a ``streamtool conform`` client."""

import json
import os

import anthropic

client = anthropic.Anthropic(max_retries=0)  # ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY
with client.messages.stream(
    model=os.environ.get("STREAMTOOL_MODEL", "claude-sonnet-4-5"),
    max_tokens=1024,
    messages=[{"role": "user", "content": "What is the weather in Paris?"}],
) as stream:
    message = stream.get_final_message()
tools = [b for b in message.content if b.type in ("tool_use", "server_tool_use")]
print(
    json.dumps(
        {
            "text": "".join(b.text for b in message.content if b.type == "text"),
            "tool_calls": [{"name": b.name, "arguments": b.input} for b in tools],
            "finish_reason": message.stop_reason,
        }
    )
)
