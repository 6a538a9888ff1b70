"""``streamtool import`` and ``export --vcr``: cassettes written by vcrpy itself (the openai SDK
against a local ``serve``), HAR recorded by a real browser, bad input; the imported tape served
byte for byte, its secrets gone, its timing said to be unknown."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from streamtool.core.recording.reader import Source
from streamtool.core.recording.tape_index import read_index

from .serve_helpers import STREAMTOOL, recording, start_listening

vcr = pytest.importorskip("vcr")

KEY = "sk-import-test-0123456789abcdefXYZ"
REC = recording("openai-parallel-tool-calls")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*STREAMTOOL, *args], capture_output=True, text=True, timeout=120)


@contextmanager
def serving(path: Path) -> Iterator[str]:
    proc, _, origin = start_listening([*STREAMTOOL, "serve", str(path), "--port", "0"])
    try:
        yield origin
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@contextmanager
def recording_page(origin: str, har: Path) -> Iterator[Any]:
    """A page of Debian's chromium (through Playwright) at ``origin``, its traffic recorded as
    the HAR ``har`` (written when the block ends); skips without them."""
    playwright = pytest.importorskip("playwright.sync_api")
    chromium = Path("/usr/bin/chromium")
    if not chromium.exists():
        pytest.skip("Debian's chromium is not installed")
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(chromium),
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        context = browser.new_context(record_har_path=str(har), record_har_content="embed")
        page = context.new_page()
        page.goto(origin + "/")
        yield page
        context.close()
        browser.close()


def body_of(path: Path) -> bytes:
    return b"".join(
        c.data if isinstance(c.data, bytes) else c.data.encode() for c in Source(path).chunks()
    )


def sdk_stream(base: str) -> tuple[str, list[tuple[str, str]], list[bytes]]:
    """The openai SDK's stream read whole: its text, its calls, and the raw chunks' JSON."""
    import openai

    client = openai.OpenAI(base_url=f"{base}/v1", api_key=KEY, max_retries=0)
    text, calls = [], {}
    stream = client.chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "weather?"}], stream=True
    )
    for chunk in stream:
        for choice in chunk.choices:
            text.append(choice.delta.content or "")
            for tc in choice.delta.tool_calls or []:
                name, args = calls.get(tc.index, ("", ""))
                calls[tc.index] = (
                    name + ((tc.function.name or "") if tc.function else ""),
                    args + ((tc.function.arguments or "") if tc.function else ""),
                )
    return "".join(text), [calls[i] for i in sorted(calls)], []


def assert_no_key(folder: Path) -> None:
    for f in folder.rglob("*"):
        if f.is_file():
            assert KEY not in f.read_text(errors="replace"), f


@pytest.fixture(scope="module")
def cassette(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, tuple[Any, ...]]:
    """A cassette vcrpy writes while the openai SDK streams from ``serve`` (and what the SDK
    read then)."""
    folder = tmp_path_factory.mktemp("vcr")
    path = folder / "chat.yaml"
    with serving(REC) as origin, vcr.use_cassette(str(path), record_mode="all"):
        seen = sdk_stream(origin)
    assert path.is_file() and KEY in path.read_text()  # vcrpy kept the key: the import must not
    return path, seen


def test_a_vcrpy_cassette_imports_as_a_tape_served_byte_for_byte(
    cassette: tuple[Path, Any], tmp_path: Path
) -> None:
    path, seen = cassette
    out = tmp_path / "tape"
    done = cli("import", str(path), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "1 secret removed: authorization header (interaction 1)" in done.stderr
    (entry,) = read_index(out)
    rec = out / entry.file
    assert body_of(rec) == body_of(REC)  # the stream's bytes, whole
    header = Source(rec).header
    assert header.extra["imported"] == {
        "from": "vcrpy", "file": "chat.yaml", "entry": "interaction 1",
        "timing": "unknown", "streamed": True,
    }  # fmt: skip
    assert [c.t for c in Source(rec).chunks()] == [None]  # nothing pretends to be timed
    assert_no_key(out)
    with serving(out) as origin:
        assert sdk_stream(origin) == seen


def test_export_writes_a_cassette_vcrpy_replays(cassette: tuple[Path, Any], tmp_path: Path) -> None:
    path, seen = cassette
    out = tmp_path / "tape"
    assert cli("import", str(path), "--out", str(out)).returncode == 0
    exported = tmp_path / "exported.yaml"
    done = cli("export", str(out), "--vcr", str(exported))
    assert done.returncode == 0, done.stderr
    url = Source(out / read_index(out)[0].file).header.request["url"]
    base = url.split("/v1/")[0]
    # nothing listens there any more: vcrpy answers from the exported cassette
    with vcr.use_cassette(str(exported), record_mode="none"):
        assert sdk_stream(base) == seen
    assert KEY not in exported.read_text()


def test_gzip_bodies_and_parsed_json_dialects(tmp_path: Path) -> None:
    """A gzip body (vcrpy without decode_compressed_response keeps it compressed, as
    ``!!binary``) and JSON bodies kept parsed under ``parsed_body`` (the dialect of
    pydantic-ai's cassettes: beside the request's method, in place of the response's body)."""
    import yaml

    stream = body_of(REC)
    doc = {
        "version": 1,
        "interactions": [
            {
                "request": {
                    "method": "POST", "uri": "https://api.openai.com/v1/chat/completions",
                    "parsed_body": {"model": "gpt-4o", "stream": True},  # beside the method
                    "headers": {"Authorization": [f"Bearer {KEY}"]},
                },
                "response": {
                    "status": {"code": 200, "message": "OK"},
                    "headers": {"Content-Type": ["text/event-stream"],
                                "Content-Encoding": ["gzip"]},
                    "body": {"string": gzip.compress(stream)},
                },
            },
            {
                "request": {"method": "GET", "uri": "https://api.openai.com/v1/models?api_key="
                            + KEY, "body": None, "headers": {}},
                "response": {"status": {"code": 200, "message": "OK"},
                             "headers": {"Content-Type": ["application/json"]},
                             "parsed_body": {"data": []}},
            },
        ],
    }  # fmt: skip
    path = tmp_path / "gz.yaml"
    path.write_text(yaml.safe_dump(doc))
    out = tmp_path / "tape"
    done = cli("import", str(path), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "2 secrets removed" in done.stderr and "query parameter api_key" in done.stderr
    first, second = read_index(out)
    assert body_of(out / first.file) == stream
    assert Source(out / first.file).header.request["body"] == {"model": "gpt-4o", "stream": True}
    assert json.loads(body_of(out / second.file)) == {"data": []}
    assert Source(out / second.file).header.extra["imported"]["streamed"] is False
    assert_no_key(out)


def test_a_har_recorded_by_a_real_browser_imports(tmp_path: Path) -> None:
    har = tmp_path / "page.har"
    with serving(REC) as origin, recording_page(origin, har) as page:
        text = page.evaluate(
            """async (key) => {
                const r = await fetch('/v1/chat/completions', {method: 'POST',
                    headers: {'content-type': 'application/json', 'authorization': 'Bearer ' + key},
                    body: JSON.stringify({model: 'gpt-4o', stream: true, messages: []})});
                return await r.text();
            }""",
            KEY,
        )
    assert text.encode() == body_of(REC)
    out = tmp_path / "tape"
    done = cli("import", str(har), "--out", str(out))
    assert done.returncode == 0, done.stderr
    streams = [e for e in read_index(out) if e.path == "/v1/chat/completions"]
    assert len(streams) == 1
    assert body_of(out / streams[0].file) == body_of(REC)
    assert Source(out / streams[0].file).header.extra["imported"]["from"] == "har"
    assert_no_key(out)


@pytest.mark.parametrize(
    "name, content, says",
    [
        ("cut.yaml", "interactions:\n- request: {method: POST, uri: 'http://x\n", "line "),
        ("empty.har", json.dumps({"log": {"version": "1.2", "entries": []}}), "without entries"),
        ("bad.flow", "12:not a flow,", "mitmproxy"),
        ("gz.yaml", None, "interaction 1: the body is not gzip"),
        ("other.json", json.dumps({"hello": 1}), "neither a vcrpy cassette"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_written(
    tmp_path: Path, name: str, content: str | None, says: str
) -> None:
    import yaml

    path = tmp_path / name
    if content is None:
        content = yaml.safe_dump({"interactions": [{
            "request": {"method": "POST", "uri": "https://api.openai.com/v1/chat/completions"},
            "response": {"status": {"code": 200}, "headers": {"Content-Encoding": ["gzip"]},
                         "body": {"string": b"not gzip at all"}}}]})  # fmt: skip
    path.write_text(content)
    out = tmp_path / "tape"
    done = cli("import", str(path), "--out", str(out))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert str(path) in done.stderr and says in done.stderr, done.stderr
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == [name]  # no staging folder left


def test_an_existing_tape_is_never_overwritten(cassette: tuple[Path, Any], tmp_path: Path) -> None:
    out = tmp_path / "tape"
    out.mkdir()
    (out / "mine.txt").write_text("keep")
    done = cli("import", str(cassette[0]), "--out", str(out))
    assert done.returncode == 2 and "not empty" in done.stderr
    assert [p.name for p in out.iterdir()] == ["mine.txt"]


def test_env_is_clean() -> None:
    assert KEY not in os.environ.get("OPENAI_API_KEY", "")


@pytest.mark.parametrize("coding", ["br", "deflate", "gzip, br"])
def test_br_and_deflate_bodies_are_decoded(tmp_path: Path, coding: str) -> None:
    import zlib

    import brotli
    import yaml

    stream = body_of(REC)
    data = stream
    for step in [c.strip() for c in coding.split(",")]:
        data = brotli.compress(data) if step == "br" else (
            gzip.compress(data) if step == "gzip" else zlib.compress(data)
        )  # fmt: skip
    doc = {"interactions": [{
        "request": {"method": "POST", "uri": "https://api.openai.com/v1/chat/completions",
                    "body": '{"model": "gpt-4o", "stream": true}'},
        "response": {"status": {"code": 200}, "body": {"string": data},
                     "headers": {"content-type": ["text/event-stream"],
                                 "content-encoding": [coding]}}}]}  # fmt: skip
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(doc))
    out = tmp_path / "tape"
    done = cli("import", str(path), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert body_of(out / read_index(out)[0].file) == stream


def test_two_imports_into_one_tape_at_once_leave_one_whole_tape(
    cassette: tuple[Path, Any], tmp_path: Path
) -> None:
    """Each import builds its tape beside ``--out`` and moves it into place: of two at once,
    one tape is there whole (the recording byte for byte) and the other import is refused in
    one line."""
    out = tmp_path / "tape"
    procs = [
        subprocess.Popen(
            [*STREAMTOOL, "import", str(cassette[0]), "--out", str(out)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for _ in range(2)
    ]
    results = [(p.wait(60), p.stderr.read() if p.stderr else "") for p in procs]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 2], results
    refused = next(err for code, err in results if code == 2)
    assert refused.count("\n") == 1 and "Traceback" not in refused, refused
    (entry,) = read_index(out)
    assert body_of(out / entry.file) == body_of(REC)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_ls_and_inspect_say_a_recording_was_imported(tmp_path: Path) -> None:
    """``ls`` marks imported recordings (and lists their plain exchanges, which no converter
    reads), ``inspect`` says where one came from; an answer that was not streamed has no
    ``[DONE]`` to miss."""
    import yaml

    whole = {"id": "c1", "object": "chat.completion", "model": "gpt-4o", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "hello", "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
         "finish_reason": "tool_calls"}]}  # fmt: skip

    def ix(method: str, path: str, body: str | None, kind: str, answer: str) -> dict[str, Any]:
        return {"request": {"method": method, "uri": f"https://api.openai.com{path}",
                            "body": body, "headers": {}},
                "response": {"status": {"code": 200}, "headers": {"content-type": [kind]},
                             "body": {"string": answer}}}  # fmt: skip

    doc = {"interactions": [
        ix("POST", "/v1/chat/completions", '{"model": "gpt-4o", "stream": true}',
           "text/event-stream", body_of(REC).decode()),
        ix("POST", "/v1/chat/completions", '{"model": "gpt-4o"}', "application/json",
           json.dumps(whole)),
        ix("GET", "/v1/models", None, "application/json", '{"data": []}'),
    ]}  # fmt: skip
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(doc))
    out = tmp_path / "tape"
    assert cli("import", str(path), "--out", str(out)).returncode == 0
    listed = cli("ls", str(out), "--format", "json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [(r["api"], r["imported"], r["duration_s"]) for r in rows] == [
        ("chat.completions", "vcrpy", None), ("chat.completions", "vcrpy", None),
        (None, "vcrpy", None),
    ]  # fmt: skip
    # whole: no [DONE] to miss, and a whole answer's calls carry no stream index
    assert rows[1]["quirks"] == [] and rows[1]["errors"] == []
    assert rows[1]["tool_calls"] == ["get_weather"]
    table = cli("ls", str(out))
    assert table.returncode == 0 and "imported" in table.stdout.splitlines()[1]
    first = out / read_index(out)[0].file
    shown = cli("inspect", str(first))
    assert "imported from vcrpy c.yaml, interaction 1: reads and timing unknown" in shown.stdout
    facts = json.loads(cli("inspect", str(first), "--format", "json").stdout)["facts"]
    assert facts["imported"]["from"] == "vcrpy" and facts["imported"]["timing"] == "unknown"


ANTHROPIC = recording("anthropic-text-then-tool-use")


def test_a_non_streamed_answer_beside_its_stream_in_the_type_content_dialect(
    tmp_path: Path,
) -> None:
    """Bodies kept as ``{type: json|text, content}`` (a dialect of vcrpy's serializer) import
    whole; an Anthropic answer that was not streamed replays as the SDK reads it; a tape that
    holds the same request streamed and not answers each the way it is asked."""
    import anthropic
    import yaml

    def ask(base: str, stream: bool) -> Any:
        client = anthropic.Anthropic(base_url=base, api_key=KEY, max_retries=0)
        ask = {"model": "claude-sonnet-4-5", "max_tokens": 1024,
               "messages": [{"role": "user", "content": "weather in Paris?"}]}  # fmt: skip
        if not stream:
            return client.messages.create(**ask).model_dump(mode="json")  # type: ignore[call-overload]
        with client.messages.stream(**ask) as events:  # type: ignore[arg-type]
            return events.get_final_message().model_dump(mode="json")

    with serving(ANTHROPIC) as origin:
        whole = ask(origin, stream=True)  # the SDK's own accumulation of the stream

    def ix(stream: bool, body: dict[str, Any]) -> dict[str, Any]:
        content = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "stream": stream,
                   "messages": [{"role": "user", "content": "weather in Paris?"}]}  # fmt: skip
        kind = "text/event-stream" if stream else "application/json"
        return {"request": {"method": "POST", "uri": "https://api.anthropic.com/v1/messages",
                            "headers": {"x-api-key": [KEY]},
                            "body": {"type": "json", "content": content}},
                "response": {"status": 200, "headers": {"content-type": [kind]},
                             "body": body}}  # fmt: skip

    doc = {"interactions": [
        ix(False, {"type": "json", "content": whole}),
        ix(True, {"type": "text", "content": body_of(ANTHROPIC).decode()}),
    ]}  # fmt: skip
    path = tmp_path / "prefix.yaml"
    path.write_text(yaml.safe_dump(doc))
    out = tmp_path / "tape"
    done = cli("import", str(path), "--out", str(out))
    assert done.returncode == 0, done.stderr
    plain, streamed = read_index(out)
    assert json.loads(body_of(out / plain.file)) == whole
    assert body_of(out / streamed.file) == body_of(ANTHROPIC)
    assert Source(out / plain.file).header.request["body"]["stream"] is False

    replayed = subprocess.run(
        [*STREAMTOOL, "replay", str(out / plain.file), "--format", "json"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert replayed.returncode == 0, replayed.stderr
    summary = json.loads(replayed.stdout)
    assert summary["errors"] == []
    assert summary["text"] == "".join(b["text"] for b in whole["content"] if b["type"] == "text")
    calls = [(b["name"], b["input"]) for b in whole["content"] if b["type"] == "tool_use"]
    assert [(i["name"], i["arguments"]) for i in summary["invocations"]] == calls
    assert summary["finish_reason"] == whole["stop_reason"]

    with serving(out) as origin:  # both orders: each request finds its own way of answering
        assert ask(origin, stream=True) == whole
        assert ask(origin, stream=False) == whole
        assert ask(origin, stream=False) == whole
        assert ask(origin, stream=True) == whole
    assert_no_key(out)


def test_a_body_kept_in_a_shape_no_dialect_has_is_refused(tmp_path: Path) -> None:
    import yaml

    doc = {"interactions": [{
        "request": {"method": "POST", "uri": "https://api.openai.com/v1/chat/completions"},
        "response": {"status": 200, "headers": {}, "body": {"payload": "?"}}}]}  # fmt: skip
    path = tmp_path / "odd.yaml"
    path.write_text(yaml.safe_dump(doc))
    done = cli("import", str(path), "--out", str(tmp_path / "tape"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "interaction 1" in done.stderr and "payload" in done.stderr
    assert not (tmp_path / "tape").exists()


def test_a_responses_answer_that_was_not_streamed_replays_as_the_sdk_reads_it(
    tmp_path: Path,
) -> None:
    """The Responses API's whole answer (``"object": "response"``, a JSON body): its text and
    calls as the openai SDK's own accumulation of the same answer streamed, no quirk of a
    stream it never was."""
    import openai
    import yaml

    rec = recording("openai-responses-parallel-function-calls")
    with serving(rec) as origin:
        client = openai.OpenAI(base_url=f"{origin}/v1", api_key=KEY, max_retries=0)
        with client.responses.stream(model="gpt-4.1", input="weather?") as events:
            whole = events.get_final_response().model_dump(mode="json")
    doc = {"interactions": [{
        "request": {"method": "POST", "uri": "https://api.openai.com/v1/responses",
                    "body": '{"model": "gpt-4.1", "input": "weather?"}', "headers": {}},
        "response": {"status": 200, "headers": {"content-type": ["application/json"]},
                     "body": {"type": "json", "content": whole}}}]}  # fmt: skip
    path = tmp_path / "whole.yaml"
    path.write_text(yaml.safe_dump(doc))
    out = tmp_path / "tape"
    assert cli("import", str(path), "--out", str(out)).returncode == 0
    replayed = cli("replay", str(out / read_index(out)[0].file), "--format", "json")
    assert replayed.returncode == 0, replayed.stderr
    summary = json.loads(replayed.stdout)
    assert summary["errors"] == [] and summary["quirks"] == []
    calls = [
        (item["name"], json.loads(item["arguments"]))
        for item in whole["output"]
        if item["type"] == "function_call"
    ]
    assert calls and [(i["name"], i["arguments"]) for i in summary["invocations"]] == calls
    texts = [
        part["text"]
        for item in whole["output"]
        if item["type"] == "message"
        for part in item["content"]
        if part["type"] == "output_text"
    ]
    assert summary["text"] == "".join(texts)
