"""The quick lexers give pygments' own tokens, and their reading of each rule's first
characters covers what the rule can match.

The quick lexer of a language (``lexer_for`` on ASCII text) compiles rules when first needed
and tries at each position only the rules whose first character can be there
(``cli/lexer_rules.py``): its tokens are checked against pygments' own lexer on real code, on
hand-written samples of every language and on generated text made of each language's pieces.
The first-character reading, done on the pattern's text, is checked against one done on
``sre``'s parse of the pattern (with ``sre`` itself deciding which characters each item
matches), and against strings generated from the patterns.
"""

from __future__ import annotations

import re
import sysconfig
from functools import cache, lru_cache
from pathlib import Path
from re import _compiler, _parser  # type: ignore[attr-defined]
from re._constants import (
    ANY,
    ASSERT,
    ASSERT_NOT,
    AT,
    ATOMIC_GROUP,
    BRANCH,
    IN,
    LITERAL,
    MAX_REPEAT,
    MIN_REPEAT,
    NOT_LITERAL,
    POSSESSIVE_REPEAT,
    SUBPATTERN,
)
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pygments.lexer import RegexLexer, words

from streamtool.cli import lexer_rules
from streamtool.cli.lexer_rules import ALL, first_chars, word_set_match, words_first_chars
from streamtool.cli.lexers import (
    _LEXERS,
    _lexer_class,
    full_lexer,
    lexer_for,
    quick_lexer,
    quick_lexer_class,
)

from .conftest import ROOT
from .lexer_samples import SAMPLES

LANGUAGES = sorted(set(_LEXERS.values()))
REGEX_LANGUAGES = [name for name in LANGUAGES if issubclass(_lexer_class(name), RegexLexer)]


def chars(bits: int) -> str:
    return "".join(chr(i) for i in range(128) if bits >> i & 1)


def same_tokens(name: str, text: str) -> None:
    quick, full = lexer_for(name, text), full_lexer(name)
    assert list(quick.get_tokens(text)) == list(full.get_tokens(text))
    assert list(quick.get_tokens_unprocessed(text)) == list(full.get_tokens_unprocessed(text))


# -- the same tokens -------------------------------------------------------------------------------
def test_every_language_has_a_sample_and_a_quick_lexer() -> None:
    assert sorted(SAMPLES) == LANGUAGES
    assert len(REGEX_LANGUAGES) >= len(LANGUAGES) - 2  # json and text are hand-written
    for name in REGEX_LANGUAGES:
        # (case-insensitive languages too: their classes are kept whole, nothing else changes)
        assert quick_lexer(name) is not None, name


@pytest.mark.parametrize("name", LANGUAGES)
def test_quick_lexer_gives_pygments_tokens_on_samples(name: str) -> None:
    text = SAMPLES[name]
    assert text.isascii()
    same_tokens(name, text)
    # and on each line alone, and on the sample cut anywhere (strings and comments left open)
    for line in text.splitlines(keepends=True):
        same_tokens(name, line)
    for cut in range(7, len(text), 97):
        same_tokens(name, text[:cut])


def python_sources() -> list[Path]:
    """This project's command-line modules and some of the standard library's, if ASCII."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    names = ["textwrap.py", "string.py", "dataclasses.py", "json/decoder.py", "json/encoder.py",
             "argparse.py", "functools.py", "ast.py", "shlex.py", "fractions.py"]  # fmt: skip
    paths = sorted((ROOT / "cli").glob("*.py")) + [stdlib / n for n in names]
    return [p for p in paths if p.exists() and p.read_text(encoding="utf-8").isascii()]


def test_there_is_real_python_to_read() -> None:
    sources = python_sources()
    assert len(sources) >= 25
    assert sum(1 for p in sources if "lib" in p.parts or "Lib" in p.parts) >= 6


@pytest.mark.parametrize("path", python_sources(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_quick_python_lexer_gives_pygments_tokens_on_real_code(path: Path) -> None:
    same_tokens("python", path.read_text(encoding="utf-8"))


@cache
def pieces(name: str) -> tuple[str, ...]:
    """What text for ``name`` is made of: the tokens of its sample, some of the words its lexer
    lists, every printable ASCII character and some white space."""
    sample = SAMPLES[name]
    found = {value for _, value in full_lexer(name).get_tokens(sample) if value}
    cls = _lexer_class(name)
    if issubclass(cls, RegexLexer):
        listed = sorted(
            word
            for rules in cls.get_tokendefs().values()
            for rule in rules
            if type(rule) is tuple and isinstance(rule[0], words)
            for word in rule[0].words
        )
        found.update(listed[:: max(1, len(listed) // 80)])
    found.update(chr(i) for i in range(32, 127))
    found.update(["\n", "\n", "  ", "\t", "\\\n"])
    return tuple(sorted(found))


@pytest.mark.parametrize("name", LANGUAGES)
@given(data=st.data())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_quick_lexer_gives_pygments_tokens_on_text_of_the_languages_pieces(
    name: str, data: st.DataObject
) -> None:
    text = data.draw(st.lists(st.sampled_from(pieces(name)), max_size=50).map("".join))
    same_tokens(name, text)


# -- how the quick lexers are made -----------------------------------------------------------------
def test_rules_are_compiled_when_first_needed() -> None:
    cls: Any = quick_lexer_class("python")  # a fresh class: nothing compiled yet
    lexer = cls(stripnl=False)
    rules = cls._rules
    total = {id(rule) for state in rules.defs for rule in rules.rules(state)}
    assert not any(rules.rules(state)[0]._entry for state in rules.defs if rules.rules(state))
    list(lexer.get_tokens("x = 1\n"))
    compiled = {
        id(rule) for state in rules.defs for rule in rules.rules(state) if rule._entry is not None
    }
    assert 0 < len(compiled) < len(total) // 4


def test_at_a_character_only_the_rules_that_can_start_there_are_tried() -> None:
    cls: Any = quick_lexer_class("python")
    rules = cls._rules
    root = rules.rules("root")
    for char in "x(\n \"'0.#f":
        entries = rules.tables["root"][char]
        kept = [rule for rule in root if rules.entry(rule) in entries]
        assert [rules.entry(rule) for rule in kept] == entries  # in the state's order
        for rule in root:
            bits = rules.bits(rule)
            if bits is None or bits >> ord(char) & 1:
                assert rule in kept
        if char == "x":
            assert len(entries) <= len(root) // 5, [r.source for r in kept]
    # a character outside ASCII: every rule; the end of the text: what can match nothing there
    assert rules.tables["root"]["\u00e9"] == [rules.entry(rule) for rule in root]
    assert rules.tables["root"][""] == [rules.entry(r) for r in root if rules.bits(r) is None]


def test_lexers_with_a_loop_of_their_own_keep_it() -> None:
    assert quick_lexer_class("python").get_tokens_unprocessed is (  # type: ignore[union-attr]
        lexer_rules.get_tokens_unprocessed
    )
    for name in ("c", "cpp", "ruby", "yaml"):  # around RegexLexer's loop, or ExtendedRegexLexer
        own = _lexer_class(name).get_tokens_unprocessed
        assert own is not RegexLexer.get_tokens_unprocessed
        assert quick_lexer_class(name).get_tokens_unprocessed is own  # type: ignore[union-attr]


def test_an_unknown_state_fails_as_in_pygments() -> None:
    with pytest.raises(KeyError):
        list(quick_lexer("python").get_tokens_unprocessed("x", stack=("root", "nowhere")))


# -- the first characters of a rule -------------------------------------------------------------
class _Unread(Exception):
    pass


def sre_first_chars(pattern: str, flags: int) -> int | None:
    """The first characters of ``pattern`` from ``sre``'s parse, each item's characters found by
    compiling the item alone and matching every ASCII character (``None``: can be empty or is
    not read here)."""
    parsed = _parser.parse(pattern, flags)
    try:
        bits, empty = _sequence(parsed.data, parsed.state, parsed.state.flags)
    except _Unread:
        return None
    return None if empty else bits


def _sequence(items: list[Any], state: Any, flags: int) -> tuple[int, bool]:
    bits = 0
    for op, av in items:
        more, empty = _item(op, av, state, flags)
        bits |= more
        if not empty:
            return bits, False
    return bits, True


@lru_cache(maxsize=4096)
def _matched(op: Any, av: Any, flags: int, state: Any) -> int:
    one = _compiler.compile(_parser.SubPattern(state, [(op, av)]), flags)
    return sum(1 << i for i in range(128) if one.match(chr(i)))


def _item(op: Any, av: Any, state: Any, flags: int) -> tuple[int, bool]:
    if op in (LITERAL, NOT_LITERAL, ANY):
        return _matched(op, av, flags, state), False
    if op is IN:
        return _matched(op, tuple(av), flags, state), False
    if op is BRANCH:
        bits, empty = 0, False
        for branch in av[1]:
            more, more_empty = _sequence(branch, state, flags)
            bits, empty = bits | more, empty or more_empty
        return bits, empty
    if op is SUBPATTERN:
        _, add, remove, inner = av
        return _sequence(inner, state, (flags | add) & ~remove)
    if op in (MAX_REPEAT, MIN_REPEAT, POSSESSIVE_REPEAT):
        least, _, inner = av
        bits, empty = _sequence(inner, state, flags)
        return bits, empty or least == 0
    if op is ATOMIC_GROUP:
        return _sequence(av, state, flags)
    if op in (AT, ASSERT, ASSERT_NOT):
        return 0, True
    raise _Unread(op)


def ours(source: Any, flags: int) -> int | None:
    if isinstance(source, words):
        return words_first_chars(source, flags)
    return first_chars(source, flags)


def every_rule() -> list[tuple[str, Any, int]]:
    """(language, pattern, flags) of every rule of every language: the quick lexer's patterns
    (classes cut to ASCII) and pygments' own."""
    found = []
    for name in REGEX_LANGUAGES:
        cls: Any = _lexer_class(name)
        quick: Any = quick_lexer_class(name)
        seen = set()
        for defs in (quick._rules.defs, cls.get_tokendefs()):
            for rules in defs.values():
                for rule in rules:
                    if type(rule) is tuple and id(rule[0]) not in seen:
                        seen.add(id(rule[0]))
                        found.append((name, rule[0], cls.flags))
    return found


def test_first_characters_cover_sres_reading_of_every_rule() -> None:
    rules = every_rule()
    assert len(rules) > 800
    told = 0
    for name, source, flags in rules:
        text = source.get() if isinstance(source, words) else source
        bits, reference = ours(source, flags), sre_first_chars(text, flags)
        if bits is None:
            continue
        told += 1
        assert reference is not None, (name, text)
        assert reference & ~bits == 0, (name, text, chars(reference & ~bits))
    assert told > 0.95 * len(rules)  # it gives up on few


@pytest.mark.parametrize("name", REGEX_LANGUAGES)
@given(data=st.data())
@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_where_a_rule_matches_it_starts_with_one_of_its_first_characters(
    name: str, data: st.DataObject
) -> None:
    rules = generated_rules(name)
    source, flags, bits = data.draw(st.sampled_from(rules))
    text = source.get() if isinstance(source, words) else source
    compiled = re.compile(text, flags)
    sample = data.draw(st.from_regex(compiled, alphabet=st.characters(codec="ascii")))
    for pos in range(len(sample)):
        m = compiled.match(sample, pos)
        if m and m.end() > pos:
            assert bits >> ord(sample[pos]) & 1, (text, sample, pos)


@lru_cache(maxsize=1)
def every_rule_cached() -> tuple[tuple[str, Any, int], ...]:
    return tuple(every_rule())


@cache
def generated_rules(name: str) -> list[tuple[Any, int, int]]:
    """``name``'s rules with known first characters, but those with Unicode classes (the
    quick lexer's copies cut to ASCII are there; generating for the whole classes is slow)."""
    return [
        (source, flags, bits)
        for n, source, flags in every_rule_cached()
        if n == name
        and (isinstance(source, words) or source.isascii())
        and (bits := ours(source, flags)) is not None
    ]


ASCII_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


@pytest.mark.parametrize(
    ("pattern", "flags", "expected"),
    [
        (r"\d+", 0, "0123456789"),
        (r"a?b*c", 0, "abc"),
        (r"(?:a|b?)(c|)d", 0, "abcd"),
        (r"(?i)ab", 0, "Aa"),
        (r"ab", re.IGNORECASE, "Aa"),
        (r"(?i:k)|x", 0, "Kkx"),
        (r"(?=x)y", 0, "y"),  # (a look-ahead is not read: a superset)
        (r"(?<!\.)\bfoo", 0, "f"),
        (r"^(\s*)x", re.MULTILINE, " \t\n\x0b\x0c\r\x1c\x1d\x1e\x1fx"),
        (r"[]a]", 0, "]a"),
        (r"[^]a]b", 0, "".join(c for c in map(chr, range(128)) if c not in "]a")),
        (r"[\w-]", 0, "-0123456789" + ASCII_LETTERS + "_"),
        (r"[a\-z]", 0, "-az"),
        (r"[\b]", 0, "\b"),
        (r"[\x41-\x43]", 0, "ABC"),
        (r"[~-\u00ff]", 0, "~\x7f"),
        (r"\u00e9|\x41", 0, "A"),
        (r"[\u00e9]", 0, ""),
        (r"x{0,2}y", 0, "xy"),
        (r"x{,}y", 0, "xy"),
        (r"x{2}y", 0, "x"),
        (r"{", 0, "{"),
        (r"x{}", 0, "x"),
        (r"(?#comment)a", 0, "a"),
        (r"(?s:.)", 0, "".join(map(chr, range(128)))),
        (r"(?P<name>a)|b", 0, "ab"),
        (r"\0|\012", 0, "\x00\n"),
        (r"a*+b", 0, "ab"),
        (r"(?>a|b)c", 0, "ab"),
        (r"(a)\1", 0, "a"),  # (a back-reference after the first item is not reached)
        (r"[^<&]+", re.IGNORECASE, "".join(c for c in map(chr, range(128)) if c not in "<&")),
    ],
)
def test_first_characters_of_hand_made_patterns(pattern: str, flags: int, expected: str) -> None:
    bits = first_chars(pattern, flags)
    assert bits is not None
    assert chars(bits) == "".join(sorted(expected))
    reference = sre_first_chars(pattern, flags)
    assert reference is not None and reference & ~bits == 0


@pytest.mark.parametrize(
    ("pattern", "flags"),
    [
        (r"", 0),
        (r"a*", 0),
        (r"$", re.MULTILINE),
        (r"\b", 0),
        (r"\1", 0),
        (r"(?P<n>a)?(?P=n)", 0),
        (r"(?(1)a|b)", 0),
        (r"(?x) a", 0),
        (r"a", re.VERBOSE),
        (r"(?i)\u212a", 0),  # the Kelvin sign is a k when case is ignored
        (r"[\u0100-\u0200]", re.IGNORECASE),
        (r"\N{BULLET}", 0),
    ],
)
def test_first_characters_unknown_or_empty(pattern: str, flags: int) -> None:
    assert first_chars(pattern, flags) is None


@pytest.mark.parametrize(
    ("listed", "expected"),
    [
        (words(("abc", "Def")), "Da"),
        (words(("abc", "Def"), prefix="(?i)"), "ADad"),  # the prefix's flags are the pattern's
        (words(("abc", "Def"), prefix=r"(?<!\.)", suffix=r"\b"), "Da"),
        (words(("abc",), prefix=r"\."), "."),
        (words(("abc",), prefix=r"\.?"), ".a"),
        (words(("abc", "\u00e9t\u00e9")), "a"),
        (words(("", "a")), None),
        (words(("\u212a",), prefix="(?i)"), None),
    ],
)
def test_first_characters_of_word_lists(listed: Any, expected: str | None) -> None:
    bits = words_first_chars(listed)
    assert (bits if bits is None else chars(bits)) == (
        expected if expected is None else "".join(sorted(expected))
    )
    reference = sre_first_chars(listed.get(), 0)
    assert bits is None or (reference is not None and reference & ~bits == 0)


def test_every_character_of_a_class_outside_ascii_matches_nothing_ascii() -> None:
    assert first_chars("[\u0100-\u0200]") == 0
    assert first_chars("[^\u0100-\u0200]") == ALL


# -- word lists as sets ----------------------------------------------------------------------------
def word_lists() -> list[tuple[str, Any, int]]:
    return [(n, s, f) for n, s, f in every_rule_cached() if isinstance(s, words)]


def test_most_identifier_lists_are_sets() -> None:
    sets = [s for _, s, f in word_lists() if word_set_match(s, f) is not None]
    assert len(sets) >= 30
    python_lists = [s for n, s, f in word_lists() if n == "python"]
    assert all(word_set_match(s, re.MULTILINE) for s in python_lists if s.suffix == r"\b")


def test_a_word_set_matches_what_pygments_pattern_matches() -> None:
    for name, listed, flags in word_lists():
        match = word_set_match(listed, flags)
        if match is None:
            continue
        theirs = re.compile(listed.get(), flags)
        tried = list(listed.words)
        texts = [w + tail for w in tried for tail in ("", " ", "x", "_", "(", ".", "1", "\u00e9")]
        texts += [a + b for a in tried[:30] for b in tried[:30]]
        texts += [a + " " + b for a in tried[:30] for b in tried[:30]]
        texts += [w[:-1] for w in tried] + ["." + w for w in tried[:30]]
        for text in texts:
            for pos in {0, 1}:
                for end in {len(text), len(text) - 1}:
                    a, b = match(text, pos, end), theirs.match(text, pos, end)
                    assert (a and (a.span(), a.groups())) == (b and (b.span(), b.groups())), (
                        name,
                        text,
                        pos,
                        end,
                    )


@given(
    text=st.lists(
        st.sampled_from(["yield", "from", "yield from", "as", "async", "await", "x", " ", "  ",
                         ".", "_", "1", "\n", "print", "__init__", "self", "None"]),
        max_size=8,
    ).map("".join)
)  # fmt: skip
@settings(max_examples=100, deadline=None)
def test_python_word_sets_match_at_every_position(text: str) -> None:
    for _, listed, flags in word_lists():
        match = word_set_match(listed, flags)
        if match is None or listed not in PYTHON_LISTS:
            continue
        theirs = re.compile(listed.get(), flags)
        for pos in range(len(text) + 1):
            a, b = match(text, pos), theirs.match(text, pos)
            assert (a and (a.span(), a.groups())) == (b and (b.span(), b.groups()))


PYTHON_LISTS = [s for n, s, _ in word_lists() if n == "python"]
