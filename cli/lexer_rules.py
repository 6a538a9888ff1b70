"""The rules of a pygments ``RegexLexer``, compiled when first needed and tried only where they
can match.

pygments compiles every rule of every state when the first lexer of a class is made, and at each
position of the text tries the rules of the current state in order until one matches: about 30
failed attempts per token for Python. Here, for each character a state meets, the rules that can
match at a position holding it are picked out once, in their order, and compiled then: only
those are tried there, and a rule no text has needed is never compiled. A rule that can match
the empty string, or whose first character the reading cannot tell, is tried everywhere.

The reading is of the rule's pattern text (no ``sre`` parse, which costs more than compiling
the pattern): the characters its first item can start with, through groups, alternatives,
classes, escapes and optional items; anything unusual (a back-reference, a conditional, a
verbose flag) gives "anywhere". Characters are ASCII (a bit of an ``int`` each): at a
non-ASCII character every rule of the state is tried.

A ``words(...)`` list of identifiers ending in ``\\b`` matches exactly when the whole run of word
characters at the position is one of its words: it is matched as a small pattern (the run) and a
set lookup instead of pygments' optimised alternation of every word, which is slow to compile.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

from pygments.lexer import Future, combined, default, include, inherit, words
from pygments.token import Error, Token, Whitespace

_TOKEN_TYPE = type(Token)

# -- which characters a pattern can start with -----------------------------------------------------
ALL = (1 << 128) - 1


def _mask(chars: str) -> int:
    bits = 0
    for ch in chars:
        bits |= 1 << ord(ch)
    return bits


_ASCII = "".join(map(chr, range(128)))
DIGITS = _mask("0123456789")
WORD = _mask("".join(c for c in _ASCII if c.isalnum() or c == "_"))
SPACE = _mask("".join(c for c in _ASCII if c.isspace()))
# escapes of a category, in a class or not
_CATEGORIES = {"d": DIGITS, "D": ALL & ~DIGITS, "w": WORD, "W": ALL & ~WORD, "s": SPACE,
               "S": ALL & ~SPACE}  # fmt: skip
_LITERAL_ESCAPES = {"a": "\a", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
_CASE_PAIRS = {ord(c): ord(c.swapcase()) for c in _ASCII if c.isalpha()}


class _Unknown(Exception):
    """The pattern does something the analysis does not follow."""


def first_chars(pattern: str, flags: int = 0) -> int | None:
    """The ASCII characters a match of ``pattern`` can start with, as bits of an ``int`` (bit
    ``n`` for ``chr(n)``): a superset. ``None`` when the pattern can match the empty string or
    the analysis cannot tell."""
    found = _leading(_Scan(pattern, flags))
    return None if found is None or found[1] else found[0]


def words_first_chars(listed: Any, flags: int = 0) -> int | None:
    """:func:`first_chars` of a pygments ``words(...)`` pattern, read from its words (its
    alternation can be thousands of characters long)."""
    prefix = _Scan(listed.prefix, flags)
    found = _leading(prefix)
    if found is not None and found[1]:
        fold = prefix.fold  # (flags at the prefix's start are the whole pattern's)
        listed_part = 0
        for w in listed.words:
            code = ord(w[0]) if w else -1
            if code == -1 or (code >= 128 and fold):
                return None
            if code < 128:
                listed_part |= 1 << code
                if fold and code in _CASE_PAIRS:
                    listed_part |= 1 << _CASE_PAIRS[code]
        found = found[0] | listed_part, False
    if found is None or found[1]:
        return None
    return found[0]


def _leading(scan: _Scan) -> tuple[int, bool] | None:
    """(the characters a match can start with, whether it can be empty), ``None`` if the
    pattern does something the reading does not follow."""
    if scan.verbose:
        return None
    try:
        found = scan.alternatives()
    except (_Unknown, IndexError, ValueError):
        return None
    return found if scan.i == len(scan.p) else None


class _Scan:
    """A reading of a pattern's text, left to right, for :func:`first_chars`."""

    def __init__(self, pattern: str, flags: int) -> None:
        self.p = pattern
        self.i = 0
        self.fold = bool(flags & re.IGNORECASE)
        self.verbose = bool(flags & re.VERBOSE)

    def alternatives(self) -> tuple[int, bool]:
        """Alternatives up to the end or an unmatched ``)``: (characters, can be empty)."""
        bits, empty = self.sequence()
        p = self.p
        while self.i < len(p) and p[self.i] == "|":
            self.i += 1
            more, more_empty = self.sequence()
            bits |= more
            empty |= more_empty
        return bits, empty

    def sequence(self) -> tuple[int, bool]:
        bits = 0
        p = self.p
        while self.i < len(p) and p[self.i] not in "|)":
            item, empty = self.item()
            bits |= item
            if not empty:
                self.skip_sequence()
                return bits, False
        return bits, True

    def skip_sequence(self) -> None:
        """Past the rest of a sequence: to the ``|`` or ``)`` that ends it."""
        p, n = self.p, len(self.p)
        depth = 0
        i = self.i
        while i < n:
            c = p[i]
            if c == "\\":
                i += 2
                continue
            if c == "[":
                self.i = i
                self.skip_class()
                i = self.i
                continue
            if c == "(":
                depth += 1
            elif c == ")":
                if depth == 0:
                    break
                depth -= 1
            elif c == "|" and depth == 0:
                break
            i += 1
        self.i = i

    def item(self) -> tuple[int, bool]:
        """One item and its quantifier: (characters, can be empty)."""
        p = self.p
        c = p[self.i]
        if c == "(":
            bits, empty = self.group()
        elif c == "[":
            bits, empty = self.char_class(), False
        elif c == "\\":
            bits, empty = self.escape()
        elif c in "^$":
            self.i += 1
            return 0, True
        elif c == ".":
            self.i += 1
            bits, empty = ALL, False
        elif c in "*+?":
            raise _Unknown(c)
        else:
            self.i += 1
            bits, empty = self.literal(ord(c)), False
        return bits, self.quantifier() or empty

    def quantifier(self) -> bool:
        """Past a quantifier, if one follows: whether it allows no repeat."""
        p = self.p
        if self.i >= len(p):
            return False
        c = p[self.i]
        if c in "*?":
            self.i += 1
            none = True
        elif c == "+":
            self.i += 1
            none = False
        elif c == "{" and (least := self.repeats()) is not None:
            none = least == 0
        else:
            return False
        if self.i < len(p) and p[self.i] in "?+":
            self.i += 1  # lazy or possessive
        return none

    def repeats(self) -> int | None:
        """Past a ``{m,n}`` quantifier (as ``sre`` reads one: ``{m}``, ``{m,}``, ``{,n}``,
        ``{m,n}``, ``{,}``; else the ``{`` is a character): its least count."""
        p = self.p
        i = self.i + 1
        least = i
        while i < len(p) and p[i] in "0123456789":
            i += 1
        low = p[least:i]
        if i < len(p) and p[i] == ",":
            i += 1
            while i < len(p) and p[i] in "0123456789":
                i += 1
        elif not low:
            return None
        if i >= len(p) or p[i] != "}":
            return None
        self.i = i + 1
        return int(low or 0)

    def literal(self, code: int) -> int:
        if code >= 128:
            if self.fold:
                raise _Unknown("non-ASCII character, case ignored")
            return 0
        bits = 1 << code
        if self.fold and code in _CASE_PAIRS:
            bits |= 1 << _CASE_PAIRS[code]
        return bits

    def escape(self) -> tuple[int, bool]:
        """An escape outside a class: (characters, can be empty)."""
        p = self.p
        d = p[self.i + 1]
        if d in "AZbB":
            self.i += 2
            return 0, True
        if d in _CATEGORIES:
            self.i += 2
            return _CATEGORIES[d], False
        return self.literal(self.escaped_code()), False

    def escaped_code(self) -> int:
        """The character of a literal escape (a category is not one): past it."""
        p = self.p
        d = p[self.i + 1]
        if d in _LITERAL_ESCAPES:
            self.i += 2
            return ord(_LITERAL_ESCAPES[d])
        if d in _HEX_ESCAPES:
            digits = _HEX_ESCAPES[d]
            code = int(p[self.i + 2 : self.i + 2 + digits], 16)
            self.i += 2 + digits
            return code
        if d == "0":
            end = self.i + 2
            while end < len(p) and end < self.i + 4 and p[end] in "01234567":
                end += 1
            code = int(p[self.i + 1 : end], 8)
            self.i = end
            return code
        if d.isascii() and d.isalnum():
            raise _Unknown(f"\\{d}")  # a back-reference, \N{...}, or something new
        self.i += 2
        return ord(d)

    def group(self) -> tuple[int, bool]:
        p = self.p
        start = self.i
        if p.startswith("(?", start):
            kind = p[start + 2]
            if kind in "=!" or p.startswith(("(?<=", "(?<!"), start):
                # a look-around: matches no character
                self.i = start + (3 if kind in "=!" else 4)
                self.skip_sequence()
                while p[self.i] == "|":
                    self.i += 1
                    self.skip_sequence()
                self.close()
                return 0, True
            if kind == "#":
                self.i = p.index(")", start) + 1
                return 0, True
            if kind == ":" or kind == ">":
                self.i = start + 3
            elif p.startswith("(?P<", start):
                self.i = p.index(">", start) + 1
            elif kind in "aiLmsux-":
                i = start + 2
                while p[i] in "aiLmsux":
                    i += 1
                added = p[start + 2 : i]
                if p[i] == "-":
                    i += 1
                    while p[i] in "imsx":
                        i += 1
                if p[i] not in ":)" or "x" in p[start:i] or "L" in added:
                    raise _Unknown("flags")
                self.i = i + 1
                if p[i] == ")":
                    # flags of the whole pattern (only allowed at its start)
                    self.fold |= "i" in added
                    return 0, True
                if "i" in added and not self.fold:
                    self.fold = True
                    found = self.alternatives()
                    self.fold = False
                    self.close()
                    return found
            else:
                raise _Unknown(p[start : start + 4])
        else:
            self.i = start + 1
        found = self.alternatives()
        self.close()
        return found

    def close(self) -> None:
        if self.p[self.i] != ")":
            raise _Unknown("unclosed group")
        self.i += 1

    def char_class(self) -> int:
        """A ``[...]`` class: its ASCII characters."""
        p = self.p
        self.i += 1
        negate = p[self.i] == "^"
        if negate:
            self.i += 1
        bits = 0  # the ASCII members
        folded = 0  # and their case pairs
        wide = False  # a member outside ASCII
        members = 0
        while True:
            c = p[self.i]
            if c == "]" and members:
                self.i += 1
                break
            members += 1
            if c == "\\" and p[self.i + 1] in _CATEGORIES:
                bits |= _CATEGORIES[p[self.i + 1]]
                self.i += 2
                continue  # (a "-" after it can only be the class's last member)
            low = self.class_char()
            high = low
            if p[self.i] == "-" and p[self.i + 1] != "]":
                self.i += 1
                high = self.class_char()
            if low < 128:
                top = min(high, 127)
                bits |= ((1 << (top + 1)) - 1) & ~((1 << low) - 1)
                if self.fold:
                    for code in range(low, top + 1):
                        if code in _CASE_PAIRS:
                            folded |= 1 << _CASE_PAIRS[code]
            if high >= 128:
                wide = True
        if negate:
            # case ignored, a character does not match when it or its pair is a member: the
            # characters that are not members are still a superset
            return ALL & ~bits
        if self.fold and wide:
            raise _Unknown("a character outside ASCII can be the case pair of one inside it")
        return bits | folded

    def class_char(self) -> int:
        """One character of a class (a member or a range's end): past it."""
        p = self.p
        c = p[self.i]
        if c != "\\":
            self.i += 1
            return ord(c)
        if p[self.i + 1] == "b":
            self.i += 2
            return 8  # backspace, in a class
        return self.escaped_code()

    def skip_class(self) -> None:
        """Past a ``[...]`` class, unread."""
        p = self.p
        i = self.i + 1
        if p[i] == "^":
            i += 1
        first = True
        while p[i] != "]" or first:
            first = False
            i += 2 if p[i] == "\\" else 1
        self.i = i + 1


# -- word lists as sets ----------------------------------------------------------------------------


def _identifier(text: str) -> bool:
    """``text`` is ASCII letters, digits and underscores (``\\w+`` on ASCII)."""
    return text.isascii() and text.replace("_", "a").isalnum()


def _simple_prefix(prefix: str) -> bool:
    """What comes before the words starts them at one place: letters, digits and underscores,
    or a look-behind (with no group)."""
    if prefix == "" or _identifier(prefix):
        return True
    inside = prefix[4:-1]
    return (
        prefix.startswith(("(?<=", "(?<!"))
        and prefix.endswith(")")
        and not ("(" in inside or ")" in inside)
    )


_Match = Callable[..., "re.Match[str] | None"]


def word_set_match(listed: Any, flags: int) -> _Match | None:
    """A ``match(text, pos[, endpos])`` for a ``words(...)`` list ending in ``\\b``, giving
    the match pygments' pattern gives (same span, one group: the word), or ``None`` when the
    list is not of that kind (or has no identifier to look up).

    pygments' pattern matches the longest listed word that fits and ends at a word boundary.
    An identifier does exactly when it is the whole run of word characters after the prefix
    (fixed text or a look-behind: the run starts at one place), so the identifiers are one
    pattern for the run and a set lookup. A word with other characters ("yield from") is longer
    than the run it starts with: those words, if any, are tried first, as a plain alternation.
    """
    if flags & re.IGNORECASE or listed.suffix != r"\b":
        return None
    if not _simple_prefix(listed.prefix):
        return None
    identifiers = frozenset(w for w in listed.words if _identifier(w))
    if not identifiers:
        return None
    run = re.compile(listed.prefix + r"(\w+)", flags).match
    others = [w for w in listed.words if w not in identifiers]
    if not others:

        def match(text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
            m = run(text, pos, endpos)
            if m is not None and m[1] in identifiers:
                return m
            return None

        return match
    longer = re.compile(plain_words(words(others, listed.prefix, listed.suffix)), flags).match

    def match_either(text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        m = longer(text, pos, endpos)
        if m is not None:
            return m
        m = run(text, pos, endpos)
        if m is not None and m[1] in identifiers:
            return m
        return None

    return match_either


def plain_words(listed: Any) -> str:
    """A pygments ``words(...)`` pattern as a plain alternation, longest word first: one group
    around the words, as pygments' own pattern has, matching the same text (case-sensitively:
    the longest listed word that fits is the one pygments' pattern matches)."""
    alternatives = sorted(listed.words, key=len, reverse=True)
    return f"{listed.prefix}({'|'.join(map(re.escape, alternatives))}){listed.suffix}"


# -- the rules of a lexer class, made when needed --------------------------------------------------
_Entry = tuple[_Match, Any, Any]  # (match, action, new state), as pygments keeps a rule


class Rule:
    """One rule of a state: its pattern (text or a pygments ``Future``), action and new state
    (as pygments processes it: ``-n`` pops, a tuple of states pushes, ``"#push"``)."""

    __slots__ = ("action", "new_state", "source", "_bits", "_entry")

    def __init__(self, source: Any, action: Any, new_state: Any) -> None:
        self.source = source
        self.action = action
        self.new_state = new_state
        self._bits: int | None = -1  # -1: not read yet
        self._entry: _Entry | None = None


class Rules:
    """The rules of a ``RegexLexer`` class, from its token definitions: a state's rules listed
    when the state is first entered, by character when a character is first met in it, each
    pattern compiled when first picked out.

    :attr:`states` maps a state to its rules as pygments' ``_tokens`` holds them (what pygments'
    own loops read); :attr:`tables` maps a state to its rules by character (what
    :func:`get_tokens_unprocessed` reads).
    """

    def __init__(self, tokendefs: dict[str, list[Any]], flags: int) -> None:
        self.defs = tokendefs
        self.flags = flags
        self.expanded: dict[str, list[Rule]] = {}
        self.combined: dict[str, tuple[str, ...]] = {}
        self.states = _States(self)
        self.tables = _Tables(self)

    def rules(self, state: str) -> list[Rule]:
        """``state``'s rules, included states' in their place."""
        found = self.expanded.get(state)
        return found if found is not None else self._expand(state, {})

    def _expand(self, state: str, building: dict[str, list[Rule]]) -> list[Rule]:
        # a state is stored once whole (another thread may be lexing); one that includes itself,
        # through others, gets what is done of it so far, as in pygments
        found = self.expanded.get(state)
        if found is None:
            found = building.get(state)
        if found is not None:
            return found
        out = building[state] = []
        if state in self.combined:
            for part in self.combined[state]:
                out.extend(self._expand(part, building))
        else:
            for tdef in self.defs[state]:
                if isinstance(tdef, include):
                    out.extend(self._expand(str(tdef), building))
                elif tdef is inherit:
                    continue
                elif isinstance(tdef, default):
                    out.append(Rule("", None, self.new_state(tdef.state)))
                else:
                    new = self.new_state(tdef[2]) if len(tdef) > 2 else None
                    out.append(Rule(tdef[0], tdef[1], new))
        self.expanded[state] = out
        return out

    def new_state(self, new: Any) -> Any:
        """A rule's new state as pygments' ``RegexLexerMeta._process_new_state`` makes it."""
        if isinstance(new, str):
            if new == "#pop":
                return -1
            if new in self.defs:
                return (new,)
            if new == "#push":
                return new
            if new[:5] == "#pop:":
                return -int(new[5:])
            raise ValueError(f"unknown new state {new!r}")
        if isinstance(new, combined):
            name = "#combined:" + "+".join(new)  # (no state of the lexer's own starts with #)
            self.combined[name] = tuple(new)
            return (name,)
        if isinstance(new, tuple):
            return new
        raise ValueError(f"unknown new state {new!r}")

    def entry(self, rule: Rule) -> _Entry:
        """``rule`` as pygments keeps it: (compiled match, action, new state)."""
        if rule._entry is None:
            rule._entry = (self.compile(rule.source), rule.action, rule.new_state)
        return rule._entry

    def compile(self, source: Any) -> _Match:
        if isinstance(source, Future):
            if isinstance(source, words):
                match = word_set_match(source, self.flags)
                if match is not None:
                    return match
                if not self.flags & re.IGNORECASE and "(?i" not in source.prefix:
                    return re.compile(plain_words(source), self.flags).match
            source = source.get()
        return re.compile(source, self.flags).match

    def bits(self, rule: Rule) -> int | None:
        """The characters ``rule`` can match at (``None``: anywhere)."""
        if rule._bits == -1:
            source = rule.source
            if isinstance(source, str):
                rule._bits = first_chars(source, self.flags)
            elif isinstance(source, words):
                rule._bits = words_first_chars(source, self.flags)
            else:
                rule._bits = None
        return rule._bits

    def candidates(self, state: str, char: str) -> list[_Entry]:
        """The rules of ``state`` that can match at a position holding ``char`` ("" at the end
        of the text), in order, compiled."""
        rules = self.rules(state)
        if char == "":
            keep = [rule for rule in rules if self.bits(rule) is None]
        elif ord(char) < 128:
            code = ord(char)
            keep = [rule for rule in rules if (bits := self.bits(rule)) is None or bits >> code & 1]
        else:
            keep = rules
        return [self.entry(rule) for rule in keep]


class _States(dict[str, list[_Entry]]):
    """State -> its compiled rules, made on first look-up (pygments' ``_tokens``)."""

    def __init__(self, rules: Rules) -> None:
        super().__init__()
        self._rules = rules

    def __missing__(self, state: str) -> list[_Entry]:
        entries = [self._rules.entry(rule) for rule in self._rules.rules(state)]
        self[state] = entries
        return entries


class _Tables(dict[str, "_ByChar"]):
    """State -> its rules by character, made on first look-up."""

    def __init__(self, rules: Rules) -> None:
        super().__init__()
        self._rules = rules

    def __missing__(self, state: str) -> _ByChar:
        self._rules.rules(state)  # an unknown state fails here, as in pygments
        table = self[state] = _ByChar(self._rules, state)
        return table


class _ByChar(dict[str, list[_Entry]]):
    """Character -> the rules of one state that can match at it, made on first look-up."""

    def __init__(self, rules: Rules, state: str) -> None:
        super().__init__()
        self._rules = rules
        self._state = state

    def __missing__(self, char: str) -> list[_Entry]:
        entries = self[char] = self._rules.candidates(self._state, char)
        return entries


def get_tokens_unprocessed(
    self: Any, text: str, stack: tuple[str, ...] = ("root",)
) -> Iterator[tuple[int, Any, str]]:
    """pygments' ``RegexLexer.get_tokens_unprocessed``, trying at each position only the rules
    that can match there (``self._rules.tables``): the same tokens."""
    tables = self._rules.tables
    statestack = list(stack)
    table = tables[statestack[-1]]
    pos = 0
    while True:
        for rexmatch, action, new_state in table[text[pos : pos + 1]]:
            m = rexmatch(text, pos)
            if not m:
                continue
            if action is not None:
                if type(action) is _TOKEN_TYPE:
                    yield pos, action, m.group()
                else:
                    yield from action(self, m)
            pos = m.end()
            if new_state is not None:
                if isinstance(new_state, tuple):
                    for state in new_state:
                        if state == "#pop":
                            if len(statestack) > 1:
                                statestack.pop()
                        elif state == "#push":
                            statestack.append(statestack[-1])
                        else:
                            statestack.append(state)
                elif isinstance(new_state, int):
                    # pops, leaving at least the bottom state
                    if abs(new_state) >= len(statestack):
                        del statestack[1:]
                    else:
                        del statestack[new_state:]
                elif new_state == "#push":
                    statestack.append(statestack[-1])
                else:
                    raise AssertionError(f"wrong state def: {new_state!r}")
                table = tables[statestack[-1]]
            break
        else:
            # no rule matches here: at a line's end, back to the root state; else one error
            if pos >= len(text):
                return
            if text[pos] == "\n":
                statestack = ["root"]
                table = tables["root"]
                yield pos, Whitespace, "\n"
            else:
                yield pos, Error, text[pos]
            pos += 1
