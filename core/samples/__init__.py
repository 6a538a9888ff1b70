"""Sample recordings shipped with streamtool, so that it can be tried with no keys and no files.

Each sample is a copy of one of the project's own recordings, installed with the package::

    from streamtool.core.samples import sample_path
    replay_file(sample_path("write-file"))

``streamtool samples`` lists them; ``streamtool replay --sample NAME`` replays one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True, slots=True)
class Sample:
    name: str
    file: str  # the file name in this folder (the name of the recording it copies)
    about: str  # (its API is the one its header names)

    @property
    def path(self) -> Path:
        return HERE / self.file


SAMPLES: dict[str, Sample] = {
    s.name: s
    for s in (
        Sample(
            name="write-file",
            file="openai-write-file.jsonl",
            about="a write_file call streaming a 13-line Python file, path first",
        ),
        Sample(
            name="anthropic-write-file",
            file="anthropic-write-file.jsonl",
            about="text, then a write_file tool_use streaming a pytest file",
        ),
        Sample(
            name="patch-file",
            file="openai-patch-file-markers.jsonl",
            about="a patch_file call whose patch is wrapped in __START_PATCH__ markers",
        ),
        Sample(
            name="parallel-tool-calls",
            file="openai-parallel-tool-calls.jsonl",
            about="two tool calls streamed in parallel",
        ),
        Sample(
            name="reasoning",
            file="deepseek-reasoning-then-tool-call.jsonl",
            about="DeepSeek reasoning_content, then a tool call",
        ),
        Sample(
            name="keepalive-comments",
            file="openrouter-keepalive-comments-tool-call.jsonl",
            about="OpenRouter keep-alive SSE comments around a tool call",
        ),
        Sample(
            name="rate-limit",
            file="openai-http-429-rate-limit.jsonl",
            about="an HTTP 429 rate-limit error instead of a stream",
        ),
    )
}

DEFAULT_SAMPLE = "write-file"


class UnknownSample(LookupError):
    """A sample name streamtool does not ship."""

    def __init__(self, name: str) -> None:
        super().__init__(f"no sample named {name!r}; samples: {', '.join(SAMPLES)}")
        self.name = name


def get_sample(name: str) -> Sample:
    sample = SAMPLES.get(name)
    if sample is None:
        raise UnknownSample(name)
    return sample


def sample_path(name: str) -> Path:
    """The installed file of the sample ``name`` (raises :class:`UnknownSample`)."""
    return get_sample(name).path
