"""Tapes written by hand: a script of turns (YAML or JSON), each a reply and how it streams,
built into real recordings through the emitters.

::

    api: anthropic                    # the API the tape speaks (tape build --api overrides)
    model: claude-sonnet-4-6
    turns:
      - match: {contains: weather}    # optional: contains / equals / matches (a regex)
        reply:
          text: Let me look that up.
          tool_calls: [{name: get_weather, arguments: {city: Lisbon}}]
        stream: {tokens_per_s: 40, ttft: 0.3}   # or {like: some-recording.jsonl}, or whole
      - reply: {text: It is 21 °C in Lisbon., usage: {input_tokens: 50, output_tokens: 9}}

A reply holds ``text``, ``reasoning``, ``refusal``, ``tool_calls`` (``name``, ``arguments``, an
optional ``id``), ``error`` (``message``, optional ``type`` and ``status``: a status of 400 or more
makes the reply that HTTP error), ``finish`` (a finish class: ``stop``, ``tool_calls``,
``length``, ``content_filter``, ``refusal``; by default ``tool_calls`` when there are calls, else
``stop``) and ``usage``. ``stream`` says how it streams: ``like`` borrows a real recording's
delta sizes and gaps, ``tokens_per_s`` and ``ttft`` pace it evenly, ``whole`` sends every part
in one piece; by default 50 tokens/s after 0.25 s.

A script that is not valid raises :class:`ScriptError`: the file, the line and the field.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import math
import os
import re
import secrets
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..model.records import INDEX_NAME, Header, RecordingError, is_utf8_text, os_error_text
from ..outputs.emit import Emitted, Part, Reply, api_id, emitter, encoders
from ..outputs.emit.pieces import tokens
from ..outputs.emit.reply import ERROR, REASONING, REFUSAL, TEXT, TOOL_CALL
from ..recording.tape_index import IndexEntry, Tape
from ..recording.writer import RecordingWriter
from .translate import recording_end, recording_header, reply_from_file

FINISHES = ("stop", "tool_calls", "length", "content_filter", "refusal")
MATCH_KINDS = ("contains", "equals", "matches")
REPLY_KEYS = ("text", "reasoning", "refusal", "tool_calls", "error", "finish", "usage")
DEFAULT_RATE = 50.0  # tokens per second
DEFAULT_TTFT = 0.25


class ScriptError(RecordingError):
    """A script that cannot be used: its file, line and field."""

    def __init__(self, path: str, line: int | None, where: str, message: str) -> None:
        super().__init__(path, line, f"{where}: {message}" if where else message)


@dataclass(slots=True)
class Pace:
    """How a turn's reply streams (its ``stream:``): ``whole``, like a recording (``steps``:
    its delta sizes and the gap before each), else ``rate`` tokens a second after ``ttft``."""

    rate: float = DEFAULT_RATE
    ttft: float = DEFAULT_TTFT
    steps: list[tuple[int, float]] | None = None
    whole: bool = False

    def apply(self, spec: Reply) -> Reply:
        """A copy of ``spec`` with its parts cut into pieces and its times."""
        reply = dataclasses.replace(
            spec, parts=[dataclasses.replace(p) for p in spec.parts], marks=[]
        )
        steps, marks = self.steps, reply.marks
        reply.t_first = 0.0 if steps is None else min(self.ttft, 0.05)
        t = self.ttft
        offset = 0
        step = 0
        for part in reply.parts:
            text = part.text
            if not text:
                continue
            if self.whole:
                part.pieces = [text]
                offset += len(text)
                marks.append((offset, t))
            elif steps is not None:  # the recording's delta sizes and gaps, over and over
                pieces = []
                at = 0
                while at < len(text):
                    size, gap = steps[step % len(steps)]
                    step += 1
                    piece = text[at : at + max(size, 1)]
                    at += len(piece)
                    pieces.append(piece)
                    t += gap if step > 1 else 0.0
                    offset += len(piece)
                    marks.append((offset, t))
                part.pieces = pieces
            else:
                pause = 1.0 / self.rate
                for token in tokens(text):
                    offset += len(token)
                    marks.append((offset, t))
                    t += pause
        reply.t_end = (marks[-1][1] if marks else self.ttft) + 0.01
        return reply


@dataclass(slots=True)
class Turn:
    """A turn of a script: its reply as the script says it (``spec``), when it answers
    (``match``), its line, and how it streams (``pace``)."""

    spec: Reply
    match: tuple[str, str] | None = None  # (contains | equals | matches, pattern)
    line: int = 0
    pace: Pace = field(default_factory=Pace)

    @property
    def reply(self) -> Reply:
        """The reply cut and timed as the turn streams it, made anew each time it is asked
        for: a long reply's pieces and times are held while it is sent, not for the script's
        whole life."""
        return self.pace.apply(self.spec)

    def accepts(self, subject: str) -> bool:
        """Whether a request whose last user message (or tool result) is ``subject`` may get
        this turn: ``contains`` the pattern, ``equals`` it (surrounding whitespace ignored),
        ``matches`` it (a regular expression found anywhere); a turn without match takes any."""
        if self.match is None:
            return True
        kind, pattern = self.match
        if kind == "contains":
            return pattern in subject
        if kind == "equals":
            return subject.strip() == pattern.strip()
        return re.search(pattern, subject) is not None

    def describe(self) -> str:
        """``contains 'weather'`` (or ``any request``)."""
        return "any request" if self.match is None else f"{self.match[0]} {self.match[1]!r}"


class TurnPicker:
    """Which turn of a script answers each request, in order (sans-IO; not thread-safe).

    A request gets the first turn, from the one after the last turn served, that accepts it
    (:meth:`Turn.accepts`); when none of those does, the search starts over at the first turn,
    so a session run twice against one server gets the same answers twice. A request that no
    turn accepts gets none (``None``): a miss.
    """

    def __init__(self, turns: list[Turn]) -> None:
        self.turns = turns
        self.next = 0  # where the search starts
        self.served: list[int] = []  # the turns served, in order (0-based)

    def pick(self, subject: str) -> int | None:
        n = len(self.turns)
        for i in [*range(self.next, n), *range(0, min(self.next, n))]:
            if self.turns[i].accepts(subject):
                self.next = i + 1
                self.served.append(i)
                return i
        return None


@dataclass(slots=True)
class Script:
    path: str
    api: str | None = None
    model: str = ""
    turns: list[Turn] = field(default_factory=list)
    size: int = 0  # bytes of the script's file


SCRIPT_SUFFIXES = (".yaml", ".yml")


def is_script(path: str | os.PathLike[str]) -> bool:
    """A file that is a script rather than a recording: YAML by its name, or a ``.json``
    file holding one JSON object (a recording is JSON lines, or a JSON array of events)."""
    p = Path(path)
    if not p.is_file():
        return False
    suffix = p.suffix.lower()
    if suffix in SCRIPT_SUFFIXES:
        return True
    if suffix != ".json":
        return False
    try:
        with p.open("rb") as f:
            head = f.read(4096)
            if not head.lstrip().startswith(b"{"):
                return False
            obj = json.loads(head + f.read())
    except (OSError, ValueError):
        return False
    except RecursionError:  # an object nested too deeply to read: load_script says so
        return b'"turns"' in head
    return isinstance(obj, dict) and "turns" in obj


# -- reading ---------------------------------------------------------------------------------
# What a script may hold (a value beyond these is refused, by its line): every value an alias
# repeats counts again, so a few lines of aliases of aliases cannot stand for billions of values
MAX_ALIAS_VALUES = 100_000  # values (mappings, lists, scalars) that aliases add
MAX_ALIAS_CHARS = 16 * 1024 * 1024  # characters of scalars that aliases add
MAX_SCALAR_CHARS = 1024 * 1024  # characters of one scalar (a reply's text, a call's arguments...)
MAX_INT_CHARS = 1000  # characters of an integer (Python reads at most 4,300 digits)
INT_TAG = "tag:yaml.org,2002:int"


class _Node:
    """A value of the script with the line it is on (1-based)."""

    __slots__ = ("line", "value")

    def __init__(self, value: Any, line: int) -> None:
        self.value = value
        self.line = line


class _Cycle(Exception):
    """An alias inside the value it names (``a: &x [*x]``): the line of that value."""

    def __init__(self, line: int) -> None:
        self.line = line


class _Refused(Exception):
    """A value beyond a limit of the script, or one that cannot be read: its line (1-based)."""

    def __init__(self, line: int, message: str) -> None:
        self.line = line
        self.message = message


def _loader(text: str) -> Any:
    """A YAML ``SafeLoader`` that refuses, while it composes, what no script needs: a scalar
    over :data:`MAX_SCALAR_CHARS`, an integer over :data:`MAX_INT_CHARS` and aliases that add
    more than :data:`MAX_ALIAS_VALUES` values or :data:`MAX_ALIAS_CHARS` characters once
    expanded (each alias counts the whole value it repeats, as reading the script expands it).
    Built on the composer's ``compose_node`` (PyYAML's documented composition step)."""
    import yaml

    class ScriptLoader(yaml.SafeLoader):
        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self.sizes: dict[int, tuple[int, int]] = {}  # id(node) -> (values, characters)
            self.added = (0, 0)  # what aliases added: values, characters

        def compose_node(self, parent: Any, index: Any) -> Any:
            event = self.peek_event()
            line = event.start_mark.line + 1
            if isinstance(event, yaml.AliasEvent):
                node = super().compose_node(parent, index)
                size = self.sizes.get(id(node))
                if size is not None:  # None: inside the value it names (a cycle, refused later)
                    values, chars = self.added[0] + size[0], self.added[1] + size[1]
                    self.added = (values, chars)
                    if values > MAX_ALIAS_VALUES or chars > MAX_ALIAS_CHARS:
                        raise _Refused(
                            line,
                            f"aliases expand to more than {MAX_ALIAS_VALUES:,} values or "
                            f"{MAX_ALIAS_CHARS:,} characters",
                        )
                return node
            if isinstance(event, yaml.ScalarEvent) and len(event.value) > MAX_SCALAR_CHARS:
                raise _Refused(line, f"a value longer than {MAX_SCALAR_CHARS:,} characters")
            node = super().compose_node(parent, index)
            if isinstance(node, yaml.ScalarNode):
                if node.tag == INT_TAG and len(node.value) > MAX_INT_CHARS:
                    raise _Refused(line, f"an integer longer than {MAX_INT_CHARS:,} digits")
                self.sizes[id(node)] = (1, len(node.value))
            else:
                children = (
                    [n for pair in node.value for n in pair]
                    if isinstance(node, yaml.MappingNode)
                    else node.value
                )
                values = chars = 0
                for child in children:
                    size = self.sizes.get(id(child), (0, 0))
                    values += size[0]
                    chars += size[1]
                self.sizes[id(node)] = (values + 1, chars)
            return node

    return ScriptLoader(text)


def _convert(loader: Any, node: Any, within: frozenset[int] = frozenset()) -> _Node:
    import yaml

    line = node.start_mark.line + 1
    if isinstance(node, yaml.CollectionNode):
        if id(node) in within:
            raise _Cycle(line)
        within = within | {id(node)}
    if isinstance(node, yaml.MappingNode):
        return _Node({str(k.value): _convert(loader, v, within) for k, v in node.value}, line)
    if isinstance(node, yaml.SequenceNode):
        return _Node([_convert(loader, v, within) for v in node.value], line)
    try:
        value = loader.construct_object(node)
    except (ValueError, KeyError, TypeError, OverflowError, AttributeError):  # a date of month 13
        tag = node.tag.rsplit(":", 1)[-1]
        raise _Refused(line, f"{node.value[:40]!r} is not a valid {tag}") from None
    if isinstance(value, str) and not is_utf8_text(value):  # "\ud800" escapes one
        raise _Refused(line, "a string holding a lone surrogate, which no UTF-8 text holds")
    return _Node(value, line)


def _plain(node: _Node) -> Any:
    value = node.value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def load_script(path: str | os.PathLike[str]) -> Script:
    """Read and check a script (YAML, or JSON, which YAML reads too)."""
    import yaml

    name = str(path)
    try:
        raw = Path(path).read_bytes()
        text = raw.decode("utf-8")
    except OSError as exc:
        raise ScriptError(name, None, "", exc.strerror or str(exc)) from None
    except UnicodeDecodeError:
        raise ScriptError(name, None, "", "is not UTF-8 text") from None
    # the loader is kept: where its reader stands names the line of a value nested too deeply
    loader = None
    try:
        loader = _loader(text)  # its reader refuses a character YAML does not allow (NUL)
        root = loader.get_single_node()
        if root is None:
            raise ScriptError(name, 1, "", "the script is empty (it needs turns:)")
        converted = _convert(loader, root)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        position = getattr(exc, "position", None)  # the reader's errors: where in the text
        line = (
            mark.line + 1
            if mark is not None
            else text.count("\n", 0, position) + 1
            if isinstance(position, int)
            else None
        )
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ScriptError(name, line, "", f"not valid YAML or JSON ({problem})") from None
    except _Cycle as exc:
        raise ScriptError(name, exc.line, "", "an alias refers to the value it is in") from None
    except _Refused as exc:
        raise ScriptError(name, exc.line, "", exc.message) from None
    except RecursionError:
        line = loader.get_mark().line + 1 if loader is not None else None
        raise ScriptError(name, line, "", "nested too deeply to read") from None
    finally:
        if loader is not None:
            loader.dispose()
    script = _script(name, converted)
    script.size = len(raw)
    return script


def _want(name: str, node: _Node, where: str, kind: type | tuple[type, ...], what: str) -> Any:
    if not isinstance(node.value, kind) or isinstance(node.value, bool) and kind is not bool:
        raise ScriptError(name, node.line, where, f"must be {what}")
    return node.value


def _mapping(
    name: str,
    node: _Node,
    where: str,
    what: str,
    known: Sequence[str],
    required: str | None = None,
) -> dict[str, _Node]:
    """``node``'s mapping, whose fields are among ``known`` (``required`` one of them); else the
    error naming the field (``where.field``), or ``where`` when it is no mapping (``what``)."""
    fields = _want(name, node, where, dict, what)
    for key in fields:
        if key not in known:
            raise ScriptError(
                name, fields[key].line, f"{where}.{key}", f"unknown field ({', '.join(known)})"
            )
    if required is not None and required not in fields:
        raise ScriptError(name, node.line, f"{where}.{required}", "missing")
    return fields


def _script(name: str, root: _Node) -> Script:
    top = _want(name, root, "script", dict, "a mapping with turns:")
    for key in top:
        if key not in ("api", "model", "turns"):
            raise ScriptError(name, top[key].line, key, "unknown field (api, model, turns)")
    script = Script(name)
    if "api" in top:
        api = _want(name, top["api"], "api", str, "an API name")
        if api_id(api) is None:
            raise ScriptError(
                name, top["api"].line, "api", f"unknown API {api!r} ({', '.join(encoders())})"
            )
        script.api = api_id(api)
    if "model" in top:
        script.model = _want(name, top["model"], "model", str, "a model name")
    if "turns" not in top:
        raise ScriptError(name, root.line, "turns", "missing (a list of turns)")
    turns = _want(name, top["turns"], "turns", list, "a list of turns")
    if not turns:
        raise ScriptError(name, top["turns"].line, "turns", "is empty")
    base = Path(name).parent
    for i, node in enumerate(turns):
        script.turns.append(_turn(name, node, f"turns[{i}]", base, script, i))
    return script


def _turn(name: str, node: _Node, where: str, base: Path, script: Script, n: int) -> Turn:
    known = ("match", "reply", "stream")
    turn = _mapping(name, node, where, "a mapping with reply:", known, "reply")
    match = None
    if "match" in turn:
        m = _want(name, turn["match"], f"{where}.match", dict, "contains:, equals: or matches:")
        if len(m) != 1 or next(iter(m)) not in MATCH_KINDS:
            raise ScriptError(
                name, turn["match"].line, f"{where}.match", "one of contains:, equals:, matches:"
            )
        kind, pattern_node = next(iter(m.items()))
        pattern = _want(name, pattern_node, f"{where}.match.{kind}", str, "a string")
        if kind == "matches":
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ScriptError(
                    name,
                    pattern_node.line,
                    f"{where}.match.matches",
                    f"not a regular expression ({exc})",
                ) from None
        match = (kind, pattern)
    reply = _reply(name, turn["reply"], f"{where}.reply", script, n)
    pace = _pace(name, turn.get("stream"), f"{where}.stream", base)
    return Turn(reply, match, node.line, pace)


def _reply(name: str, node: _Node, where: str, script: Script, n: int) -> Reply:
    spec = _mapping(name, node, where, "a mapping (text, tool_calls, ...)", REPLY_KEYS)
    reply = Reply(model=script.model, seed=f"{name}:{n}")
    if "reasoning" in spec:
        reply.parts.append(
            Part(REASONING, _want(name, spec["reasoning"], f"{where}.reasoning", str, "a string"))
        )
    if "text" in spec:
        reply.parts.append(Part(TEXT, _want(name, spec["text"], f"{where}.text", str, "a string")))
    if "refusal" in spec:
        reply.parts.append(
            Part(REFUSAL, _want(name, spec["refusal"], f"{where}.refusal", str, "a string"))
        )
    if "tool_calls" in spec:
        calls = _want(name, spec["tool_calls"], f"{where}.tool_calls", list, "a list of calls")
        for i, call_node in enumerate(calls):
            at = f"{where}.tool_calls[{i}]"
            what = "a mapping with name: and arguments:"
            call = _mapping(name, call_node, at, what, ("name", "arguments", "id"), "name")
            call_name = _want(name, call["name"], f"{at}.name", str, "a string")
            args = _plain(call["arguments"]) if "arguments" in call else {}
            if not isinstance(args, dict):
                raise ScriptError(
                    name, call["arguments"].line, f"{at}.arguments", "must be a mapping"
                )
            call_id = _want(name, call["id"], f"{at}.id", str, "a string") if "id" in call else None
            try:
                args_text = json.dumps(args, ensure_ascii=False, allow_nan=False)
            except (TypeError, ValueError):  # a date, bytes (!!binary), NaN or an infinity
                raise ScriptError(
                    name,
                    call["arguments"].line,
                    f"{at}.arguments",
                    "must be JSON (no dates, binary values, NaN or infinities)",
                ) from None
            reply.parts.append(
                Part(
                    TOOL_CALL,
                    args_text,
                    call_id=call_id or reply.ident("call_", i, 24),
                    name=call_name,
                )
            )
    if "error" in spec:
        err = _want(name, spec["error"], f"{where}.error", dict, "a mapping with message:")
        if "message" not in err:
            raise ScriptError(name, spec["error"].line, f"{where}.error.message", "missing")
        obj = {"message": _want(name, err["message"], f"{where}.error.message", str, "a string")}
        if "type" in err:
            obj["type"] = _want(name, err["type"], f"{where}.error.type", str, "a string")
        if "status" in err:
            status = _want(name, err["status"], f"{where}.error.status", int, "an HTTP status")
            if not 400 <= status <= 599:
                raise ScriptError(
                    name, err["status"].line, f"{where}.error.status", "must be 400..599"
                )
            reply.status = status
        reply.parts.append(Part(ERROR, error=obj))
        reply.finish_class = "error"
    if "finish" in spec:
        finish = _want(name, spec["finish"], f"{where}.finish", str, "a finish class")
        if finish not in FINISHES:
            raise ScriptError(
                name, spec["finish"].line, f"{where}.finish", f"one of {', '.join(FINISHES)}"
            )
        reply.finish_class = finish
    elif "error" not in spec:
        reply.finish_class = "tool_calls" if reply.client_calls() else "stop"
    if "usage" in spec:
        usage = _want(name, spec["usage"], f"{where}.usage", dict, "a mapping of token counts")
        reply.usage = {}
        for key, value in usage.items():
            reply.usage[key] = _want(name, value, f"{where}.usage.{key}", int, "a token count")
    if not reply.parts and reply.finish_class != "length":
        raise ScriptError(
            name, node.line, where, "says nothing (text, reasoning, tool_calls or error)"
        )
    return reply


def _pace(name: str, node: _Node | None, where: str, base: Path) -> Pace:
    """How a turn streams: like a recording, at a rate, or whole."""
    rate, ttft = DEFAULT_RATE, DEFAULT_TTFT
    steps: list[tuple[int, float]] | None = None  # (delta size, gap after the one before)
    whole = False
    if node is not None:
        if node.value == "whole":
            whole = True
        else:
            what = "whole, {like: FILE} or {tokens_per_s: N, ttft: S}"
            spec = _mapping(name, node, where, what, ("like", "tokens_per_s", "ttft"))
            if "like" in spec:
                like = _want(name, spec["like"], f"{where}.like", str, "a recording's path")
                path = Path(like) if Path(like).is_absolute() else base / like
                try:
                    source, engine = reply_from_file(path)
                except (RecordingError, OSError, ValueError) as exc:
                    raise ScriptError(name, spec["like"].line, f"{where}.like", str(exc)) from None
                ttft = (engine.ttft or source.t_first) if source.marks else source.t_first
                steps = []
                last_offset, last_t = 0, ttft
                for offset, t in source.marks:
                    steps.append((offset - last_offset, max(t - last_t, 0.0)))
                    last_offset, last_t = offset, t
                if not steps:
                    raise ScriptError(
                        name,
                        spec["like"].line,
                        f"{where}.like",
                        "the recording streams nothing to borrow",
                    )
            if "tokens_per_s" in spec:
                rate = float(
                    _want(
                        name,
                        spec["tokens_per_s"],
                        f"{where}.tokens_per_s",
                        (int, float),
                        "a number",
                    )
                )
                if not 0 < rate < math.inf:
                    raise ScriptError(
                        name,
                        spec["tokens_per_s"].line,
                        f"{where}.tokens_per_s",
                        "must be more than 0 (and finite)",
                    )
            if "ttft" in spec:
                ttft = float(_want(name, spec["ttft"], f"{where}.ttft", (int, float), "seconds"))
                if not 0 <= ttft < math.inf:
                    raise ScriptError(
                        name, spec["ttft"].line, f"{where}.ttft", "must be 0 or more (and finite)"
                    )
    return Pace(rate, ttft, steps, whole)


def turn_of(extra: dict[str, Any]) -> Turn | None:
    """The turn a recording built from a script answers (its header's ``turn`` and
    ``match``), without its reply; None for any other recording."""
    if not isinstance(extra.get("turn"), int):
        return None
    match = extra.get("match")
    if isinstance(match, dict) and len(match) == 1:
        kind, pattern = next(iter(match.items()))
        if kind in MATCH_KINDS and isinstance(pattern, str):
            if kind == "matches":
                try:
                    re.compile(pattern)
                except re.error:
                    return None
            return Turn(Reply(), (kind, pattern))
    return Turn(Reply())


# -- building ----------------------------------------------------------------------------------
# A tape is at most TAPE_MULTIPLE times the size of its script, plus TAPE_ALLOWANCE bytes (the
# recordings' headers and the index of a short script). A reply streams one event per token or
# so, each event a few hundred bytes: prose in OpenAI's APIs builds about 60 times its script,
# source code about 90 times; text in one-character tokens or a long model name repeated in every
# event can reach past the bound, and is refused.
TAPE_MULTIPLE = 128
TAPE_ALLOWANCE = 1024 * 1024


def tape_limit(script: Script) -> int:
    """The most bytes a tape built from ``script`` may hold."""
    return TAPE_MULTIPLE * script.size + TAPE_ALLOWANCE


class _TooLarge(Exception):
    """A turn's recording would take the tape past its limit."""


def build_tape(
    script: Script, folder: str | os.PathLike[str], api: str | None = None
) -> list[Path]:
    """Write every turn as a real recording of ``api`` (the script's when not given) into the
    tape ``folder`` (a new or empty folder), in order, with its index entries; returns the
    recordings written. Each header keeps the turn's number (``turn``) and ``match``: serving
    the tape answers a request as serving the script would (:class:`TurnPicker`), in that API.

    The tape is built in a hidden folder beside ``folder`` (``.NAME.*.building``), then
    renamed into place: a build that fails (a tape larger than :func:`tape_limit`, a full disk)
    leaves nothing; a build into a folder that another writer filled meanwhile is refused.
    Each read is written as the emitter makes it: memory holds one turn's reply, not its
    stream."""
    target = api_id(api) if api else script.api
    if target is None:
        raise ScriptError(script.path, None, "api", "the script names no API: pass --api")
    out = Path(folder)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        work = out.parent / f".{out.name}.{os.getpid()}-{secrets.token_hex(4)}.building"
        os.mkdir(work)
    except OSError as exc:
        raise RecordingError(str(out), None, os_error_text(exc)) from None
    try:
        try:
            names = _build(script, work, target)
        except OSError as exc:  # a full disk
            raise RecordingError(str(out), None, os_error_text(exc)) from None
        try:
            os.rename(work, out)  # onto nothing, or an empty folder
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                raise RecordingError(
                    str(out), None, "exists and is not empty (a tape is built into a new folder)"
                ) from None
            raise RecordingError(str(out), None, os_error_text(exc)) from None
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return [out / name for name in names]


class _TurnRecording:
    """One turn's recording in the tape being built, opened at its first read (a streamed
    reply: status 200 and the event stream's type, the emitter's own) or once the emitter
    returns (an HTTP error reply); each read written as it comes, the tape's size watched."""

    def __init__(self, tape: Tape, script: Script, target: str, n: int, room: int) -> None:
        self.tape, self.script, self.target, self.n = tape, script, target, n
        self.room = room  # bytes this recording may take
        self.writer: RecordingWriter | None = None
        self.header: Header | None = None
        self.seq = 0
        self.reads = 0

    def open(self, status: int, content_type: str) -> RecordingWriter:
        turn = self.script.turns[self.n]
        header = recording_header(self.target, status, content_type, model=self.script.model)
        # what serving the tape answers it by: the turn's match, in the script's order
        header.extra["turn"] = self.n + 1
        if turn.match is not None:
            header.extra["match"] = {turn.match[0]: turn.match[1]}
        self.seq, path = self.tape.allocate(header.api, self.script.model or None)
        self.header = header
        self.writer = RecordingWriter(path, header, claimed=True)
        return self.writer

    def write(self, t: float, text: str) -> None:
        writer = self.writer
        if writer is None:
            streamed = Emitted()
            writer = self.open(streamed.status, streamed.content_type)
        writer.write_read(t, text.encode("utf-8"))
        self.reads += 1
        if writer.size > self.room:
            raise _TooLarge


def _build(script: Script, folder: Path, target: str) -> list[str]:
    """Write the tape into ``folder``: the names of its recordings, in order."""
    limit = tape_limit(script)
    tape = Tape(folder)
    written: list[str] = []
    size = 0  # bytes of the tape's recordings so far
    for n, turn in enumerate(script.turns):
        index = os.stat(folder / INDEX_NAME).st_size if written else 0
        rec = _TurnRecording(tape, script, target, n, limit - size - index)
        reply = turn.reply
        if reply.status < 400:
            reply = dataclasses.replace(reply, sink=rec.write)
        try:
            emitted = emitter(target)(reply)
            writer = rec.writer or rec.open(emitted.status, emitted.content_type)
            for t, text in emitted.reads:  # an error reply's (or an emitter's that kept them)
                rec.write(t, text)
            end = recording_end(emitted)
            writer.close(end.t, end.reason)
        except _TooLarge:
            raise _too_large(script, n, limit) from None
        finally:
            if rec.writer is not None:
                rec.writer.abandon()
        header = rec.header
        assert header is not None
        tape.append(
            IndexEntry(
                seq=rec.seq,
                file=Path(writer.path).name,
                api=header.api,
                provider=header.provider,
                path=urlsplit(header.url or "").path or None,
                model=script.model or None,
                status=emitted.status,
                end=end.reason,
                duration_s=end.t,
                chunks=rec.reads,
            )
        )
        written.append(Path(writer.path).name)
        size += writer.size
        if size + os.stat(folder / INDEX_NAME).st_size > limit:
            raise _too_large(script, n, limit)
    return written


def _too_large(script: Script, n: int, limit: int) -> ScriptError:
    return ScriptError(
        script.path,
        script.turns[n].line,
        f"turns[{n}]",
        f"the tape would be more than {TAPE_MULTIPLE} times the size of the script, plus 1 MiB "
        f"({limit:,} bytes): stream it in larger pieces (stream: whole, or {{like: RECORDING}})",
    )
