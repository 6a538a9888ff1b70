"""Benchmark: streaming a big write_file call (issue 5, "Speed").

Generates, in a temporary folder, streams with ONE write_file tool call whose ``content`` is 1 MB
and 8 MB of source code, its JSON argument text cut into 48-byte fragments, in the Anthropic
Messages and OpenAI Chat Completions wire formats. Then, in the same run:

- times ``streamtool replay FILE --format json`` on each (best of ``--repeat`` runs), minus the
  time of the same command on a tiny recording (interpreter start-up, imports, output);
- times the anthropic SDK accumulating the 1 MB Anthropic body: the real ``anthropic`` client
  streams it from a local HTTP server (127.0.0.1) and ``get_final_message()`` returns the call
  with its input accumulated (the SDK re-parses the whole growing JSON on every fragment).

Requirements printed with the figures: on the Anthropic body (the one the SDK accumulates)
streamtool at 1 MB is at least 50x faster than the SDK, and for both wire formats its 8 MB time is
at most 9x its 1 MB time. The OpenAI-chat speed-up against the same SDK figure is printed for
scale: that body is about twice as large and parsing its events' JSON alone takes most of the
time. A wire format whose converter is not registered is reported as skipped. Exit code 1 when
a measured requirement fails.

    python -m benchmarks.bench_file_streaming [--repeat 5] [--sdk-repeat 1] [--read-bytes 4096]
                                              [--stages]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from benchmarks.generators import recording_header
from benchmarks.raw_http import http_server
from streamtool.core.converters import CONVERTERS

MB = 1_000_000
FRAGMENT = 48
MIN_SPEEDUP = 50.0
MAX_GROWTH = 9.0

CODE = (
    "def handler(event, context):\n"
    '    """Process one event and return the result."""\n'
    "    items = [x * 2 for x in range(100) if x % 3 == 0]\n"
    '    message = f"processed {len(items)} items: \\"ok\\""\n'
    "    return {'status': 200, 'body': message}\n"
    "\n"
)


def file_content(size: int) -> str:
    return (CODE * (size // len(CODE) + 1))[:size]


def argument_fragments(size: int) -> list[str]:
    text = json.dumps({"path": "src/handler.py", "content": file_content(size)})
    return [text[i : i + FRAGMENT] for i in range(0, len(text), FRAGMENT)]


# -- wire formats ---------------------------------------------------------------------------
def anthropic_events(fragments: list[str]) -> Iterator[str]:
    def event(obj: dict[str, Any]) -> str:
        return f"event: {obj['type']}\ndata: " + json.dumps(obj, separators=(",", ":")) + "\n\n"

    yield event(
        {
            "type": "message_start",
            "message": {
                "model": "claude-sonnet-4-5-20250929",
                "id": "msg_01BenchFileStreaming0001",
                "type": "message",
                "role": "assistant",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 812, "output_tokens": 1},
            },
        }
    )
    yield event(
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {
                "type": "tool_use",
                "id": "toolu_01BenchFileStreaming01",
                "name": "write_file",
                "input": {},
            },
        }
    )
    for fragment in fragments:
        yield event(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": fragment},
            }
        )
    yield event({"type": "content_block_stop", "index": 0})
    yield event(
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": len(fragments)},
        }
    )
    yield event({"type": "message_stop"})


def openai_chat_events(fragments: list[str]) -> Iterator[str]:
    base = {
        "id": "chatcmpl-BenchFileStreaming0001",
        "object": "chat.completion.chunk",
        "created": 1763700000,
        "model": "gpt-4o-2024-08-06",
        "system_fingerprint": "fp_bench0001",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return "data: " + json.dumps({**base, "choices": [choice]}, separators=(",", ":")) + "\n\n"

    head = {"index": 0, "id": "call_BenchFileStreaming01", "type": "function"}
    head["function"] = {"name": "write_file", "arguments": ""}
    yield chunk({"role": "assistant", "content": None, "tool_calls": [head]})
    for fragment in fragments:
        yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": fragment}}]})
    yield chunk({}, "tool_calls")
    yield "data: [DONE]\n\n"


FORMATS = {
    "anthropic": (
        anthropic_events,
        "anthropic",
        "messages",
        "https://api.anthropic.com/v1/messages",
    ),
    "openai-chat": (
        openai_chat_events,
        "openai",
        "chat.completions",
        "https://api.openai.com/v1/chat/completions",
    ),
}


def write_recording(path: Path, fmt: str, size: int, read_bytes: int) -> tuple[int, bytes]:
    """Write the recording; returns (number of SSE events, the raw body)."""
    make_events, provider, api, url = FORMATS[fmt]
    request = {"method": "POST", "url": url, "headers": {}, "body": {"stream": True}}
    header = recording_header(provider, api, request=request)
    events = list(make_events(argument_fragments(size)))
    t = 0.4
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(header) + "\n")
        read: list[str] = []
        length = 0
        for event in events:
            read.append(event)
            length += len(event)
            if length >= read_bytes:
                fh.write(json.dumps({"type": "chunk", "t": round(t, 4), "text": "".join(read)}))
                fh.write("\n")
                read, length, t = [], 0, t + 0.002
        if read:
            fh.write(json.dumps({"type": "chunk", "t": round(t, 4), "text": "".join(read)}) + "\n")
        fh.write(json.dumps({"type": "end", "t": round(t, 4), "reason": "complete"}) + "\n")
    return len(events), "".join(events).encode("utf-8")


# -- timing -----------------------------------------------------------------------------------
def replay_seconds(path: Path, repeat: int, expect_content: int | None) -> float:
    entry = "from streamtool.cli.main import main; main()"
    command = [sys.executable, "-c", entry, "replay", str(path), "--format", "json"]
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, check=False)
        best = min(best, time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"replay of {path.name} failed: {done.stderr.decode()[-500:]}")
    if expect_content is not None:
        summary = json.loads(done.stdout)
        content = summary["invocations"][0]["arguments"]["content"]
        if len(content) != expect_content or summary["errors"]:
            raise SystemExit(f"replay of {path.name} gave a wrong result")
    return best


def stage_breakdown(path: Path, converter: str, repeat: int) -> list[tuple[str, float]]:
    """In-process time of the pipeline cut after each stage (best of ``repeat``), in seconds."""
    from streamtool.core.converters import make_converter
    from streamtool.core.drive.replay_file import replay_file
    from streamtool.core.handlers import make_handler
    from streamtool.core.model import ChunkResponse
    from streamtool.core.pipeline.coalesce import join_argument_runs
    from streamtool.core.recording.reader import Source
    from streamtool.core.wire.sse import SSEDecoder, SSEEvent

    def through(stage: int) -> float:
        start = time.perf_counter()
        if stage == 4:
            replay_file(path)
            return time.perf_counter() - start
        decoder, conv = SSEDecoder(), make_converter(converter)
        handler = make_handler("api_tool_call")
        for chunk in Source(path).chunks():
            batch: list[ChunkResponse] = []
            for item in decoder.feed(chunk.data):
                if stage == 0:
                    continue
                if stage == 1:
                    if type(item) is SSEEvent and item.data[:1] == "{":
                        json.loads(item.data)
                    continue
                batch += conv.feed(item)
            if stage == 3:
                for response in join_argument_runs(batch):
                    handler.feed(response)
        return time.perf_counter() - start

    names = ["read + SSE decode", "+ JSON of each event", "+ converter", "+ handler", "engine"]
    return [(names[i], min(through(i) for _ in range(repeat))) for i in range(5)]


def sdk_seconds(body: bytes, expect_content: int) -> float:
    """The anthropic SDK streaming ``body`` from a local server and accumulating the message."""
    import anthropic

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    with http_server(Handler) as url:
        client = anthropic.Anthropic(base_url=url, api_key="bench", max_retries=0)
        warnings.simplefilter("ignore", DeprecationWarning)  # the model name's end-of-life notice
        start = time.perf_counter()
        with client.messages.stream(
            model="claude-sonnet-4-5-20250929",
            max_tokens=64000,
            messages=[{"role": "user", "content": "write the file"}],
        ) as stream:
            message = stream.get_final_message()
        seconds = time.perf_counter() - start
    arguments: Any = getattr(message.content[0], "input", None)
    content = arguments.get("content") if isinstance(arguments, dict) else None
    if not isinstance(content, str) or len(content) != expect_content:
        raise SystemExit("the SDK baseline did not accumulate the call")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per replay; the best counts")
    parser.add_argument(
        "--read-bytes", type=int, default=4096, help="SSE bytes per recorded network read"
    )
    parser.add_argument(
        "--sdk-repeat", type=int, default=1, help="runs of the SDK baseline; the best counts"
    )
    parser.add_argument(
        "--stages", action="store_true", help="also print an in-process split by stage at 1 MB"
    )
    args = parser.parse_args()

    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-file-streaming-") as tmp:
        folder = Path(tmp)
        tiny = folder / "tiny.jsonl"
        write_recording(tiny, "openai-chat", 200, args.read_bytes)
        startup = replay_seconds(tiny, args.repeat + 2, None)
        print(f"fragments of {FRAGMENT} bytes, reads of ~{args.read_bytes} bytes")
        print(f"start-up (replay of a tiny recording): {startup * 1000:.0f} ms, subtracted below")

        body_1mb = b""
        results: dict[tuple[str, int], float] = {}
        for fmt in FORMATS:
            for size in (MB, 8 * MB):
                path = folder / f"{fmt}-{size // MB}mb.jsonl"
                events, body = write_recording(path, fmt, size, args.read_bytes)
                if fmt == "anthropic" and size == MB:
                    body_1mb = body
                label = f"{fmt:<12} {size // MB} MB ({events} events, {len(body) / MB:.1f} MB SSE)"
                if fmt not in CONVERTERS:
                    print(f"{label}: skipped, the {fmt!r} converter is not registered")
                    continue
                seconds = replay_seconds(path, args.repeat, size) - startup
                results[fmt, size] = seconds
                print(f"{label}: streamtool {seconds * 1000:.0f} ms")
                if args.stages and size == MB:
                    split = stage_breakdown(path, fmt, args.repeat)
                    parts = [f"{name} {t * 1000:.0f} ms" for name, t in split]
                    print("    in-process: " + ", ".join(parts))

        sdk = min(sdk_seconds(body_1mb, MB) for _ in range(max(1, args.sdk_repeat)))
        print(f"anthropic SDK, 1 MB Anthropic body (client + get_final_message): {sdk:.2f} s")
        for fmt in FORMATS:
            if (fmt, MB) not in results:
                continue
            one, eight = results[fmt, MB], results[fmt, 8 * MB]
            speedup, growth = sdk / one, eight / one
            ok_growth = growth <= MAX_GROWTH
            if fmt == "anthropic":
                # the requirement compares the SDK with streamtool on the same (Anthropic) body
                ok_speed = speedup >= MIN_SPEEDUP
                verdict = f"(need >= {MIN_SPEEDUP:.0f}x) {'ok' if ok_speed else 'FAIL'}"
            else:
                # another wire format, a larger body: shown for scale, not a requirement
                ok_speed = True
                verdict = "(another body: for scale only)"
            print(
                f"{fmt:<12} speed-up vs SDK at 1 MB: {speedup:.0f}x {verdict}; 8 MB / 1 MB: "
                f"{growth:.1f}x (need <= {MAX_GROWTH:.0f}x) {'ok' if ok_growth else 'FAIL'}"
            )
            if not ok_speed:
                failures.append(f"{fmt} speed-up")
            if not ok_growth:
                failures.append(f"{fmt} growth")
    if failures:
        print("requirements not met: " + ", ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
