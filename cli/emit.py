"""``replay --emit API``: the replayed stream's meaning written as another wire API's stream,
to stdout (``openai-sse`` is the older name of ``openai-chat``)."""

import functools
import sys
from typing import IO

import typer

from streamtool.core.engine.replay import Item, ReplayEngine
from streamtool.core.model.vocabulary import ErrorKind

from .errors import warn


@functools.cache
def emit_choices() -> tuple[str, ...]:
    """The built-in APIs that have an encoder, then their encoders' older names: the choices
    ``--help`` lists. Found without loading an encoder, and only when asked for (help, a value
    given, completion): a replay without ``--emit`` reads no API's manifest for them."""
    from streamtool.core.outputs.emit import builtin_names

    ids, older = builtin_names()
    return (*ids, *older)


def complete_emit(incomplete: str) -> list[str]:
    """``--emit``'s shell completion: the choices."""
    return [name for name in emit_choices() if name.startswith(incomplete)]


def check_emit(value: str | None) -> str | None:
    """``--emit``'s value: a choice, or a name of a plugin's API that has an encoder (looked up
    only when the value is no choice: the installed plugins are read then, as for
    ``--converter``)."""
    if value is None:
        return value
    names = emit_choices()
    if value in names:
        return value
    from streamtool.core.outputs.emit import api_id, builtin_names

    found = api_id(value)
    if found is not None and found not in builtin_names()[0]:
        return value
    listed = ", ".join(names[:-1]) + f" or {names[-1]}"
    raise typer.BadParameter(f"{value!r} is not one of {listed}.")


class EmitSink:
    """Gathers the replay's meaning, then writes it as the API's stream."""

    needs_segments = True  # the reply's text is the engine's segments'

    def __init__(self, api: str, out: IO[bytes] | None = None) -> None:
        self.api = api
        from streamtool.core.outputs.emit import ReplyBuilder

        self.out = out if out is not None else sys.stdout.buffer
        self.builder = ReplyBuilder()

    def on_items(self, engine: ReplayEngine, t: float | None, items: list[Item]) -> None:
        self.builder.feed(engine, t, items)

    def close(self, engine: ReplayEngine) -> None:
        reply = self.builder.build(engine)
        # stdout carries no HTTP status: an HTTP error is written in the stream, where each API
        # reports an error that comes after its headers
        reply.status = 200
        from streamtool.core.outputs.emit import emitter

        emitted = emitter(self.api)(reply)
        self.out.write(emitted.body.encode("utf-8"))
        self.out.flush()
        carried = (
            ErrorKind.PROVIDER_ERROR,
            ErrorKind.TRUNCATED,
            ErrorKind.SEGMENT,
        )  # segment: the call carries it
        n = sum(1 for e in engine.errors if e.kind not in carried)
        if n:
            warn(
                f"{engine.source}: {n} error{'s' if n > 1 else ''} in the stream, not part of the "
                "emitted stream (see --format json)"
            )


class OpenAISSESink(EmitSink):
    """``--emit openai-sse`` (the older name of ``--emit openai-chat``)."""

    def __init__(self, out: IO[bytes] | None = None) -> None:
        super().__init__("openai-sse", out)


def make_emit_sink(emit: str) -> EmitSink:
    return EmitSink(emit)
