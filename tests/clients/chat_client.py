"""A small OpenAI chat-completions stream client for ``streamtool conform`` tests (stdlib only).

``python chat_client.py MODE`` streams one completion from ``$OPENAI_BASE_URL`` and prints
``{"text", "tool_calls", "finish_reason"}``. MODE:

- ``correct``: reads the whole body, parses SSE events, keys tool calls by ``index`` and, for a
  call sent without one, by its ``id``;
- ``naive``: the same, but drops tool calls that have no ``index``;
- ``per-read``: correct about tool calls, but parses each network read on its own (an event
  split between two reads is lost).
"""

import json
import os
import sys
import urllib.request


def events(lines):
    for line in lines:
        line = line.rstrip("\r")
        if line.startswith("data:"):
            data = line[5:].strip()
            if data and data != "[DONE]":
                try:
                    yield json.loads(data)
                except ValueError:
                    continue


def main() -> None:
    mode = sys.argv[1]
    body = json.dumps(
        {
            "model": os.environ.get("STREAMTOOL_MODEL", "gpt-4o-mini"),
            "stream": True,
            "messages": [{"role": "user", "content": "hi"}],
        }
    ).encode()
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"] + "/chat/completions",
        data=body,
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request) as resp:
        if mode == "per-read":
            lines = []
            while True:
                read = resp.read1(65536)
                if not read:
                    break
                lines.extend(read.decode("utf-8", errors="replace").split("\n"))
        else:
            lines = resp.read().decode("utf-8").split("\n")
    text = []
    calls = []  # [{"id", "name", "arguments"}]
    by_key = {}
    finish = None
    for chunk in events(lines):
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                text.append(delta["content"])
            for tc in delta.get("tool_calls") or []:
                if "index" not in tc and mode == "naive":
                    continue
                key = ("index", tc["index"]) if "index" in tc else ("id", tc.get("id"))
                call = by_key.get(key)
                if call is None or (tc.get("id") and call["id"] and tc["id"] != call["id"]):
                    call = {"id": tc.get("id"), "name": "", "arguments": ""}
                    calls.append(call)
                    by_key[key] = call
                fn = tc.get("function") or {}
                call["name"] = call["name"] or fn.get("name") or ""
                call["arguments"] += fn.get("arguments") or ""
            if choice.get("finish_reason"):
                finish = choice["finish_reason"]
    print(
        json.dumps(
            {
                "text": "".join(text),
                "tool_calls": [{"name": c["name"], "arguments": c["arguments"]} for c in calls],
                "finish_reason": finish,
            }
        )
    )


main()
