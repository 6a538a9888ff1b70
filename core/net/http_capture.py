"""The network edge of ``streamtool record``: send one request with httpx, record the stream.

httpx is imported here, inside the function, so that nothing else pays for it. Bytes are taken
from ``Response.iter_raw()`` (the body as it came off the connection, one item per read), never
from the decoded iterators.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from ..exchange.requests import PreparedRequest
from ..model.records import Chunk, RecordingError
from ..recording.recorder import RecordResult, ResponseRecorder

USER_AGENT = "streamtool-record"


def record_request(
    prepared: PreparedRequest,
    path: str | os.PathLike[str],
    *,
    force: bool = False,
    read_timeout: float = 120.0,
    connect_timeout: float = 15.0,
    on_start: Callable[[int | None], None] | None = None,
    on_chunk: Callable[[Chunk], None] | None = None,
) -> RecordResult:
    """Send ``prepared`` and record its response to ``path``.

    Network faults do not raise: a dropped connection, a read timeout or Ctrl-C end the
    recording with their reason and the result says so. ``on_chunk`` sees every chunk just after
    it was written, ``on_start`` the status (they must not raise; a live view catches its own
    errors).
    """
    import httpx

    recorder = ResponseRecorder(
        path,
        request=prepared.describe(),
        provider=prepared.provider,
        api=prepared.api,
        secrets=prepared.secrets,
        force=force,
    )
    recorder.preflight()
    timeout = httpx.Timeout(connect_timeout, read=read_timeout, write=30.0, pool=connect_timeout)
    try:
        with httpx.Client(timeout=timeout, headers={"user-agent": USER_AGENT}) as client:
            request = client.build_request(
                prepared.method, prepared.url, headers=prepared.headers, content=prepared.content
            )
            recorder.t0 = time.monotonic()
            response = client.send(request, stream=True)
            try:
                recorder.start(response.status_code, response.headers.multi_items())
                if on_start is not None:
                    on_start(response.status_code)
                for data in response.iter_raw():
                    chunk = recorder.feed(data)
                    if chunk is not None and on_chunk is not None:
                        on_chunk(chunk)
                    if recorder.write_error is not None:
                        break  # the disk is full: nothing more can be kept
                chunk = recorder.close()
                if chunk is not None and on_chunk is not None:
                    on_chunk(chunk)
            finally:
                response.close()
    except RecordingError:
        raise  # the output cannot be written: nothing to record into
    except (Exception, KeyboardInterrupt) as exc:
        recorder.fail(exc)
    return recorder.result()
