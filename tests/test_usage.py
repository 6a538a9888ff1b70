"""Usage normalized to one meaning: ``output_tokens`` counts every generated token, reasoning
included, whatever the provider's own fields leave out."""

from __future__ import annotations

import pytest

from streamtool.core.drive.replay_file import replay_file
from streamtool.core.model.usage import normalize_usage

from .conftest import RECORDINGS


def usage(inp: int, out: int, total: int, reasoning: int) -> dict[str, int]:
    return {
        "input_tokens": inp,
        "output_tokens": out,
        "total_tokens": total,
        "reasoning_tokens": reasoning,
    }


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # OpenAI Chat Completions: completion_tokens already includes the reasoning
        (
            {
                "prompt_tokens": 20,
                "completion_tokens": 300,
                "total_tokens": 320,
                "completion_tokens_details": {"reasoning_tokens": 256},
            },
            usage(20, 300, 320, 256),
        ),
        # xAI: completion_tokens leaves the reasoning out; total_tokens shows it
        (
            {
                "prompt_tokens": 21,
                "completion_tokens": 9,
                "total_tokens": 292,
                "completion_tokens_details": {"reasoning_tokens": 262},
            },
            usage(21, 271, 292, 262),
        ),
        # Gemini: candidatesTokenCount is the answer only; the thoughts are added
        (
            {
                "promptTokenCount": 58,
                "candidatesTokenCount": 28,
                "thoughtsTokenCount": 94,
                "totalTokenCount": 180,
            },
            usage(58, 122, 180, 94),
        ),
        # Gemini while thinking: thoughts, no answer yet
        (
            {"promptTokenCount": 58, "thoughtsTokenCount": 40, "totalTokenCount": 98},
            usage(58, 40, 98, 40),
        ),
        # OpenAI Responses and Anthropic: output_tokens includes the reasoning
        (
            {
                "input_tokens": 10,
                "output_tokens": 50,
                "total_tokens": 60,
                "output_tokens_details": {"reasoning_tokens": 30},
            },
            usage(10, 50, 60, 30),
        ),
        ({"input_tokens": 10, "output_tokens": 5}, {"input_tokens": 10, "output_tokens": 5}),
    ],
)
def test_output_tokens_include_reasoning(raw: dict, expected: dict) -> None:
    assert normalize_usage(raw) == expected


@pytest.mark.parametrize(
    ("name", "output", "reasoning"),
    [
        ("xai-chat-reasoning-usage-excludes-reasoning.jsonl", 271, 262),
        ("gemini-thinking-then-function-call.jsonl", 285, 261),
        ("deepseek-reasoning-then-tool-call.jsonl", None, None),  # counted with reasoning already
    ],
)
def test_recordings(name: str, output: int | None, reasoning: int | None) -> None:
    got = replay_file(RECORDINGS / name).usage
    assert got is not None
    if output is not None:
        assert (got["output_tokens"], got["reasoning_tokens"]) == (output, reasoning)
    # one meaning everywhere: the total is the input plus every generated token
    assert got["total_tokens"] == got["input_tokens"] + got["output_tokens"]
