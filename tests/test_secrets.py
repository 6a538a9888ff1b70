"""Secrets never reach a file: not split across reads, not in a URL, not echoed by a server.

The scrubbing is checked for every split of a body (hypothesis) and end to end: ``record`` and
the SDK capture against a small HTTP server on 127.0.0.1 that echoes the credentials it was sent,
cutting them in two across network reads (plain and gzip bodies).
"""

from __future__ import annotations

import http.server
import re
import sys
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import openai
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from benchmarks.raw_http import http_server
from streamtool.cli.main import app
from streamtool.core.drive.replay_file import replay_file
from streamtool.core.exchange.requests import RequestOptions, build_request
from streamtool.core.net.capture import Capture
from streamtool.core.recording.recorder import ResponseRecorder
from streamtool.core.recording.secrets import (
    REDACTED,
    SCAN_MIN,
    SecretScrubber,
    StreamScrubber,
    credential_values,
    find_secret,
    is_secret_header,
    key_spans,
    literal_starts,
    redact_keys,
    redact_request,
    redact_url,
    secret_query_values,
    spans_at,
    spans_by_find,
)

from .serve_helpers import read_all

# values that are not key-shaped: only the exact-value scrubbing can catch them
TOKEN = "tok-PLAINsecret7d1b9e3f5a2c"
PASSWORD = "hunter2-PASSWORD-9f8e7d"
# key-shaped values that the client never sent
KEY_SHAPED = [
    "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ012345",
    "sk-ant-api03-FAKEfakeFAKEfake0123-_x",
    "sk-FAKEfakeFAKEfake01234567",
    "AIzaSyFAKEfakeFAKEfake0123456789abcdefg",
    "xai-FAKEfakeFAKEfake0123456789abcdefghij",
    "gsk_FAKEfakeFAKEfake0123456789abcdefghij",
]
_KEY_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
# every key shape, where it starts a word ("task-..." is no key)
_KEY_RE = re.compile(
    r"(?<![A-Za-z0-9_])(sk-ant-[A-Za-z0-9_\-]{8,}|sk-[A-Za-z0-9_\-]{16,}"
    r"|AIza[0-9A-Za-z_\-]{20,}|xai-[A-Za-z0-9]{20,}|gsk_[A-Za-z0-9]{20,})"
)


def whole_body(values: list[str], body: bytes) -> bytes:
    """The reference: the whole body scrubbed at once (values, then key-shaped strings)."""
    text = SecretScrubber(values).data(body).decode("utf-8")
    return redact_keys(text).encode("utf-8")


def split(body: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(body) + 1) for c in cuts} | {0, len(body)})
    return [body[a:b] for a, b in zip(points, points[1:], strict=False) if b > a]


# -- the stream scrubber, for every split ------------------------------------------------------
_filler = st.sampled_from(["data: ", '{"t":"', " ", "\n\n", "x", "-", "A", "s", "é", "ok "])
_pieces = st.lists(
    st.one_of(_filler, st.sampled_from([TOKEN, PASSWORD, f"Bearer {TOKEN}", *KEY_SHAPED])),
    min_size=1,
    max_size=14,
)


@settings(max_examples=300, deadline=None)
@given(pieces=_pieces, cuts=st.lists(st.integers(0, 10_000), max_size=25))
def test_stream_scrubber_any_split_equals_the_whole_body(pieces, cuts):
    values = [TOKEN, PASSWORD, f"Bearer {TOKEN}"]
    body = "".join(pieces).encode("utf-8")
    stream = SecretScrubber(values).stream()
    written = [stream.feed(read) for read in split(body, cuts)]
    written.append(stream.finish())
    out = b"".join(written)
    assert out == whole_body(values, body)
    text = out.decode("utf-8")
    for secret in values:
        assert secret not in text
    assert not _KEY_RE.search(text.replace(REDACTED, " "))


# the literals and characters keys are made of, densely: near-misses at every turn
_key_bits = st.sampled_from(
    ["sk-", "sk-ant-", "AIza", "xai-", "gsk_", "a", "Q7", "_", "-", " ", "t", "\n", "é"]
)


@settings(max_examples=500, deadline=None)
@given(bits=st.lists(_key_bits, max_size=240), pos=st.integers(0, 200))
def test_key_spans_are_the_expressions_matches(bits, pos):
    """Both ways of finding the literals (hyperscan's one pass, a ``bytes.find`` each) give the
    expression's matches, and so does ``key_spans``, which picks one by the text's length."""
    text = "".join(bits).encode("utf-8")
    pos = min(pos, len(text))
    pattern = re.compile(_KEY_RE.pattern.encode("ascii"))
    expected = [m.span() for m in pattern.finditer(text, pos)]
    assert spans_by_find(text, pos) == expected
    starts = literal_starts(text)
    if starts is not None:  # hyperscan is installed (it is wherever it ships wheels)
        assert spans_at(text, pos, starts) == expected
        every = {
            i
            for lit in {"sk-", "AIza", "xai-", "gsk_", "AKIA", "ASIA", "Signature", "ek_"}
            for i in range(len(text))
            if text.startswith(lit.encode(), i)
        }
        assert starts == sorted(every)
    assert key_spans(text, pos) == expected


def test_the_literals_are_found_in_one_pass_where_hyperscan_ships_wheels():
    """Where the dependency's marker installs hyperscan, the long texts of a recording are
    scanned by it (a broken install would fall back to the finds without a word)."""
    import platform

    machine = platform.machine()
    if machine not in ("x86_64", "AMD64") and (sys.platform, machine) != ("darwin", "arm64"):
        pytest.skip(f"hyperscan is not a dependency on {machine}")
    text = b"x" * SCAN_MIN + b" sk-" + b"A" * 30 + b" ASIA" + b"B" * 16
    assert literal_starts(text) == [SCAN_MIN + 1, SCAN_MIN + 35]
    assert key_spans(text) == [(SCAN_MIN + 1, SCAN_MIN + 34), (SCAN_MIN + 35, SCAN_MIN + 55)]


def test_two_threads_scan_at_once():
    """The matcher lets go of the interpreter's lock while it scans: each thread has a scratch
    space of its own, so scans at once in many threads all find what one finds alone."""
    from concurrent.futures import ThreadPoolExecutor

    text = (b"word " * 2000 + b"key sk-" + b"Q" * 40 + b"\n") * 20
    alone = key_spans(text)
    assert len(alone) == 20
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(key_spans, [text] * 64))
    assert got == [alone] * 64


@settings(max_examples=150, deadline=None)
@given(pieces=_pieces, cuts=st.lists(st.integers(0, 10_000), max_size=25))
def test_recorder_writes_each_read_as_it_arrives(tmp_path_factory, pieces, cuts):
    """One chunk record per read (at the read's time), only a possible secret's start held."""
    path = tmp_path_factory.mktemp("rec") / "r.jsonl"
    body = "".join(pieces).encode("utf-8")
    reads = split(body, cuts)
    rec = ResponseRecorder(
        path,
        request={"url": "http://127.0.0.1/v1/chat/completions", "headers": {"x-token": TOKEN}},
        provider="openai",
        api="chat.completions",
        secrets=[PASSWORD],
    )
    rec.start(200, [("content-type", "text/event-stream")])
    written = 0
    for read in reads:
        before = rec.stream.held
        chunk = rec.feed(read)
        held = rec.stream.held
        # what is not yet written is a bounded tail: a value's start or a run of key characters
        assert held <= len(body) and held <= StreamScrubber.MAX_HOLD + len(f"Bearer {TOKEN}")
        tail = rec.stream.pending
        assert tail.strip(_KEY_CHARS) == b"" or any(
            v.encode().startswith(tail.rstrip(_KEY_CHARS)) for v in (TOKEN, PASSWORD)
        ), tail
        if chunk is None:
            assert held == before + len(read)  # a read is skipped only when all of it waits
        else:
            written += 1
            # the record is on disk the moment feed returns
            assert path.read_text().count('"type":"chunk"') == written
    tail = rec.stream.held
    rec.close()
    _, chunks, end = read_all(path)
    assert end.reason == "complete"
    assert b"".join(chunks) == whole_body([TOKEN, PASSWORD], body)
    assert len(chunks) == written + (1 if tail else 0)  # the held end: one record at the close
    text = path.read_text()
    assert TOKEN not in text and PASSWORD not in text
    assert not _KEY_RE.search(b"".join(chunks).decode("utf-8"))


def test_a_key_cut_in_the_middle_is_held_only_until_the_next_read(tmp_path):
    key = KEY_SHAPED[0]
    rec = ResponseRecorder(tmp_path / "r.jsonl", request={}, provider="openai", api=None)
    rec.start(200, [])
    first = rec.feed(b'data: {"k":"' + key[:10].encode())
    assert first is not None and first.data == 'data: {"k":"'  # the key's start waits
    second = rec.feed(key[10:].encode() + b'"}\n\n')
    assert second is not None and second.data == f'{REDACTED}"}}\n\n'
    rec.close()
    assert key not in (tmp_path / "r.jsonl").read_text()


# -- URLs and headers ----------------------------------------------------------------------------
def test_urls_lose_every_credential():
    url = (
        "https://user:pa%24s@example.com/v1/x?api-key=K1secretvalue&token=T2secretvalue"
        "&access_token=A3secretvalue&key=K4secretvalue&max_tokens=5&alt=sse"
    )
    red = redact_url(url)
    for secret in ("pa%24s", "pa$s", "user", "K1secret", "T2secret", "A3secret", "K4secret"):
        assert secret not in red
    assert "max_tokens=5" in red and "alt=sse" in red and "@example.com" in red
    values = secret_query_values(url)
    assert {"K1secretvalue", "T2secretvalue", "A3secretvalue", "K4secretvalue"} <= set(values)
    assert {"user", "pa$s", "pa%24s"} <= set(values)


def test_request_headers_that_speak_of_credentials_are_redacted():
    headers = {
        "X-Session-Credential": "c1",
        "Cookie": "sid=1",
        "X-Auth-Token": "t1",
        "X-Client-Secret": "s1",
        "X-My-Key": "k1",
        "X-Password": "p1",
        "Content-Type": "application/json",
        "Anthropic-Version": "2023-06-01",
    }
    red = redact_request({"headers": headers})["headers"]
    assert {k for k, v in red.items() if v == REDACTED} == set(list(headers)[:6])
    # a cookie's value is one too ("1": too short to be scrubbed from text, see SecretScrubber)
    assert set(credential_values(headers.items())) == {"c1", "sid=1", "1", "t1", "s1", "k1", "p1"}


def test_key_shapes_are_found_and_redacted():
    for key in KEY_SHAPED:
        assert find_secret(f"x {key} y") is not None
        assert redact_keys(f'"{key}"') == f'"{REDACTED}"'
    # words that merely contain the prefixes are not keys
    assert redact_keys("task-ABCDEFGHIJKLMNOPQRSTUVWXYZ disk-0123456789abcdefghij") == (
        "task-ABCDEFGHIJKLMNOPQRSTUVWXYZ disk-0123456789abcdefghij"
    )


def test_a_key_in_the_base_url_is_scrubbed_and_checked():
    key = "sk-FAKEinTHEurl0123456789abcd"
    prepared = build_request(
        RequestOptions(
            provider="openai-compatible",
            model="m",
            prompt="hi",
            base_url=f"https://u:{PASSWORD}@example.com/v1?key={key}&api-key={TOKEN}",
        ),
        {},
    )
    assert {key, TOKEN, PASSWORD} <= set(prepared.secrets)


# -- end to end: a server that echoes the credentials, cut across reads -----------------------
class _Echo(http.server.BaseHTTPRequestHandler):
    """Streams an SSE body that repeats every credential it got, each cut across two reads."""

    protocol_version = "HTTP/1.1"
    compress = False

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        self.rfile.read(int(self.headers.get("content-length", 0)))
        creds = [v for k, v in self.headers.items() if k.lower() not in _PLAIN_HEADERS]
        creds += [v for _, v in parse_qsl(urlsplit(self.path).query) if v != "sse"]
        reads = [b'data: {"choices":[{"index":0,"delta":{"content":"']
        for cred in creds:
            token = cred.removeprefix("Bearer ").encode()
            half = len(token) // 2
            reads[-1] += b"echo " + token[:half]
            reads.append(token[half:] + b" ")
        reads[-1] += b'"}}]}\n\ndata: [DONE]\n\n'
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        if self.compress:
            self.send_header("content-encoding", "gzip")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        z = zlib.compressobj(wbits=31)
        for i, read in enumerate(reads):
            last = i == len(reads) - 1
            data = z.compress(read) + z.flush(zlib.Z_FINISH if last else zlib.Z_SYNC_FLUSH)
            data = data if self.compress else read
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
            time.sleep(0.03)  # its own network read
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, *args: object) -> None:
        pass


_PLAIN_HEADERS = {
    "host",
    "content-type",
    "content-length",
    "accept",
    "accept-encoding",
    "connection",
    "user-agent",
    "anthropic-version",
}


@pytest.fixture(params=[False, True], ids=["plain", "gzip"])
def echo(request) -> Iterator[tuple[str, bool]]:
    handler = type("Handler", (_Echo,), {"compress": request.param})
    with http_server(handler, poll=0.05) as url:
        yield url, request.param


def _no_secret(path: Path, secrets: list[str]) -> str:
    text = path.read_text()
    for secret in secrets:
        assert secret not in text
    _, chunks, end = read_all(path)
    body = b"".join(chunks).decode()
    for secret in secrets:
        assert secret not in body  # not rebuilt by joining the reads either
    assert end.reason == "complete"
    return body


@pytest.mark.parametrize(
    "how",
    ["env", "header", "query", "base-url"],
)
def test_record_never_writes_a_credential_cut_across_reads(echo, tmp_path, how):
    env_key = "sk-test-FAKEsplitENV0123456789abcd"
    args = ["-p", "openai-compatible", "-m", "m", "--prompt", "hi", "--view", "none"]
    echo, compressed = echo
    env = {}
    base = echo + "/v1"
    if how == "env":
        env["SPLIT_KEY"] = env_key
        args += ["--api-key-env", "SPLIT_KEY"]
        secrets = [env_key]
    elif how == "header":
        args += ["-H", f"Authorization: Bearer {TOKEN}"]
        secrets = [TOKEN]
    elif how == "query":
        base += f"?api-key={TOKEN}"
        secrets = [TOKEN]
    else:
        base = f"http://user:{PASSWORD}@{echo.removeprefix('http://')}/v1?key={env_key}"
        secrets = [PASSWORD, env_key]
    out = tmp_path / "rec.jsonl"
    result = CliRunner().invoke(app, ["record", *args, "--base-url", base, "-o", str(out)], env=env)
    assert result.exit_code == 0, result.output
    body = _no_secret(out, secrets)
    assert body.count("echo ") >= 1 and REDACTED in body
    header, chunks, _ = read_all(out)
    assert header.response.get("decoded") == ("gzip" if compressed else None)
    assert len(chunks) >= 2  # still read by read
    text = replay_file(out).summary()["text"]
    assert f"echo {REDACTED}" in text
    for secret in secrets:
        assert secret not in result.output


def test_capture_never_writes_a_credential_cut_across_reads(echo, tmp_path):
    echo, _ = echo
    key = "sk-test-FAKEsplitCAPTURE0123456789"
    capture = Capture(tmp_path / "cap.jsonl")
    client = openai.OpenAI(
        base_url=echo + "/v1",
        api_key=key,
        max_retries=0,
        default_headers={"X-Org-Token": TOKEN},
        http_client=capture.client(),
    )
    stream = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    content = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert key in content and TOKEN in content  # the client got the bytes unchanged
    (path,) = capture.paths
    body = _no_secret(path, [key, TOKEN])
    assert body.count(REDACTED) >= 2


# -- a WebSocket session's messages, scrubbed one by one or held and scrubbed at once ----------
_SESSION_KEY = "sk-proj-Sess10nK3y4xQ2wLp9Vn4Rt8Yb6Zc"
_SHAPED_KEY = "AIzaSyD4Shaped0Key1Of2Gemini3Shape4xyz"
_message_parts = st.sampled_from(
    ["delta", '{"type":"x"}', _SESSION_KEY, _SHAPED_KEY, "sk-", "é", "\n", " ", "AKIA", "_"]
)
_messages = st.lists(
    st.tuples(
        st.sampled_from(["client", "server"]),
        st.lists(_message_parts, max_size=5).map("".join),
        st.booleans(),  # a binary message
    ),
    max_size=8,
)


@settings(max_examples=60, deadline=None)
@given(_messages)
def test_held_session_messages_are_scrubbed_as_one_by_one(
    tmp_path_factory: pytest.TempPathFactory, messages: list[tuple[str, str, bool]]
) -> None:
    # the proxy holds a turn's messages and scrubs them at once: what it writes is what
    # scrubbing each as it came writes, every message and its text kept, no key left
    from streamtool.core.model.records import Message
    from streamtool.core.recording.reader import Source
    from streamtool.core.recording.session import SessionRecorder

    folder = tmp_path_factory.mktemp("session")
    written = []
    for gather in (False, True):
        path = folder / f"{gather}.jsonl"
        rec = SessionRecorder(
            path,
            url="wss://api.example.test/v1/realtime",
            headers=[("authorization", f"Bearer {_SESSION_KEY}")],
            provider="openai",
            api="openai-realtime",
        )
        rec.start(101, [])
        rec.gather = gather
        for direction, text, binary in messages:
            rec.message(direction, text.encode("utf-8") if binary else text)
        rec.finish()
        records = Source(path).session_records()
        written.append([(m.direction, m.data) for m in records if isinstance(m, Message)])
        raw = path.read_text(encoding="utf-8")
        assert _SESSION_KEY not in raw  # the session's own credential: wherever it stands
    one_by_one, held = written
    assert held == one_by_one
    assert len(held) == len(messages)
    # a key shape standing on its own is redacted (after a word character it is not a key's
    # start: "deltaAIza..." is left, as one by one)
    for (_, text, _), (_, data) in zip(messages, held, strict=True):
        shown = data.decode("utf-8") if isinstance(data, bytes) else data
        if f" {_SHAPED_KEY}" in text or text.startswith(_SHAPED_KEY):
            assert f" {_SHAPED_KEY}" not in shown and not shown.startswith(_SHAPED_KEY)


# -- a JSON-like value scrubbed in one look, as string by string ---------------------------------
def _string_by_string(scrubber: SecretScrubber, obj: object, keys: bool) -> object:
    """The definition: every string (dict keys too) scrubbed alone."""
    if isinstance(obj, str):
        text = scrubber.text(obj)
        return redact_keys(text) if keys else text
    if isinstance(obj, dict):
        return {
            _string_by_string(scrubber, str(k), keys): _string_by_string(scrubber, v, keys)
            for k, v in obj.items()
        }
    if isinstance(obj, list | tuple):
        return [_string_by_string(scrubber, v, keys) for v in obj]
    return obj


# strings made of secrets (plain and with characters JSON escapes), key shapes, the literals
# alone, escapes and text; values of every JSON type; a key that is not a string
_ODD_SECRET = 'tok"with\\quote-7d1b9e3f'
_word = st.lists(
    st.sampled_from(
        [TOKEN, PASSWORD, _ODD_SECRET, *KEY_SHAPED, "sk-", "AIza", "x", " ", '"', "\\", "\n"]
        + ["é", "text/event-stream", "-", "\u2028"]
    ),
    max_size=5,
).map("".join)
_json_like = st.recursive(
    st.one_of(_word, st.integers(-(2**70), 2**70), st.none(), st.booleans(), st.floats()),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(_word, st.integers(0, 9)), inner, max_size=4),
    ),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(
    obj=_json_like,
    secrets=st.lists(st.sampled_from([TOKEN, PASSWORD, _ODD_SECRET]), max_size=3),
    keys=st.booleans(),
)
@example(obj={"a": [f"x {_ODD_SECRET} y"]}, secrets=[_ODD_SECRET], keys=False)
@example(obj={KEY_SHAPED[0]: 1}, secrets=[], keys=True)
def test_a_value_is_scrubbed_as_each_of_its_strings_would_be(obj, secrets, keys):
    scrubber = SecretScrubber(secrets)
    want = _string_by_string(scrubber, obj, keys) if (secrets or keys) else obj
    got = scrubber.deep(obj, keys=keys)
    assert repr(got) == repr(want)  # (repr: a NaN is never equal to itself)
    if TOKEN in secrets:
        assert TOKEN not in repr(got)


def test_find_secret_and_header_names_as_their_definitions():
    for text in ["", "plain text", "task-manager sk-", *KEY_SHAPED, f"x {KEY_SHAPED[3]} y"]:
        assert (find_secret(text) is not None) == bool(_KEY_RE.search(text))
    for name in ["X-Goog-Api-Key", "authorization", "Cookie", "mcp-session-id", "Accept"]:
        lowered = name.lower()
        spoken = ("key", "token", "secret", "auth", "password", "credential", "cookie")
        assert is_secret_header(name) == any(word in lowered for word in spoken)
        assert is_secret_header(name) == is_secret_header(name.upper())
