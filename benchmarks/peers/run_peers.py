"""The same stream through the SDKs' and libraries' own stream accumulation, and through streamtool.

    python benchmarks/peers/run_peers.py [--mb 4] [--runs 5]

Run by hand, never in CI: the peers are not dependencies of streamtool. A peer that is not
installed is skipped (``pip install openai anthropic litellm pydantic-ai-slim``). Each stream is
written by ``benchmarks/generators.py`` (a long streamed ``write_file`` call after some text),
about ``--mb`` MB of SSE, and every peer gets its bytes through its own client and parsing where
it has one (an ``httpx.MockTransport`` answers the request with the stream; no network):

- openai SDK: ``client.chat.completions.stream(...)`` then ``get_final_completion()`` (its chat
  completion accumulation);
- anthropic SDK: ``client.messages.stream(...)`` then ``get_final_message()`` (``MessageStream``);
- LiteLLM: the chunks as ``litellm.ModelResponseStream`` objects, then
  ``litellm.stream_chunk_builder`` (its chunk parsing and accumulation);
- pydantic-ai: ``OpenAIChatModel.request_stream`` drained, then ``get()`` (its parts manager);
- streamtool: ``replay_file`` of the same body as a raw ``.sse`` file, then its summary.

In process, round-robin (every peer once per round), medians of ``--runs`` rounds; the time of
each is from the bytes to the finished message, imports and client creation excluded.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

# LiteLLM would fetch its model price list from the network at import: the copy it ships is used
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.generators import GENERATORS  # noqa: E402

MODEL_CHAT = "gpt-4o-2024-08-06"


def body_of(generator: str, mb: float, folder: Path) -> bytes:
    """The SSE body of a generated recording (its chunks' text, one after another)."""
    path = folder / f"{generator}.jsonl"
    GENERATORS[generator](path, int(mb * 1_000_000))
    out = []
    with open(path, encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            obj = json.loads(line)
            if obj.get("type") == "chunk":
                out.append(obj["text"])
    return "".join(out).encode("utf-8")


def payloads(body: bytes) -> list[dict[str, Any]]:
    out = []
    for line in body.decode("utf-8").split("\n"):
        if line.startswith("data:"):
            data = line[5:].strip()
            if data and data != "[DONE]":
                out.append(json.loads(data))
    return out


def sdk_client(sdk: Any, factory: Any, body: bytes, *, asynchronous: bool = False) -> Any:
    """``factory(api_key=..., http_client=...)`` with an HTTP client of the package the SDK
    uses (``httpx``, or ``httpx2`` in newer releases) whose transport answers with ``body``."""
    last: Exception | None = None
    for name in ("httpx", "httpx2"):
        try:
            hx = importlib.import_module(name)
        except ImportError:
            continue

        def answer(request: Any, hx: Any = hx) -> Any:
            return hx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

        kind = hx.AsyncClient if asynchronous else hx.Client
        try:
            return factory(api_key="x", http_client=kind(transport=hx.MockTransport(answer)))
        except TypeError as exc:  # the SDK takes the other package's clients
            last = exc
    raise RuntimeError(f"no HTTP client {sdk.__name__} accepts: {last}")


def openai_sdk(body: bytes) -> Callable[[], Any] | None:
    try:
        import openai
    except ImportError:
        return None
    client = sdk_client(openai, openai.OpenAI, body)

    def run() -> Any:
        with client.chat.completions.stream(
            model=MODEL_CHAT, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            return stream.get_final_completion()

    return run


def anthropic_sdk(body: bytes) -> Callable[[], Any] | None:
    try:
        import anthropic
    except ImportError:
        return None
    client = sdk_client(anthropic, anthropic.Anthropic, body)

    def run() -> Any:
        with client.messages.stream(
            model="claude-sonnet-4-5",
            max_tokens=64000,
            messages=[{"role": "user", "content": "hi"}],
        ) as stream:
            return stream.get_final_message()

    return run


def litellm_builder(body: bytes) -> Callable[[], Any] | None:
    try:
        import litellm
    except ImportError:
        return None

    def run() -> Any:
        chunks = [litellm.ModelResponseStream(**obj) for obj in payloads(body)]
        return litellm.stream_chunk_builder(chunks, messages=[{"role": "user", "content": "hi"}])

    return run


def pydantic_ai_parts(body: bytes) -> Callable[[], Any] | None:
    try:
        import openai
        from pydantic_ai.messages import ModelRequest, UserPromptPart
        from pydantic_ai.models import ModelRequestParameters
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider
    except ImportError:
        return None
    client = sdk_client(openai, openai.AsyncOpenAI, body, asynchronous=True)
    model = OpenAIChatModel(MODEL_CHAT, provider=OpenAIProvider(openai_client=client))
    messages = [ModelRequest(parts=[UserPromptPart("hi")])]

    async def drain() -> Any:
        async with model.request_stream(messages, None, ModelRequestParameters()) as response:
            async for _ in response:
                pass
            return response.get()

    def run() -> Any:
        return asyncio.run(drain())

    return run


def streamtool_replay(body: bytes, folder: Path, name: str) -> Callable[[], Any]:
    from streamtool.core.drive.replay_file import replay_file

    path = folder / f"{name}.sse"
    path.write_bytes(body)

    def run() -> Any:
        return replay_file(path, batched=True).summary()

    return run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=4.0, help="size of each stream in MB")
    ap.add_argument("--runs", type=int, default=5, help="rounds (median kept; at least 5)")
    opts = ap.parse_args()
    runs = max(5, opts.runs)
    warnings.simplefilter("ignore", DeprecationWarning)  # the SDKs' notes on model names
    with tempfile.TemporaryDirectory(prefix="streamtool-peers-") as tmp:
        folder = Path(tmp)
        chat = body_of("openai-chat", opts.mb, folder)
        messages = body_of("anthropic", opts.mb, folder)
        peers: dict[str, tuple[bytes, Callable[[], Any] | None]] = {
            "openai SDK (chat.completions.stream)": (chat, openai_sdk(chat)),
            "LiteLLM (stream_chunk_builder)": (chat, litellm_builder(chat)),
            "pydantic-ai (OpenAIChatModel parts manager)": (chat, pydantic_ai_parts(chat)),
            "streamtool (Chat Completions stream)": (chat, streamtool_replay(chat, folder, "c")),
            "anthropic SDK (MessageStream)": (messages, anthropic_sdk(messages)),
            "streamtool (Messages stream)": (messages, streamtool_replay(messages, folder, "m")),
        }
        times: dict[str, list[float]] = {name: [] for name in peers}
        for _, run in peers.values():  # once each before timing: caches, lazy imports
            if run is not None:
                run()
        for _ in range(runs):
            for name, (_, run) in peers.items():
                if run is not None:
                    start = time.perf_counter()
                    run()
                    times[name].append(time.perf_counter() - start)
        print(
            f"medians of {runs} rounds; load {os.getloadavg()[0]:.2f} (1 min); "
            f"Chat stream {len(chat) / 1e6:.1f} MB, Messages stream {len(messages) / 1e6:.1f} MB"
        )
        for name, (body, run) in peers.items():
            if run is None:
                print(f"  {name:<46} not installed: skipped")
                continue
            med = statistics.median(times[name])
            print(f"  {name:<46} {med:8.3f} s  {len(body) / 1e6 / med:8.1f} MB/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
