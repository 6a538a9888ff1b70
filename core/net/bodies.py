"""Request bodies at the edge (serve and the proxy): read within a size and a time limit, and
parsed off the event loop when large.

:func:`read_body` reads a starlette request's body whole, or raises :class:`BodyRefused`: 413
past ``max_body`` bytes (from ``Content-Length`` before reading, or as the bytes come), 408 when
the whole body has not arrived ``timeout`` seconds after the app got the request head (a client
sending a byte every few seconds would hold its connection forever), and no status at all when
the client went away mid-body (``quiet`` when the connection guard closed it to make room for
another: see :mod:`.guard`). :func:`refusal` is the response that says so, closing the
connection (the rest of the body is not waited for). :func:`off_loop` runs work on a body
large enough to hold the event loop (parsing, scrubbing) in a worker thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from .guard import body_evicted

BODY_TIMEOUT = 30.0  # seconds a request body may take to arrive (--body-timeout)
MAX_BODY = 10 * 1024 * 1024  # the default request body limit (--max-body): 413 beyond
OFF_LOOP = 256 * 1024  # bytes of body from which parsing it moves to a worker thread

T = TypeVar("T")


class BodyRefused(Exception):
    """The body was not read: ``status`` 413 or 408, or ``None`` when the client went away.

    ``quiet``: the connection guard closed the connection to make room, answering the client
    itself and logging it among others (:mod:`.guard`): the app has nothing to answer or log.
    """

    def __init__(self, status: int | None, message: str, *, quiet: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.quiet = quiet


def body_timeout(seconds: float) -> float:
    """``--body-timeout``: more than 0 seconds (``inf``: none); ``ValueError`` otherwise."""
    if not seconds > 0:  # also NaN
        raise ValueError(
            f"--body-timeout must be a number of seconds more than 0 (inf: none), not {seconds:g}"
        )
    return seconds


async def read_body(request: Any, *, max_body: int, timeout: float) -> bytes:
    """The whole body of starlette ``request``, or :class:`BodyRefused`."""
    from starlette.requests import ClientDisconnect

    too_big = BodyRefused(413, f"the request body is larger than {max_body} bytes (--max-body)")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_body:
        raise too_big
    pieces: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(None if timeout == float("inf") else timeout):
            async for piece in request.stream():
                size += len(piece)
                if size > max_body:
                    raise too_big
                pieces.append(piece)
    except TimeoutError:
        raise BodyRefused(
            408,
            f"the request body did not arrive within {timeout:g} s (--body-timeout): "
            f"{size} bytes came",
        ) from None
    except ClientDisconnect:
        if body_evicted():
            raise BodyRefused(
                None, f"closed to make room: its body came too slowly ({size} bytes)", quiet=True
            ) from None
        raise BodyRefused(
            None, f"the client went away while sending its body ({size} bytes came)"
        ) from None
    return b"".join(pieces)


def refusal(status: int, body: bytes) -> Any:
    """A JSON error response that closes the connection (a body still arriving is dropped)."""
    from starlette.responses import Response

    return Response(body, status, media_type="application/json", headers={"connection": "close"})


async def off_loop(size: int, work: Callable[..., T], *args: Any) -> T:
    """``work(*args)``: in a worker thread when the body it handles is ``size`` >=
    :data:`OFF_LOOP` bytes (so other streams go on meanwhile), else here."""
    if size >= OFF_LOOP:
        return await asyncio.to_thread(work, *args)
    return work(*args)
