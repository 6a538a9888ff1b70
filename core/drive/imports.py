"""Recordings teams already have, as tapes: vcrpy cassettes (YAML and JSON), HAR 1.2 files and
mitmproxy flow files (``streamtool import``), and a tape as a vcrpy cassette
(``streamtool export --vcr``).

None of those keep what streamtool exists for (where the reads were cut, when each came), but all
keep the bytes of the stream. An imported recording says so: its header's ``imported`` names the
importer, the file and the entry, and ``"timing": "unknown"``; its body is one read without a
time. Content encodings (gzip, deflate, br) are decoded: the recording holds the body as a client
reads it. Credentials in the requests (headers, query, cookies, key-shaped text in bodies) and in
the responses (``set-cookie``...) never reach the tape: each one removed is counted and named.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..model.records import WEBSOCKET, Header, Message, RecordingError
from ..plugins import api_for_path, official_hosts
from ..recording.reader import Source
from ..recording.secrets import REDACTED, is_secret_header, is_secret_query, redact_keys
from ..recording.session import (
    NOT_KEPT,
    SUBPROTOCOL_HEADER,
    redact_subprotocols,
    subprotocol_secrets,
)
from ..recording.tape_gitignore import write_gitignore
from ..recording.tape_index import IndexEntry, exchange_name, read_index, rewrite_index
from ..recording.writer import RecordingWriter
from ..wire import fastjson

STREAM_TYPES = ("text/event-stream", "application/x-ndjson", "application/vnd.amazon.eventstream")
_RESPONSE_SECRETS = frozenset({"set-cookie", "www-authenticate", "proxy-authenticate"})


WsMessage = tuple[float | None, str, str | bytes]


@dataclass(slots=True)
class Interaction:
    """One request and its response, as a cassette or an archive keeps it."""

    method: str
    url: str
    request_headers: dict[str, str]
    request_body: Any  # parsed JSON, else the text, else None
    status: int
    response_headers: dict[str, str]
    body: bytes  # the response body as a client reads it (content encoding decoded)
    where: str  # "interaction 3", "entry 5"
    # a WebSocket session's messages (a HAR's ``_webSocketMessages``): (seconds since the
    # upgrade or None when the archive kept no time, "client" or "server", the payload)
    messages: list[WsMessage] | None = None

    @property
    def streamed(self) -> bool:
        kind = self.response_headers.get("content-type", "").lower()
        if any(kind.startswith(t) for t in STREAM_TYPES):
            return True
        body = self.request_body
        return isinstance(body, dict) and body.get("stream") is True


@dataclass(slots=True)
class Removed:
    """The credentials an import removed, and where each was."""

    places: list[str] = field(default_factory=list)

    def add(self, what: str, where: str) -> None:
        self.places.append(f"{what} ({where})")

    def summary(self) -> str:
        n = len(self.places)
        if not n:
            return "no secrets found"
        shown = "; ".join(self.places[:5]) + ("; ..." if n > 5 else "")
        return f"{n} secret{'s' if n != 1 else ''} removed: {shown}"


# -- reading --------------------------------------------------------------------------------------
def _fail(path: Path, where: str | None, message: str) -> RecordingError:
    return RecordingError(str(path), None, f"{where}: {message}" if where else message)


def _header_map(headers: Any) -> dict[str, str]:
    """Headers as ``{lower-case name: value}``: vcrpy's ``{name: [values]}``, HAR's
    ``[{name, value}]``, or a plain mapping; repeated values joined as HTTP joins them."""
    out: dict[str, str] = {}
    if isinstance(headers, Mapping):
        items: list[tuple[Any, Any]] = list(headers.items())
    elif isinstance(headers, list):
        items = [(h.get("name"), h.get("value")) for h in headers if isinstance(h, Mapping)]
    else:
        return out
    for name, value in items:
        if not isinstance(name, str):
            continue
        values = value if isinstance(value, list) else [value]
        text = ", ".join(str(v) for v in values if v is not None)
        key = name.lower()
        out[key] = f"{out[key]}, {text}" if key in out else text
    return out


def decode_body(data: bytes, encoding: str, path: Path, where: str) -> bytes:
    """``data`` with its content encoding(s) undone; a body that is not what its encoding says
    is an error."""
    for coding in reversed([c.strip().lower() for c in encoding.split(",") if c.strip()]):
        try:
            if coding in ("gzip", "x-gzip"):
                data = zlib.decompress(data, 16 + zlib.MAX_WBITS)
            elif coding == "deflate":
                try:
                    data = zlib.decompress(data)
                except zlib.error:
                    data = zlib.decompress(data, -zlib.MAX_WBITS)
            elif coding == "br":
                try:
                    import brotli
                except ImportError:
                    raise _fail(
                        path, where, "a br body: install brotli (pip install 'streamtool[import]')"
                    ) from None
                data = brotli.decompress(data)
            elif coding not in ("identity", ""):
                raise _fail(path, where, f"content encoding {coding!r} is not one streamtool reads")
        except (zlib.error, ValueError, OSError) as exc:
            raise _fail(
                path, where, f"the body is not {coding} as its header says ({exc})"
            ) from None
        except Exception as exc:  # brotli.error is not a ValueError
            if type(exc).__name__ == "error":
                raise _fail(path, where, f"the body is not {coding} as its header says") from None
            raise
    return data


def _body_json(data: bytes | str | None) -> Any:
    if data is None:
        return None
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    if not text:
        return None
    try:
        return fastjson.loads(text)
    except ValueError:
        return text


def _vcr_body(value: Any) -> bytes | None:
    """A body as vcrpy and its dialects keep it: a string, bytes (``!!binary``), or a mapping
    with ``string``, ``base64_string`` or a ``parsed_body``."""
    if value is None:
        return None
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, Mapping):
        if "base64_string" in value:
            return base64.b64decode(str(value["base64_string"]))
        if "string" in value:
            return _vcr_body(value["string"])
        if "parsed_body" in value:
            return json.dumps(value["parsed_body"], ensure_ascii=False).encode("utf-8")
        if "content" in value and isinstance(value.get("type"), str):
            # a dialect keeps a body as {type, content}: JSON parsed, text as it is
            kind, content = value["type"], value["content"]
            if kind == "json":
                return json.dumps(content, ensure_ascii=False).encode("utf-8")
            if kind in ("text", "string") and isinstance(content, str):
                return content.encode("utf-8")
            if kind in ("base64", "binary") and isinstance(content, str):
                return base64.b64decode(content, validate=True)
            raise ValueError(f"a body of type {kind!r}")
        if not value:
            return b""
        # never an empty recording for a body kept in a shape this does not know
        raise ValueError(f"a body kept as {sorted(map(str, value))}, which this does not read")
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False).encode("utf-8")
    raise ValueError(f"a body of type {type(value).__name__}")


def vcr_interactions(doc: Any, path: Path) -> list[Interaction]:
    interactions = doc.get("interactions") if isinstance(doc, Mapping) else None
    if not isinstance(interactions, list):
        raise _fail(path, None, "not a vcrpy cassette (no list of interactions)")

    def read(item: Any, where: str) -> Interaction:
        req, resp = item["request"], item["response"]
        status = resp.get("status")
        code = status.get("code") if isinstance(status, Mapping) else status
        headers = _header_map(resp.get("headers"))
        # a dialect keeps a JSON body parsed, under parsed_body beside (or in) the body
        resp_body = resp.get("body")
        if resp_body is None and "parsed_body" in resp:
            resp_body = {"parsed_body": resp["parsed_body"]}
        raw = _vcr_body(resp_body) or b""
        body = decode_body(raw, headers.pop("content-encoding", ""), path, where)
        req_body = req.get("body")
        parsed = req.get("parsed_body")
        if parsed is None and isinstance(req_body, Mapping):
            parsed = req_body.get("parsed_body")
        asked = parsed if parsed is not None else _body_json(_vcr_body(req_body))
        return _interaction(req, req["uri"], asked, code, headers, body, where)

    return _each(path, interactions, "interaction", "not an interaction vcrpy writes", read)


def har_interactions(doc: Any, path: Path) -> list[Interaction]:
    log = doc.get("log") if isinstance(doc, Mapping) else None
    entries = log.get("entries") if isinstance(log, Mapping) else None
    if not isinstance(entries, list):
        raise _fail(path, None, "not a HAR file (no log.entries)")
    if not entries:
        raise _fail(path, None, "a HAR file without entries: nothing to import")

    def read(entry: Any, where: str) -> Interaction:
        req, resp = entry["request"], entry["response"]
        content = resp.get("content") or {}
        text = content.get("text")
        if text is None:
            raw = b""
        elif content.get("encoding") == "base64":
            raw = base64.b64decode(text, validate=True)
        else:
            raw = str(text).encode("utf-8")
        headers = _header_map(resp.get("headers"))
        encoding = headers.pop("content-encoding", "")
        if content.get("encoding") == "base64" and encoding:
            raw = decode_body(raw, encoding, path, where)  # the archive kept the wire bytes
        asked = _body_json((req.get("postData") or {}).get("text"))
        frames = entry.get("_webSocketMessages")
        ix = _interaction(req, req["url"], asked, resp.get("status") or 0, headers, raw, where)
        if frames is not None:
            ix.messages = _ws_messages(entry, frames)
        return ix

    return _each(path, entries, "entry", "not a HAR entry", read)


def _interaction(
    req: Mapping[str, Any],
    url: Any,
    request_body: Any,
    status: Any,
    headers: dict[str, str],
    body: bytes,
    where: str,
) -> Interaction:
    """An exchange of a cassette or an archive: ``req`` its request as kept there (a method,
    headers), the rest read from it already (a bad status: ``ValueError``, ``TypeError``)."""
    return Interaction(
        method=str(req.get("method") or "GET").upper(),
        url=str(url),
        request_headers=_header_map(req.get("headers")),
        request_body=request_body,
        status=int(status),
        response_headers=headers,
        body=body,
        where=where,
    )


def _each(
    path: Path, items: list[Any], label: str, refusal: str, read: Callable[[Any, str], Interaction]
) -> list[Interaction]:
    """``read(item, where)`` of each of ``items`` (``where``: ``label`` and its number); an item
    that is not what the format keeps is one line naming the file and the item (``refusal``)."""
    out = []
    for n, item in enumerate(items, 1):
        where = f"{label} {n}"
        try:
            out.append(read(item, where))
        except RecordingError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, binascii.Error) as exc:
            raise _fail(path, where, f"{refusal} ({exc!s})") from None
    return out


# a message's time in a HAR: seconds since the epoch (Chrome, mitmproxy) or milliseconds
# (Playwright); past this, milliseconds
_MS_TIMES = 1e11


def _ws_messages(entry: Mapping[str, Any], frames: Any) -> list[WsMessage]:
    """A HAR entry's ``_webSocketMessages`` (``type`` send or receive, ``time``, ``opcode`` 1
    text or 2 binary in base64, ``data``) as messages timed from the upgrade. Control frames
    (close, ping, pong) are not messages of the session."""
    if not isinstance(frames, list):
        raise ValueError("_webSocketMessages is not a list")
    started = datetime.fromisoformat(str(entry["startedDateTime"]).replace("Z", "+00:00"))
    t0 = started.timestamp()
    out: list[WsMessage] = []
    for frame in frames:
        opcode = int(frame.get("opcode", 1))
        if opcode not in (1, 2):
            continue
        kind = frame["type"]
        if kind not in ("send", "receive"):
            raise ValueError(f"a WebSocket message of type {kind!r}")
        data = str(frame.get("data") or "")
        payload: str | bytes = data if opcode == 1 else base64.b64decode(data, validate=True)
        when = frame.get("time")
        t: float | None = None
        if isinstance(when, int | float) and when >= 0:
            seconds = when / 1000 if when > _MS_TIMES else float(when)
            t = round(max(0.0, seconds - t0), 6)
        out.append((t, "client" if kind == "send" else "server", payload))
    return out


MITMDUMP_ENV = "STREAMTOOL_MITMDUMP"  # names the mitmdump to read flow files with
MITMDUMP_TIMEOUT = 300.0


def mitmdump() -> str | None:
    """The ``mitmdump`` that reads flow files: the one ``STREAMTOOL_MITMDUMP`` names, else the
    one installed beside streamtool (``streamtool[mitmproxy]``), else the one on ``PATH``."""
    named = os.environ.get(MITMDUMP_ENV)
    if named:
        return named
    beside = Path(sys.executable).parent / "mitmdump"
    if beside.is_file():
        return str(beside)
    return shutil.which("mitmdump")


def _mitmdump_said(text: str) -> str:
    """The last thing mitmdump logged, without its timestamp (its tracebacks aside)."""
    lines = [ln for ln in text.splitlines() if re.match(r"\[\d[\d:.]*\]", ln)]
    last = lines[-1] if lines else (text.strip().splitlines() or [""])[-1]
    return re.sub(r"^\[[\d:.]+\](\[[^\]]*\])?\s*", "", last).strip()


def mitmproxy_interactions(path: Path) -> list[Interaction]:
    """The HTTP flows of a mitmproxy flow file, read by mitmproxy's own reader: ``mitmdump``
    reads the file and writes it as a HAR (its ``hardump`` option), which is then read as any
    HAR (WebSocket flows with their messages). mitmproxy runs as its own program: the releases
    that read today's flow files need Python 3.12, and its pins need not agree with
    streamtool's."""
    exe = mitmdump()
    if exe is None:
        raise _fail(
            path,
            None,
            "a mitmproxy flow file: reading it takes mitmproxy's mitmdump (pip install "
            f"'streamtool[mitmproxy]' on Python 3.12+, or pipx install mitmproxy; {MITMDUMP_ENV} "
            "names one)",
        )
    with tempfile.TemporaryDirectory(prefix="streamtool-mitm-") as tmp:
        har = Path(tmp) / "flows.har"
        try:
            done = subprocess.run(
                [exe, "-q", "-n", "-r", str(path), "--set", f"hardump={har}"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=MITMDUMP_TIMEOUT,
                cwd=tmp,
            )
        except OSError as exc:
            raise _fail(path, None, f"cannot run {exe}: {exc.strerror or exc}") from None
        except subprocess.TimeoutExpired:
            raise _fail(path, None, f"mitmdump read it for {MITMDUMP_TIMEOUT:.0f} s") from None
        if done.returncode != 0 or not har.is_file():
            said = _mitmdump_said(done.stderr + done.stdout) or f"exit {done.returncode}"
            raise _fail(path, None, f"not a flow file this mitmproxy reads ({said})")
        try:
            doc = json.loads(har.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise _fail(path, None, f"mitmdump's HAR cannot be read ({exc})") from None
    entries = doc.get("log", {}).get("entries") if isinstance(doc, Mapping) else None
    if not entries:
        raise _fail(path, None, "a flow file without HTTP flows: nothing to import")
    interactions = har_interactions(doc, path)
    for n, ix in enumerate(interactions, 1):
        ix.where = f"flow {n}"
    return interactions


_FLOW_START = re.compile(rb"^\d+:")


def read_file(path: Path, yaml_loader: Any = None) -> tuple[str, list[Interaction]]:
    """The importer that reads ``path`` (``vcrpy``, ``har`` or ``mitmproxy``) and its
    interactions. Raises ``RecordingError`` (one line naming the file, and the entry) for
    anything else."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise _fail(path, None, exc.strerror or str(exc)) from None
    if _FLOW_START.match(data[:32]) or path.suffix in (".flow", ".mitm", ".flows"):
        return "mitmproxy", mitmproxy_interactions(path)
    text = data.decode("utf-8", "replace")
    doc: Any
    if text.lstrip()[:1] in ("{", "["):
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise _fail(path, None, f"not JSON ({exc})") from None
    else:
        import yaml

        try:
            doc = yaml.load(text, Loader=yaml_loader or yaml.SafeLoader)  # noqa: S506
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = f"line {mark.line + 1}: " if mark is not None else ""
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise _fail(path, None, f"{line}not YAML this reads ({problem})") from None
    if isinstance(doc, Mapping) and "log" in doc:
        return "har", har_interactions(doc, path)
    if isinstance(doc, Mapping) and "interactions" in doc:
        return "vcrpy", vcr_interactions(doc, path)
    raise _fail(path, None, "neither a vcrpy cassette, a HAR file nor a mitmproxy flow file")


def files_of(paths: Sequence[Path]) -> Iterator[Path]:
    """The files named, and the cassettes and archives under the folders named (sorted)."""
    for path in paths:
        if path.is_dir():
            for sub in sorted(path.rglob("*")):
                if sub.is_file() and sub.suffix.lower() in (
                    ".yaml", ".yml", ".json", ".har", ".flow", ".mitm", ".flows",
                ):  # fmt: skip
                    yield sub
        else:
            yield path


# -- scrubbing ------------------------------------------------------------------------------------
def scrub(ix: Interaction, removed: Removed) -> Interaction:
    """The interaction without credentials (counted in ``removed``)."""
    headers = {}
    for name, value in ix.request_headers.items():
        if ix.messages is not None and name in NOT_KEPT:
            continue  # a session's upgrade: the handshake's nonce and the address are not kept
        if is_secret_header(name) and value and REDACTED not in value:
            removed.add(f"{name} header", ix.where)
            headers[name] = REDACTED
        elif name == SUBPROTOCOL_HEADER and subprotocol_secrets([value]):
            removed.add("a key in the WebSocket subprotocols", ix.where)
            headers[name] = redact_subprotocols(value)
        else:
            headers[name] = value
    url = ix.url
    parts = urlsplit(url)
    if parts.query:
        query = []
        for k, v in parse_qsl(parts.query, keep_blank_values=True):
            if is_secret_query(k) and v and v != REDACTED:
                removed.add(f"query parameter {k}", ix.where)
                v = REDACTED
            query.append((k, v))
        url = urlunsplit(parts._replace(query=urlencode(query, safe="[]")))
    if "@" in parts.netloc:
        removed.add("credentials in the URL", ix.where)
        url = urlunsplit(
            urlsplit(url)._replace(netloc=f"{REDACTED}@{parts.netloc.rpartition('@')[2]}")
        )
    body = ix.request_body
    if body is not None:
        text = json.dumps(body, ensure_ascii=False) if not isinstance(body, str) else body
        clean = redact_keys(text)
        if clean != text:
            removed.add("a key in the request body", ix.where)
            body = _body_json(clean) if not isinstance(body, str) else clean
    out_headers = {}
    for name, value in ix.response_headers.items():
        if name in _RESPONSE_SECRETS and value:
            removed.add(f"{name} response header", ix.where)
            out_headers[name] = REDACTED
        else:
            out_headers[name] = value
    response_body = ix.body
    cleaned = redact_keys(response_body.decode("utf-8", "surrogateescape"))
    if cleaned.encode("utf-8", "surrogateescape") != response_body:
        removed.add("a key in the response body", ix.where)
        response_body = cleaned.encode("utf-8", "surrogateescape")
    messages = None
    if ix.messages is not None:
        messages = []
        for t, direction, data in ix.messages:
            clean_data = _scrub_message(data)
            if clean_data != data:
                removed.add(f"a key in a WebSocket message ({direction})", ix.where)
            messages.append((t, direction, clean_data))
    return Interaction(
        ix.method, url, headers, body, ix.status, out_headers, response_body, ix.where, messages
    )


def _scrub_message(data: str | bytes) -> str | bytes:
    if isinstance(data, str):
        return redact_keys(data)
    return redact_keys(data.decode("latin-1")).encode("latin-1")


# -- writing a tape -------------------------------------------------------------------------------
def _api_of(ix: Interaction) -> tuple[str, str | None]:
    """(provider, API name) of an interaction: the API its path is for, the provider its host
    is (else the API's own)."""
    parts = urlsplit(ix.url)
    wire = api_for_path(parts.path, hosted=True)
    provider = official_hosts().get(parts.netloc)
    if wire is None:
        return provider or "http", None
    return provider or wire.provider, wire.name


def write_tape(
    found: Sequence[tuple[str, Path, list[Interaction]]], out: Path, removed: Removed
) -> list[IndexEntry]:
    """The interactions as a new tape at ``out`` (written beside it, then moved into place:
    nothing is left at ``out`` when anything fails). Raises ``RecordingError``."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise RecordingError(
            str(out), None, "exists and is not empty (an import writes a new tape)"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    entries: list[IndexEntry] = []
    try:
        seq = 0
        for importer, source, interactions in found:
            for raw in interactions:
                ix = scrub(raw, removed)
                seq += 1
                entries.append(_write_one(staging, seq, importer, source, ix))
        rewrite_index(staging, entries)
        write_gitignore(staging)  # what to commit of the new tape
        try:
            if out.exists():
                out.rmdir()  # an empty folder: the new tape takes its place
            os.replace(staging, out)
        except OSError:  # another writer's tape got there first: it is kept, this one is not
            raise RecordingError(
                str(out), None, "exists and is not empty (an import writes a new tape)"
            ) from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return entries


def _write_one(folder: Path, seq: int, importer: str, source: Path, ix: Interaction) -> IndexEntry:
    provider, api = _api_of(ix)
    body = ix.request_body
    model = (
        body.get("model") if isinstance(body, dict) and isinstance(body.get("model"), str) else None
    )
    if model is None and ix.messages is not None:  # a session names its model in the query
        model = dict(parse_qsl(urlsplit(ix.url).query)).get("model")
    name = exchange_name(seq, api or provider, model)
    header = Header(
        provider=provider,
        api=api,
        recorded_at=None,
        request={"method": ix.method, "url": ix.url, "headers": ix.request_headers, "body": body},
        response={"status": ix.status, "headers": ix.response_headers},
        extra={
            "imported": {
                "from": importer,
                "file": source.name,
                "entry": ix.where,
                "timing": "unknown",
                "streamed": ix.streamed,
            }
        },
    )
    if ix.messages is not None:
        return _write_session(folder, seq, name, header, ix, api, provider, model)
    with RecordingWriter(folder / name, header) as writer:
        if ix.body:
            writer.write_read(None, ix.body)
        writer.close(None, "complete")
    return IndexEntry(
        seq=seq,
        file=name,
        api=api,
        provider=provider,
        method=ix.method,
        path=urlsplit(ix.url).path,
        model=model,
        status=ix.status,
        end="complete",
        chunks=1 if ix.body else 0,
    )


def _write_session(
    folder: Path,
    seq: int,
    name: str,
    header: Header,
    ix: Interaction,
    api: str | None,
    provider: str,
    model: str | None,
) -> IndexEntry:
    """A WebSocket session of an archive as a session recording: the upgrade in its header,
    its messages timed as the archive timed them (``"timing": "archive"``; ``unknown`` when
    it kept no time)."""
    assert ix.messages is not None
    timed = all(t is not None for t, _, _ in ix.messages)
    header.extra["transport"] = WEBSOCKET
    header.extra["imported"]["timing"] = "archive" if timed and ix.messages else "unknown"
    header.request["body"] = None
    first_server = None
    last = 0.0
    with RecordingWriter(folder / name, header) as writer:
        for t, direction, data in ix.messages:
            when = t if timed else None
            if when is not None:
                last = max(last, when)
            if direction == "server" and first_server is None:
                first_server = when
            writer.write_session_record(Message(when, direction, data))
        writer.close(last if timed else None, "complete")
    return IndexEntry(
        seq=seq,
        file=name,
        api=api,
        provider=provider,
        method="GET",
        path=urlsplit(ix.url).path,
        model=model,
        status=ix.status,
        end="complete",
        ttft_s=first_server,
        duration_s=last if timed else None,
        chunks=len(ix.messages),
    )


def import_files(
    paths: Sequence[Path], out: Path, yaml_loader: Any = None
) -> tuple[list[IndexEntry], Removed, list[str]]:
    """``paths`` (files and folders) imported as the tape ``out``: its entries, the secrets
    removed, and the importer of each file read. Raises ``RecordingError`` naming the file (and
    the entry) at the first one that cannot be read; nothing is then written at ``out``."""
    found = []
    kinds = []
    for path in files_of(paths):
        importer, interactions = read_file(path, yaml_loader)
        found.append((importer, path, interactions))
        kinds.append(f"{path}: {importer}, {len(interactions)}")
    if not found:
        raise RecordingError(
            ", ".join(str(p) for p in paths), None, "no cassette, HAR or flow file"
        )
    removed = Removed()
    return write_tape(found, out, removed), removed, kinds


# -- export ---------------------------------------------------------------------------------------
def vcr_cassette(tape: Path) -> dict[str, Any]:
    """A tape as a vcrpy cassette (version 1): each exchange's request and whole response body."""
    interactions = []
    for entry in read_index(tape):
        source = Source(tape / entry.file)
        header = source.header
        body = b"".join(
            c.data if isinstance(c.data, bytes) else c.data.encode("utf-8") for c in source.chunks()
        )
        req = header.request if isinstance(header.request, dict) else {}
        req_body = req.get("body")
        req_text = (
            None if req_body is None
            else req_body if isinstance(req_body, str)
            else json.dumps(req_body, ensure_ascii=False)
        )  # fmt: skip
        resp = header.response if isinstance(header.response, dict) else {}
        found = resp.get("headers")
        headers: dict[str, Any] = found if isinstance(found, dict) else {}
        code = resp.get("status")
        status: int = code if isinstance(code, int) else 200
        try:
            text_body: Any = body.decode("utf-8")
        except UnicodeDecodeError:
            text_body = body
        interactions.append(
            {
                "request": {
                    "body": req_text,
                    "headers": {
                        k: [str(v)] for k, v in (req.get("headers") or {}).items()
                        if str(v) != REDACTED
                    },
                    "method": str(req.get("method") or "POST"),
                    "uri": str(req.get("url") or ""),
                },
                "response": {
                    "body": {"string": text_body},
                    "headers": {k: [str(v)] for k, v in headers.items()},
                    "status": {"code": status, "message": _REASONS.get(status, "")},
                },
            }
        )  # fmt: skip
    return {"interactions": interactions, "version": 1}


_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
            429: "Too Many Requests", 500: "Internal Server Error", 529: "Overloaded"}  # fmt: skip
