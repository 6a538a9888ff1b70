"""The cohere SDK's ``chat_stream`` as a ``streamtool conform`` client (the base URL from
``STREAMTOOL_BASE_URL``)."""

import json
import os

import cohere

client = cohere.ClientV2(api_key="conform-key", base_url=os.environ["STREAMTOOL_BASE_URL"])
text, calls, finish = "", {}, None
for event in client.chat_stream(
    model=os.environ.get("STREAMTOOL_MODEL") or "command-a-03-2025",
    messages=[{"role": "user", "content": "What is the weather in Paris?"}],
):
    if event.type == "content-delta":
        text += event.delta.message.content.text or ""
    elif event.type == "tool-call-start":
        call = event.delta.message.tool_calls
        calls[event.index] = [call.function.name, call.function.arguments or ""]
    elif event.type == "tool-call-delta":
        calls[event.index][1] += event.delta.message.tool_calls.function.arguments or ""
    elif event.type == "message-end":
        finish = event.delta.finish_reason
print(
    json.dumps(
        {
            "text": text,
            "tool_calls": [{"name": n, "arguments": json.loads(a)} for n, a in calls.values()],
            "finish_reason": finish,
        }
    )
)
