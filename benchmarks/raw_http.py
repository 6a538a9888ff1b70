"""Raw sockets for the benchmarks that speak HTTP/1.1 by hand."""

from __future__ import annotations

import socket


def recv_until(sock: socket.socket, marker: bytes, size: int = 65536) -> bytes:
    """What ``sock`` sends until ``marker`` has come, or until it closes (then the result lacks
    ``marker``)."""
    data = b""
    while marker not in data:
        piece = sock.recv(size)
        if not piece:
            break
        data += piece
    return data
