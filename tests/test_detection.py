"""Which converter replays a stream: the recording header, else the first events; --converter wins.

A stream that does not say is refused with one line on stderr and exit code 2.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamtool.core.converters import detect_from_event, detect_from_header
from streamtool.core.model.records import Header
from streamtool.core.plugins import WireApi
from streamtool.core.wire.sse import SSEEvent

from .conftest import RECORDINGS
from .helpers import fresh_python_prints
from .wire_helpers import run


def header(url: str | None = None, provider: str | None = None, api: str | None = None) -> Header:
    return Header(provider=provider, api=api, request={"url": url} if url else {})


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://api.openai.com/v1/chat/completions", "openai-chat"),
        ("https://api.openai.com/v1/responses", "openai-responses"),
        (
            "https://myres.openai.azure.com/openai/v1/responses?api-version=preview",
            "openai-responses",
        ),
        ("https://api.anthropic.com/v1/messages?beta=true", "anthropic"),
        (
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:"
            "streamGenerateContent?alt=sse",
            "gemini",
        ),
        (
            "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1/"
            "publishers/google/models/gemini-2.5-flash:streamGenerateContent",
            "gemini",
        ),
        (
            "https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5/"
            "publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict",
            "anthropic",
        ),
        # Gemini's OpenAI-compatible endpoint speaks Chat Completions
        ("https://generativelanguage.googleapis.com/v1beta/openai/chat/completions", "openai-chat"),
        ("https://example.com/v1/something", None),
    ],
)
def test_header_url(url: str, expected: str | None) -> None:
    assert detect_from_header(header(url)) == expected


def test_header_api_then_url_then_provider() -> None:
    anthropic_url = "https://api.anthropic.com/v1/messages"
    assert detect_from_header(header(anthropic_url, api="responses")) == "openai-responses"
    assert detect_from_header(header(anthropic_url, provider="gemini")) == "anthropic"
    assert detect_from_header(header(provider="anthropic")) == "anthropic"
    assert detect_from_header(header(provider="vertex-ai")) == "gemini"
    assert detect_from_header(header(api="generateContent")) == "gemini"
    assert detect_from_header(header(api="messages")) == "anthropic"
    assert (
        detect_from_header(header(provider="openai")) is None
    )  # chat or responses: the events say


def ev(payload: dict, name: str | None = None) -> SSEEvent:
    return SSEEvent(json.dumps(payload), name)


def test_first_events() -> None:
    start = {"type": "message_start", "message": {"model": "claude"}}
    assert detect_from_event(ev(start, "message_start")) == "anthropic"
    assert detect_from_event(ev(start)) == "anthropic"  # data-only framing
    assert detect_from_event(ev({"type": "ping"})) == "anthropic"
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    assert detect_from_event(ev(overloaded)) == "anthropic"
    created = {"type": "response.created", "response": {}}
    assert detect_from_event(ev(created)) == "openai-responses"
    assert detect_from_event(SSEEvent("{}", "response.created")) == "openai-responses"
    assert detect_from_event(ev({"type": "error", "sequence_number": 2})) == "openai-responses"
    assert detect_from_event(ev({"candidates": [{"content": {"parts": []}}]})) == "gemini"
    assert detect_from_event(ev({"usageMetadata": {"promptTokenCount": 1}})) == "gemini"
    google_error = {"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}
    assert detect_from_event(ev(google_error)) == "gemini"
    assert (
        detect_from_event(ev({"choices": [], "object": "chat.completion.chunk"})) == "openai-chat"
    )
    assert detect_from_event(ev({"hello": "world"})) is None
    assert detect_from_event(SSEEvent("[DONE]")) is None
    assert detect_from_event(SSEEvent("not json")) is None


@pytest.mark.parametrize(
    ("name", "converter"),
    [
        ("anthropic-parallel-tool-calls.jsonl", "anthropic"),
        ("openai-responses-reasoning-then-function-call.jsonl", "openai-responses"),
        ("gemini-json-array-error-mid-stream.jsonl", "gemini"),
    ],
)
def test_raw_bodies_are_detected_from_their_events(
    tmp_path: Path, name: str, converter: str
) -> None:
    """The same streams saved as raw bodies (no header) are recognised from their events."""
    lines = (RECORDINGS / name).read_text().splitlines()
    raw = "".join(json.loads(line)["text"] for line in lines[1:-1])
    path = tmp_path / "body.txt"
    path.write_text(raw)
    result = run([raw])
    assert result[0]["converter"] == converter
    assert cli("replay", str(path), "--format", "json").returncode == 0


def test_gemini_json_array_behind_blank_first_reads() -> None:
    element = {"candidates": [{"content": {"parts": [{"text": "hi"}]}, "finishReason": "STOP"}]}
    reads = ["\r\n", "  ", "[" + json.dumps(element), "]"]
    result, _ = run(reads)
    assert (result["converter"], result["text"], result["errors"]) == ("gemini", "hi", [])


# -- the command line ------------------------------------------------------------------------


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from streamtool.cli.main import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_converter_option_overrides_detection() -> None:
    path = RECORDINGS / "gemini-parallel-function-calls.jsonl"
    auto = json.loads(cli("replay", str(path), "--format", "json").stdout)
    assert auto["converter"] == "gemini" and len(auto["invocations"]) == 2
    forced = cli("replay", str(path), "--format", "json", "--converter", "anthropic")
    assert forced.returncode == 1  # the anthropic converter understood none of it, and says so
    assert "the anthropic converter understood none of its" in forced.stderr
    summary = json.loads(forced.stdout)
    assert summary["converter"] == "anthropic"
    assert summary["invocations"] == [] and summary["text"] == ""


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('data: {"hello": "world"}\n\ndata: {"n": 2}\n\n', "cannot tell which API this stream"),
        (": keep-alive\n\n", "the stream holds only SSE comments, no events"),
        ("", "the stream is empty: there is nothing to replay"),
    ],
)
def test_undetectable_stream_is_a_one_line_error(tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "mystery.sse"
    path.write_text(body)
    result = cli("replay", str(path), "--format", "json")
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"streamtool: error: {path}: ")
    assert message in lines[0]
    # --converter is suggested only where it can help: events of an API not recognised
    assert ("--converter" in lines[0]) == message.startswith("cannot tell")
    assert "Traceback" not in result.stderr


def test_unknown_converter_name_is_a_one_line_error() -> None:
    path = RECORDINGS / "anthropic-parallel-tool-calls.jsonl"
    result = cli("replay", str(path), "--converter", "mistral-native")
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert "unknown converter 'mistral-native'" in line
    assert "openai-responses" in line and "anthropic" in line and "gemini" in line


_NAMED_EVENT_PROBE = """
import sys
from streamtool.core.converters import detect_from_event
from streamtool.core.plugins.table import builtin_apis
from streamtool.core.wire.sse import SSEEvent
found = detect_from_event(SSEEvent(sys.argv[2], sys.argv[1]), plugins=False)
imported = [a.id for a in builtin_apis() if a.package + ".detect" in sys.modules]
print(found, ",".join(imported) or "-")
"""


@pytest.mark.parametrize(
    ("event", "data", "expected"),
    [
        ("message_start", '{"type":"message_start","message":{}}', "anthropic"),
        ("response.created", '{"type":"response.created","response":{}}', "openai-responses"),
        ("content-delta", '{"type":"content-delta"}', "cohere"),
        ("step.delta", '{"event_type":"step.delta"}', "gemini-interactions"),
        ("messageStart", "{}", "bedrock-converse"),
        ("chunk", "{}", "bedrock-invoke"),
    ],
)
def test_a_named_event_is_told_by_the_rows_without_importing_a_detect_part(
    event: str, data: str, expected: str
) -> None:
    # the event names are the rows' (event_names, read in the table's order up to the API):
    # no API's detect part is imported to tell a named event
    found, imported = fresh_python_prints(_NAMED_EVENT_PROBE, event, data).split()
    assert (found, imported) == (expected, "-")
    # and the same answer in this process, where other tests may have imported every part
    assert detect_from_event(SSEEvent(data, event), plugins=False) == expected


def test_every_row_names_the_events_its_decoder_reads() -> None:
    # a name the row lists is its API's by the rows; a name no row lists is nobody's by name
    # (an MCP stream's "message", a realtime session's messages): the JSON tells those
    from streamtool.core.plugins.table import builtin_apis

    rows = builtin_apis()
    for api in rows:
        assert "*" not in api.event_names, api.id  # a built-in lists its names, or none
        for name in api.event_names:
            probe = name[:-1] + "delta" if name.endswith("*") else name
            told = [other.id for other in rows if other.names_event(probe)]
            assert told == [api.id], (name, told)  # no two rows name an event alike
    for nobody in ("message", "error", "", "responses.created", "message_start_"):
        assert [a.id for a in rows if a.names_event(nobody)] == []


@pytest.mark.parametrize(
    ("listed", "name", "named"),
    [
        (("message_start",), "message_start", True),
        (("message_start",), "message_start2", False),
        (("response.*",), "response.created", True),
        (("response.*",), "response", False),
        (("response.*",), "responses.created", False),
        (("*",), "anything", False),  # "*": the detect part tells, not the row
        ((), "anything", False),
    ],
)
def test_a_row_names_an_event_exactly_or_by_a_prefix(
    listed: tuple[str, ...], name: str, named: bool
) -> None:
    assert _row("x", event_names=listed).names_event(name) is named


def _row(api_id: str, **fields: object) -> WireApi:
    """A made-up API's row."""
    return WireApi(
        id=api_id, name=api_id, provider=api_id, base_url="", path=f"/{api_id}", **fields
    )  # type: ignore[arg-type]


_PLUGIN_DETECT = """
def sniff_event(name):
    return "lines" if name.startswith("lines.") else None
"""


def test_a_row_listing_star_asks_its_detect_parts_sniff_event(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a plugin's row that lists no names (the default "*") leaves them to its detect part;
    # names its row lists are told by the row first
    from streamtool.core.converters import _Sniffers

    package = tmp_path / "lines_api_probe"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "detect.py").write_text(_PLUGIN_DETECT)
    monkeypatch.syspath_prepend(str(tmp_path))
    rows = [
        _row("lines", package="lines_api_probe", event_names=("*", "row.named")),
        _row("quiet", package="lines_api_probe.missing", event_names=()),
    ]
    sniffers = _Sniffers(lambda: iter(rows))
    assert sniffers.by_event("lines.delta") == "lines"
    assert sniffers.by_event("row.named") == "lines"
    assert sniffers.by_event("other") is None


_HEADER_PROBE = """
import sys
from streamtool.core.converters import detect_from_header
from streamtool.core.model.records import Header
from streamtool.core.plugins.table import builtin_apis
body = {"model": sys.argv[2]}
found = detect_from_header(Header(api=sys.argv[1], request={"body": body}))
imported = [a.id for a in builtin_apis() if a.package + ".detect" in sys.modules]
print(found, ",".join(imported) or "-")
"""


@pytest.mark.parametrize(
    ("api", "model", "expected", "imported"),
    [
        # one converter reads Anthropic's streams: nothing to pick, no detect part imported
        ("messages", "claude-sonnet-4-6", "anthropic", "-"),
        ("responses", "gpt-5", "openai-responses", "-"),
        # Chat's streams are read by openai-chat or kimi-k2: its header sniffer picks by model
        ("chat.completions", "moonshotai/kimi-k2-thinking", "kimi-k2", "openai-chat"),
        ("chat.completions", "gpt-4.1", "openai-chat", "openai-chat"),
    ],
)
def test_a_header_imports_a_detect_part_only_where_there_is_a_converter_to_pick(
    api: str, model: str, expected: str, imported: str
) -> None:
    assert fresh_python_prints(_HEADER_PROBE, api, model).split() == [expected, imported]


_THREADS_PROBE = """
import sys, threading
from streamtool.core.converters import detect_from_event
from streamtool.core.wire.sse import SSEEvent
events = [(name, expected) for name, expected in (a.split("=") for a in sys.argv[1:])]
start = threading.Barrier(len(events) * 4)
got = {}
def ask(i, name):
    start.wait()
    got[i] = detect_from_event(SSEEvent("{}", name), plugins=False)
threads = [threading.Thread(target=ask, args=(i, events[i % len(events)][0]))
           for i in range(len(events) * 4)]
for t in threads: t.start()
for t in threads: t.join()
print(all(got[i] == events[i % len(events)][1] for i in got), len(got))
"""


def test_named_events_of_every_api_asked_from_many_threads_at_once_are_all_told() -> None:
    # the first question of each thread imports the parts as it goes: threads racing through
    # the imports never skip an API's part (each sniffer asked of every event's name)
    named = {
        "message_start": "anthropic",
        "response.created": "openai-responses",
        "message-start": "cohere",
        "interaction.start": "gemini-interactions",
    }
    told = fresh_python_prints(_THREADS_PROBE, *(f"{k}={v}" for k, v in named.items()))
    assert told.split() == ["True", str(len(named) * 4)]


_REPLAY_IMPORTS = """
import contextlib, io, sys
from streamtool.cli.main import main
modules = sys.argv[2:]
sys.argv = ["streamtool", "replay", sys.argv[1], "--format", "json"]
with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
    main()
print(*(m in sys.modules for m in modules))
"""


def test_a_replay_of_an_sse_recording_loads_neither_the_binary_framing_nor_the_catalogue() -> None:
    # what a replay of a text stream does not use, it does not import at start: the binary
    # event-stream framing (Bedrock's), the quirk catalogue (its texts, severities and kinds)
    recording = (
        Path(__file__).resolve().parent.parent
        / "recordings"
        / ("anthropic-text-then-tool-use.jsonl")
    )
    modules = ("streamtool.core.wire.eventstream", "streamtool.core.model.quirks")
    loaded = fresh_python_prints(_REPLAY_IMPORTS, str(recording), *modules)
    assert loaded.split() == ["False", "False"]


def _bundled_objects() -> list[dict]:
    """The JSON objects of the first events of every bundled recording (every API's shapes)."""
    from streamtool.core.wire.sse import SSEDecoder

    objects = []
    for path in sorted(RECORDINGS.glob("*.jsonl")):
        decoder = SSEDecoder()
        events = []
        for line in path.read_text(encoding="utf-8").splitlines()[1:40]:
            record = json.loads(line)
            if record.get("type") == "chunk" and isinstance(record.get("text"), str):
                events += decoder.feed(record["text"])
        for event in events:
            try:
                obj = json.loads(getattr(event, "data", "") or "null")
            except ValueError:
                continue
            if isinstance(obj, list) and obj and isinstance(obj[0], dict):
                obj = obj[0]
            if isinstance(obj, dict):
                objects.append(obj)
    return objects


def _sniffers() -> list[tuple[str, tuple[str, ...], object]]:
    from streamtool.core.plugins import part
    from streamtool.core.plugins.table import builtin_apis

    found = []
    for api in builtin_apis():
        sniff = getattr(part(api, "detect"), "sniff_json", None)
        if sniff is not None:
            found.append((api.id, api.json_keys, sniff))
    return found


_KEYS = sorted({k for _, keys, _ in _sniffers() for k in keys} | {"id", "model", "delta", "data"})
_WORDS = sorted(
    {v for obj in _bundled_objects() for v in obj.values() if isinstance(v, str) and len(v) < 60}
    | {"2.0", "error", "text_completion", "chat.completion.chunk", "response.created"}
)
_VALUES = st.recursive(
    st.one_of(st.sampled_from(_WORDS), st.integers(0, 3), st.none(), st.booleans()),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from([*_KEYS, "type", "status", "text"]), inner, max_size=3),
    ),
    max_leaves=6,
)


def _holds_a_key_when_claimed(obj: dict) -> None:
    for api_id, keys, sniff in _sniffers():
        assert "*" not in keys, f"{api_id}'s row lists no json_keys: asked of every object"
        if sniff(obj) is not None:  # type: ignore[operator]
            assert any(k in obj for k in keys), (api_id, obj)
        # and without the keys its row lists, the object is not its
        assert sniff({k: v for k, v in obj.items() if k not in keys}) is None  # type: ignore[operator]


def test_every_sniffer_claims_only_objects_holding_one_of_its_rows_json_keys() -> None:
    from streamtool.core.plugins import part
    from streamtool.core.plugins.table import builtin_apis

    for api in builtin_apis():  # a row that lists no key has a part that reads no JSON
        sniffs = hasattr(part(api, "detect"), "sniff_json")
        assert bool(api.json_keys) == sniffs, api.id
    objects = _bundled_objects()
    assert len(objects) > 100
    claimed = set()
    for obj in objects:
        _holds_a_key_when_claimed(obj)
        claimed |= {api_id for api_id, _, sniff in _sniffers() if sniff(obj) is not None}  # type: ignore[operator]
    assert len(claimed) >= 6  # the recordings hold shapes of most APIs


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(_KEYS), _VALUES, min_size=1, max_size=5))
def test_any_object_a_sniffer_claims_holds_one_of_its_rows_json_keys(obj: dict) -> None:
    _holds_a_key_when_claimed(obj)


_JSON_PROBE = """
import json, sys
from streamtool.core.converters import detect_from_event
from streamtool.core.plugins.table import builtin_apis
from streamtool.core.wire.sse import SSEEvent
found = detect_from_event(SSEEvent(sys.argv[1], ""), plugins=False)
imported = [a.id for a in builtin_apis() if a.package + ".detect" in sys.modules]
print(found, ",".join(imported) or "-")
"""


@pytest.mark.parametrize(
    ("obj", "expected", "imported"),
    [
        # a chat chunk says "object": "chat.completion.chunk", which Chat's row lists
        # (json_values): Chat's part only picks its converter (a Kimi model's is kimi-k2)
        (
            {"id": "c", "object": "chat.completion.chunk", "choices": []},
            "openai-chat",
            "openai-chat",
        ),
        (
            {"object": "chat.completion.chunk", "model": "moonshotai/kimi-k2", "choices": []},
            "kimi-k2",
            "openai-chat",
        ),
        # a legacy completion says "object": "text_completion": one converter, no part asked
        ({"object": "text_completion", "choices": [{"text": "a"}]}, "openai-completions", "-"),
        # a chunk that does not say its object: the two APIs whose parts read "choices"
        (
            {"id": "c", "choices": [{"index": 0, "delta": {"content": "a"}}]},
            "openai-chat",
            "openai-chat,openai-completions",
        ),
        (
            {"id": "c", "choices": [{"index": 0, "text": "a"}]},
            "openai-completions",
            "openai-chat,openai-completions",
        ),
        ({"jsonrpc": "2.0", "id": 1, "result": {}}, "mcp", "mcp"),
        ({"candidates": [{"content": {}}]}, "gemini", "gemini"),
    ],
)
def test_an_unnamed_event_imports_only_the_parts_that_read_its_keys(
    obj: dict, expected: str, imported: str
) -> None:
    assert fresh_python_prints(_JSON_PROBE, json.dumps(obj)).split() == [expected, imported]


_NAMED_ROWS_PROBE = """
import sys
from streamtool.core.converters import detect_from_event
from streamtool.core.plugins import WireApi
from streamtool.core.wire.sse import SSEEvent
read = set()
original = WireApi.from_package
WireApi.from_package = classmethod(lambda cls, package: read.add(package) or original(package))
print(detect_from_event(SSEEvent("{}", sys.argv[1]), plugins=False), len(read))
"""


def test_a_named_event_reads_the_rows_up_to_its_api() -> None:
    # Anthropic's row is the table's third: its events' names read three manifests, not eleven
    told = fresh_python_prints(_NAMED_ROWS_PROBE, "message_start").split()
    assert told == ["anthropic", "3"]


def _ranked_answer(obj: dict) -> str | None:
    """What the detect parts' JSON sniffers say of ``obj`` when every one is asked, lower
    ``RANK`` first (no row's json_values read)."""
    from streamtool.core.plugins import part
    from streamtool.core.plugins.table import builtin_apis

    ranked = sorted(
        (getattr(part(api, "detect"), "RANK", 10**6), sniff)
        for api in builtin_apis()
        if (sniff := getattr(part(api, "detect"), "sniff_json", None)) is not None
    )
    return next((found for _, sniff in ranked if (found := sniff(obj)) is not None), None)


def test_the_rows_json_values_tell_every_bundled_object_as_the_sniffers_would() -> None:
    # an object holding a row's json_values is told from the row: for every event object of
    # the bundled recordings, the answer every sniffer asked in RANK order would give
    from streamtool.core.converters import _Sniffers
    from streamtool.core.plugins.table import builtin_rows

    objects = _bundled_objects()
    valued = 0
    for obj in objects:
        sniffers = _Sniffers(builtin_rows)  # a new one each time: no answer cached
        assert sniffers.by_object(obj) == _ranked_answer(obj), obj
        valued += obj.get("object") in ("chat.completion.chunk", "text_completion")
    assert valued > 20  # the recordings hold chat chunks and legacy completions


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(_KEYS), _VALUES, min_size=1, max_size=5))
def test_an_object_that_names_its_type_by_a_rows_json_values_is_that_apis(obj: dict) -> None:
    # an object naming its type outright is read before one known by its keys: one that says
    # a row's json_values ("object": "chat.completion.chunk") is that API's, whatever else it
    # holds; any other object is told as every sniffer asked in RANK order tells it
    from streamtool.core.converters import _Sniffers
    from streamtool.core.plugins.table import builtin_rows

    for value, apis in (
        ("chat.completion.chunk", ("openai-chat", "kimi-k2")),
        ("text_completion", ("openai-completions",)),
    ):
        assert _Sniffers(builtin_rows).by_object({**obj, "object": value}) in apis
    if obj.get("object") not in ("chat.completion.chunk", "text_completion"):
        assert _Sniffers(builtin_rows).by_object(obj) == _ranked_answer(obj), obj
