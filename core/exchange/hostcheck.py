"""The ``Host`` check of ``serve`` and ``proxy`` (DNS rebinding).

A page on any web site can make a browser send requests to a name that resolves to 127.0.0.1;
the browser then sends that name as ``Host``. A connection that reached a loopback address is
therefore answered only when its ``Host`` names a loopback address too (``127.0.0.1`` and the
rest of 127/8, ``localhost``, ``[::1]``, any port): anything else is 421 Misdirected Request.
Connections that reached another address (``--host 0.0.0.0`` seen from the network) are not
checked here; the command warns when it listens on one.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from ..plugins import error_body
from ..plugins.table import default_api
from ..recording.secrets import redact_keys

# host [":" port], the host a name, an IPv4 address or a bracketed IPv6 one (RFC 9110 7.2)
_HOST = re.compile(r"^(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<name>[^:\[\]@/\\\s]+))(?::\d{0,5})?$")
MISDIRECTED = 421


@lru_cache(maxsize=256)
def is_loopback(host: str) -> bool:
    """``localhost``, or an address in 127/8 or ``::1`` (brackets allowed). Kept for the
    last hosts asked about: every request's ``Host`` is asked about, mostly the same one."""
    host = host.strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_of(value: str) -> str | None:
    """The host of a ``Host`` header value (``None``: not of the form host[:port])."""
    found = _HOST.match(value.strip())
    if found is None:
        return None
    return found.group("v6") or found.group("name")


def host_refusal(scope: Any) -> str | None:
    """Why a request may not be answered (``None``: it may): it reached a loopback address
    under a ``Host`` that is not loopback."""
    server = scope.get("server")
    if not server or not is_loopback(str(server[0])):
        return None
    for key, value in scope.get("headers", ()):
        if key.lower() != b"host":
            continue
        text = value.decode("latin-1")
        host = host_of(text)
        if host is None or not is_loopback(host):
            shown = redact_keys(text)[:80]
            return f"Host {shown!r} is not a loopback address (421: misdirected request)"
    return None


async def refuse(send: Any, status: int, message: str, style: str = "") -> None:
    """Answer a request with an error in ``style``'s shape (the default API's: ``""``),
    closing the connection."""
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"connection", b"close")],
        }
    )
    style = style or default_api().error_style
    await send({"type": "http.response.body", "body": error_body(style, status, message)})


def loopback_only(app: Any, log: Callable[[str], None] | None) -> Any:
    """``app`` behind the ``Host`` check: a refused request is 421 and one ``log`` line."""

    async def checked(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            why = host_refusal(scope)
            if why is not None:
                if log is not None:
                    path = redact_keys(str(scope.get("path", "")))
                    log(f"{scope.get('method', '?')} {path} -> 421: {why}")
                await refuse(send, MISDIRECTED, why)
                return
        await app(scope, receive, send)

    return checked
