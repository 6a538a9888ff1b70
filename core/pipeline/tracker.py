"""One tool-call tracker shared by every converter.

Converters parse their wire format and say *which* provider key an update belongs to (an OpenAI
``index`` or ``id``, a Responses ``item_id``, an Anthropic block index, a Gemini part position);
the tracker owns everything else: canonical indices in order of appearance, the call id (the
provider's, or a deterministic one when the provider gave none), set-once ``id`` / ``name`` with
repeats ignored, and the argument merge policy for providers that resend arguments:

- a fragment that starts with everything received so far (and is longer) means the provider sends
  cumulative arguments: only the new suffix is emitted, and the call stays in that mode;
- a fragment equal to everything received so far is a repeat (a "summary" resend): dropped;
- a lone ``{}`` placeholder followed by a fragment that opens a JSON object is replaced by it.

The argument text of a call is kept, compactly, until the call is complete and its reader (the
handler, through ``ToolCallDelta.arguments_source``) has taken it; a converter that compares a
finished call's text with a later restatement (Responses) makes the tracker with
``keep_completed=True``.

Every repair is reported as a quirk; bytes are never fuzzily de-duplicated. Wire APIs whose
fragments are defined to be appended as they are (Anthropic ``input_json_delta``, Responses argument
deltas) pass ``raw=True`` / use :meth:`ToolCallTracker.append_exact`, which bypass that policy.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from ..model import ToolCallDelta
from ..model.quirk_ids import QuirkId
from ..model.textbuf import SEAL, TextBuffer

# the fragments of a released call: none, and none to come (a complete call takes no text);
# one list for all of them rather than one each
_RELEASED: list[str] = []


class TrackedCall:
    __slots__ = (
        "index",
        "call_id",
        "name",
        "metadata",
        "synthetic_id",
        "announced",
        "complete",
        "cumulative",
        "held",
        "keep_completed",
        "_text",
        "_parts",
        "_len",
        "_pending",
        "fragments",
    )

    def __init__(self, index: int, keep_completed: bool = True) -> None:
        self.index = index
        self.keep_completed = keep_completed  # the text stays after release_arguments()
        self.call_id: str | None = None
        self.name: str | None = None
        self.metadata: dict[str, Any] | None = None
        self.synthetic_id = False
        self.announced = False  # the first delta (with id and name) has been emitted
        self.complete = False
        self.cumulative = False
        self.held: str | None = None  # a "{}" placeholder not yet emitted
        # argument text accepted so far, kept compact (a long call's fragments would otherwise
        # cost two to three times their text); None once released. ``_parts`` is its tail, the
        # fragments since its last block, appended to directly on the hot path
        self._text: TextBuffer | None = TextBuffer()
        self._parts: list[str] = self._text.tail
        self._len = 0
        # accepted but not yet emitted (call not announced); None while there is none
        self._pending: list[str] | None = None
        self.fragments = 0  # argument fragments the provider sent (how the arguments arrived)

    @property
    def arguments(self) -> str:
        """The argument text accepted so far (joined once, then kept as one block)."""
        if self._text is None:
            raise RuntimeError(f"the arguments of call {self.call_id} were released")
        return self._text.text()

    def argument_blocks(self) -> list[str]:
        """The argument text accepted so far as the blocks it is kept in (joined, they are
        :attr:`arguments`), for a reader that does not need it as one string."""
        if self._text is None:
            raise RuntimeError(f"the arguments of call {self.call_id} were released")
        return self._text.blocks()

    def release_arguments(self) -> None:
        """The handler has taken the text of the complete call: drop it, unless it is kept."""
        if self.complete and not self.keep_completed:
            self._text = None
            self._parts = _RELEASED

    def _seal(self) -> None:
        """Join the fragments since the last block into one."""
        assert self._text is not None  # a released call is complete: it takes no more text
        self._text.seal()


NoteFn = Callable[[QuirkId, str], None]


class ToolCallTracker:
    """Maps provider keys to canonical tool calls and turns updates into ``ToolCallDelta``s."""

    def __init__(
        self, note: NoteFn | None = None, id_prefix: str = "call_", keep_completed: bool = False
    ) -> None:
        self._note = note or (lambda _id, _detail: None)
        self._id_prefix = id_prefix
        self._keep_completed = keep_completed
        self.calls: list[TrackedCall] = []
        self._by_key: dict[Hashable, TrackedCall] = {}
        self._ids: set[str] = set()
        # the id a call's provider gave, by the call's index, where the tracker changed it (a
        # reused id: ``<id>#2``); kept here, not on every call, as it is rare
        self.given: dict[int, str] = {}
        self._last: TrackedCall | None = None  # the call that took the last fragment

    # -- lookup ----------------------------------------------------------------------------
    def find(self, key: Hashable) -> TrackedCall | None:
        return self._by_key.get(key)

    def open(self, key: Hashable | None = None) -> TrackedCall:
        """A new call; ``key`` (if given) now refers to it."""
        call = TrackedCall(len(self.calls), self._keep_completed)
        self.calls.append(call)
        if key is not None:
            self._by_key[key] = call
        return call

    def alias(self, key: Hashable, call: TrackedCall) -> None:
        """Let another provider key (``item_id`` next to ``call_id``...) refer to ``call``."""
        self._by_key[key] = call

    def open_calls(self) -> list[TrackedCall]:
        return [c for c in self.calls if not c.complete]

    # -- updates ---------------------------------------------------------------------------
    def update(
        self,
        call: TrackedCall,
        *,
        call_id: str | None = None,
        name: str | None = None,
        arguments: str | None = None,
        metadata: dict[str, Any] | None = None,
        complete: bool = False,
        announce: bool = False,
        raw: bool = False,
    ) -> ToolCallDelta | None:
        """Merge an update into ``call``; the delta to emit, if any.

        A call is announced (its first delta emitted) once its name is known, or when it
        completes, or when ``announce`` forces it; argument text that arrives earlier is held.
        ``raw`` appends ``arguments`` exactly as given (no merge policy).
        """
        if call.complete:
            if arguments:
                self._note(QuirkId.ARGS_AFTER_COMPLETE, f"arguments for closed call {call.call_id}")
            return None
        if call_id:
            if call.call_id is None or (call.synthetic_id and not call.announced):
                call.call_id = call_id
                call.synthetic_id = False
            elif call_id != call.call_id and not call.synthetic_id:
                self._note(
                    QuirkId.TOOL_ID_CHANGED, f"call {call.call_id} later said id {call_id!r}"
                )
        if name:
            if call.name is None:
                call.name = name
            elif name != call.name:
                self._note(
                    QuirkId.TOOL_NAME_CHANGED, f"call {call.call_id}: {call.name!r} then {name!r}"
                )
        if arguments:
            call.fragments += 1
        if metadata:
            if call.metadata is None:
                call.metadata = {}
            for k, v in metadata.items():
                call.metadata.setdefault(k, v)
        if not arguments:
            emit = ""
        elif raw:
            self._accept(call, arguments)
            emit = arguments
        else:
            emit = self._merge_arguments(call, arguments)
        first = False
        if not call.announced and (call.name is not None or complete or announce):
            self._announce(call)
            first = True
            if call._pending:
                emit = "".join(call._pending) + emit
                call._pending = None
        elif not call.announced and emit:
            if call._pending is None:
                call._pending = []
            call._pending.append(emit)
            emit = ""
        if complete:
            call.complete = True
            if call.held is not None:
                emit += call.held
                self._accept(call, call.held)
                call.held = None
        if not (first or emit or complete):
            return None
        return ToolCallDelta(
            index=call.index,
            call_id=call.call_id if first else None,
            name=call.name if first else None,
            arguments_delta=emit or None,
            is_complete=complete,
            metadata=(call.metadata if first else None),
            arguments_source=call if first else None,
        )

    def append(self, call: TrackedCall, fragment: str) -> ToolCallDelta | None:
        """Argument text for an announced, open call (the hot path of long streamed calls)."""
        if not fragment:
            return None
        if call.cumulative or call.held is not None or len(fragment) >= call._len:
            return self.update(call, arguments=fragment)
        return self._append_plain(call, fragment)

    def append_exact(self, call: TrackedCall, text: str) -> ToolCallDelta | None:
        """Append an argument fragment exactly as it is, without the merge policy (for wire APIs
        whose fragments are defined as appends: Anthropic, Responses, Gemini)."""
        if call.announced and not call.complete and text:
            return self._append_plain(call, text)
        return self.update(call, arguments=text, raw=True)

    def appends_plainly(self, call: TrackedCall, fragment: str) -> bool:
        """Whether :meth:`append` would take ``fragment`` as it is: an announced, open call that
        no merge rule concerns (not cumulative, no placeholder held, a fragment shorter than the
        arguments so far, so neither a resend nor a cumulative copy)."""
        return (
            call.announced
            and not call.complete
            and not call.cumulative
            and call.held is None
            and 0 < len(fragment) < call._len
        )

    def take(self, call: TrackedCall, fragment: str) -> None:
        """What :meth:`append_exact` (or :meth:`append`, when :meth:`appends_plainly`) does with
        a fragment for an announced, open call, without the delta: a converter's batch path
        emits a run of such fragments as one delta (``Converter.feed_many``)."""
        call.fragments += 1
        self._accept(call, fragment)

    def take_run(self, call: TrackedCall, fragments: list[str], text: str) -> None:
        """:meth:`take` of each of ``fragments`` in turn (``text``: them joined), at once: a
        converter's batch path takes a run of fragments when the run ends (``Converter.feed_many``
        with ``defers_takes``). The text is kept in the same blocks as by the takes one by one."""
        if len(fragments) == 1:
            self.take(call, text)
            return
        call.fragments += len(fragments)
        self._accept(call, fragments[0])  # another call's turn: what the first take does
        parts = call._parts
        rest = fragments[1:]
        room = SEAL - len(parts)
        while len(rest) >= room:  # a block every SEAL fragments, as _accept seals them
            parts.extend(rest[:room])
            call._seal()
            rest = rest[room:]
            room = SEAL
        parts.extend(rest)
        call._len += len(text) - len(fragments[0])

    def _append_plain(self, call: TrackedCall, text: str) -> ToolCallDelta:
        """The hot path: an announced, open call takes ``text`` as it is."""
        call.fragments += 1
        self._accept(call, text)
        return ToolCallDelta(call.index, None, None, text)

    def complete(self, call: TrackedCall) -> ToolCallDelta | None:
        return self.update(call, complete=True)

    def complete_all(self) -> list[ToolCallDelta]:
        out = []
        for call in self.calls:
            if not call.complete:
                delta = self.update(call, complete=True)
                if delta is not None:
                    out.append(delta)
        return out

    def flush_unannounced(self) -> list[ToolCallDelta]:
        """Announce every call still waiting for a name (end of stream); keep them open."""
        out = []
        for call in self.calls:
            if not call.announced and not call.complete:
                delta = self.update(call, announce=True)
                if delta is not None:
                    out.append(delta)
        return out

    # -- internals -------------------------------------------------------------------------
    def _announce(self, call: TrackedCall) -> None:
        call.announced = True
        if not call.call_id:
            call.call_id = f"{self._id_prefix}{call.index}"
            call.synthetic_id = True
        if call.call_id in self._ids:
            base, n = call.call_id, 2
            while f"{base}#{n}" in self._ids:
                n += 1
            self._note(
                QuirkId.TOOL_ID_REUSED, f"id {base!r} used by two calls; second is {base}#{n}"
            )
            self.given[call.index] = base
            call.call_id = f"{base}#{n}"
        self._ids.add(call.call_id)

    def _accept(self, call: TrackedCall, text: str) -> None:
        if call is not self._last:
            # another call's turn: the last one's fragments are joined (calls mostly stream one
            # after the other, so thousands of short calls do not each keep loose fragments)
            last = self._last
            if last is not None and len(last._parts) > 1:
                last._seal()
            self._last = call
        parts = call._parts
        parts.append(text)
        call._len += len(text)
        if len(parts) >= SEAL:
            call._seal()

    def _merge_arguments(self, call: TrackedCall, frag: str) -> str:
        """Apply the merge policy; returns the text to append to the call's arguments."""
        if call.cumulative:
            buf = call.arguments
            if frag.startswith(buf):
                suffix = frag[len(buf) :]
                if suffix:
                    self._accept(call, suffix)
                return suffix
            if buf.startswith(frag):
                return ""
            call.cumulative = False  # not cumulative after all: plain append from here on
            self._accept(call, frag)
            return frag
        if call.held is not None:
            held, call.held = call.held, None
            if frag.lstrip().startswith("{"):
                self._note(
                    QuirkId.OAI_ARGS_PLACEHOLDER_THEN_FULL,
                    f"call {call.call_id}: placeholder {held!r} replaced by the full arguments",
                )
                return self._merge_arguments(call, frag)
            self._accept(call, held)
            self._accept(call, frag)
            return held + frag
        if call._len == 0:
            if frag.strip() == "{}":
                call.held = frag
                return ""
            self._accept(call, frag)
            return frag
        if len(frag) >= call._len:
            buf = call.arguments
            if buf.lstrip()[:1] in ("{", "[") and frag.startswith(buf):
                if len(frag) == len(buf):
                    self._note(
                        QuirkId.OAI_ARGS_DELTA_PLUS_SUMMARY,
                        f"call {call.call_id}: the complete arguments were sent again; dropped",
                    )
                    return ""
                call.cumulative = True
                self._note(
                    QuirkId.OAI_ARGS_CUMULATIVE,
                    f"call {call.call_id}: every fragment repeats the arguments so far",
                )
                suffix = frag[len(buf) :]
                self._accept(call, suffix)
                return suffix
        self._accept(call, frag)
        return frag
