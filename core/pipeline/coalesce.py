"""Joining the argument fragments that arrived in one network read. Sans-IO.

A provider sends a long tool call as thousands of tiny argument fragments, one event each, and a
network read often carries many of them. Everything in one read arrives at the same moment, so
the replay engine hands the handler one joined fragment per run instead of one per event: the
text is the same (chunking never changes meaning), the per-event work of the handler is not
repeated thousands of times, and a live view updates once per read, as it would on the wire.

Only *pure* continuation chunks are joined: a single argument fragment of an already announced
call, and nothing else (no id, name, completion, text, usage, finish reason, error or quirk), so
the order of everything else a sink sees is unchanged.

A batched replay (``ReplayEngine.feed_chunks``) goes further: the converters themselves emit a run
of hot events (argument fragments, text, reasoning) as one chunk (``Converter.feed_many``); what is
left to join here is what came by other paths.
"""

from __future__ import annotations

from ..model import ChunkResponse, ToolCallDelta


def _pure_fragment(chunk: ChunkResponse) -> ToolCallDelta | None:
    """The delta when ``chunk`` only continues an announced call's arguments, else ``None``."""
    calls = chunk.tool_calls
    if not calls or len(calls) != 1:
        return None
    delta = calls[0]
    if (
        delta.call_id is not None
        or delta.name is not None
        or delta.is_complete
        or delta.metadata
        or not delta.arguments_delta
        or chunk.content
        or chunk.reasoning is not None
        or chunk.usage
        or chunk.finish_reason is not None
        or chunk.is_complete
        or chunk.model
        or chunk.content_metadata
        or chunk.reasoning_metadata
        or chunk.errors
        or chunk.quirks
    ):
        return None
    return delta


def join_argument_runs(chunks: list[ChunkResponse]) -> list[ChunkResponse]:
    """``chunks`` with each run of pure fragments of one call joined into a single chunk."""
    if len(chunks) < 2:
        return chunks
    out: list[ChunkResponse] = []
    run: list[str] = []  # fragments of the run that ``out[-1]`` starts
    run_index = -1
    for chunk in chunks:
        delta = _pure_fragment(chunk)
        if delta is not None and delta.index == run_index:
            run.append(delta.arguments_delta or "")
            continue
        if len(run) > 1:
            out[-1] = _joined(run_index, run)
        out.append(chunk)
        if delta is None:
            run, run_index = [], -1
        else:
            run, run_index = [delta.arguments_delta or ""], delta.index
    if len(run) > 1:
        out[-1] = _joined(run_index, run)
    return out


def _joined(index: int, fragments: list[str]) -> ChunkResponse:
    return ChunkResponse(tool_calls=[ToolCallDelta(index, arguments_delta="".join(fragments))])
