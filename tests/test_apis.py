"""The table of wire APIs is consistent, and every part that reads it reads it the same way."""

from __future__ import annotations

import importlib
import importlib.util
import json
import pickle
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from streamtool.core.converters import converter_names, detect_from_header
from streamtool.core.exchange.requests import APIS, RequestOptions, build_request
from streamtool.core.model.records import Header
from streamtool.core.net.capture import is_stream_request, provider_and_api
from streamtool.core.net.library import load_recording
from streamtool.core.net.proxy import PROVIDER_NAMES, parse_upstreams, route
from streamtool.core.plugins import (
    ManifestError,
    WireApi,
    api_for_converter,
    api_for_path,
    api_table,
    builtin_apis,
    converter_named,
    error_body,
    find_api,
    part,
    served_api,
)

from .conftest import ROOT
from .helpers import fresh_python_prints

ROWS = pytest.mark.parametrize("api", api_table(), ids=[a.id for a in api_table()])
# the APIs a client reaches with an HTTP request (record, the proxy's forwarding, serve's routes)
HTTP = [a for a in api_table() if a.http]
HTTP_ROWS = pytest.mark.parametrize("api", HTTP, ids=[a.id for a in HTTP])
WEBSOCKET = [a for a in api_table() if a.websocket]
# the APIs record sends requests of (a request part); MCP's requests are a client's session
SENT = [a for a in HTTP if part(a, "request") is not None]
SENT_ROWS = pytest.mark.parametrize("api", SENT, ids=[a.id for a in SENT])
KEYS = {
    "OPENAI_API_KEY": "k",
    "ANTHROPIC_API_KEY": "k",
    "GEMINI_API_KEY": "k",
    "CO_API_KEY": "k",
    "AWS_BEARER_TOKEN_BEDROCK": "k",
}


def test_ids_and_names_are_unique() -> None:
    ids = [a.id for a in api_table()]
    assert len(ids) == len(set(ids))
    seen: dict[str, str] = {}
    for api in api_table():
        for name in api.names:
            assert seen.setdefault(name, api.id) == api.id, f"{name!r} names two APIs"
            assert find_api(name) is api
    routes = [r for a in api_table() for r in (a.route, *a.more_routes)]
    assert len(routes) == len(set(routes))


@ROWS
def test_a_row_is_complete(api: WireApi) -> None:
    assert api.converters and set(api.converters) <= set(converter_names())
    for converter in api.converters:
        assert api_for_converter(converter) is api
        assert converter_named(converter) == converter
    assert converter_named(api.name) == api.converter
    assert api.error_style in ("openai", "anthropic", "gemini", "bedrock", "cohere", "jsonrpc")
    # an official host, or none (MCP: the proxy sends its requests to --upstream only)
    assert urlsplit(api.base_url).scheme == "https" or api.base_url == ""
    assert api.path.startswith("/")
    assert api.official_path.endswith(api.route)


@ROWS
def test_every_route_resolves_back_to_its_row(api: WireApi) -> None:
    assert served_api(api.route) is api
    assert served_api(api.official_path) is api
    for suffix in (api.route, *api.more_routes):
        assert api_for_path("/v1/x" + suffix) is api
        assert api_for_path(("/v1/x" + suffix).upper()) is api
        # the proxy records a POST there only for an API its clients reach over HTTP
        recorded = route("POST", "/v1/x" + suffix, {}, {"model": "m"}).api
        assert recorded == (api.name if api.http else None)
    for hosted in api.hosted_routes:
        path = "/v1/projects/p" + hosted.replace("*", "models/m")
        assert api_for_path(path) is None  # no proxy or capture records it
        assert api_for_path(path, hosted=True) is api
        assert detect_from_header(Header(request={"url": "https://h" + path})) == api.converter
    for route_ in api.more_routes:
        assert served_api("/v1/x" + route_) is None  # serve answers the stream only


@SENT_ROWS
def test_record_serve_proxy_and_capture_agree(api: WireApi, tmp_path: Path) -> None:
    """The request ``record`` sends for an API is that API to serve, the proxy, SDK capture,
    the converter registry and the tapes, with the same model."""
    prepared = build_request(RequestOptions(provider=api.id, model="m-1", prompt="hi"), KEYS)
    assert APIS[api.id].wire is api
    assert prepared.api == api.name and prepared.provider == api.provider
    url = prepared.url
    path = unquote(urlsplit(url).path)
    assert path == api.official_path.replace("{model}", "m-1")

    # serve: the endpoint it answers, and the model it picks a recording by
    assert served_api(path) is api
    assert api.model_of(path, prepared.body) == "m-1"
    # the proxy
    r = route("POST", path, prepared.headers, prepared.body)
    assert (r.provider, r.api, r.model) == (api.provider, api.name, "m-1")
    if api.compatible:
        assert r.style == api.error_style
    # SDK capture
    assert provider_and_api(url, prepared.headers) == (api.provider, api.name)
    assert is_stream_request(url, prepared.body)
    # the converter registry, from the recording header and from the URL alone
    assert detect_from_header(Header(api.provider, api.name, request={"url": url})) == (
        api.converter
    )
    assert detect_from_header(Header(request={"url": url})) == api.converter
    # a recording of it, as serve and the tapes load it
    file = tmp_path / "rec.jsonl"
    records = [
        {
            "type": "header",
            "format": "streamtool-recording",
            "version": 1,
            "request": {"method": "POST", "url": url, "headers": {}, "body": prepared.body},
            "response": {"status": 200, "headers": {}},
        },
        {"type": "end", "t": 0.1, "reason": "complete"},
    ]
    file.write_text("".join(json.dumps(r) + "\n" for r in records))
    rec = load_recording(file)
    assert (rec.api, rec.endpoint, rec.model) == (api.converter, api.route, "m-1")
    assert rec.describe()["api"] == api.label


def test_a_websocket_api_is_served_at_its_route_and_read_from_its_sessions(
    tmp_path: Path,
) -> None:
    """Realtime and Responses over WebSocket: serve answers the upgrade at the route, HTTP there
    is not theirs (Realtime) or the HTTP API's (Responses), and a session's recording is read
    by the API's converter, its model from the URL's query."""
    assert {a.id for a in WEBSOCKET} == {"openai-realtime", "openai-responses"}
    for api in WEBSOCKET:
        path = api.official_path
        assert served_api(path, "websocket") is api
        assert served_api(path, "http") is (api if api.http else None)
        url = "wss://api.openai.com" + path + "?model=m-1"
        header = Header("openai", api.name, request={"method": "GET", "url": url})
        header.extra["transport"] = "websocket"
        assert header.websocket and header.model == "m-1"
        assert detect_from_header(header) == api.converter
        # record's --provider lists only what it can send
        assert (api.id in APIS) is api.http


@ROWS
def test_the_proxy_takes_every_name_of_an_api(api: WireApi) -> None:
    for name in api.names:
        rules = parse_upstreams([f"{name}=http://127.0.0.1:9"]).rules
        # a name that is also a provider's sends that provider's every request there
        key = name if name in PROVIDER_NAMES else api.name
        assert rules == {key: "http://127.0.0.1:9"}


@pytest.mark.parametrize("style", ["openai", "anthropic", "gemini"])
def test_error_bodies_carry_the_message(style: str) -> None:
    obj = json.loads(error_body(style, 404, "no such thing"))
    assert obj["error"]["message"] == "no such thing"


def test_the_table_imports_nothing_heavy() -> None:
    # the whole table (every API package's row), and nothing of any API's parts
    code = (
        "import sys, streamtool.core.plugins as p\n"
        "assert p.api_table()\n"
        "print(sorted(m for m in sys.modules if m.startswith(('streamtool.core.net', "
        "'streamtool.core.converters', 'httpx', 'starlette', 'uvicorn', 'openai', 'anthropic')) "
        "or (m.startswith('streamtool.core.apis.') and m.count('.') > 3)))"
    )
    assert fresh_python_prints(code) == "[]"


def test_replaying_the_built_in_apis_reads_no_plugin_entry_points(tmp_path: Path) -> None:
    """The built-in APIs answer every look-up a replay of their recordings makes, and of their
    raw bodies (no header: the stream tells): the installed distributions' entry points
    (importlib.metadata, some 10 ms) are never read for them."""
    for rec in sorted((ROOT / "recordings").glob("*.jsonl")):
        lines = [json.loads(line) for line in rec.read_text(encoding="utf-8").splitlines()]
        chunks = [r for r in lines if r.get("type") == "chunk"]
        status = (lines[0].get("response") or {}).get("status")
        # a stream's body (an HTTP error's JSON body alone tells no API: plugins are asked)
        if status == 200 and chunks and all("text" in c for c in chunks):
            body = "".join(c["text"] for c in chunks)
            (tmp_path / f"{rec.stem}.sse").write_text(body, encoding="utf-8")
    code = (
        "import sys, pathlib\n"
        "from streamtool.core.drive.replay_file import replay_file\n"
        "for folder, pattern in ((sys.argv[1], '*.jsonl'), (sys.argv[2], '*.sse')):\n"
        "    for path in sorted(pathlib.Path(folder).glob(pattern)):\n"
        "        replay_file(str(path))\n"
        "print('importlib.metadata' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(ROOT / "recordings"), str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert len(list(tmp_path.glob("*.sse"))) > 40
    assert out.stdout.strip() == "False", out.stderr


@ROWS
def test_the_row_a_package_holds_is_the_table_s(api: WireApi) -> None:
    # its parts can pass their own package's API to the registry's look-ups
    import importlib

    own = importlib.import_module(api.package).API
    assert own == api and own.package == api.package
    # a built-in's row is read from its manifest once: the package's API is the table's row
    assert own is api


def test_what_a_row_leaves_out_follows_from_its_other_fields() -> None:
    base = {"provider": "p", "base_url": ""}
    plain = WireApi(id="a", name="a.chat", path="/v1/chat", **base)
    assert (plain.label, plain.route) == ("a.chat", "/v1/chat")
    # its converter is the one named as the API, its errors its provider's
    assert (plain.converters, plain.error_style) == (("a",), "p")
    # a path that names the model: the route is what follows the model
    named = WireApi(id="b", name="b", path="/v1/models/{model}:stream", **base)
    assert named.route == ":stream"
    given = WireApi(
        id="c",
        name="c",
        label="C chat",
        route="/chat",
        path="/v1/chat",
        converters=("x", "c"),
        error_style="jsonrpc",
        **base,
    )
    assert (given.label, given.route) == ("C chat", "/chat")
    assert (given.converters, given.error_style) == (("x", "c"), "jsonrpc")
    # a row made again from its fields (a copy, a pickle) is the same row
    assert given._replace(package="m").route == "/chat"
    assert pickle.loads(pickle.dumps(named)) == named


# some of the built-in rows' values as they were written in Python before their manifests:
# lists read back as tuples, what a row leaves out filled in as the constructor fills it
PINNED: dict[str, dict[str, object]] = {
    "anthropic": {
        "route": "/messages",
        "label": "messages",
        "hosted_routes": ("/anthropic/*:streamRawPredict",),
        "provider_path": r"^/v1/messages",
        "sdk_headers": ("anthropic-version",),
    },
    "gemini": {
        "route": ":streamGenerateContent",
        "model_in_path": r"/models/([^/:]+):",
        "stream_in_path": True,
        "json_array_quirk": True,
        "provider_aliases": ("google", "vertex", "vertex-ai", "google-vertex", "google-ai"),
        "error_path": r":[^/]*$|/models/",
    },
    "openai-chat": {
        "converters": ("openai-chat", "kimi-k2"),
        "default": True,
        "compatible_provider": "openai-compatible",
        "short": "chat",
        "provider_path": None,
    },
    "openai-responses": {"transports": ("http", "websocket"), "arguments_as_text": True},
    "mcp": {"base_url": "", "error_style": "jsonrpc", "model_field": "method", "key_env": ()},
    "bedrock-converse": {
        "more_routes": ("/converse",),
        "sigv4": "bedrock",
        "error_style": "bedrock",
    },
}


@pytest.mark.parametrize("api_id", PINNED)
def test_a_manifest_gives_the_row_it_replaced(api_id: str) -> None:
    api = find_api(api_id)
    assert api is not None and api.package == "streamtool.core.apis." + api_id.replace("-", "_")
    for field, value in PINNED[api_id].items():
        assert getattr(api, field) == value, field
        assert type(getattr(api, field)) is type(value), field


@pytest.mark.parametrize("api", builtin_apis(), ids=[a.id for a in builtin_apis()])
def test_a_built_in_row_is_its_manifest_as_python_would_write_it(api: WireApi) -> None:
    """The row read from ``api.json`` equals ``WireApi(...)`` written in Python with the same
    values (a plugin's way): tuples where the row has tuples, so rows hash and compare."""
    spec = importlib.util.find_spec(api.package)
    assert spec is not None and spec.origin is not None
    fields = json.loads((Path(spec.origin).parent / "api.json").read_text())
    written = {k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()}
    assert api == WireApi(package=api.package, **written)
    for field, default in WireApi._field_defaults.items():
        assert type(getattr(api, field)) is type(default) or (
            default is None and isinstance(getattr(api, field), str)
        ), field
    assert hash(api) == hash(WireApi(package=api.package, **written))


BAD_MANIFESTS = {
    "not_json": ('{"id": "x",', "not JSON"),
    "not_an_object": ('["id", "x"]', "one JSON object"),
    "unknown_field": (
        '{"id": "x", "name": "x", "provider": "p", "base_url": "", "path": "/x", "routes": ["/y"]}',
        "no row field 'routes'",
    ),
    "missing_field": (
        '{"id": "x", "name": "x", "provider": "p", "base_url": ""}',
        "'path' is missing",
    ),
    "string_for_a_list": (
        '{"id": "x", "name": "x", "provider": "p", "base_url": "", '
        '"path": "/x", "key_env": "X_KEY"}',
        "'key_env' must be a list",
    ),
    "a_list_of_numbers": (
        '{"id": "x", "name": "x", "provider": "p", "base_url": "", "path": "/x", "aliases": [1]}',
        "'aliases' must be a list of strings",
    ),
    "text_for_a_flag": (
        '{"id": "x", "name": "x", "provider": "p", "base_url": "", '
        '"path": "/x", "compatible": "yes"}',
        "'compatible' must be true or false",
    ),
    "a_value_without_its_key": (
        '{"id": "x", "name": "x", "provider": "p", "base_url": "", "path": "/x", '
        '"json_values": ["text_completion"]}',
        "'json_values' entry 'text_completion' is not KEY=VALUE",
    ),
    "a_value_with_no_key": (
        '{"id": "x", "name": "x", "provider": "p", "base_url": "", "path": "/x", '
        '"json_values": ["=text_completion"]}',
        "is not KEY=VALUE",
    ),
    "its_package": (
        '{"id": "x", "name": "x", "provider": "p", "base_url": "", '
        '"path": "/x", "package": "elsewhere"}',
        "'package'",
    ),
    "its_package_empty": (
        '{"id": "x", "name": "x", "provider": "p", "base_url": "", "path": "/x", "package": ""}',
        "'package'",
    ),
}


@pytest.mark.parametrize("case", [*BAD_MANIFESTS, "no_manifest"])
def test_a_bad_manifest_is_one_error_naming_the_file(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = f"bad_manifest_{case}"
    folder = tmp_path / package
    folder.mkdir()
    (folder / "__init__.py").write_text(
        "from streamtool.core.plugins import WireApi\nAPI = WireApi.from_package(__name__)\n"
    )
    if case in BAD_MANIFESTS:
        (folder / "api.json").write_text(BAD_MANIFESTS[case][0])
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ManifestError) as caught:
        importlib.import_module(package)
    message = str(caught.value)
    assert message.startswith(f"{folder / 'api.json'}: ")
    assert "\n" not in message
    assert (BAD_MANIFESTS[case][1] if case in BAD_MANIFESTS else "cannot be read") in message
    sys.modules.pop(package, None)


def test_a_manifest_in_a_package_of_a_namespace_package_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a plugin's API package may sit in a namespace package (no __init__.py above it), whose
    # loader reads no files: the manifest is read through the API package itself
    folder = tmp_path / "acme_ns_tools" / "lines_api"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(
        "from streamtool.core.plugins import WireApi\nAPI = WireApi.from_package(__name__)\n"
    )
    (folder / "api.json").write_text(
        '{"id": "acme-lines", "name": "acme.lines", "provider": "acme", "base_url": "", '
        '"path": "/lines", "aliases": ["acme"]}'
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        row = importlib.import_module("acme_ns_tools.lines_api").API
        assert row.id == "acme-lines" and row.aliases == ("acme",)
        assert row.package == "acme_ns_tools.lines_api"
    finally:
        for name in ("acme_ns_tools.lines_api", "acme_ns_tools"):
            sys.modules.pop(name, None)


def test_a_builtin_converter_named_outright_is_itself_and_finds_its_api() -> None:
    # a recording header naming a converter (any case) gets that converter, and the API whose
    # row lists it; a name nothing registers gets neither
    from streamtool.core.plugins.registry import CONVERTERS

    for name in CONVERTERS.builtins:
        api = api_for_converter(name)
        assert api is not None and name in api.converters, name
        assert converter_named(name) == name
        assert converter_named(name.upper()) == name
    assert api_for_converter("no-such-converter") is None
    assert converter_named("no-such-converter") is None


def test_the_builtin_rows_converters_are_the_registered_converters() -> None:
    # what lets a header's converter named outright be told by the registry, no manifest read
    from streamtool.core.plugins.registry import CONVERTERS

    assert {c for api in builtin_apis() for c in api.converters} == set(CONVERTERS.builtins)


_ROWS_READ = """
import sys
from streamtool.core.plugins import WireApi, api_for_converter, converter_named
read = []
original = WireApi.from_package
WireApi.from_package = classmethod(lambda cls, package: read.append(package) or original(package))
found = converter_named(sys.argv[1])
print(found, api_for_converter(found).id, len(set(read)))
"""


@pytest.mark.parametrize(
    ("name", "converter", "api", "rows"),
    [
        ("anthropic", "anthropic", "anthropic", 3),  # a converter named: the rows up to its API
        ("messages", "anthropic", "anthropic", 3),  # Anthropic's API name: the third row
        ("chat.completions", "openai-chat", "openai-chat", 1),
    ],
)
def test_a_header_naming_its_api_reads_the_rows_up_to_its_own(
    name: str, converter: str, api: str, rows: int
) -> None:
    got = fresh_python_prints(_ROWS_READ, name).split()
    assert got == [converter, api, str(rows)]
