"""Converter ``kimi-k2``: an OpenAI-compatible stream plus Kimi K2's special-token tool calls.

Everything ``openai-chat`` reads is read the same way (structured ``tool_calls`` included). On top
of that, the content and the reasoning text each pass through a
:class:`~streamtool.core.apis.openai_chat.kimi_tokens.KimiTokenScanner`: each Kimi tool-call section
becomes ordinary tool calls (through the shared tracker, so they share one index space with
structured calls, in order of appearance), and the text around a section stays content (or
reasoning).

- call id: the text between ``<|tool_call_begin|>`` and ``<|tool_call_argument_begin|>``,
  trimmed, verbatim (``functions.get_weather:0``: clients must send it back unchanged);
- tool name: ``get_weather`` out of ``functions.get_weather:0``, ``get_weather:0`` or
  ``functions_get_weather_0``; a bare counter (``0``) names its tool only through the request's
  ``tools`` (the only tool offered, or the only one whose parameters cover the arguments);
  otherwise the call's text is given back with an error;
- arguments double-encoded as a JSON string are decoded (quirk ``kimi_args_double_encoded``);
  arguments that are not JSON are passed on as they are (the handler keeps them raw, with an
  error).

Quirks: ``kimi_tokens_in_content`` / ``kimi_tokens_in_reasoning`` where sections were found, and
the scanner's repairs (reference/provider-quirks.md Q-KM-1, Q-KM-2).
"""

from __future__ import annotations

from typing import Any

from ...converters.prose_runs import TEXT
from ...model import ChunkResponse, ToolCallDelta
from ...model.quirk_ids import QuirkId
from ...model.records import Header
from ...model.vocabulary import ErrorKind
from ...wire import fastjson
from .decoder import OpenAIChatConverter
from .kimi_tokens import Call, KimiTokenScanner, Note, Piece, Text, decode_double_encoded
from .kimi_tokens import parse_call_id as parse_call_id

# the text a Kimi tool-call section was found in: its quirk, and where that text is
_FOUND = {
    "content": (QuirkId.KIMI_TOKENS_IN_CONTENT, "delta.content"),
    "reasoning": (QuirkId.KIMI_TOKENS_IN_REASONING, "the reasoning text"),
}


class KimiK2Converter(OpenAIChatConverter):
    name = "kimi-k2"
    sniff_kimi_tokens = False  # this converter reads the tokens instead
    # a text's tokens may complete the calls (a section begins): their fragments are taken
    # one by one, not when a run ends
    defers_takes = False
    # its hot path keeps plain argument text back until a run ends: read by read, every chunk
    # goes through _payload, so the arguments stream as they come
    reads_hot_first = False

    def __init__(self) -> None:
        super().__init__()
        self.content_scanner = KimiTokenScanner()
        self.reasoning_scanner = KimiTokenScanner()
        # hot reads of plain argument text kept for the content scanner, given to it joined
        # before anything else (_give_held); what it may still hold so (plain_room), less them
        # (None: ask it)
        self._held: list[str] = []
        self._room: int | None = None
        self.tools: list[tuple[str, frozenset[str] | None]] = []

    def use_header(self, header: Header) -> None:
        super().use_header(header)
        self.tools = offered_tools(header.request.get("body"))

    # -- the OpenAI payload, then the tokens inside its text ---------------------------------
    def _payload(self, obj: Any) -> list[ChunkResponse]:
        chunks = super()._payload(obj)
        if len(chunks) == 1:
            return self._split(chunks[0])
        out: list[ChunkResponse] = []
        for chunk in chunks:
            out.extend(self._split(chunk))
        return out

    def _scan(
        self, kind: str, text: str, scan: KimiTokenScanner, other: str, held: KimiTokenScanner
    ) -> list[tuple[str, Piece]]:
        """The pieces of ``text`` (a ``kind`` channel's: reasoning or content) after those the
        ``other`` channel's scanner still held (its text has ended where this one's begins)."""
        pieces = [(other, p) for p in held.flush_tail()] if held.tail else []
        before = scan.sections
        pieces.extend((kind, p) for p in scan.feed(text))
        if scan.sections != before:
            self._found(kind)
        return pieces

    def _split(self, chunk: ChunkResponse) -> list[ChunkResponse]:
        """Route ``chunk``'s text through the scanners; one chunk per run of pieces, in order."""
        content, reasoning = chunk.content, chunk.reasoning
        rscan, cscan = self.reasoning_scanner, self.content_scanner
        if not content and not reasoning and not (chunk.tool_calls and (rscan.tail or cscan.tail)):
            return [chunk]
        self._give_held()
        pieces: list[tuple[str, Piece]] = []
        if reasoning:
            pieces.extend(self._scan("reasoning", reasoning, rscan, "content", cscan))
        if content:
            pieces.extend(self._scan("content", content, cscan, "reasoning", rscan))
        if chunk.tool_calls:
            # a structured call comes next: a held marker prefix was ordinary text
            pieces.extend(("reasoning", p) for p in rscan.flush_tail())
            pieces.extend(("content", p) for p in cscan.flush_tail())
        return self._chunks_of(chunk, pieces)

    def _chunks_of(
        self, chunk: ChunkResponse, pieces: list[tuple[str, Piece]]
    ) -> list[ChunkResponse]:
        """The chunks that carry ``chunk`` once its text was scanned into ``pieces``."""
        plain = _plain(pieces)
        if plain is not None:
            # the common case, no marker anywhere near: the chunk goes on unchanged
            chunk.reasoning, chunk.content = plain
            return [chunk]
        out = self._assemble(pieces)
        if not out:
            out.append(ChunkResponse())
        first, last = out[0], out[-1]
        first.model = chunk.model
        first.content_metadata = chunk.content_metadata
        first.reasoning_metadata = chunk.reasoning_metadata
        if chunk.tool_calls:
            if last.tool_calls is None:
                last.tool_calls = []
            last.tool_calls.extend(chunk.tool_calls)
        last.usage = chunk.usage
        last.finish_reason = chunk.finish_reason
        last.is_complete = chunk.is_complete
        if chunk.finish_reason == "stop" and self.tracker.calls:
            self.quirk(
                QuirkId.FINISH_STOP_WITH_TOOLS, 'finish_reason "stop" although tool calls were made'
            )
        return out

    # -- the hot path of feed_many ----------------------------------------------------------
    def _hot_content(self, content: str) -> tuple[Any, ...] | list[ChunkResponse]:
        """What :meth:`_split` does with a chunk that holds only ``content``; the text comes
        out as a run's text when the scanner gave it back whole and noted nothing. Text inside
        a call's arguments that the content scanner would take as plain (most events of a Kimi
        stream) is kept for it, and given to it joined before anything else reads it
        (:meth:`_give_held`)."""
        if self.reasoning_scanner.tail:
            return self._split(ChunkResponse(content=content))
        room = self._room
        if room is None:
            room = self._room = self.content_scanner.plain_room()
        if len(content) <= room and "<" not in content:
            # inside a call's arguments: the scanner's plain read, kept for it
            self._room = room - len(content)
            self._held.append(content)
            if not self._quirks and not self._errors:  # (nothing noted: once an event)
                return ()
            return self._plain_read(content, "")
        if self._held:
            self._give_held()
        plain = self.content_scanner.feed_plain(content)
        if plain is None:
            self._room = None
            return self._scanned_content(content)
        return self._plain_read(content, plain)

    def _scanned_content(self, content: str) -> tuple[Any, ...] | list[ChunkResponse]:
        """:meth:`_hot_content` of a text the content scanner must read piece by piece."""
        cscan = self.content_scanner
        before = cscan.sections
        pieces = cscan.feed(content)
        if cscan.sections != before:
            self._found("content")
        if not self._quirks and not self._errors:
            if not pieces:
                return ()
            if len(pieces) == 1 and type(pieces[0]) is Text:
                return TEXT, pieces[0].text
        return self._chunks_of(ChunkResponse(content=content), [("content", p) for p in pieces])

    def _plain_read(self, content: str, plain: str) -> tuple[Any, ...] | list[ChunkResponse]:
        """:meth:`_hot_content` of a read the content scanner took as plain (``plain``: what
        :meth:`KimiTokenScanner.feed_plain` returned for it)."""
        if not self._quirks and not self._errors:
            return (TEXT, plain) if plain else ()
        pieces: list[tuple[str, Piece]] = [("content", Text(plain))] if plain else []
        return self._chunks_of(ChunkResponse(content=content), pieces)

    def _give_held(self) -> None:
        """Give the content scanner the plain argument text kept for it (the same state as
        read by read: :meth:`KimiTokenScanner.plain_room`); its room is asked again."""
        self._room = None
        if self._held:
            held = self._held[0] if len(self._held) == 1 else "".join(self._held)
            self._held = []
            taken = self.content_scanner.feed_plain(held)
            assert taken == "", "held text the scanner did not hold"

    def _fragments_pass(self) -> bool:
        # a structured call's chunk flushes a marker prefix held back by a scanner
        return not (self.reasoning_scanner.tail or self.content_scanner.tail)

    def _assemble(self, pieces: list[tuple[str, Piece]]) -> list[ChunkResponse]:
        """ChunkResponses for ``pieces`` in order (the handler reads a chunk's reasoning, then
        its content, then its tool calls: a new chunk starts where that order would break)."""
        out: list[ChunkResponse] = []
        cur: ChunkResponse | None = None
        for stream, piece in pieces:
            if isinstance(piece, Note):
                self._note(piece)
                continue
            if isinstance(piece, Call):
                result = self._call(piece)
                if isinstance(result, list):
                    if cur is None or cur.tool_calls is None:
                        cur = ChunkResponse(tool_calls=[])
                        out.append(cur)
                    assert cur.tool_calls is not None
                    cur.tool_calls.extend(result)
                    continue
                piece = result
            if stream == "reasoning":
                if cur is None or cur.content or cur.tool_calls is not None:
                    cur = ChunkResponse()
                    out.append(cur)
                cur.reasoning = (cur.reasoning or "") + piece.text
            else:
                if cur is None or cur.tool_calls is not None:
                    cur = ChunkResponse()
                    out.append(cur)
                cur.content += piece.text
        return out

    def _found(self, stream: str) -> None:
        quirk_id, where = _FOUND[stream]
        self.quirk(quirk_id, f"Kimi K2 tool-call tokens in {where}, read as tool calls")

    def _note(self, note: Note) -> None:
        if isinstance(note.kind, ErrorKind):
            self.error(note.kind, note.message, note.detail)
        else:
            self.quirk(note.kind, note.message)

    def _call(self, call: Call) -> list[ToolCallDelta] | Text:
        """A scanned call as tracker deltas, or its text given back when it names no tool.

        The model wrote this call after any structured call still open, so those are complete
        (their deltas come first): invocations stay in the order the model wrote the calls.
        """
        call_id, arguments = call.call_id, call.arguments
        name, form = parse_call_id(call_id)
        if form == "underscore":
            self.quirk(
                QuirkId.KIMI_NATIVE_IDS,
                f"call id {call_id!r} in the functions_NAME_IDX form (kept verbatim)",
            )
        elif form == "counter":
            name = infer_tool(self.tools, arguments)
            if name is not None:
                self.quirk(
                    QuirkId.KIMI_BARE_COUNTER_ID,
                    f"call id {call_id!r} names no tool; {name!r} inferred from the tools offered",
                )
        if name is None:
            why = "names no tool" if form == "counter" else "is not functions.NAME:IDX"
            self.error(
                ErrorKind.KIMI_BAD_CALL_ID,
                f"Kimi tool call id {call_id!r} {why}; its text is given back as ordinary text",
                call_id,
            )
            return Text(call.raw)
        decoded = decode_double_encoded(arguments)
        if decoded is not None:
            self.quirk(
                QuirkId.KIMI_ARGS_DOUBLE_ENCODED,
                f"call {call_id}: arguments sent as a JSON string holding JSON; decoded",
            )
            arguments = decoded
        deltas = self.tracker.complete_all()
        tracked = self.tracker.open()
        delta = self.tracker.update(
            tracked, call_id=call_id, name=name, arguments=arguments or None, complete=True
        )
        assert delta is not None  # a new call announces itself
        deltas.append(delta)
        return deltas

    # -- end of stream ---------------------------------------------------------------------
    def on_finish(self) -> list[ChunkResponse]:
        self._give_held()
        pieces: list[tuple[str, Piece]] = []
        pieces.extend(("reasoning", p) for p in self.reasoning_scanner.finish())
        pieces.extend(("content", p) for p in self.content_scanner.finish())
        out = self._assemble(pieces) if pieces else []
        out.extend(super().on_finish())
        return out


def _plain(pieces: list[tuple[str, Piece]]) -> tuple[str | None, str] | None:
    """``(reasoning, content)`` when ``pieces`` are at most one reasoning text followed by at
    most one content text (nothing to split), else ``None``."""
    reasoning: str | None = None
    content: str | None = None
    for stream, piece in pieces:
        if not isinstance(piece, Text):
            return None
        if stream == "reasoning":
            if reasoning is not None or content is not None:
                return None
            reasoning = piece.text
        else:
            if content is not None:
                return None
            content = piece.text
    return reasoning, content or ""


def offered_tools(body: Any) -> list[tuple[str, frozenset[str] | None]]:
    """The tools a request offered: ``(name, parameter names or None)`` per tool."""
    if not isinstance(body, dict):
        return []
    tools = body.get("tools")
    if not isinstance(tools, list):
        tools = body.get("functions")  # the legacy functions list
    if not isinstance(tools, list):
        return []
    out: list[tuple[str, frozenset[str] | None]] = []
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        fn = tool.get("function")
        if not isinstance(fn, dict):
            fn = tool
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            continue
        params = fn.get("parameters")
        props = params.get("properties") if isinstance(params, dict) else None
        out.append((name, frozenset(props) if isinstance(props, dict) else None))
    return out


def infer_tool(tools: list[tuple[str, frozenset[str] | None]], arguments: str) -> str | None:
    """The one offered tool a nameless call can be: the only tool, or the only one whose
    parameters include every argument given. ``None`` when that is not a single tool."""
    if len(tools) == 1:
        return tools[0][0]
    try:
        args = fastjson.loads(arguments) if arguments else {}
    except ValueError:
        return None
    if not isinstance(args, dict):
        return None
    keys = set(args)
    matches = [name for name, props in tools if props is not None and keys <= props]
    return matches[0] if len(matches) == 1 else None
