"""The bundled OpenAI-compatible recordings replay to their expected summaries."""

from __future__ import annotations

import json
import subprocess
import sys

from streamtool.core.drive.replay_file import replay_file

from .conftest import RECORDINGS


def summary(name: str, parser: str = "api_tool_call") -> dict:
    return replay_file(RECORDINGS / name, parser=parser).summary()


def quirks(s: dict) -> set[str]:
    return {q["id"] for q in s["quirks"]}


def calls(s: dict) -> list[tuple]:
    return [(i["id"], i["name"], i["arguments"]) for i in s["invocations"]]


def test_openai_parallel_tool_calls():
    s = summary("openai-parallel-tool-calls.jsonl")
    assert s["converter"] == "openai-chat"
    assert calls(s) == [
        ("call_9sLwQeP2kR7tYb3Nf6Hj1Dx0", "get_weather", {"city": "Paris", "unit": "celsius"}),
        ("call_Ab4Xk2Lm9Qw7Er1Ty5Ui8Op3", "get_weather", {"city": "Tokyo", "unit": "celsius"}),
    ]
    assert s["finish_reason"] == "tool_calls"
    assert s["usage"]["input_tokens"] == 82 and s["usage"]["output_tokens"] == 54
    assert s["text"] == "" and s["errors"] == []
    assert quirks(s) == {"usage_only_chunk"}
    assert s["stats"]["chunks"] == 10 and s["stats"]["ttft_s"] is not None


def test_deepseek_reasoning_then_tool_call():
    s = summary("deepseek-reasoning-then-tool-call.jsonl")
    assert s["reasoning"] == (
        "The user wants the weather in Berlin. I should call get_weather with city Berlin."
    )
    assert calls(s) == [("call_00_Qm7sT2vX9bN4kL1pR8wY5zC3", "get_weather", {"city": "Berlin"})]
    assert s["usage"]["cached_input_tokens"] == 256 and s["usage"]["reasoning_tokens"] == 24
    assert quirks(s) == {"reasoning_field_reasoning_content"}


def test_text_with_usage_chunk_and_utf8_split_across_reads():
    raw = (RECORDINGS / "openai-text-usage-chunk-utf8-split.jsonl").read_text()
    assert '"b64"' in raw  # the reads really cut characters apart
    s = summary("openai-text-usage-chunk-utf8-split.jsonl")
    assert s["text"] == 'Sure! In Japanese, "thank you" is ありがとう (arigatou) 🙏.'
    assert s["finish_reason"] == "stop"
    assert s["usage"] == {
        "input_tokens": 19,
        "output_tokens": 21,
        "total_tokens": 40,
        "cached_input_tokens": 0,
        "reasoning_tokens": 0,
    }
    assert quirks(s) == {"usage_only_chunk"}


def test_openrouter_error_inside_the_stream():
    s = summary("openrouter-error-in-stream.jsonl")
    assert s["text"] == "Here is the first part of the report. The second"
    assert s["finish_reason"] == "error"
    assert [e["kind"] for e in s["errors"]] == ["provider_error", "provider_error"]
    assert "Overloaded" in s["errors"][0]["message"]
    assert s["errors"][0]["detail"]["code"] == 502
    assert "sse_comment_keepalive" in quirks(s)
    assert s["stats"]["comments"] == 3


def test_openrouter_keepalive_comments_between_deltas():
    s = summary("openrouter-keepalive-comments-tool-call.jsonl")
    assert s["reasoning"] == "I need to list the files first."
    assert s["text"] == "Let me look at the folder."
    assert calls(s) == [
        ("functions.list_files:0", "list_files", {"path": "src", "recursive": True})
    ]
    assert quirks(s) == {"sse_comment_keepalive", "reasoning_field_reasoning"}
    assert s["stats"]["comments"] == 4


def test_vllm_crlf_framing_split_across_reads():
    lines = (RECORDINGS / "vllm-crlf-framing-tool-call.jsonl").read_text().splitlines()
    texts = [json.loads(line).get("text", "") for line in lines[1:-1]]
    assert sum(t.endswith("\r") for t in texts) >= 10  # CRLFs really are split across reads
    s = summary("vllm-crlf-framing-tool-call.jsonl")
    assert s["reasoning"] == "Okay, read the config file."
    assert s["text"] == "\n\n"
    assert calls(s) == [
        ("chatcmpl-tool-7c1e9f2a4b3d", "read_file", {"path": "config/settings.toml"})
    ]
    assert s["stats"]["crlf"] is True
    assert s["usage"] == {"input_tokens": 210, "total_tokens": 247, "output_tokens": 37}


def test_ollama_parallel_calls_sharing_index_zero():
    s = summary("ollama-parallel-calls-same-index.jsonl")
    assert [(c[0], c[2]["city"]) for c in calls(s)] == [
        ("call_k3jz8w1q", "北京"),
        ("call_p0x7n2m5", "上海"),
        ("call_r9c4v6b1", "广州"),
    ]
    assert quirks(s) == {"oai_parallel_same_index"}


def test_passthrough_keeps_text_and_names_ignored_tool_calls():
    s = summary("openrouter-keepalive-comments-tool-call.jsonl", parser="passthrough")
    assert s["invocations"] == []
    assert s["text"] == "Let me look at the folder."
    assert "tool_calls_ignored_by_parser" in quirks(s)


def test_quick_start_command_from_the_readme(tmp_path):
    """The README's first command replays a bundled recording, from any folder."""
    readme = (RECORDINGS.parent / "README.md").read_text()
    block = readme.split("## Quick start", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    first = block.splitlines()[0]
    args = first.split("&& streamtool ", 1)[1].split()
    assert args[0] == "replay"
    proc = subprocess.run(
        [sys.executable, "-m", "streamtool.cli", *args, "--format", "json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert [c["name"] for c in summary["invocations"]] == ["write_file"]
