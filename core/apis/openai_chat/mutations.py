"""Mutations of Chat Completions streams (catalogue sections A-D, H), and the API's rules for
the shared ones (the model's faults, an error inside the stream: :mod:`streamtool.core.mutations`
calls them)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ...model.quirk_ids import QuirkId
from ...mutations import ApiMutations
from ...mutations.faults import mid_string
from ...mutations.stream import Event, Stream
from . import API

mutation = ApiMutations(API.id)


def _choice(obj: Any) -> dict[str, Any] | None:
    if not isinstance(obj, dict):
        return None
    choices = obj.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return choices[0]
    return None


def _delta(obj: Any) -> dict[str, Any] | None:
    choice = _choice(obj)
    delta = choice.get("delta") if choice else None
    return delta if isinstance(delta, dict) else None


def _entries(obj: Any) -> list[dict[str, Any]]:
    delta = _delta(obj)
    tcs = delta.get("tool_calls") if delta else None
    return [tc for tc in tcs if isinstance(tc, dict)] if isinstance(tcs, list) else []


def _chunks(s: Stream) -> Iterator[tuple[int, Any]]:
    for i, obj in s.data_events():
        if isinstance(obj, dict) and "choices" in obj:
            yield i, obj


@dataclass
class _Call:
    id: str
    name: str
    index: Any
    refs: list[tuple[int, int]] = field(default_factory=list)  # (event, entry)
    fragments: list[str] = field(default_factory=list)

    @property
    def arguments(self) -> str:
        return "".join(self.fragments)


def _calls(s: Stream) -> list[_Call]:
    """The tool calls of a stream, each with the entries that carry it."""
    calls: list[_Call] = []
    by_index: dict[Any, _Call] = {}
    for i, obj in _chunks(s):
        for j, tc in enumerate(_entries(obj)):
            fn: dict[str, Any] = tc["function"] if isinstance(tc.get("function"), dict) else {}
            idx = tc.get("index")
            if tc.get("id"):
                call = _Call(str(tc["id"]), str(fn.get("name") or ""), idx)
                calls.append(call)
                by_index[idx] = call
            else:
                found = by_index.get(idx) or (calls[-1] if calls else None)
                if found is None:
                    continue
                call = found
            call.refs.append((i, j))
            args = fn.get("arguments")
            call.fragments.append(args if isinstance(args, str) else "")
    return calls


def _edit_entries(s: Stream, edits: dict[tuple[int, int], Any]) -> None:
    """Apply ``edits``: (event, entry) -> a function changing the entry in place (or returning
    False to drop it)."""
    by_event: dict[int, list[tuple[int, Any]]] = {}
    for (i, j), fn in edits.items():
        by_event.setdefault(i, []).append((j, fn))
    for i, fns in sorted(by_event.items(), reverse=True):
        obj = s.events[i].json()
        delta = _delta(obj)
        assert delta is not None
        entries = delta["tool_calls"]
        keep = []
        for j, entry in enumerate(entries):
            fn = dict(fns).get(j)
            if fn is None or fn(entry) is not False:
                keep.append(entry)
        if keep:
            delta["tool_calls"] = keep
            s.set_json(i, obj)
        else:
            del delta["tool_calls"]
            if _empty_chunk(obj):
                s.remove(i)
            else:
                s.set_json(i, obj)


def _empty_chunk(obj: dict[str, Any]) -> bool:
    choice = _choice(obj)
    if choice is None or choice.get("finish_reason") is not None or obj.get("usage"):
        return False
    delta = choice.get("delta") or {}
    return not any(v not in (None, "", []) for k, v in delta.items() if k != "role")


def _fn(entry: dict[str, Any]) -> dict[str, Any]:
    fn = entry.get("function")
    if not isinstance(fn, dict):
        fn = entry["function"] = {}
    return fn


# -- A. SSE ------------------------------------------------------------------------------------
def _done_at(s: Stream) -> int | None:
    for i, ev in enumerate(s.events):
        if (ev.data or "").strip() == "[DONE]":
            return i
    return None


@mutation(QuirkId.EOF_NO_DONE)
def eof_no_done(s: Stream) -> bool:
    at = _done_at(s)
    if at is None:
        return False
    s.remove(at)
    return True


@mutation(QuirkId.DATA_AFTER_DONE)
def data_after_done(s: Stream) -> bool:
    at = _done_at(s)
    if at is None or at == 0 or s.events[at - 1].json() is None:
        return False
    moved = s.events[at - 1].raw
    s.remove(at - 1)
    s.insert(at, moved)
    return True


@mutation(QuirkId.SSE_SINGLE_NEWLINE_SEPARATOR)
def single_newline_separator(s: Stream) -> bool:
    """Pairs of consecutive data events sent with one line end between them, not a blank line."""
    changed = False
    i = 0
    while i + 1 < len(s.events):
        a, b = s.events[i], s.events[i + 1]
        lines_a = a.lines()
        if (
            a.json() is not None
            and b.json() is not None
            and a.name is None
            and b.name is None
            and len(lines_a) == 2
            and lines_a[-1][0] == b""
            and len([1 for body, _ in b.lines() if body]) == 1
        ):
            line_len = len(lines_a[0][0]) + len(lines_a[0][1])
            joined = a.raw[:line_len] + b.raw
            cuts: dict[int, float | None] = {}
            for at, t in a.cuts:
                cuts[min(at, line_len)] = t
            for at, t in b.cuts:
                cuts[line_len + at] = t
            s.events[i] = Event(joined, sorted(cuts.items()))
            del s.events[i + 1]
            changed = True
            i += 2
        else:
            i += 1
    return changed


# -- B. tool-call deltas ---------------------------------------------------------------------
@mutation(QuirkId.OAI_TOOL_INDEX_MISSING)
def tool_index_missing(s: Stream) -> bool:
    calls = _calls(s)
    if not calls:
        return False
    _edit_entries(s, {ref: lambda e: e.pop("index", None) for c in calls for ref in c.refs})
    return True


@mutation(QuirkId.OAI_PARALLEL_SAME_INDEX)
def parallel_same_index(s: Stream) -> bool:
    calls = _calls(s)
    if len({c.index for c in calls}) < 2:
        return False

    def zero(entry: dict[str, Any]) -> None:
        entry["index"] = 0

    _edit_entries(s, {ref: zero for c in calls for ref in c.refs})
    return True


def _every_chunk(s: Stream, key: str) -> bool:
    edits = {}
    for c in _calls(s):
        for ref in c.refs[1:]:
            if key == "id":
                edits[ref] = lambda e, v=c.id: e.__setitem__("id", v)
            elif c.name:
                edits[ref] = lambda e, v=c.name: _fn(e).__setitem__("name", v)
    if not edits:
        return False
    _edit_entries(s, edits)
    return True


@mutation(QuirkId.OAI_ID_EVERY_CHUNK)
def id_every_chunk(s: Stream) -> bool:
    return _every_chunk(s, "id")


@mutation(QuirkId.OAI_NAME_EVERY_CHUNK)
def name_every_chunk(s: Stream) -> bool:
    return _every_chunk(s, "name")


def _object_args(c: _Call) -> bool:
    return c.arguments.lstrip().startswith("{")


@mutation(QuirkId.OAI_ARGS_CUMULATIVE)
def args_cumulative(s: Stream) -> bool:
    edits = {}
    for c in _calls(s):
        if not _object_args(c) or sum(1 for f in c.fragments if f) < 2:
            continue
        so_far = ""
        for ref, frag in zip(c.refs, c.fragments, strict=True):
            so_far += frag
            if frag:
                edits[ref] = lambda e, v=so_far: _fn(e).__setitem__("arguments", v)
    if not edits:
        return False
    _edit_entries(s, edits)
    return True


@mutation(QuirkId.OAI_ARGS_PLACEHOLDER_THEN_FULL)
def args_placeholder_then_full(s: Stream) -> bool:
    edits = {}
    for c in _calls(s):
        first = next((k for k, f in enumerate(c.fragments) if f), None)
        if first is None or not c.fragments[first].lstrip().startswith("{") or first == 0:
            continue
        edits[c.refs[0]] = lambda e: _fn(e).__setitem__("arguments", "{}")
    if not edits:
        return False
    _edit_entries(s, edits)
    return True


@mutation(QuirkId.OAI_ARGS_DELTA_PLUS_SUMMARY)
def args_delta_plus_summary(s: Stream) -> bool:
    done = False
    for c in reversed(_calls(s)):
        if not _object_args(c):
            continue
        i, j = c.refs[-1]
        obj = s.events[i].json()
        entry = _entries(obj)[j]
        index = entry.get("index", c.index)
        delta = _delta(obj)
        assert delta is not None
        for k in list(delta):
            if k != "tool_calls":
                del delta[k]
        delta["tool_calls"] = [{"index": index, "function": {"arguments": c.arguments}}]
        choice = _choice(obj)
        assert choice is not None
        choice["finish_reason"] = None
        obj.pop("usage", None)
        s.insert_json(i + 1, obj, like=i)
        done = True
    return done


@mutation(QuirkId.OAI_ARGS_OBJECT, changes=("args_text",))
def args_object(s: Stream) -> bool:
    import json

    edits: dict[tuple[int, int], Any] = {}
    for c in _calls(s):
        try:
            value = json.loads(c.arguments)
        except ValueError:
            continue
        if not isinstance(value, dict):
            continue
        edits[c.refs[0]] = lambda e, v=value: _fn(e).__setitem__("arguments", v)
        for ref in c.refs[1:]:
            edits[ref] = lambda e: False
    if not edits:
        return False
    _edit_entries(s, edits)
    return True


@mutation(QuirkId.OAI_EMPTY_ID, changes=("ids",))
def empty_id(s: Stream) -> bool:
    calls = _calls(s)
    if not calls or len({c.index for c in calls}) < len(calls):
        return False  # calls sharing an index are told apart by their ids alone
    _edit_entries(s, {c.refs[0]: lambda e: e.__setitem__("id", "") for c in calls})
    return True


@mutation(QuirkId.OAI_TRAILING_EMPTY_TOOL_STUB)
def trailing_empty_tool_stub(s: Stream) -> bool:
    """After the finish chunk, one more chunk with an empty tool-call stub for the last call."""
    calls = _calls(s)
    finish = _finish_event(s)
    if not calls or finish is None:
        return False
    i, obj = finish
    index = calls[-1].index if isinstance(calls[-1].index, int) else 0
    choice = _choice(obj)
    assert choice is not None
    choice["finish_reason"] = None
    choice["delta"] = {"tool_calls": [{"index": index, "function": {"arguments": ""}}]}
    obj.pop("usage", None)
    s.insert_json(i + 1, obj, like=i)
    return True


@mutation(QuirkId.LEGACY_FUNCTION_CALL, changes=("ids",))
def legacy_function_call(s: Stream) -> bool:
    calls = _calls(s)
    if len(calls) != 1:
        return False
    c = calls[0]

    def legacy(i: int, j: int) -> None:
        obj = s.events[i].json()
        delta = _delta(obj)
        assert delta is not None
        fn = dict(delta.pop("tool_calls")[j].get("function") or {})
        delta["function_call"] = fn
        s.set_json(i, obj)

    for i, j in c.refs:
        legacy(i, j)
    return True


# -- C. finish, usage, first and last chunks -------------------------------------------------
def _finish_event(s: Stream) -> tuple[int, Any] | None:
    for i, obj in _chunks(s):
        choice = _choice(obj)
        if choice is not None and choice.get("finish_reason"):
            return i, obj
    return None


@mutation(QuirkId.FINISH_STOP_WITH_TOOLS, changes=("finish",))
def finish_stop_with_tools(s: Stream) -> bool:
    found = _finish_event(s)
    if found is None or not _calls(s):
        return False
    i, obj = found
    choice = _choice(obj)
    assert choice is not None
    if choice["finish_reason"] == "stop":
        return False
    choice["finish_reason"] = "stop"
    s.set_json(i, obj)
    return True


@mutation(QuirkId.FINISH_EMPTY_STRING)
def finish_empty_string(s: Stream) -> bool:
    changed = False
    for i, obj in list(_chunks(s)):
        choice = _choice(obj)
        if choice is not None and "finish_reason" in choice and choice["finish_reason"] is None:
            choice["finish_reason"] = ""
            s.set_json(i, obj)
            changed = True
    return changed


@mutation(QuirkId.FINISH_DOUBLE)
def finish_double(s: Stream) -> bool:
    found = _finish_event(s)
    if found is None or _choice(found[1]).get("finish_reason") == "error":  # type: ignore[union-attr]
        return False
    i, obj = found
    choice = _choice(obj)
    assert choice is not None
    choice["finish_reason"] = "length" if choice["finish_reason"] != "length" else "stop"
    choice["delta"] = {}
    obj.pop("usage", None)
    s.insert_json(i + 1, obj, like=i)
    return True


@mutation(QuirkId.AZURE_EMPTY_FIRST_CHUNK)
def azure_empty_first_chunk(s: Stream) -> bool:
    first = next(iter(_chunks(s)), None)
    if first is None:
        return False
    filtered = {
        "choices": [],
        "created": 0,
        "id": "",
        "model": "",
        "object": "",
        "prompt_filter_results": [
            {
                "prompt_index": 0,
                "content_filter_results": {
                    "hate": {"filtered": False, "severity": "safe"},
                    "self_harm": {"filtered": False, "severity": "safe"},
                    "sexual": {"filtered": False, "severity": "safe"},
                    "violence": {"filtered": False, "severity": "safe"},
                },
            }
        ],
    }
    s.insert_json(first[0], filtered, like=first[0])
    return True


@mutation(QuirkId.USAGE_ONLY_CHUNK)
def usage_only_chunk(s: Stream) -> bool:
    for i, obj in _chunks(s):
        if obj.get("usage") and _choice(obj) is not None:
            usage = obj["usage"]
            obj["usage"] = None
            s.set_json(i, obj)
            tail = {k: v for k, v in obj.items() if k not in ("choices", "usage")}
            tail["choices"] = []
            tail["usage"] = usage
            s.insert_json(i + 1, tail, like=i)
            return True
    return False


@mutation(QuirkId.USAGE_CHUNK_NO_CHOICES_KEY)
def usage_chunk_no_choices_key(s: Stream) -> bool:
    changed = False
    for i, obj in list(_chunks(s)):
        if obj.get("usage") and obj.get("choices") == []:
            del obj["choices"]
            s.set_json(i, obj)
            changed = True
    return changed


@mutation(QuirkId.N_CHOICES)
def n_choices(s: Stream) -> bool:
    changed = False
    for i, obj in list(_chunks(s)):
        choice = _choice(obj)
        if choice is None:
            continue
        other = dict(choice)
        other["index"] = 1
        obj["choices"] = [choice, other]
        s.set_json(i, obj)
        changed = True
    return changed


# -- D. reasoning ----------------------------------------------------------------------------
_REASONING = ("reasoning_content", "reasoning", "reasoning_details")


def _reasoning_of(delta: dict[str, Any]) -> tuple[str, str] | None:
    for key in _REASONING:
        value = delta.get(key)
        if key == "reasoning_details" and isinstance(value, list):
            text = "".join(str(d.get("text") or "") for d in value if isinstance(d, dict))
            if text:
                return key, text
        elif isinstance(value, str) and value:
            return key, value
    return None


def _reasoning_to(s: Stream, target: str) -> bool:
    edits = []
    for i, obj in _chunks(s):
        delta = _delta(obj)
        found = _reasoning_of(delta) if delta else None
        if found is None:
            continue
        if found[0] == target:
            return False  # already sent that way
        edits.append((i, obj, found[1]))
    for i, obj, text in edits:
        delta = _delta(obj)
        assert delta is not None
        for key in _REASONING:
            delta.pop(key, None)
        if target == "reasoning_details":
            delta[target] = [{"type": "reasoning.text", "text": text, "format": "unknown"}]
        else:
            delta[target] = text
        s.set_json(i, obj)
    return bool(edits)


@mutation(QuirkId.REASONING_FIELD_REASONING_CONTENT)
def reasoning_field_reasoning_content(s: Stream) -> bool:
    return _reasoning_to(s, "reasoning_content")


@mutation(QuirkId.REASONING_FIELD_REASONING)
def reasoning_field_reasoning(s: Stream) -> bool:
    return _reasoning_to(s, "reasoning")


@mutation(QuirkId.REASONING_FIELD_REASONING_DETAILS)
def reasoning_field_reasoning_details(s: Stream) -> bool:
    return _reasoning_to(s, "reasoning_details")


@mutation(QuirkId.THINK_TAGS_IN_CONTENT, changes=("all",))
def think_tags_in_content(s: Stream) -> bool:
    """The reasoning moved into the content, between ``<think>`` tags (as models served without a
    reasoning parser send it): the reasoning becomes part of the text."""
    chunks = [(i, obj) for i, obj in _chunks(s) if _delta(obj) is not None]
    reasoning = [(i, obj) for i, obj in chunks if _reasoning_of(_delta(obj) or {})]
    if not reasoning:
        return False
    first_text = next((i for i, obj in chunks if (_delta(obj) or {}).get("content")), None)
    if first_text is not None and first_text < reasoning[-1][0]:
        return False
    last = reasoning[-1][0]
    for n, (i, obj) in enumerate(reasoning):
        delta = _delta(obj)
        assert delta is not None
        found = _reasoning_of(delta)
        assert found is not None
        for key in _REASONING:
            delta.pop(key, None)
        text = ("<think>" if n == 0 else "") + found[1] + ("</think>\n\n" if i == last else "")
        delta["content"] = text
        s.set_json(i, obj)
    return True


# -- H. Mistral, Kimi ------------------------------------------------------------------------
@mutation(QuirkId.MISTRAL_CONTENT_ARRAY)
def mistral_content_array(s: Stream) -> bool:
    changed = False
    for i, obj in list(_chunks(s)):
        delta = _delta(obj)
        if delta and isinstance(delta.get("content"), str) and delta["content"]:
            delta["content"] = [{"type": "text", "text": delta["content"]}]
            s.set_json(i, obj)
            changed = True
    return changed


@mutation(QuirkId.KIMI_TOKENS_IN_CONTENT, changes=("all",))
def kimi_tokens_in_content(s: Stream) -> bool:
    """The tool calls written as Kimi K2's special tokens inside ``content`` (as a server without
    the Kimi tool parser sends them), their arguments streamed as the fragments were."""
    calls = _calls(s)
    if not calls:
        return False
    n_calls = len(calls)
    for k, c in enumerate(calls):
        name = c.name or "tool"
        for m, ((i, j), frag) in enumerate(zip(c.refs, c.fragments, strict=True)):
            obj = s.events[i].json()
            delta = _delta(obj)
            assert delta is not None
            text = ""
            if m == 0:
                if k == 0:
                    text += "<|tool_calls_section_begin|>"
                text += f"<|tool_call_begin|>functions.{name}:{k}<|tool_call_argument_begin|>"
            text += frag
            if m == len(c.refs) - 1:
                text += "<|tool_call_end|>"
                if k == n_calls - 1:
                    text += "<|tool_calls_section_end|>"
            entries = delta.get("tool_calls") or []
            del entries[j]
            if entries:
                delta["tool_calls"] = entries
            else:
                delta.pop("tool_calls", None)
            delta["content"] = (delta.get("content") or "") + text
            s.set_json(i, obj)
    # one event may have carried two entries: its content now holds both, in order
    return True


# -- the API's rules for the shared mutations (streamtool.core.mutations.faults) ---------------
# a recording that reports one of these keeps its events: its one tool call is a wrapper whose
# arguments hold the real calls, so quirks of the calls' deltas are not generated on it (only
# the framing and the reads are)
EVENTS_KEPT_WHEN = frozenset({QuirkId.OAI_MULTI_TOOL_USE_PARALLEL})

ERROR_EVENT = {"error": {"message": "Upstream provider error", "code": 502}}


def _truncate(s: Stream, c: _Call, keep: int) -> None:
    """Keep the first ``keep`` characters of a call's arguments."""
    edits: dict[tuple[int, int], Any] = {}
    so_far = 0
    for ref, frag in zip(c.refs, c.fragments, strict=True):
        if not frag:
            continue
        if so_far >= keep:
            edits[ref] = lambda e: _fn(e).__setitem__("arguments", "")
        elif so_far + len(frag) > keep:
            edits[ref] = lambda e, v=frag[: keep - so_far]: _fn(e).__setitem__("arguments", v)
        so_far += len(frag)
    _edit_entries(s, edits)


def args_invalid_json(s: Stream) -> bool:
    """The last call whose arguments hold a string value, cut in the middle of it."""
    for c in reversed(_calls(s)):
        cut = mid_string(c.arguments)
        if cut is not None:
            _truncate(s, c, cut)
            return True
    return False


def args_empty(s: Stream) -> bool:
    """The last call's arguments made an empty string."""
    calls = _calls(s)
    if not calls or not calls[-1].arguments:
        return False
    _truncate(s, calls[-1], 0)
    return True


def tool_not_offered(s: Stream, offered: frozenset[str], other: Callable[[str], str]) -> bool:
    """The first call of an offered tool renamed ``other(name)``."""
    calls = [c for c in _calls(s) if c.name in offered]
    if not calls:
        return False
    new = other(calls[0].name)

    def rename(e: dict[str, Any]) -> None:
        if _fn(e).get("name"):
            _fn(e)["name"] = new

    _edit_entries(s, {ref: rename for ref in calls[0].refs})
    return True


def stream_cut_mid_call(s: Stream) -> int | None:
    """The event after which the stream ends inside the last call's arguments."""
    for c in reversed(_calls(s)):
        frags = [ref for ref, f in zip(c.refs, c.fragments, strict=True) if f]
        if len(frags) >= 2:
            return frags[len(frags) // 2 - 1][0]
    return None
