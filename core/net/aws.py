"""Amazon Bedrock through botocore: SigV4 signing for ``record``, and capture of a boto3 client.

botocore is an optional dependency (``pip install 'streamtool[bedrock]'``): it is imported here
only, when a Bedrock request is signed or a boto3 client is captured. Signing is botocore's own
(``SigV4Auth`` over the exact method, URL, headers and body ``record`` sends), with the
credentials botocore finds (environment, profiles, SSO...). A Bedrock API key
(``AWS_BEARER_TOKEN_BEDROCK``) needs no signing: ``record`` sends it as a bearer token.

Capture hooks into the client's documented event system: ``before-send`` sees the signed
request, ``before-parse`` hands the parser a tee of the raw response body, so that every read the
SDK makes of the binary event stream is written as it comes (``b64`` reads), exactly as
``record`` writes them.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import replace
from typing import Any, Protocol
from urllib.parse import urlsplit

from ..exchange.requests import PreparedRequest, RequestError
from ..model.records import RecordingError
from ..plugins import api_for_path, api_table, find_api, served_api
from ..recording.recorder import ResponseRecorder
from ..recording.secrets import credential_values
from ..wire import fastjson
from ..wire.eventstream import EventStreamDecoder

INSTALL_HINT = "pip install 'streamtool[bedrock]'"
# the AWS services (the first label of their official host, "<service>.<region>.amazonaws.com")
# of the APIs whose requests are signed with SigV4
_SERVICES = tuple(
    dict.fromkeys(
        (urlsplit(a.base_url).hostname or "").split(".")[0] for a in api_table() if a.sigv4
    )
)
_REGION_HOST = re.compile(
    rf"^(?:{'|'.join(map(re.escape, _SERVICES))})(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com$"
)


def region_for(url: str, env: Any) -> str:
    """The AWS region a request goes to: the official host names it, else ``AWS_REGION`` /
    ``AWS_DEFAULT_REGION``, else ``us-east-1``."""
    found = _REGION_HOST.match((urlsplit(url).hostname or "").lower())
    if found:
        return found.group(1)
    return env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"


def _botocore() -> Any:
    try:
        import botocore.auth
        import botocore.awsrequest
        import botocore.session
    except ImportError:
        raise RequestError(
            "Bedrock requests are signed with AWS SigV4 by botocore, which is not installed: "
            f"{INSTALL_HINT} (or set AWS_BEARER_TOKEN_BEDROCK)"
        ) from None
    return botocore


def sign_sigv4(prepared: PreparedRequest, env: Any, *, required: bool = True) -> PreparedRequest:
    """``prepared`` with botocore's SigV4 headers for its API's service (its row's ``sigv4``).

    Without credentials: a :class:`RequestError` when ``required``, else the request unsigned (a
    local server asks for none)."""
    botocore = _botocore()
    credentials = botocore.session.Session().get_credentials()
    if credentials is None:
        if not required:
            return prepared
        raise RequestError(
            "no AWS credentials for SigV4 signing: set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or AWS_BEARER_TOKEN_BEDROCK"
        )
    frozen = credentials.get_frozen_credentials()
    request = botocore.awsrequest.AWSRequest(
        method=prepared.method, url=prepared.url, data=prepared.content, headers=prepared.headers
    )
    region = region_for(prepared.url, env)
    api = find_api(prepared.api)
    if api is None or not api.sigv4:
        raise RequestError(f"{prepared.api}: not an API whose requests are signed with SigV4")
    botocore.auth.SigV4Auth(frozen, api.sigv4, region).add_auth(request)
    headers = dict(request.headers.items())
    secrets = [*prepared.secrets, frozen.secret_key, frozen.token or ""]
    return replace(prepared, headers=headers, secrets=tuple(s for s in dict.fromkeys(secrets) if s))


# -- capture of a boto3 client -------------------------------------------------------------------
class _BodyTee:
    """The raw response body as botocore's event-stream reader uses it (``stream()``,
    ``close()``), each read written to the recording on its way to the parser."""

    def __init__(self, raw: Any, rec: ResponseRecorder) -> None:
        self._raw = raw
        self._rec = rec
        self._frames = EventStreamDecoder()
        self._last = ""  # the last whole frame's name

    def _feed(self, data: bytes) -> None:
        if self._rec.reason is not None:
            return
        self._rec.feed(data)
        self._frames.feed(data)
        if self._frames.recent:
            self._last = self._frames.recent[-1]
            # an exception frame ends a Bedrock stream, and botocore raises it to the caller,
            # who may never read or close the body again: the recording is whole now
            if self._exception_ended():
                self._rec.close()

    def _exception_ended(self) -> bool:
        return not self._frames.mid_event and self._last.startswith(("exception:", "error:"))

    def _stopped(self) -> None:
        """The SDK stopped reading: botocore raises on an exception frame, which ends a
        Bedrock stream, so the body was whole if it ended with one."""
        rec = self._rec
        if rec.reason is not None:
            return
        if self._exception_ended():
            rec.close()
        else:
            rec.close("interrupted", f"the client closed the stream after {rec.bytes} bytes")

    def stream(self, *args: Any, **kwargs: Any) -> Any:
        rec = self._rec
        try:
            for data in self._raw.stream(*args, **kwargs):
                self._feed(data)
                yield data
        except GeneratorExit:
            self._stopped()
            raise
        except BaseException as exc:
            rec.fail(exc)
            raise
        rec.close()

    def read(self, *args: Any, **kwargs: Any) -> bytes:
        data: bytes = self._raw.read(*args, **kwargs)
        if data:
            self._feed(data)
        else:
            self._rec.close()
        return data

    def close(self) -> None:
        self._stopped()
        self._raw.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


class _Capture(Protocol):
    """What the hooks need of :class:`~streamtool.core.net.capture.Capture`."""

    force: bool
    streams_only: bool

    def next_path(self, provider: str, api: str | None) -> Any: ...

    def skip(self, path: Any, exc: RecordingError) -> None: ...


class BotocoreCapture:
    """The event handlers that record one boto3 client's streamed Bedrock responses."""

    def __init__(self, capture: _Capture) -> None:
        self.capture = capture
        self._pending = threading.local()

    def register(self, client: Any) -> Any:
        events = client.meta.events
        for service in _SERVICES:
            events.register(f"before-send.{service}", self.before_send)
            events.register(f"before-parse.{service}", self.before_parse)
        return client

    def before_send(self, request: Any, **kwargs: Any) -> None:
        """The signed request about to go out: what the recording's header keeps."""
        url = str(request.url)
        path = urlsplit(url).path
        # a streamed operation (its route), or with streams_only=False any Bedrock runtime call
        api = served_api(path)
        if api is None and not self.capture.streams_only:
            api = api_for_path(path)
        if api is None or not api.sigv4:
            self._pending.info = None
            return
        body = request.body
        if hasattr(body, "read"):  # a file-like body: botocore has it in memory, unread
            content = b""
        else:
            content = body.encode() if isinstance(body, str) else bytes(body or b"")
        headers = {k: v.decode() if isinstance(v, bytes) else v for k, v in request.headers.items()}
        self._pending.info = (request.method, url, headers, content, api, time.monotonic())

    def before_parse(self, response_dict: dict[str, Any], **kwargs: Any) -> None:
        pending = getattr(self._pending, "info", None)
        self._pending.info = None
        if pending is None:
            return
        method, url, headers, content, api, t0 = pending
        try:
            body: Any = fastjson.loads(content) if content else None
        except ValueError:
            body = content.decode("utf-8", "replace")
        info = {"method": method, "url": url, "headers": headers, "body": body}
        capture = self.capture
        path = capture.next_path(api.provider, api.name)
        secrets = tuple(s for s in credential_values(headers.items()) if s)
        rec = ResponseRecorder(
            path,
            request=info,
            provider=api.provider,
            api=api.name,
            secrets=secrets,
            force=capture.force,
            t0=t0,
        )
        try:
            rec.preflight()
            rec.start(response_dict["status_code"], list(response_dict["headers"].items()))
        except RecordingError as exc:
            capture.skip(path, exc)
            return
        raw = response_dict.get("body")
        if isinstance(raw, bytes | bytearray):  # an error answer: botocore read it whole
            if raw:
                rec.feed(bytes(raw))
            rec.close()
        elif raw is not None and hasattr(raw, "stream"):
            response_dict["body"] = _BodyTee(raw, rec)
        else:
            rec.close()
