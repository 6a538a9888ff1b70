"""Mutations of Gemini ``streamGenerateContent`` streams (catalogue section F), and the API's
rules for the shared ones (the model's faults, an error inside the stream:
:mod:`streamtool.core.mutations` calls them)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ...model.quirk_ids import QuirkId
from ...mutations import ApiMutations
from ...mutations.stream import Event, Stream
from . import API

mutation = ApiMutations(API.id)


def _parts(obj: Any) -> list[dict[str, Any]]:
    if not isinstance(obj, dict):
        return []
    cands = obj.get("candidates")
    if not isinstance(cands, list) or not cands or not isinstance(cands[0], dict):
        return []
    content = cands[0].get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


@mutation(QuirkId.N_CANDIDATES)
def n_candidates(s: Stream) -> bool:
    changed = False
    for i, obj in s.data_events():
        if _parts(obj):
            first = obj["candidates"][0]
            second = json.loads(json.dumps(first))
            second["index"] = 1
            obj["candidates"] = [first, second]
            s.set_json(i, obj)
            changed = True
    return changed


def _partial(key: str, value: Any) -> list[dict[str, Any]]:
    path = f"$.{key}"
    if isinstance(value, str):
        half = len(value) // 2
        if half:
            return [
                {"jsonPath": path, "stringValue": value[:half], "willContinue": True},
                {"jsonPath": path, "stringValue": value[half:]},
            ]
        return [{"jsonPath": path, "stringValue": value}]
    if isinstance(value, bool):
        return [{"jsonPath": path, "boolValue": value}]
    if isinstance(value, int | float):
        return [{"jsonPath": path, "numberValue": value}]
    if value is None:
        return [{"jsonPath": path, "nullValue": None}]
    raise ValueError("nested")


@mutation(QuirkId.GEMINI_PARTIAL_ARGS, changes=("args_text",))
def partial_args(s: Stream) -> bool:
    """Each function call streamed as Vertex sends it with ``streamFunctionCallArguments``: an
    opening part with the name and ``willContinue``, one ``partialArgs`` entry per event (a
    string cut in two), and an empty functionCall that closes the call."""
    done = False
    for i, obj in reversed(s.data_events()):
        parts = _parts(obj)
        calls = [p for p in parts if isinstance(p.get("functionCall"), dict)]
        if len(calls) != 1 or len(parts) != 1:
            continue
        part_extra = {k: v for k, v in calls[0].items() if k != "functionCall"}
        fc = calls[0]["functionCall"]
        args = fc.get("args")
        if not isinstance(args, dict) or not args or "partialArgs" in fc:
            continue
        try:
            entries = [e for k, v in args.items() for e in _partial(k, v)]
        except ValueError:
            continue
        cand = obj["candidates"][0]
        finish = cand.pop("finishReason", None)
        usage = obj.pop("usageMetadata", None)
        head = {k: v for k, v in fc.items() if k != "args"}
        head["willContinue"] = True
        events = [head] + [{"partialArgs": [e], "willContinue": True} for e in entries] + [{}]
        for n, call in enumerate(reversed(events)):
            piece = json.loads(json.dumps(obj))
            piece_cand = piece["candidates"][0]
            piece_cand["content"]["parts"] = [{"functionCall": call}]
            if n == len(events) - 1:
                piece_cand["content"]["parts"][0].update(part_extra)
            if n == 0:
                if finish is not None:
                    piece_cand["finishReason"] = finish
                if usage is not None:
                    piece["usageMetadata"] = usage
            if n == len(events) - 1:
                s.set_json(i, piece)
            else:
                s.insert_json(i + 1, piece, like=i)
        done = True
    return done


@mutation(QuirkId.GEMINI_JSON_ARRAY, stage=1, reframes=True)
def json_array(s: Stream) -> bool:
    """The stream framed as one JSON array (``streamGenerateContent`` without ``alt=sse``): the
    same objects, ``[`` first, ``,`` and a CRLF between them, ``]`` last."""
    if s.framing != "sse":
        return False
    datas = [(ev, ev.data) for ev in s.events if ev.json() is not None]
    if not datas:
        return False
    events: list[Event] = []
    for n, (_ev, data) in enumerate(datas):
        assert data is not None
        raw = (b"[" if n == 0 else b",\r\n") + data.encode("utf-8")
        if n == len(datas) - 1:
            raw += b"]"
        events.append(Event(raw))
    # the reads: each object ends where its event ended
    for new, (ev, _) in zip(events, datas, strict=True):
        if ev.cuts:
            new.cuts = [(len(new.raw), ev.cuts[-1][1])]
    s.events = events
    s.framing = "json"
    request = s.header.request
    url = request.get("url")
    if isinstance(url, str):
        request["url"] = (
            url.replace("?alt=sse&", "?").replace("?alt=sse", "").replace("&alt=sse", "")
        )
    headers = s.header.response.get("headers")
    if isinstance(headers, dict):
        for k in list(headers):
            if k.lower() == "content-type":
                headers[k] = "application/json; charset=UTF-8"
    return True


# -- the API's rules for the shared mutations (streamtool.core.mutations.faults) ---------------
ERROR_EVENT = {
    "error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}
}


def tool_not_offered(s: Stream, offered: frozenset[str], other: Callable[[str], str]) -> bool:
    """The first function call of an offered tool renamed ``other(name)``."""
    for i, obj in s.data_events():
        for part in _parts(obj):
            fc = part.get("functionCall")
            if isinstance(fc, dict) and fc.get("name") in offered:
                fc["name"] = other(fc["name"])
                s.set_json(i, obj)
                return True
    return False
