"""The openai SDK's own stream accumulator as a ``streamtool conform`` client: the README's
example, line for line."""

import json
import os

from openai import OpenAI

client = OpenAI(max_retries=0)  # base URL and key come from OPENAI_BASE_URL / OPENAI_API_KEY
with client.chat.completions.stream(
    model=os.environ.get("STREAMTOOL_MODEL", "gpt-4o-mini"),
    messages=[{"role": "user", "content": "What is the weather in Paris?"}],
) as stream:
    choice = stream.get_final_completion().choices[0]
calls = choice.message.tool_calls or []
answer = {
    "text": choice.message.content or "",
    "refusal": choice.message.refusal or "",  # a refusal is not text (delta.refusal)
    "tool_calls": [{"name": c.function.name, "arguments": c.function.arguments} for c in calls],
    "finish_reason": choice.finish_reason,
}
print(json.dumps(answer))
