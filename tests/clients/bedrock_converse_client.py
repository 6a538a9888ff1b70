"""boto3's ``converse_stream`` as a ``streamtool conform`` client (fake credentials, the
endpoint from ``STREAMTOOL_BASE_URL``)."""

import json
import os

import boto3

client = boto3.client(
    "bedrock-runtime",
    region_name="us-east-1",
    endpoint_url=os.environ["STREAMTOOL_BASE_URL"],
    aws_access_key_id="AKIDEXAMPLE",
    aws_secret_access_key="conform-not-a-secret",
)
response = client.converse_stream(
    modelId=os.environ.get("STREAMTOOL_MODEL") or "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
    messages=[{"role": "user", "content": [{"text": "What is the weather in Paris?"}]}],
)
text, calls, stop = "", {}, None
for event in response["stream"]:
    if "contentBlockStart" in event:
        start = event["contentBlockStart"]
        tool = start["start"]["toolUse"]
        calls[start["contentBlockIndex"]] = [tool["name"], ""]
    elif "contentBlockDelta" in event:
        delta = event["contentBlockDelta"]["delta"]
        text += delta.get("text", "")
        if "toolUse" in delta:
            calls[event["contentBlockDelta"]["contentBlockIndex"]][1] += delta["toolUse"]["input"]
    elif "messageStop" in event:
        stop = event["messageStop"]["stopReason"]
print(
    json.dumps(
        {
            "text": text,
            "tool_calls": [{"name": n, "arguments": json.loads(a)} for n, a in calls.values()],
            "finish_reason": stop,
        }
    )
)
