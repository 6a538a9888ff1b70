"""Seeded fuzzing of everything that reads input: ``replay`` (every converter and parser),
``check`` and ``diff`` on mutated recordings, mutated payloads and mutated raw bodies.

Whatever the input: no traceback, an exit code in {0, 1, 2}, exit 2 with one line that names the
file (and the line, for a line that is not JSON), and no hang. Most inputs run in-process through
the CLI (typer's runner); a few run as real processes. The seed is fixed, so a failure names an
input that can be rebuilt; ``STREAMTOOL_FUZZ_SEED`` picks another run of inputs.
"""

from __future__ import annotations

import base64
import json
import os
import random
import re
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from streamtool.cli.main import app
from streamtool.core.converters import converter_names
from streamtool.core.handlers import parser_names

from .conftest import RECORDINGS
from .helpers import WEATHER_SCRIPT

SEED = int(os.environ.get("STREAMTOOL_FUZZ_SEED", "20261122"))
SHARDS = 4
# 4 x 160 = 640 inputs per run (each seed a different 640); more by hand, e.g.
# STREAMTOOL_FUZZ_PER_SHARD=2000 STREAMTOOL_FUZZ_SEED=7 python -m pytest tests/test_fuzz.py
PER_SHARD = int(os.environ.get("STREAMTOOL_FUZZ_PER_SHARD", "160"))
HANG_S = 10.0
SOURCES = sorted(p for p in RECORDINGS.glob("*.jsonl") if ".golden" not in p.name)
STREAMTOOL = [sys.executable, "-c", "from streamtool.cli.main import main; main()"]
# a value of every JSON type, and some that break assumptions (deep, huge, odd strings)
ODD_VALUES = [
    None,
    True,
    0,
    -1,
    1.5,
    1e308,
    "",
    "x",
    "\u0000",
    "\ud83d\ude00",
    [],
    [1, "a"],
    {},
    {"a": {"b": []}},
    "[" * 50,
    2**70,
]


def _deep(n: int) -> str:
    return "[" * n + "]" * n


# -- mutations ------------------------------------------------------------------------------------
def _mutate_value(rng: random.Random, obj):
    """``obj`` with one value somewhere replaced by an odd one (type mutation)."""
    if isinstance(obj, dict) and obj:
        key = rng.choice(list(obj))
        if rng.random() < 0.6 and isinstance(obj[key], dict | list):
            obj[key] = _mutate_value(rng, obj[key])
        elif rng.random() < 0.15:
            del obj[key]
        else:
            obj[key] = rng.choice(ODD_VALUES)
        return obj
    if isinstance(obj, list) and obj:
        i = rng.randrange(len(obj))
        if rng.random() < 0.6 and isinstance(obj[i], dict | list):
            obj[i] = _mutate_value(rng, obj[i])
        else:
            obj[i] = rng.choice(ODD_VALUES)
        return obj
    return rng.choice(ODD_VALUES)


def _mutate_payloads(rng: random.Random, text: str) -> str:
    """Type-mutate the JSON payload of one ``data:`` line in a chunk's text."""
    lines = text.split("\n")
    spots = [i for i, line in enumerate(lines) if line.startswith("data:")]
    if not spots:
        return text
    i = rng.choice(spots)
    raw = lines[i][5:].strip()
    try:
        payload = json.loads(raw)
    except (ValueError, RecursionError):  # not JSON, or already made too deep
        return text
    if rng.random() < 0.08:
        lines[i] = 'data: {"a":' + _deep(rng.choice([300, 1500])) + "}"
    else:
        lines[i] = "data: " + json.dumps(_mutate_value(rng, payload))
    return "\n".join(lines)


def _mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.random()
        pos = rng.randrange(len(data) + 1)
        if op < 0.4 and data:
            data[min(pos, len(data) - 1)] = rng.randrange(256)
        elif op < 0.7:
            data[pos:pos] = rng.choice([b"\n", b"\r", b"data: ", b"{", b"\xff", b"\x00", b":"])
        else:
            del data[pos : pos + rng.randint(1, 40)]
    return bytes(data)


def _mutate_recording(rng: random.Random, lines: list[str]) -> tuple[str, str]:
    """A mutated copy of a recording's lines, and the kind of mutation."""
    lines = list(lines)
    kind = rng.choice(
        ["payload", "payload", "payload", "record", "line", "bytes", "cut", "order", "chunk", "b64"]
    )
    body = [i for i in range(1, len(lines))]
    if kind == "payload" and body:
        i = rng.choice(body)
        rec = json.loads(lines[i])
        if isinstance(rec.get("text"), str):
            rec["text"] = _mutate_payloads(rng, rec["text"])
            lines[i] = json.dumps(rec)
    elif kind == "record":
        i = rng.randrange(len(lines))
        lines[i] = json.dumps(_mutate_value(rng, json.loads(lines[i])))
    elif kind == "line":
        i = rng.randrange(len(lines))
        lines[i] = rng.choice(
            [
                "",
                "not json",
                "{",
                '{"type":"chunk"}',
                '{"type":"chunk","t":NaN,"text":"x"}',
                '{"type":"chunk","t":1,"text":"a","b64":"YQ=="}',
                '{"type":"end","reason":"weird"}',
                '{"type":"chunk","x":' + _deep(1200) + "}",
                "\ufeff" + lines[i],
                lines[i][: len(lines[i]) // 2],
            ]
        )
    elif kind == "bytes":
        i = rng.randrange(len(lines))
        lines[i] = _mutate_bytes(rng, lines[i].encode()).decode("utf-8", "replace")
    elif kind == "cut":
        text = "\n".join(lines)
        return text[: rng.randrange(len(text) + 1)], kind
    elif kind == "order" and len(lines) > 2:
        i, j = rng.sample(range(len(lines)), 2)
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == "chunk" and body:
        i = rng.choice(body)
        rec = json.loads(lines[i])
        if isinstance(rec.get("text"), str):
            data = _mutate_bytes(rng, rec["text"].encode())
            rec.pop("text")
            rec["b64"] = base64.b64encode(data).decode()
            lines[i] = json.dumps(rec)
    elif kind == "b64" and body:
        # a chunk's b64 with a character other than ASCII in it (base64 itself says ValueError)
        i = rng.choice(body)
        rec = json.loads(lines[i])
        if not isinstance(rec.get("text"), str):
            kind = "b64-not-a-text-chunk"
        else:
            encoded = base64.b64encode(rec.pop("text").encode()).decode()
            at = rng.randrange(len(encoded) + 1)
            rec["b64"] = encoded[:at] + rng.choice(NON_ASCII) + encoded[at:]
            lines[i] = json.dumps(rec, ensure_ascii=rng.random() < 0.5)
    return "\n".join(lines) + "\n", kind


NON_ASCII = ["é", "\u00a0", "\u2014", "\U0001f600", "\u0100", "ÿ"]


def _raw_body(lines: list[str]) -> bytes:
    out = b""
    for line in lines[1:]:
        rec = json.loads(line)
        if "text" in rec:
            out += rec["text"].encode()
        elif "b64" in rec:
            out += base64.b64decode(rec["b64"])
    return out


# -- running --------------------------------------------------------------------------------------
class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang(f"no answer within {HANG_S} s")


@contextmanager
def _hang_alarm() -> Iterator[None]:
    """SIGALRM raises a Hang (the timers of ``_invoke_within_hang`` and the like) while inside."""
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
        yield
    finally:
        signal.signal(signal.SIGALRM, old)


def _invoke_within_hang(runner: CliRunner, args: list[str], seconds: float = HANG_S) -> Any:
    """``streamtool ARGS`` invoked in process, a Hang raised if it has not answered within
    ``seconds`` (the caller has set ``_alarm`` as SIGALRM's handler)."""
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return runner.invoke(app, args, catch_exceptions=True)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _check_result(result, name: str, kind: str, what: str) -> int:
    exc = result.exception
    if exc is not None and not isinstance(exc, SystemExit):
        import traceback

        tb = "".join(traceback.format_exception(exc))
        raise AssertionError(f"{what} ({kind}): traceback\n{tb}")
    code = result.exit_code
    assert code in (0, 1, 2), f"{what} ({kind}): exit {code}\n{result.output}"
    assert "Traceback" not in result.output, f"{what} ({kind}): {result.output}"
    if code == 2:
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, f"{what} ({kind}): not one line:\n{result.stderr}"
        line = lines[0]
        assert line.startswith("streamtool: error: "), f"{what} ({kind}): {line}"
        # the input or its golden file (in7.jsonl, in7.golden.json)
        stem = name.rsplit(".", 1)[0] + "."
        assert "/" + stem in line, f"{what} ({kind}): the file is not named: {line}"
        if "not JSON" in line:
            assert re.search(re.escape(stem) + r"[\w.]+:\d+: ", line), f"{what}: no line: {line}"
    return code


def _fuzz(shard: int, tmp_path: Path) -> tuple[Counter, Counter]:
    rng = random.Random(SEED * 31 + shard)
    runner = CliRunner()
    converters = ["auto", *converter_names()]
    parsers = parser_names()
    outcomes: Counter = Counter()
    b64_codes: Counter = Counter()  # exit codes of the inputs given a non-ASCII b64
    with _hang_alarm():
        for n in range(PER_SHARD):
            source = rng.choice(SOURCES)
            lines = source.read_text(encoding="utf-8").splitlines()
            raw = rng.random() < 0.15
            if raw:
                name = f"in{n}.sse"
                path = tmp_path / name
                path.write_bytes(_mutate_bytes(rng, _raw_body(lines)))
                kind = "raw"
            else:
                name = f"in{n}.jsonl"
                path = tmp_path / name
                text, kind = _mutate_recording(rng, lines)
                path.write_text(text, encoding="utf-8")
            roll = rng.random()
            if roll < 0.6:
                args = ["replay", str(path), "--format", rng.choice(["json", "jsonl", "tree"])]
                args += ["--converter", rng.choice(converters), "--parser", rng.choice(parsers)]
                args += ["--speed", "max"]
            elif roll < 0.8:
                golden = path.with_name(path.name.rsplit(".", 1)[0] + ".golden.json")
                src_golden = source.with_name(source.stem + ".golden.json")
                if src_golden.exists() and rng.random() < 0.8:
                    gtext = src_golden.read_text(encoding="utf-8")
                    if rng.random() < 0.3:
                        gtext = _mutate_bytes(rng, gtext.encode()).decode("utf-8", "replace")
                    golden.write_text(gtext, encoding="utf-8")
                args = ["check", str(path)]
            else:
                args = ["diff", str(source), str(path)]
            what = f"seed {SEED} shard {shard} input {n}: {' '.join(args)} from {source.name}"
            result = _invoke_within_hang(runner, args)
            code = _check_result(result, name, kind, what)
            outcomes[(args[0], code)] += 1
            if kind == "b64":
                b64_codes[code] += 1
            for p in tmp_path.iterdir():
                p.unlink()
    return outcomes, b64_codes


@pytest.mark.parametrize("shard", range(SHARDS))
def test_fuzz_every_reader(shard, tmp_path):
    outcomes, b64_codes = _fuzz(shard, tmp_path)
    total = sum(outcomes.values())
    assert total == PER_SHARD
    # the mutations reach both sides: inputs that still work, and inputs refused as unusable
    assert sum(v for (_, code), v in outcomes.items() if code == 0) > PER_SHARD // 10
    assert sum(v for (_, code), v in outcomes.items() if code == 2) > PER_SHARD // 20
    # a chunk whose b64 holds a character other than ASCII is unusable input: exit 2, one line
    assert b64_codes and set(b64_codes) <= {2}, b64_codes
    print(f"fuzz shard {shard} (seed {SEED}): {dict(sorted(outcomes.items()))}")


def test_fuzz_as_real_processes(tmp_path):
    """A few mutated inputs through the installed command: exit codes and stderr as users see
    them."""
    rng = random.Random(SEED)
    for n in range(6):
        source = rng.choice(SOURCES)
        text, kind = _mutate_recording(rng, source.read_text(encoding="utf-8").splitlines())
        path = tmp_path / f"p{n}.jsonl"
        path.write_text(text, encoding="utf-8")
        command = ["replay", "check", "diff"][n % 3]
        args = [command, str(path)] if command != "diff" else [command, str(source), str(path)]
        run = subprocess.run(
            [*STREAMTOOL, *args],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert run.returncode in (0, 1, 2), (args, kind, run.stderr)
        assert "Traceback" not in run.stderr, (args, kind, run.stderr)
        if run.returncode == 2:
            lines = run.stderr.strip().splitlines()
            assert len(lines) == 1 and path.name in lines[0], (args, kind, run.stderr)


def test_fuzz_payload_types_through_every_converter_and_parser():
    """Many more payload type mutations, straight through the pipeline (no CLI): every field a
    converter reads gets values of every JSON type; nothing may raise."""
    from streamtool.core.engine.replay import ReplayEngine
    from streamtool.core.model.records import Chunk, End
    from streamtool.core.recording.reader import Source

    rng = random.Random(SEED + 7)
    streams = []
    for path in SOURCES:
        source = Source(path)
        chunks = [
            c.data if isinstance(c.data, str) else c.data.decode("utf-8", "replace")
            for c in source.chunks()
        ]
        streams.append((path.name, source.header, chunks))
    parsers = parser_names()
    count = 0
    for n in range(3000):
        name, header, chunks = rng.choice(streams)
        chunks = list(chunks)
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(chunks))
            chunks[i] = _mutate_payloads(rng, chunks[i])
        converter = rng.choice(["auto", *converter_names()])
        parser = rng.choice(parsers)
        try:
            engine = ReplayEngine(header, converter=converter, parser=parser, source=name)
        except Exception as exc:  # an unusable choice is refused up front, by name
            assert type(exc).__name__ in ("DetectionError", "UnknownConverter"), exc
            continue
        try:
            for i, text in enumerate(chunks):
                engine.feed_chunk(Chunk(0.01 * i, text))
            engine.finish(End(1.0, "complete", None))
            json.dumps(engine.summary(), allow_nan=False)
        except Exception as exc:
            raise AssertionError(f"seed {SEED} mutation {n}: {name} {converter}/{parser}") from exc
        count += 1
    assert count > 2000


# -- YAML scripts ---------------------------------------------------------------------------------
SCRIPT_SEEDS = [
    WEATHER_SCRIPT,
    """\
api: anthropic
turns:
  - match: {matches: '(?i)hello'}
    reply:
      reasoning: thinking it over
      text: hi
      finish: stop
    stream: whole
  - reply:
      error: {message: overloaded, type: overloaded_error, status: 529}
  - reply: &again
      refusal: no
      usage: {input_tokens: 1, output_tokens: 2, cached_input_tokens: 0}
  - reply: *again
""",
    '{"model": "m", "turns": [{"reply": {"text": "json too", "tool_calls": '
    '[{"name": "f", "id": "call_1", "arguments": {"a": [1, 2.5, null, true]}}]}}]}\n',
]
# scalars as YAML reads them unquoted: numbers, dates, constants, tags, long and odd text
YAML_SCALARS = [
    "9" * 5000,
    "-" + "1" * 1200,
    "0x" + "f" * 2000,
    "0b" + "1" * 3000,
    "0o" + "7" * 2000,
    "1:" + "59:" * 700 + "1",
    "1_000_000",
    "2001-13-45",
    "2001-12-14t21:59:43.10-25:00",
    ".nan",
    ".inf",
    "-.inf",
    "1e999",
    "~",
    "yes",
    "!!binary aGVsbG8=",
    "!!binary xx",
    "!!int abc",
    "!!float nope",
    "!!bool maybe",
    "!!timestamp 2020-99-99",
    "!!python/object:os.system x",
    "!!set {a, b}",
    "!!omap [a: 1]",
    "!!str",
    "'" + "x" * 20000 + "'",
    '"\\ud800"',
    '"\\x00\\u2028"',
    "é🙏",
    "[" * 60 + "]" * 60,
    "{a: " * 40 + "1" + "}" * 40,
    "*nowhere",
    "&a [*a]",
    "<<: {a: 1}",
]
YAML_PIECES = [
    "&a ", "*a", "!!int ", "!!str ", "<<: *a\n", "? x\n", "- ", ": ", "{", "}", "[", "]", '"',
    "'", "|\n", ">-\n", "#", "\t", "\r\n", "\ufeff", "%YAML 1.1\n", "---\n", "...\n", "\x00",
    "\x85", "\u2028", ",", "\n  ", "\n",
]  # fmt: skip


def _alias_bomb(rng: random.Random) -> str:
    """Anchors each holding ``width`` aliases of the one before: ``width ** depth`` values."""
    width, depth = rng.randint(2, 12), rng.randint(2, 9)
    lines = ["b0: &b0 [" + ", ".join(["x"] * width) + "]"]
    for i in range(1, depth):
        lines.append(f"b{i}: &b{i} [" + ", ".join([f"*b{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n", f"*b{depth - 1}"


# scalars a script may well hold where another was
PLAIN_SCALARS = ["hello", "42", "0.5", "'x: y'", '"tab\\there"', "'é🙏'", "''", "[]", "{}"]


def _mutate_script(rng: random.Random, text: str) -> str:
    roll = rng.random()
    if roll < 0.5:  # an odd (or a plain) scalar where a value was
        spots = [m.end() for m in re.finditer(r"(: |- |\[|, )", text)]
        if spots:
            at = rng.choice(spots)
            end = at + len(re.match(r"[^,\]\}\n]*", text[at:]).group(0))
            scalars = YAML_SCALARS if roll < 0.35 else PLAIN_SCALARS
            return text[:at] + rng.choice(scalars) + text[end:]
    if roll < 0.6:  # aliases of aliases, used as a value
        bomb, alias = _alias_bomb(rng)
        spots = [m.end() for m in re.finditer(r"(arguments: |text: |reply: )", text)]
        if spots and not text.startswith("{"):
            at = rng.choice(spots)
            end = at + len(re.match(r"[^\n]*", text[at:]).group(0))
            body = text[:at] + (
                "{a: " + alias + "}" if "arguments" in text[at - 11 : at] else alias
            )
            return "anchors: 0\n" * 0 + bomb.replace("\n", "\n") + body + text[end:]
    out = text
    for _ in range(rng.randint(1, 4)):
        pos = rng.randrange(len(out) + 1)
        op = rng.random()
        if op < 0.5:
            out = out[:pos] + rng.choice(YAML_PIECES) + out[pos:]
        elif op < 0.8:
            out = out[:pos] + out[pos + rng.randint(1, 12) :]
        else:
            out = out[:pos] + out[pos:][::-1][: rng.randint(0, 8)] + out[pos:]
    return out


def test_fuzz_yaml_scripts(tmp_path):
    """Mutated scripts (odd scalars, tags, aliases of aliases, broken syntax): read as a script
    or refused with a ScriptError of one line naming the file; never a traceback, never a hang;
    half of those read built as tapes through the command: exit 0 (a tape within its bound)
    or 2 (one line naming the script)."""
    from streamtool.core.drive.script import ScriptError, load_script, tape_limit

    rng = random.Random(SEED + 11)
    runner = CliRunner()
    outcomes: Counter = Counter()
    with _hang_alarm():
        for n in range(250):
            text = _mutate_script(rng, rng.choice(SCRIPT_SEEDS))
            path = tmp_path / f"s{n}.yaml"
            path.write_text(text, encoding="utf-8", errors="surrogatepass")
            what = f"seed {SEED} script {n}: {text[:300]!r}"
            signal.setitimer(signal.ITIMER_REAL, HANG_S)
            try:
                script = load_script(path)
                outcomes["read"] += 1
            except ScriptError as exc:
                outcomes["refused"] += 1
                message = str(exc)
                assert message.startswith(f"{path}:") and "\n" not in message, what
                continue
            except Exception as exc:
                raise AssertionError(what) from exc
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            if rng.random() < 0.5:
                out = tmp_path / f"t{n}"
                args = ["tape", "build", str(path), "--api", "openai-chat", "-o", str(out)]
                result = _invoke_within_hang(runner, args)
                code = _check_result(result, path.name, "script", what)
                outcomes[("tape", code)] += 1
                if code == 0:
                    size = sum(p.stat().st_size for p in out.iterdir())
                    assert size <= tape_limit(script), what
    # the mutations reach both sides
    assert outcomes["read"] > 10 and outcomes["refused"] > 50, outcomes
    print(f"yaml fuzz (seed {SEED}): {dict(outcomes)}")


# -- AWS event-stream frames ----------------------------------------------------------------------
EVENTSTREAM_SOURCES = [p for p in SOURCES if p.name.startswith("bedrock-")]


def _frames(body: bytes) -> list[bytes]:
    """A valid event-stream body's messages."""
    out, pos = [], 0
    while pos + 4 <= len(body):
        total = int.from_bytes(body[pos : pos + 4], "big")
        out.append(body[pos : pos + total])
        pos += total
    return out


def _framed(
    headers: bytes, payload: bytes, *, total: int | None = None, header_len: int | None = None
) -> bytes:
    """A message of these header bytes and payload, its lengths (as given, or true) and both
    CRCs right: the decoder reads past its checks into what was mutated."""
    import struct
    import zlib

    size = 12 + len(headers) + len(payload) + 4
    if total is None:
        total = size
    if header_len is None:
        header_len = len(headers)
    head = struct.pack(">II", total, header_len)
    body = head + struct.pack(">I", zlib.crc32(head)) + headers + payload
    return body + struct.pack(">I", zlib.crc32(body))


ODD_PAYLOADS = [
    b"",
    b"\xff\xfe",
    b"{",
    b'{"a":' + b"[" * 2000 + b"]" * 2000 + b"}",
    b"NaN",
    b'{"delta": {"text": 5}}',
    b"[]",
    b'"\\ud800"',
    b"null",
]


def _mutate_frame(rng: random.Random, frame: bytes) -> bytes:
    header_len = int.from_bytes(frame[4:8], "big")
    headers, payload = frame[12 : 12 + header_len], frame[12 + header_len : -4]
    op = rng.random()
    if op < 0.15:  # lengths that lie, with CRCs that do not
        total = rng.choice([0, 15, 16, len(frame) - 1, len(frame) + 1, 2**24 + 1, 2**32 - 1])
        return _framed(headers, payload, total=total)
    if op < 0.25:
        return _framed(headers, payload, header_len=rng.choice([0, 1, header_len + 3, 2**17]))
    if op < 0.5:  # one byte of the headers (a name's length, a type, a value's length)
        h = bytearray(headers)
        if h:
            h[rng.randrange(len(h))] = rng.choice([0, 1, 7, 9, 10, 127, 255, rng.randrange(256)])
        return _framed(bytes(h), payload)
    if op < 0.7:  # an odd payload
        return _framed(headers, rng.choice(ODD_PAYLOADS))
    if op < 0.8:  # a header of each type, with any value
        kind = rng.randrange(12)
        value = bytes(rng.randrange(256) for _ in range(rng.randint(0, 20)))
        extra = bytes([len(b"x-odd")]) + b"x-odd" + bytes([kind]) + value
        return _framed(headers + extra, payload)
    if op < 0.9 and frame:  # a byte changed, its CRC left as it was
        b = bytearray(frame)
        b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        return bytes(b)
    return frame[: rng.randrange(max(1, len(frame)))]  # cut short


def _mutated_eventstream(rng: random.Random) -> tuple[Path, bytes, list[tuple[float, bytes]]]:
    source = rng.choice(EVENTSTREAM_SOURCES)
    from streamtool.core.recording.reader import Source

    chunks = list(Source(source).chunks())
    body = b"".join(c.data if isinstance(c.data, bytes) else c.data.encode() for c in chunks)
    frames = _frames(body)
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(frames))
        if rng.random() < 0.1:
            frames.insert(i, frames[i])  # a frame twice
        else:
            frames[i] = _mutate_frame(rng, frames[i])
    body = b"".join(frames)
    cuts = sorted(rng.sample(range(1, len(body)), k=min(len(body) - 1, rng.randint(1, 30))))
    cuts = cuts if len(body) > 1 else []
    bounds = zip([0, *cuts], [*cuts, len(body)], strict=True)
    reads = [(0.01 * i, body[a:b]) for i, (a, b) in enumerate(bounds)]
    return source, body, reads


def test_fuzz_eventstream_frames_decode_alike_however_cut():
    """Mutated AWS event-stream frames (lengths that lie with CRCs that agree, headers of every
    type and length, odd payloads, cut frames): the decoder never raises, and gives the same
    events and errors for the body whole, cut at random and one byte at a time."""
    from streamtool.core.wire.eventstream import EventStreamDecoder

    def decode(pieces):
        d = EventStreamDecoder()
        items = [item for piece in pieces for item in d.feed(piece)] + d.finish()
        return items, d.take_errors()

    rng = random.Random(SEED + 13)
    broken = 0
    for n in range(300):
        _, body, reads = _mutated_eventstream(rng)
        what = f"seed {SEED} frames {n}"
        try:
            whole = decode([body])
            assert decode([r for _, r in reads]) == whole, what
            if n % 10 == 0:
                assert decode([body[i : i + 1] for i in range(len(body))]) == whole, what
        except AssertionError:
            raise
        except Exception as exc:
            raise AssertionError(what) from exc
        broken += bool(whole[1])
    assert broken > 100  # the mutations reach the decoder's checks


def test_fuzz_eventstream_recordings_through_every_reader(tmp_path):
    """Mutated Bedrock recordings (their frames mutated, the reads cut anew) through replay,
    check, inspect and report: exit 0, 1 or 2, no traceback, exit 2 one line naming the file."""
    rng = random.Random(SEED + 17)
    runner = CliRunner()
    outcomes: Counter = Counter()
    with _hang_alarm():
        for n in range(40):
            source, _, reads = _mutated_eventstream(rng)
            lines = source.read_text(encoding="utf-8").splitlines()
            path = tmp_path / f"es{n}.jsonl"
            records = [lines[0]] + [
                json.dumps({"type": "chunk", "t": t, "b64": base64.b64encode(r).decode()})
                for t, r in reads
            ]
            records.append(json.dumps({"type": "end", "t": 1.0, "reason": "complete"}))
            path.write_text("\n".join(records) + "\n", encoding="utf-8")
            command = ["replay", "check", "inspect", "report"][n % 4]
            args = [command, str(path)]
            if command == "replay":
                args += ["--format", rng.choice(["json", "tree"]), "--speed", "max"]
            if command == "report":
                args += ["-o", str(tmp_path / f"es{n}.html")]
            what = f"seed {SEED} eventstream {n}: {' '.join(args)} from {source.name}"
            result = _invoke_within_hang(runner, args)
            outcomes[(command, _check_result(result, path.name, "frames", what))] += 1
    print(f"eventstream fuzz (seed {SEED}): {dict(sorted(outcomes.items()))}")


# -- mutate ---------------------------------------------------------------------------------------
def test_fuzz_mutate(tmp_path):
    """``mutate`` on mutated recordings (odd payload values of every type, events nested up to
    100,000 deep, broken lines, cut files): ``--list`` or a quirk applied, exit 0 or 2, no
    traceback, exit 2 one line naming the file; what it writes replays."""
    from streamtool.core import mutations as M
    from streamtool.core.recording.reader import Source

    ids = [info.id for info in M.generatable()]
    rng = random.Random(SEED + 19)
    sources = rng.sample([p for p in SOURCES if not p.name.startswith("bedrock-")], 12)
    applicable = {}
    for source in sources:  # the quirks each applies to unmutated: most inputs ask one of them
        src = Source(source)
        original = M.analyse(src.header, list(src.chunks()), src.end)
        applicable[source] = [info.id for info in M.applicable(original)] or ids
    runner = CliRunner()
    outcomes: Counter = Counter()
    with _hang_alarm():
        for n in range(45):
            source = rng.choice(sources)
            lines = source.read_text(encoding="utf-8").splitlines()
            kind = "payload"
            roll = rng.random()
            if roll < 0.15:  # one more read: an event nested 100,000 deep (replay reads it)
                first = json.loads(lines[1])
                deep = 'data: {"x":' + _deep(100_000) + "}\n\n"
                lines.insert(2, json.dumps({"type": "chunk", "t": first.get("t"), "text": deep}))
                text, kind = "\n".join(lines) + "\n", "deep"
            elif roll < 0.5:
                text, kind = _mutate_recording(rng, lines)
            else:  # every event of a stream keeps its place: odd values, deep events
                lines = list(lines)
                for _ in range(rng.randint(1, 3)):
                    i = rng.randrange(1, len(lines))
                    rec = json.loads(lines[i])
                    if isinstance(rec.get("text"), str):
                        rec["text"] = _mutate_payloads(rng, rec["text"])
                        lines[i] = json.dumps(rec)
                text = "\n".join(lines) + "\n"
            path = tmp_path / f"mu{n}.jsonl"
            path.write_text(text, encoding="utf-8")
            out = tmp_path / f"mu{n}.out.jsonl"
            if rng.random() < 0.15:
                args = ["mutate", str(path), "--list"]
            else:
                asked = rng.choice(applicable[source] if rng.random() < 0.85 else ids)
                args = ["mutate", str(path), "-q", asked, "-o", str(out)]
            what = f"seed {SEED} mutate {n} ({kind}): {' '.join(args)} from {source.name}"
            result = _invoke_within_hang(runner, args, 2 * HANG_S)
            code = _check_result(result, path.name, kind, what)
            assert code in (0, 2), what
            outcomes[(args[2], code)] += 1
            if code == 0 and out.exists():
                replayed = runner.invoke(app, ["replay", str(out), "--format", "json"])
                assert replayed.exit_code in (0, 1), (what, replayed.output)
    assert sum(v for (_, code), v in outcomes.items() if code == 0) > 15, outcomes
    print(f"mutate fuzz (seed {SEED}): {dict(sorted(outcomes.items()))}")
