"""What a replay of a WebSocket session keeps beside the pipeline's results. Sans-IO.

A session (a recording whose header's ``transport`` is ``websocket``) is messages, not reads: the
server's messages are the events its converter reads, the client's are told to the converter
beside them (:meth:`~streamtool.core.converters.base.Converter.client_message`), and the control
frames too (``ping``, ``pong``, ``close``). :class:`SessionLog` keeps every message's ``type`` and
direction in order (``replay --format json``'s ``events``), the closes, and the session's
outline: the tree ``replay`` draws, built by the ``session`` part of the API's package
(``Outline``), or a plain list of the messages when the package has none.

:class:`Node` is one line of an outline: what it is (``kind``: ``client``, ``server``,
``response``, ``text``, ``transcript``, ``audio``, ``call``, ``error``, ``usage``,
``rate_limits``, ``close``, ``ping``, ``note``), its label, its detail, its children.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ..model.records import Control, Message


@dataclass(slots=True)
class Node:
    """One line of a session's outline, and the lines under it."""

    kind: str
    label: str
    detail: str = ""
    t: float | None = None
    children: list[Node] = field(default_factory=list)
    count: int = 1  # how many like messages it stands for (consecutive ones are grouped)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "label": self.label}
        if self.detail:
            out["detail"] = self.detail
        if self.count != 1:
            out["count"] = self.count
        if self.children:
            out["children"] = [c.to_dict() for c in self.children]
        return out


class Outline(Protocol):
    """What an API's ``session`` part builds the outline with (its ``Outline`` class)."""

    def message(self, direction: str, t: float | None, obj: Any, size: int) -> None: ...

    def control(self, record: Control) -> None: ...

    def nodes(self) -> list[Node]: ...


class PlainOutline:
    """The outline of a session whose API draws none: each message by its type, in order (runs
    of one type from one side as one line)."""

    def __init__(self) -> None:
        self._nodes: list[Node] = []

    def message(self, direction: str, t: float | None, obj: Any, size: int) -> None:
        kind = obj.get("type") if isinstance(obj, dict) else None
        label = kind if isinstance(kind, str) else f"{size:,} bytes"
        last = self._nodes[-1] if self._nodes else None
        if last is not None and last.kind == direction and last.label == label:
            last.count += 1
            return
        self._nodes.append(Node(direction, label, t=t))

    def control(self, record: Control) -> None:
        self._nodes.append(control_node(record))

    def nodes(self) -> list[Node]:
        return self._nodes


def control_node(record: Control) -> Node:
    """A control frame's line: a close (its code and reason, or a connection dropped)."""
    if record.kind == "close":
        if record.code is None:
            return Node("close", f"connection ended by the {record.direction}", "no close frame")
        return Node("close", f"close by the {record.direction}", f"{record.code} {record.reason}")
    return Node("ping", record.kind, f"from the {record.direction}", t=record.t)


@dataclass(slots=True)
class SessionLog:
    """Every message's type and direction, the closes and the outline of a session."""

    outline: Outline = field(default_factory=PlainOutline)
    events: list[dict[str, Any]] = field(default_factory=list)
    closes: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: {"client": 0, "server": 0})
    binary: int = 0

    def message(self, record: Message, obj: Any) -> None:
        size = len(record.data) if isinstance(record.data, bytes) else len(record.data)
        self.counts[record.direction] = self.counts.get(record.direction, 0) + 1
        kind = obj.get("type") if isinstance(obj, dict) else None
        entry: dict[str, Any] = {
            "type": kind if isinstance(kind, str) else None,
            "direction": record.direction,
        }
        if record.binary:
            self.binary += 1
            entry["binary"] = size
        self.events.append(entry)
        self.outline.message(record.direction, record.t, obj, size)

    def control(self, record: Control) -> None:
        if record.kind == "close":
            self.closes.append(
                {"direction": record.direction, "code": record.code, "reason": record.reason}
            )
        self.outline.control(record)

    def summary(self) -> dict[str, Any]:
        return {
            "events": self.events,
            "closes": self.closes,
            "messages": dict(self.counts),
        }


def session_outline(header: Any) -> Outline:
    """The outline of a session with this header: its API's (the ``session`` part's
    ``Outline``), else a plain list of its messages."""
    from urllib.parse import urlsplit

    from ..converters import detect_from_header
    from ..plugins import api_for_converter, part, served_api

    api = None
    name = detect_from_header(header)
    if name is not None:
        api = api_for_converter(name)
    if api is None and header.url:
        api = served_api(urlsplit(header.url).path, "websocket")
    module = part(api, "session") if api is not None else None
    made = getattr(module, "Outline", None)
    return made(header) if made is not None else PlainOutline()
