"""Capture for SDK users: an HTTP client that tees every streamed response into a recording.

    from streamtool.core.net.capture import Capture

    capture = Capture("captures/")                      # a folder, or a file name
    client = openai.OpenAI(http_client=capture.client())
    ...                                                 # stream as usual
    capture.paths                                       # the recordings written

A boto3 ``bedrock-runtime`` client is captured through its own event hooks instead:
``client = capture.botocore(boto3.client("bedrock-runtime"))`` (binary reads kept as ``b64``).

The official SDKs take an httpx-style client: the installed openai and anthropic SDKs are built
on ``httpx2``, older ones on ``httpx``. :class:`Capture` hands out a client of the module the SDK
uses (found from an already imported SDK, else ``httpx2`` when installed, else ``httpx``), or of
the one named by ``module=``. The tee sits at the transport level, so it sees the raw body as it
comes off the connection, one item per network read, exactly as ``streamtool record`` writes it.

Streamed requests (``"stream": true`` in the JSON body, or a ``:streamGenerateContent`` URL)
are recorded; others pass through untouched unless ``streams_only=False``. Each recorded
response gets its own file: in a folder (an existing one, or a name without a suffix)
``001-openai-chat-completions.jsonl``, ...; for a file name ``rec.jsonl``, then
``rec-2.jsonl``, ... Nothing existing is overwritten unless ``force=True``. The async client
writes its (small, flushed) records synchronously.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import re
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from ..exchange.requests import preset_for
from ..model.records import RecordingError
from ..plugins import WireApi, api_for_path, api_table, official_hosts, served_api
from ..plugins.table import api_by_header, default_api
from ..recording.recorder import ResponseRecorder
from ..recording.secrets import credential_values, secret_query_values
from ..wire import fastjson
from ..wire.http_body import StreamEndDetector

# the official hosts: the default base URLs ``streamtool record`` sends to
_HOSTS = official_hosts()


def http_module(name: str | None = None) -> ModuleType:
    """The httpx-style module the SDK clients take (see the module docstring)."""
    if name:
        return importlib.import_module(name)
    for sdk in dict.fromkeys(a.sdk for a in api_table() if a.sdk):
        base = sys.modules.get(f"{sdk}._base_client")
        if base is not None:
            for candidate in ("httpx2", "httpx"):
                if candidate in vars(base):
                    return importlib.import_module(candidate)
    try:
        return importlib.import_module("httpx2")
    except ImportError:
        return importlib.import_module("httpx")


def describe_request(request: Any) -> tuple[dict[str, Any], Any, tuple[str, ...]]:
    """The recording header's request, the parsed body, and the credential values in it."""
    try:
        content = request.content
    except Exception:  # a streaming request body that was not read: keep no body
        content = b""
    try:
        body: Any = fastjson.loads(content) if content else None
    except ValueError:
        body = content.decode("utf-8", "replace")
    headers = dict(request.headers.items())
    secrets = credential_values(headers.items())
    url = str(request.url)
    secrets += secret_query_values(url)
    info = {"method": request.method, "url": url, "headers": headers, "body": body}
    return info, body, tuple(s for s in secrets if s)


def provider_and_api(url: str, headers: dict[str, str]) -> tuple[str, str | None]:
    parts = urlsplit(url)
    found = api_for_path(parts.path)
    api = found.name if found is not None else None
    host = parts.netloc.lower().rsplit("@", 1)[-1]
    provider = _HOSTS.get(host.split(":")[0])
    if provider is None:
        preset = preset_for(url)
        if preset is not None:
            provider = preset.name
    if provider is None:
        provider = _provider_by_client({k.lower(): v for k, v in headers.items()}, found)
    return provider, api


def _provider_by_client(lowered: dict[str, str], found: WireApi | None) -> str:
    """The provider of a request to a host of no known provider: the one whose clients alone
    send one of its headers, the one of an API only its own provider speaks, the one whose
    official SDK sent it (its User-Agent), else "compatible" with the default API's."""
    by_header = api_by_header(lowered)
    if by_header is not None:
        return by_header.provider
    if found is not None and not found.compatible:
        return found.provider
    agent = lowered.get("user-agent", "")
    by_sdk = next((a for a in api_table() if a.sdk_agent and agent.startswith(a.sdk_agent)), None)
    if by_sdk is not None:
        return by_sdk.provider
    return f"{default_api().provider}-compatible"


def is_stream_request(url: str, body: Any) -> bool:
    api = served_api(urlsplit(url).path)
    if api is not None and api.stream_in_path:
        return True
    return isinstance(body, dict) and body.get("stream") is True


class Capture:
    """Hands out SDK-ready HTTP clients whose streamed responses are recorded."""

    def __init__(
        self,
        target: str | os.PathLike[str],
        *,
        force: bool = False,
        streams_only: bool = True,
        module: str | None = None,
    ) -> None:
        raw = os.fspath(target)
        # a folder: an existing one, or a name without a suffix ("captures", "runs/")
        self.folder = raw.endswith(("/", os.sep)) or Path(raw).is_dir() or not Path(raw).suffix
        self.target = Path(raw)
        if self.folder:
            self.target.mkdir(parents=True, exist_ok=True)
        self.force = force
        self.streams_only = streams_only
        self.module_name = module
        self.paths: list[Path] = []
        self._lock = threading.Lock()
        self._count = 0

    # -- clients ---------------------------------------------------------------------------
    def client(self, **kwargs: Any) -> Any:
        """A sync client (``openai.OpenAI(http_client=...)``); kwargs go to the client."""
        mod = http_module(self.module_name)
        inner = kwargs.pop("transport", None) or mod.HTTPTransport()
        return mod.Client(transport=self.transport(inner, mod), **kwargs)

    def async_client(self, **kwargs: Any) -> Any:
        """An async client (``openai.AsyncOpenAI(http_client=...)``)."""
        mod = http_module(self.module_name)
        inner = kwargs.pop("transport", None) or mod.AsyncHTTPTransport()
        return mod.AsyncClient(transport=self.async_transport(inner, mod), **kwargs)

    def transport(self, inner: Any, mod: ModuleType | None = None) -> Any:
        """Wrap a sync transport of your own."""
        return _classes(mod or http_module(self.module_name))[0](self, inner)

    def async_transport(self, inner: Any, mod: ModuleType | None = None) -> Any:
        """Wrap an async transport of your own."""
        return _classes(mod or http_module(self.module_name))[1](self, inner)

    def botocore(self, client: Any) -> Any:
        """Record a boto3 ``bedrock-runtime`` client's streamed responses (``converse_stream``,
        ``invoke_model_with_response_stream``): the client itself, with capture hooks added."""
        from .aws import BotocoreCapture

        return BotocoreCapture(self).register(client)

    # -- recordings ------------------------------------------------------------------------
    def next_path(self, provider: str, api: str | None) -> Path:
        with self._lock:
            while True:
                self._count += 1
                n = self._count
                if self.folder:
                    slug = re.sub(r"[^a-z0-9]+", "-", f"{provider}-{api or 'stream'}".lower())
                    path = self.target / f"{n:03d}-{slug.strip('-')}.jsonl"
                elif n == 1:
                    path = self.target
                else:
                    path = self.target.with_name(f"{self.target.stem}-{n}{self.target.suffix}")
                if self.force or not path.exists():
                    self.paths.append(path)
                    return path

    def recorder_for(self, request: Any) -> ResponseRecorder | None:
        """A recorder for this request's response, or ``None`` when it is not recorded."""
        info, body, secrets = describe_request(request)
        if self.streams_only and not is_stream_request(info["url"], body):
            return None
        provider, api = provider_and_api(info["url"], info["headers"])
        # ask for the body unencoded, so the recording holds what a client parses
        request.headers["accept-encoding"] = "identity"
        info["headers"]["accept-encoding"] = "identity"
        path = self.next_path(provider, api)
        rec = ResponseRecorder(
            path, request=info, provider=provider, api=api, secrets=secrets, force=self.force
        )
        try:
            rec.preflight()
        except RecordingError as exc:
            self.skip(path, exc)
            return None
        return rec

    def skip(self, path: Path, exc: RecordingError) -> None:
        """Capturing never breaks the caller's request: warn and let it through unrecorded."""
        with self._lock:
            if path in self.paths:
                self.paths.remove(path)
        warnings.warn(f"streamtool capture: not recorded: {exc}", RuntimeWarning, stacklevel=3)

    @contextlib.contextmanager
    def sending(self, rec: ResponseRecorder) -> Iterator[None]:
        """The request of ``rec`` is sent (its times count from now): a failure before the
        response leaves a recording that says why no response came."""
        rec.t0 = time.monotonic()
        try:
            yield
        except BaseException as exc:
            with contextlib.suppress(RecordingError):
                rec.fail(exc)
            raise

    def teed(self, rec: ResponseRecorder, response: Any, tee: Callable[[Any, Any], Any]) -> Any:
        """``response``, its stream read through ``tee`` into ``rec`` once its header is
        written (as it came when the recording cannot be written)."""
        if self.started(rec, response):
            response.stream = tee(response.stream, rec)
        return response

    def started(self, rec: ResponseRecorder, response: Any) -> bool:
        """Write the header for ``response``; ``False`` when the recording cannot be written."""
        try:
            rec.start(response.status_code, response.headers.multi_items())
        except RecordingError as exc:
            self.skip(Path(rec.path), exc)
            return False
        return True


class _Tee:
    """What the sync and async tee streams share: each read goes to the recorder, and the
    read loop runs ``with self`` so that the way it ends closes the recording."""

    def __init__(self, inner: Any, rec: ResponseRecorder) -> None:
        self.inner = inner
        self.rec = rec
        self.end = StreamEndDetector()

    def _read(self, data: bytes) -> None:
        chunk = self.rec.feed(data)
        if chunk is not None:
            self.end.feed(chunk.data)

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        if exc is None:
            self.rec.close()  # the whole body was read
        elif not isinstance(exc, GeneratorExit):  # a client closing early: see _closed
            self.rec.fail(exc)

    def _closed(self) -> None:
        """The client closed the response, maybe before the body's end was read."""
        rec = self.rec
        if rec.reason is not None:
            return
        if self.end.terminated:
            rec.close()  # an SDK stops at the stream's final event: nothing more was coming
        else:
            rec.close("interrupted", f"the client closed the stream after {rec.bytes} bytes")


@functools.cache
def _classes(mod: ModuleType) -> tuple[type, type]:
    """Transport and stream wrappers subclassing ``mod``'s base classes (the clients check)."""

    class TeeStream(_Tee, mod.SyncByteStream):  # type: ignore[name-defined]
        def __iter__(self) -> Any:
            with self:
                for data in self.inner:
                    self._read(data)
                    yield data

        def close(self) -> None:
            self._closed()
            self.inner.close()

    class AsyncTeeStream(_Tee, mod.AsyncByteStream):  # type: ignore[name-defined]
        async def __aiter__(self) -> Any:
            with self:
                async for data in self.inner:
                    self._read(data)
                    yield data

        async def aclose(self) -> None:
            self._closed()
            await self.inner.aclose()

    class TeeTransport(mod.BaseTransport):  # type: ignore[name-defined]
        def __init__(self, capture: Capture, inner: Any) -> None:
            self.capture = capture
            self.inner = inner

        def handle_request(self, request: Any) -> Any:
            rec = self.capture.recorder_for(request)
            if rec is None:
                return self.inner.handle_request(request)
            with self.capture.sending(rec):
                response = self.inner.handle_request(request)
            return self.capture.teed(rec, response, TeeStream)

        def close(self) -> None:
            self.inner.close()

    class AsyncTeeTransport(mod.AsyncBaseTransport):  # type: ignore[name-defined]
        def __init__(self, capture: Capture, inner: Any) -> None:
            self.capture = capture
            self.inner = inner

        async def handle_async_request(self, request: Any) -> Any:
            rec = self.capture.recorder_for(request)
            if rec is None:
                return await self.inner.handle_async_request(request)
            with self.capture.sending(rec):
                response = await self.inner.handle_async_request(request)
            return self.capture.teed(rec, response, AsyncTeeStream)

        async def aclose(self) -> None:
            await self.inner.aclose()

    return TeeTransport, AsyncTeeTransport
