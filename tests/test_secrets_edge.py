"""Credentials through the channels a proxy and a tape server see, on real processes on
127.0.0.1: a cookie's value echoed on its own and a Basic-auth user and password echoed after
decoding are scrubbed like keys; a model named after the key reaches no file name, index or
journal row; the message printed for a tape miss masks key-shaped strings."""

from __future__ import annotations

import base64
import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from streamtool.core.net.listen import ServerThread
from streamtool.core.recording.secrets import credential_values

from .serve_helpers import STREAMTOOL, start_listening
from .tape_helpers import write_exchange

COOKIE_VALUE = "c00kie-value-4f9a1b"
OTHER_COOKIE = "tracking-7d1e55aa"
BASIC_USER = "alice-account-77"
BASIC_PASSWORD = "hunter2-but-longer-pw"
# not key-shaped: only knowing it came with the request finds it
PLAIN_KEY = "corp-gateway-credential-0c7f3e9d"


def echo_app() -> Any:
    """An upstream that streams back, one per event, every credential part it was sent."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    async def echo(request: Request) -> StreamingResponse:
        body = json.loads(await request.body())
        parts = [body.get("model", "")]
        for pair in request.headers.get("cookie", "").split(";"):
            parts.append(pair.strip().partition("=")[2])
        auth = request.headers.get("authorization", "")
        if auth.startswith("Basic "):
            user, _, password = base64.b64decode(auth[6:]).decode().partition(":")
            parts += [user, password, f"{user}:{password}"]

        async def gen() -> Any:
            for p in parts:
                delta = {"content": f"you sent {p} ok"}
                event = {"id": "c1", "object": "chat.completion.chunk", "model": body["model"]}
                event["choices"] = [{"index": 0, "delta": delta, "finish_reason": None}]
                yield f"data: {json.dumps(event)}\n\n".encode()
            yield b"data: [DONE]\n\n"

        return StreamingResponse(gen(), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/chat/completions", echo, methods=["POST"])])


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    with ServerThread(echo_app()) as server:
        yield server.url


def proxied(tmp_path: Path, upstream: str, headers: dict[str, str], model: str) -> str:
    """One request through a real proxy (journal on); the proxy's stderr."""
    out = tmp_path / "caps"
    out.mkdir()
    proc, _, origin = start_listening(
        [
            *STREAMTOOL,
            "proxy",
            "--port",
            "0",
            "--view",
            "journal",
            "--out",
            str(out),
            "--upstream",
            upstream,
        ],
        env={"COLUMNS": "300"},
    )
    try:
        r = httpx.post(
            origin + "/v1/chat/completions",
            json={"model": model, "stream": True, "messages": []},
            headers=headers,
            timeout=10,
        )
        assert r.status_code == 200
        assert "you sent" in r.text  # the client gets the upstream's bytes as they are
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    assert "1 exchange recorded" in err, err
    return err


def everything_written(folder: Path) -> str:
    """Every file name and every byte under ``folder``."""
    texts = []
    for path in sorted(folder.rglob("*")):
        texts.append(path.name)
        if path.is_file():
            texts.append(path.read_text(encoding="utf-8"))
    return "\n".join(texts)


def test_cookie_values_are_scrubbed_each_alone(tmp_path: Path, upstream: str) -> None:
    cookie = f"session={COOKIE_VALUE}; tracker={OTHER_COOKIE}"
    err = proxied(tmp_path, upstream, {"Cookie": cookie}, "gpt-test")
    written = everything_written(tmp_path / "caps")
    assert "you sent [redacted] ok" in written
    for secret in (COOKIE_VALUE, OTHER_COOKIE):
        assert secret not in written
        assert secret not in err


def test_basic_auth_user_and_password_are_scrubbed_decoded(tmp_path: Path, upstream: str) -> None:
    token = base64.b64encode(f"{BASIC_USER}:{BASIC_PASSWORD}".encode()).decode()
    err = proxied(tmp_path, upstream, {"Authorization": f"Basic {token}"}, "gpt-test")
    written = everything_written(tmp_path / "caps")
    assert written.count("you sent [redacted] ok") == 3
    for secret in (BASIC_USER, BASIC_PASSWORD, token):
        assert secret not in written
        assert secret not in err


def test_a_model_equal_to_the_key_reaches_no_name_index_or_journal(
    tmp_path: Path, upstream: str
) -> None:
    err = proxied(tmp_path, upstream, {"Authorization": f"Bearer {PLAIN_KEY}"}, PLAIN_KEY)
    caps = tmp_path / "caps"
    names = [p.name for p in caps.iterdir()]
    assert len([n for n in names if n.endswith(".jsonl") and n != "index.jsonl"]) == 1
    assert PLAIN_KEY not in everything_written(caps)
    entries = [json.loads(line) for line in (caps / "index.jsonl").read_text().splitlines()]
    assert entries[0]["model"] == "[redacted]"
    assert PLAIN_KEY not in err
    assert "[redacted]" in err  # the journal's row is there, the model masked


def test_credential_values_unit() -> None:
    token = base64.b64encode(b"user-name-1:pass-word-2").decode()
    values = credential_values(
        [("Cookie", 'a=b; sid="quoted-sid-1"; flag'), ("Authorization", f"Basic {token}")]
    )
    assert {"a=b", "b", 'sid="quoted-sid-1"', "quoted-sid-1"} <= set(values)
    assert {"user-name-1", "pass-word-2", "user-name-1:pass-word-2", token} <= set(values)
    assert "flag" not in values  # no value: nothing of it is a secret
    # not base64: the token itself only
    assert credential_values([("Authorization", "Basic %%%")]) == ["Basic %%%", "%%%"]


KEY_RECORDED = "sk-proj-" + "R" * 12 + "Qz81Lmx0Vb73Tt5Wq"
KEY_SENT = "sk-proj-" + "S" * 12 + "Jd40Pnc9Xe21Ky6Hf"


def test_a_tape_miss_masks_key_shaped_strings(tmp_path: Path) -> None:
    tape = tmp_path / "tape"
    url = "https://api.openai.com/v1/chat/completions"
    body = {"model": "gpt-4o", "stream": True, "messages": [{"role": "user", "content": ""}]}
    recorded = json.loads(json.dumps(body))
    recorded["messages"][0]["content"] = f"deploy with {KEY_RECORDED} now"
    reads: list[tuple[float | None, str | bytes]] = [(0.01, "data: [DONE]\n\n")]
    # indexed: a tape serves only the exchanges its index lists (an unlisted one never
    # finished), and an index makes the folder a tape, so a request it does not hold is a miss
    for seq in (1, 2):
        name = f"000{seq}-openai-chat-gpt-4o.jsonl"
        write_exchange(tape, name, url=url, body=recorded, reads=reads, index=seq)
    proc, _, origin = start_listening([*STREAMTOOL, "serve", str(tape), "--port", "0"])
    try:
        sent = json.loads(json.dumps(body))
        sent["messages"][0]["content"] = f"deploy with {KEY_SENT} now"
        r = httpx.post(origin + "/v1/chat/completions", json=sent, timeout=10)
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    assert r.status_code == 404, r.text
    message = r.json()["error"]["message"]
    assert "differs" in message and "[redacted]" in message, message
    for shown in (message, err):
        for key in (KEY_RECORDED, KEY_SENT):
            body_part = key[len("sk-proj-") :]
            # no run of 8 characters of either key is printed
            assert not any(body_part[i : i + 8] in shown for i in range(len(body_part) - 7)), shown
