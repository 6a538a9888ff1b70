"""google-genai's Interactions stream as a ``streamtool conform`` client: text from the text
deltas, function calls from their start step and ``arguments_delta`` pieces, built-in tool calls
from their start step."""

import json
import os

from google import genai

client = genai.Client()  # GOOGLE_GEMINI_BASE_URL / GEMINI_API_KEY
text, calls, status = "", {}, None
for event in client.interactions.create(
    model=os.environ.get("STREAMTOOL_MODEL", "gemini-3-flash-preview"),
    input="What is the weather in Paris?",
    stream=True,
):
    if event.event_type == "step.start" and event.step.type == "function_call":
        calls[event.index] = [event.step.name, ""]
    elif event.event_type == "step.start" and event.step.type.endswith("_call"):
        # a built-in tool the API runs itself, named by its type
        arguments = event.step.arguments.model_dump(mode="json", exclude_none=True)
        calls[event.index] = [event.step.type.removesuffix("_call"), json.dumps(arguments)]
    elif event.event_type == "step.delta" and event.delta.type == "text":
        text += event.delta.text
    elif event.event_type == "step.delta" and event.delta.type == "arguments_delta":
        calls[event.index][1] += event.delta.arguments or ""
    elif event.event_type == "interaction.completed":
        status = event.interaction.status
print(
    json.dumps(
        {
            "text": text,
            "tool_calls": [{"name": n, "arguments": json.loads(a)} for n, a in calls.values()],
            "finish_reason": status,
        }
    )
)
