"""A recording's meaning re-emitted in another wire API (``replay --emit``, ``serve
--translate``, tapes built from scripts): replay it into a reply, emit the reply, write the
result as a recording."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from ..engine.replay import ReplayEngine
from ..model.records import Chunk, End, Header
from ..outputs.emit import Emitted, Reply, ReplyBuilder, api_id, emitter
from ..plugins import WireApi, find_api, part
from .replay_file import replay_file


def reply_from_file(
    path: str | os.PathLike[str], *, converter: str = "auto"
) -> tuple[Reply, ReplayEngine]:
    """The meaning of a recording (and the finished replay it came from)."""
    builder = ReplyBuilder()
    engine = replay_file(path, converter=converter, on_items=builder.feed, segments=True)
    return builder.build(engine), engine


def emit_file(path: str | os.PathLike[str], api: str, *, converter: str = "auto") -> Emitted:
    reply, _ = reply_from_file(path, converter=converter)
    return emitter(api)(reply)


def wire_api(name: str) -> WireApi:
    found = find_api(api_id(name) or name)
    if found is None:
        raise KeyError(name)
    return found


def recording_of(
    emitted: Emitted, api: str, *, model: str = "", request_body: Any = None
) -> tuple[Header, list[Chunk], End]:
    """An emitted response as a recording: a header naming the API (its official URL), one
    chunk per read at its time, and the end record."""
    row = wire_api(api)
    url = row.base_url + row.path.replace("{model}", model or "model")
    request = part(row, "request")  # the query its requests carry (Gemini's alt=sse)
    query = getattr(request, "QUERY", ()) if request is not None else ()
    if query:
        url += "?" + urlencode(query)
    body = request_body if request_body is not None else {"model": model, "stream": True}
    header = Header(
        provider=row.provider,
        api=row.name,
        recorded_at=datetime.fromtimestamp(0, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        request={
            "method": "POST",
            "url": url,
            "headers": {"content-type": "application/json"},
            "body": body,
        },
        response={"status": emitted.status, "headers": {"content-type": emitted.content_type}},
    )
    chunks = [Chunk(round(t, 6), text) for t, text in emitted.reads]
    end = End(round(emitted.t_end, 6), "complete" if emitted.complete else "interrupted")
    return header, chunks, end
