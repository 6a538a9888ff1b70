"""Faults a replay notes beside the converters' quirks: the model's own faults in a tool call, and
how the bytes arrived (read boundaries, framing). Sans-IO.

:func:`tool_call_faults` looks at a tool call's END metadata (the handler's): arguments that do not
parse although the call was closed (``model_args_invalid_json``), an empty arguments string on an
API whose arguments are a JSON string (``model_args_empty``), a call the stream never closed and
never finished (``model_stream_cut_mid_call``), a tool the request did not offer
(``model_tool_not_offered``). These are meaning: they go with the other quirks.

:class:`WireWatch` looks at the reads as they come: a UTF-8 character or a CRLF split across two
reads, every read one whole event (one line of an NDJSON body), the whole stream in one read, a
Gemini JSON array. These do not change what a stream means (a transcript never depends on where
the reads were cut), so a replay reports them in its statistics (``wire_quirks``), not among its
quirks.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..model import Quirk
from ..model.quirk_ids import QuirkId
from ..plugins import api_for_converter
from ..wire.jsonstream import JSONArrayDecoder, NDJSONDecoder

_SERVER_TOOL_TYPES = frozenset({"function", "custom"})


def offered_tools(body: Any) -> frozenset[str] | None:
    """The names of the client tools a request offered (any API's shape); None when the request
    is unknown or offered none (then no call can be "not offered")."""
    if not isinstance(body, dict):
        return None
    tools = body.get("tools")
    if not isinstance(tools, list) or not tools:
        return None
    names: set[str] = set()
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        fn = tool.get("function")
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            names.add(fn["name"])  # Chat Completions
        elif isinstance(tool.get("name"), str):
            names.add(tool["name"])  # Anthropic, Responses
        for decl in tool.get("functionDeclarations") or tool.get("function_declarations") or ():
            if isinstance(decl, dict) and isinstance(decl.get("name"), str):
                names.add(decl["name"])  # Gemini
    return frozenset(names) or None


def _arguments_as_text(converter: str | None) -> bool:
    """Whether a converter's API sends a call's arguments as a JSON string (where "" is not a
    way to say "no arguments")."""
    api = api_for_converter(converter)
    return api is not None and api.arguments_as_text


def tool_call_faults(
    metadata: dict[str, Any],
    converter: str | None,
    offered: frozenset[str] | None,
    finish_reason: str | None,
) -> Iterator[Quirk]:
    """The model faults one tool call's END metadata shows."""
    name = metadata.get("tool_name")
    unclosed = metadata.get("unclosed") is True
    if unclosed and finish_reason is None:
        yield Quirk(QuirkId.MODEL_STREAM_CUT_MID_CALL, f"call {name!r} was cut by the stream's end")
    elif "error" in metadata and not unclosed:
        yield Quirk(QuirkId.MODEL_ARGS_INVALID_JSON, str(metadata["error"]))
    if metadata.get("no_arguments") and not unclosed and _arguments_as_text(converter):
        yield Quirk(QuirkId.MODEL_ARGS_EMPTY, f'call {name!r} has arguments ""')
    if offered is not None and isinstance(name, str) and name and name not in offered:
        yield Quirk(
            QuirkId.MODEL_TOOL_NOT_OFFERED,
            f"call {name!r}; the request offered {', '.join(sorted(offered))}",
        )


class WireWatch:
    """Notes how a stream's bytes arrived, read by read (see the module's docstring)."""

    __slots__ = ("found", "_cr", "_whole_events", "_whole_lines")

    def __init__(self) -> None:
        self.found: list[str] = []
        self._cr = False  # the last read ended with CR
        self._whole_events = True  # every read so far ended at an event's end
        self._whole_lines = True  # every read so far ended at a line's end (NDJSON's events)

    def _note(self, quirk_id: str) -> None:
        if quirk_id not in self.found:
            self.found.append(quirk_id)

    def read(self, data: str | bytes) -> None:
        if not data:
            return
        if isinstance(data, bytes):
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as exc:
                if exc.reason == "unexpected end of data" or (
                    exc.start == 0 and (data[0] & 0xC0) == 0x80
                ):
                    self._note(QuirkId.READS_UTF8_SPLIT)
            first, last = data[:1] == b"\n", data[-1:] == b"\r"
            ends = data.endswith((b"\n\n", b"\r\n\r\n", b"\r\r"))
        else:
            first, last = data[0] == "\n", data[-1] == "\r"
            ends = data.endswith(("\n\n", "\r\n\r\n", "\r\r"))
        if first and self._cr:
            self._note(QuirkId.READS_CRLF_SPLIT)
        self._cr = last
        if not ends:
            self._whole_events = False
            if self._whole_lines and not (last or data[-1:] in (b"\n", "\n")):
                self._whole_lines = False

    def read_texts(self, texts: list[str], joined: str) -> None:
        """:meth:`read` of each of several text reads in turn (``joined``: their text)."""
        if not joined:
            return
        if "\r" in joined:
            for data in texts:
                self.read(data)
            return
        # no read ends with CR: only the first one that is not empty may end a split CRLF
        if self._cr and next(data for data in texts if data)[0] == "\n":
            self._note(QuirkId.READS_CRLF_SPLIT)
        self._cr = False
        if self._whole_events and not all(data.endswith("\n\n") for data in texts if data):
            self._whole_events = False
        if (
            self._whole_lines
            and not self._whole_events
            and not all(data.endswith("\n") for data in texts if data)
        ):
            self._whole_lines = False

    def finish(self, decoder: Any, reads: int, items: int, converter: str | None) -> None:
        """At the stream's end: ``reads`` network reads held ``items`` events and comments."""
        inner = getattr(decoder, "inner", None) or decoder
        if isinstance(inner, JSONArrayDecoder):
            api = api_for_converter(converter)
            if api is not None and api.json_array_quirk:
                self._note(QuirkId.GEMINI_JSON_ARRAY)
        whole = self._whole_lines if isinstance(inner, NDJSONDecoder) else self._whole_events
        if reads == 1 and items > 1:
            self._note(QuirkId.READS_SINGLE)
        elif reads >= 2 and whole and reads == items:
            self._note(QuirkId.READS_ONE_EVENT_EACH)
