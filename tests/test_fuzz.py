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
from pathlib import Path

import pytest
from typer.testing import CliRunner

from streamtool.cli.main import app
from streamtool.core.converters import converter_names
from streamtool.core.handlers import parser_names

from .conftest import RECORDINGS

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
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
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
            signal.setitimer(signal.ITIMER_REAL, HANG_S)
            try:
                result = runner.invoke(app, args, catch_exceptions=True)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            code = _check_result(result, name, kind, what)
            outcomes[(args[0], code)] += 1
            if kind == "b64":
                b64_codes[code] += 1
            for p in tmp_path.iterdir():
                p.unlink()
    finally:
        signal.signal(signal.SIGALRM, old)
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
