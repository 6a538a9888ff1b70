"""No key in a file name, an index, a log line or a miss message, by any channel, on real
servers on 127.0.0.1: a key sent as the ``model`` (beside the ``Authorization`` header) under
``serve --record-missing`` and the pytest plugin; a tape miss naming a value equal to a
credential of the request, or a key in the content; a Bedrock upstream echoing the SigV4
``Credential=`` and ``Signature=``; a key-shaped path segment in a log line."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamtool.core.net.listen import ServerThread
from streamtool.core.net.proxy import ProxyConfig, ProxyThread, parse_upstreams
from streamtool.core.net.tape import serving_tape
from streamtool.core.recording.secrets import REDACTED, SecretScrubber, key_spans, redact_keys
from streamtool.core.recording.tape_index import read_index

from .odd_upstreams import CHAT_BODY, chat_request, sigv4_echo_app
from .serve_helpers import STREAMTOOL, start_listening
from .tape_helpers import run_child_pytest, write_exchange

# not key-shaped: only knowing it came with the request finds it
PLAIN_KEY = "secQ7zLw2Xn9f3kR0c7f3e9dTu"
URL = "https://api.openai.com/v1/chat/completions"


def everything_written(folder: Path) -> str:
    """Every file name and every byte under ``folder``."""
    texts = []
    for path in sorted(folder.rglob("*")):
        texts.append(path.name)
        if path.is_file():
            texts.append(path.read_text(encoding="utf-8", errors="replace"))
    return "\n".join(texts)


def no_part_of(secret: str, text: str, run: int = 6) -> bool:
    """No run of ``run`` characters of ``secret`` (past its first few) is in ``text``."""
    body = secret[4:]
    return not any(body[i : i + run] in text for i in range(len(body) - run + 1))


def auth(key: str = PLAIN_KEY) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


# -- a key sent as the model -----------------------------------------------------------------------
def test_record_missing_names_and_indexes_a_model_equal_to_the_key_as_redacted(
    tmp_path: Path, upstream: str
) -> None:
    tape = tmp_path / "tape"
    lines: list[str] = []
    sent = chat_request("hello", model=PLAIN_KEY)
    with serving_tape(tape, record_missing=True, upstream=upstream, log=lines.append) as server:
        r = httpx.post(server.url + "/v1/chat/completions", json=sent, headers=auth())
        assert r.status_code == 200 and r.content == CHAT_BODY
    [entry] = read_index(tape)
    assert entry.model == REDACTED
    assert entry.file == "0001-openai-chat-completions-redacted.jsonl"
    assert PLAIN_KEY not in everything_written(tape)
    assert lines and no_part_of(PLAIN_KEY, "\n".join(lines)), lines
    # the same request (the same key) is answered from the tape: its recording keeps the
    # model scrubbed, and the request is compared scrubbed of its own credentials
    with serving_tape(tape, log=lines.append) as server:
        r = httpx.post(server.url + "/v1/chat/completions", json=sent, headers=auth())
        assert r.status_code == 200 and r.content == CHAT_BODY
        assert server.served == [Path(entry.file).stem]


PLUGIN_TEST = """
import httpx


def ask(stream_tape, content, model):
    return httpx.post(
        stream_tape.base_url + "/v1/chat/completions",
        json={{
            "model": model, "stream": True, "messages": [{{"role": "user", "content": content}}]
        }},
        headers={{"Authorization": "Bearer {key}"}},
        timeout=10,
    )


def test_same(stream_tape):
    assert ask(stream_tape, "hello", "{key}").status_code == 200


def test_key_in_content(stream_tape):
    ask(stream_tape, "my key is {key} ok", "{key}")
"""


def test_the_pytest_plugin_writes_and_prints_no_part_of_a_key_sent_as_the_model(
    tmp_path: Path, upstream: str
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_keys.py").write_text(PLUGIN_TEST.format(key=PLAIN_KEY), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "OPENAI_"))}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return run_child_pytest(project, ["-p", "no:randomly", *args], env, timeout=120)

    tape = project / "tapes" / "test_keys" / "test_same"
    recorded = run("test_keys.py::test_same", "--stream-tape-mode=once",
                   f"--stream-tape-upstream={upstream}")  # fmt: skip
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    [entry] = read_index(tape)
    assert entry.model == REDACTED and "redacted" in entry.file
    # replayed: the same request matches; the one with the key in its content is a miss whose
    # message shows where it differs, the key masked
    (project / "tapes" / "test_keys" / "test_key_in_content").symlink_to(tape)
    replayed = run("--stream-tape-mode=none")
    out = replayed.stdout + replayed.stderr
    assert "1 failed, 1 passed" in out, out
    assert "messages[0].content differs" in out and REDACTED in out, out
    assert PLAIN_KEY not in everything_written(project / "tapes")
    for text in (recorded.stdout + recorded.stderr, out):
        assert no_part_of(PLAIN_KEY, text), text


# -- miss messages ---------------------------------------------------------------------------------
def one_exchange_tape(tape: Path, content: str, model: str = "gpt-x") -> None:
    reads: list[tuple[float | None, str | bytes]] = [(0.01, "data: [DONE]\n\n")]
    for seq in (1, 2):  # indexed: a tape, whose misses are 404s
        name = f"000{seq}-openai-chat-{model}.jsonl"
        body = chat_request(content, model=model)
        write_exchange(tape, name, url=URL, body=body, reads=reads, index=seq)


@pytest.mark.parametrize(
    "sent, shown",
    [
        # a model set to the key: `model differs: "sec..." vs "gpt-x"` printed its start
        (chat_request("hello there", model=PLAIN_KEY), f'model differs: "{REDACTED}" vs "gpt-x"'),
        # the key in the content: the window around the difference held 12 of its characters
        (chat_request(f"hello {PLAIN_KEY} bye"), f'"hello {REDACTED} bye" vs "hello there"'),
    ],
)
def test_a_miss_message_masks_a_credential_of_the_request(
    tmp_path: Path, sent: dict, shown: str
) -> None:
    tape = tmp_path / "tape"
    one_exchange_tape(tape, "hello there")
    lines: list[str] = []
    with serving_tape(tape, log=lines.append) as server:
        r = httpx.post(server.url + "/v1/chat/completions", json=sent, headers=auth())
    assert r.status_code == 404
    message = r.json()["error"]["message"]
    assert shown in message, message
    log = "\n".join(lines)
    assert shown in log
    for text in (message, log):
        assert no_part_of(PLAIN_KEY, text), text


def test_a_miss_on_a_plain_folder_masks_the_model_that_is_the_key(tmp_path: Path) -> None:
    """The old rules' messages (no recording for this model) go through the same mask."""
    folder = tmp_path / "recs"
    for model in ("gpt-a", "gpt-b"):
        write_exchange(
            folder, f"{model}.jsonl", url=URL, body=chat_request("x", model), reads=[(0.0, "x")]
        )
    proc, _, origin = start_listening([*STREAMTOOL, "serve", str(folder), "--port", "0"])
    try:
        sent = chat_request("hello", model=PLAIN_KEY)
        r = httpx.post(origin + "/v1/chat/completions", json=sent, headers=auth(), timeout=10)
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    assert r.status_code == 400, r.text
    assert f"none is for model '{REDACTED}'" in r.json()["error"]["message"]
    for text in (r.text, err):
        assert no_part_of(PLAIN_KEY, text), text


def test_a_key_shaped_path_segment_is_masked_in_the_log(tmp_path: Path) -> None:
    key = "sk-proj-" + "Pq7Lm2Xc9Vb4Nz8Kd1Hf6Jt3"
    tape = tmp_path / "tape"
    one_exchange_tape(tape, "hello there")
    lines: list[str] = []
    with serving_tape(tape, log=lines.append) as server:
        for path in (f"/v1/{key}/chat/completions", f"/{key}"):
            httpx.post(server.url + path, json=chat_request("hello there"))
    assert len(lines) == 2 and all(REDACTED in line for line in lines), lines
    assert no_part_of(key, "\n".join(lines))


# -- SigV4 echoed by a Bedrock upstream ------------------------------------------------------------
KEY_ID = "AKIAIOSFODNN7EXAMPLE"
SIGNATURE = "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
SIGV4 = (
    f"AWS4-HMAC-SHA256 Credential={KEY_ID}/20260101/us-east-1/bedrock/aws4_request, "
    f"SignedHeaders=content-type;host;x-amz-date, Signature={SIGNATURE}"
)
BEDROCK_PATH = "/model/anthropic.claude-3-haiku/converse-stream"


@pytest.mark.parametrize("writer", ["proxy", "serve"])
def test_sigv4_credential_and_signature_echoed_by_the_upstream_are_scrubbed(
    tmp_path: Path, writer: str
) -> None:
    tape = tmp_path / "tape"
    lines: list[str] = []
    body = {"messages": [{"role": "user", "content": [{"text": "hi"}]}]}
    headers = {"Authorization": SIGV4, "X-Amz-Date": "20260101T000000Z"}
    with ServerThread(sigv4_echo_app()) as up:
        if writer == "proxy":
            config = ProxyConfig(out=tape, upstreams=parse_upstreams([up.url]), log=lines.append)
            server = ProxyThread(config)
        else:
            server = serving_tape(tape, record_missing=True, upstream=up.url, log=lines.append)
        with server:
            r = httpx.post(server.url + BEDROCK_PATH, json=body, headers=headers, timeout=10)
    # the client gets what the upstream sent
    assert r.status_code == 200 and SIGNATURE in r.text and KEY_ID in r.headers["x-amzn-debug-auth"]
    written = everything_written(tape)
    assert "signed with" in written and REDACTED in written
    for secret in (KEY_ID, SIGNATURE):
        assert secret not in written
        assert no_part_of(secret, "\n".join(lines))


# a SigV4 signature and AWS key ids that are not the request's: scrubbed by their shape, in a
# stream cut into reads anywhere, beside the other key shapes
OTHER_SIGNATURE = "Signature=" + "0123456789abcdef" * 4
OTHER_KEY_ID = "ASIAQWERTYUIOPASDFGH"
OPENAI_KEY = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ012345"
# every key shape, written out independently of the module's: where it starts a word (a
# signature anywhere)
EVERY_SHAPE = re.compile(
    rb"(?<![A-Za-z0-9_])(sk-ant-[A-Za-z0-9_\-]{8,}|sk-[A-Za-z0-9_\-]{16,}"
    rb"|AIza[0-9A-Za-z_\-]{20,}|xai-[A-Za-z0-9]{20,}|gsk_[A-Za-z0-9]{20,}"
    rb"|AKIA[A-Z0-9]{16,}|ASIA[A-Z0-9]{16,})|Signature[=0-9a-f]{65,}"
)
_bits = st.sampled_from(
    [OTHER_SIGNATURE, OTHER_KEY_ID, KEY_ID, OPENAI_KEY, "Sig", "AKIA", "sk-", " ", "=", "x", "0a"]
)


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(_bits, min_size=1, max_size=12), cuts=st.lists(st.integers(0, 2000)))
def test_aws_shapes_are_scrubbed_across_any_split(pieces: list[str], cuts: list[int]) -> None:
    glued = "".join(pieces).encode()  # found where the expression finds them, also glued
    assert key_spans(glued) == [m.span() for m in EVERY_SHAPE.finditer(glued)]
    body = " ".join(pieces).encode()  # each piece starts a word
    points = sorted({c % (len(body) + 1) for c in cuts} | {0, len(body)})
    stream = SecretScrubber([]).stream()
    out = b"".join(stream.feed(body[a:b]) for a, b in zip(points, points[1:], strict=False))
    out += stream.finish()
    assert out == redact_keys(body.decode()).encode()  # as if scrubbed whole
    for secret in (OTHER_SIGNATURE, OTHER_KEY_ID, KEY_ID, OPENAI_KEY):
        assert secret.encode() not in out
