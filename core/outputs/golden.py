"""Golden files: the expected transcript of a recording, stored beside it. Sans-IO.

A recording ``foo.jsonl`` (or ``foo.sse``) has its golden file ``foo.golden.json`` in the same
folder::

    {
      "format": "streamtool-golden",
      "version": 1,
      "recording": "foo.jsonl",
      "replay": {"converter": "auto", "parser": "api_tool_call"},
      "transcript": { ...see streamtool.core.outputs.transcript... }
    }

``replay`` says how ``streamtool check`` replays the recording (edit it to pin a converter or a
parser; ``--update`` keeps it); ``transcript`` is what that replay must give. Two golden
documents are compared by their canonical rendering
(:func:`~streamtool.core.outputs.transcript.render`),
so re-indenting a golden file by hand is not drift, but any change of a value or of its order is.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any

import orjson

from ..converters import check_converter_name
from ..handlers import check_parser_name
from ..model.records import RecordingError
from ..wire import fastjson
from .transcript import render

GOLDEN_FORMAT = "streamtool-golden"
GOLDEN_VERSION = 1
GOLDEN_SUFFIX = ".golden.json"
DEFAULT_CONVERTER = "auto"
DEFAULT_PARSER = "api_tool_call"


@dataclass(frozen=True, slots=True)
class ReplayOptions:
    """The converter and parser a golden file is replayed with."""

    converter: str = DEFAULT_CONVERTER
    parser: str = DEFAULT_PARSER

    def to_dict(self) -> dict[str, str]:
        return {"converter": self.converter, "parser": self.parser}


@dataclass(frozen=True, slots=True)
class Golden:
    """A parsed golden file: the replay options and the whole document."""

    options: ReplayOptions
    document: dict[str, Any]


def golden_name(recording_name: str) -> str:
    """The golden file name for a recording file name: ``foo.jsonl`` -> ``foo.golden.json``."""
    stem, dot, _suffix = recording_name.rpartition(".")
    return (stem if dot and stem else recording_name) + GOLDEN_SUFFIX


def is_golden_name(name: str) -> bool:
    return name.endswith(GOLDEN_SUFFIX)


def recording_stem(golden_file_name: str) -> str:
    """``foo.golden.json`` -> ``foo`` (the name of its recording without the suffix)."""
    return golden_file_name[: -len(GOLDEN_SUFFIX)]


def make_golden(
    recording_name: str, options: ReplayOptions, transcript: dict[str, Any]
) -> dict[str, Any]:
    return {
        "format": GOLDEN_FORMAT,
        "version": GOLDEN_VERSION,
        "recording": recording_name,
        "replay": options.to_dict(),
        "transcript": transcript,
    }


def parse_golden(text: str, path: str) -> Golden:
    """Read a golden file's text; unusable text raises :class:`RecordingError` (file and line)."""
    try:
        doc = fastjson.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordingError(path, exc.lineno, f"golden file is not JSON ({exc.msg})") from None
    if not isinstance(doc, dict) or doc.get("format") != GOLDEN_FORMAT:
        raise RecordingError(
            path, 1, f'not a streamtool golden file (no "format": "{GOLDEN_FORMAT}")'
        )
    if doc.get("version") != GOLDEN_VERSION:
        raise RecordingError(
            path,
            _line_of(text, "version"),
            f"unsupported golden file version {doc.get('version')!r} (this streamtool reads 1)",
        )
    replay = doc.get("replay", {})
    if not isinstance(replay, dict):
        raise RecordingError(path, _line_of(text, "replay"), '"replay" must be an object')
    converter = replay.get("converter", DEFAULT_CONVERTER)
    parser = replay.get("parser", DEFAULT_PARSER)
    for key, value in (("converter", converter), ("parser", parser)):
        if not isinstance(value, str) or not value:
            raise RecordingError(
                path, _line_of(text, key), f'"replay.{key}" must be a non-empty string'
            )
    for key, check, name in (
        ("converter", check_converter_name, converter),
        ("parser", check_parser_name, parser),
    ):
        try:
            check(name)
        except ValueError as exc:
            raise RecordingError(path, _line_of(text, key), str(exc)) from None
    if not isinstance(doc.get("transcript"), dict):
        raise RecordingError(path, _line_of(text, "transcript"), '"transcript" must be an object')
    return Golden(ReplayOptions(converter, parser), doc)


def _line_of(text: str, key: str) -> int:
    """The line of the first ``"key":`` in ``text`` (1 when it is not there)."""
    pos = text.find(f'"{key}"')
    return 1 if pos < 0 else text.count("\n", 0, pos) + 1


def same_document(a: Any, b: Any) -> bool:
    """Whether ``render(a) == render(b)``, without rendering (the pure-Python indenting
    encoder is most of a check's cost over its replay): equal values (``==``: ``inf`` is not
    ``None``, ``NaN`` equals nothing) whose orjson bytes are equal too (key order, and ``1``,
    ``1.0``, ``True`` and ``-0.0`` told apart). Values orjson refuses (integers beyond 64 bits,
    lone surrogates) answer False, and the caller renders."""
    try:
        return bool(a == b) and orjson.dumps(a) == orjson.dumps(b)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return False


def golden_diff(
    expected: dict[str, Any], actual: dict[str, Any], expected_label: str, actual_label: str
) -> str | None:
    """A unified diff from the golden document to the replayed one; ``None`` when they match."""
    if same_document(expected, actual):
        return None
    before = render(expected)
    after = render(actual)
    if before == after:
        return None
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=expected_label,
            tofile=actual_label,
        )
    )
