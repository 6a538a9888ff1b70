"""``--parser json``: call shapes found by signature, bounded by string-aware bracket counting."""

from __future__ import annotations

import pytest

from streamtool.core.parsers.json import call_from_json, classify

from .parsing_support import chunking_tests, invocations, outcome, text_of


def calls(text: str) -> list[tuple[str, object]]:
    return [(i["name"], i["arguments"]) for i in invocations("json", text)]


SHAPES = [
    (
        '{"tool": {"function": "read_file", "parameters": {"path": "/a"}}}',
        ("read_file", {"path": "/a"}),
    ),
    (
        '{"tool": {"function": {"name": "read_file"}, "arguments": {"path": "/a"}}}',
        ("read_file", {"path": "/a"}),
    ),
    (
        '{"tool": {"name": "read_file", "parameters": {"path": "/a"}}}',
        ("read_file", {"path": "/a"}),
    ),
    (
        '{"name": "search", "args": {"query": "streamtool"}}',
        ("search", {"query": "streamtool"}),
    ),
    ('{"name": "search", "arguments": "{\\"query\\": \\"q\\"}"}', ("search", {"query": "q"})),
    ('{"name": "search", "parameters": {}}', ("search", {})),
    ('{"name": "ls", "input": {"dir": "."}}', ("ls", {"dir": "."})),
    (
        '{"function": {"name": "weather", "arguments": "{\\"city\\": \\"NYC\\"}"}}',
        ("weather", {"city": "NYC"}),
    ),
    (
        '{\n  "tool" : {\n    "function" : "f",\n    "parameters" : {"a": [1, {"b": "}"}]}\n  }\n}',
        ("f", {"a": [1, {"b": "}"}]}),
    ),
]


@pytest.mark.parametrize(("text", "expected"), SHAPES)
def test_single_call_shapes(text: str, expected: tuple[str, object]) -> None:
    segs, invs = outcome("json", f"Calling: {text} now")
    assert [(i["name"], i["arguments"]) for i in invs] == [expected]
    tool = [s for s in segs if s["type"] == "tool_call"]
    assert len(tool) == 1
    assert tool[0]["content"] == text  # the raw JSON, exactly
    assert tool[0]["end"]["tool_name"] == expected[0]
    assert text_of(segs) == "Calling:  now"


def test_start_metadata_names_the_tool_when_the_signature_does() -> None:
    segs, _ = outcome("json", '{"name": "search", "args": {}}')
    assert segs[0]["start"] == {"tool_name": "search"}


def test_tool_calls_wrapper_every_call_is_an_invocation() -> None:
    text = (
        '{"tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "weather", '
        '"arguments": "{\\"city\\": \\"NYC\\"}"}}, {"function": {"name": "time", '
        '"arguments": "{}"}}]}'
    )
    segs, invs = outcome("json", text)
    assert [(i["name"], i["arguments"]) for i in invs] == [
        ("weather", {"city": "NYC"}),
        ("time", {}),
    ]
    tools = [s for s in segs if s["type"] == "tool_call"]
    assert tools[1]["content"] == '{"function": {"name": "time", "arguments": "{}"}}'


def test_array_every_call_is_an_invocation() -> None:
    """The reference turned only the first call of an array into an invocation."""
    text = (
        '[{"name": "a", "args": {}}, {"name": "b", "args": {"x": [1, 2]}},\n'
        ' {"name": "c", "args": {}}]'
    )
    segs, invs = outcome("json", text)
    assert [(i["name"], i["arguments"]) for i in invs] == [
        ("a", {}),
        ("b", {"x": [1, 2]}),
        ("c", {}),
    ]
    assert [s["content"] for s in segs] == [
        '{"name": "a", "args": {}}',
        '{"name": "b", "args": {"x": [1, 2]}}',
        '{"name": "c", "args": {}}',
    ]
    assert len({i["id"] for i in invs}) == 3


def test_code_fences_stay_text_around_the_json() -> None:
    text = 'I will search.\n```json\n{"name": "search", "args": {"q": "x"}}\n```\nWaiting.'
    segs, invs = outcome("json", text)
    assert [s["type"] for s in segs] == ["text", "tool_call", "text"]
    assert segs[0]["content"] == "I will search.\n```json\n"
    assert segs[2]["content"] == "\n```\nWaiting."
    assert invs[0]["arguments"] == {"q": "x"}


def test_prose_with_braces_stays_text() -> None:
    text = (
        'Use a dict {"name": "Bob", "age": 3} or {x} or f"{y}" or [1, 2] or [{"a": 1}] or '
        'function() { return {"tool": 1}; } and {"tool_calls": []} and "{" alone {'
    )
    segs, invs = outcome("json", text)
    assert invs == []
    assert [s["type"] for s in segs] == ["text"]
    assert segs[0]["content"] == text


def test_strings_and_escapes_do_not_confuse_the_bracket_count() -> None:
    text = '{"name": "echo", "args": {"s": "a } ] \\" { [ \\\\", "t": "\\u007d"}} after'
    segs, invs = outcome("json", text)
    assert invs[0]["arguments"] == {"s": 'a } ] " { [ \\', "t": "}"}
    assert text_of(segs) == " after"


def test_invalid_json_in_a_call_is_reported() -> None:
    segs, invs = outcome("json", '{"name": "x", "args": {oops}}')
    assert segs[0]["end"]["arguments"] is None
    assert "JSON tool call" in segs[0]["end"]["error"]
    assert invs[0]["arguments"] is None
    assert invs[0]["raw_arguments"] == '{"name": "x", "args": {oops}}'


def test_unterminated_call_is_incomplete_and_not_invoked() -> None:
    text = 'Sure: {"name": "write_file", "args": {"path": "/a", "content": "abc'
    segs, invs = outcome("json", text)
    assert invs == []
    tool = segs[1]
    assert tool["content"] == text[len("Sure: ") :]
    assert tool["end"]["incomplete"] is True
    assert "unterminated JSON tool call" in tool["end"]["error"]


def test_unterminated_array_keeps_its_finished_calls() -> None:
    segs, invs = outcome("json", '[{"name": "a", "args": {}}, {"name": "b", "args": {')
    assert [i["name"] for i in invs] == ["a"]
    assert segs[1]["end"]["incomplete"] is True


def test_stream_ending_in_a_maybe_is_text() -> None:
    segs, invs = outcome("json", 'look: {"name": "sea')
    assert invs == [] and text_of(segs) == 'look: {"name": "sea'


def test_classify() -> None:
    assert classify('{"na') == "maybe"
    assert classify('{ "name" : "x" , "args"') == "maybe"
    assert classify('{"name": "x", "args":') == ("object", '"x"')
    assert classify('{"name": "x", "age":') == "no"
    assert classify("[ {") == "maybe"
    assert classify('[{"tool": {"function": "f"') == ("array", '"f"')
    assert classify('{"tool_calls": [ {') == ("tool_calls", None)
    assert classify("{x") == "no"


def test_call_from_json() -> None:
    assert call_from_json({"tool": {"function": "f"}}) == ("f", {})
    with pytest.raises(ValueError):
        call_from_json({"args": {}})
    with pytest.raises(ValueError):
        call_from_json({"name": "f", "arguments": "{bad"})
    with pytest.raises(ValueError):
        call_from_json([1])


JSON_EXAMPLES = [
    'Calling: {"tool": {"function": "read_file", "parameters": {"path": "/a"}}} now',
    '```json\n{"tool_calls": [{"function": {"name": "weather", "arguments": "{\\"city\\": '
    '\\"NYC\\"}"}}, {"function": {"name": "t", "arguments": "{}"}}]}\n```',
    'x [{"name": "a", "args": {}}, {"name": "b", "args": {"s": "]}"}}] y',
    '{ "name" :\n "search", "args": {"q": "a \\" } b"}} {"name": "Bob", "age": 3} {x} [1]',
    '{"name": "x", "args": {oops}} then {"name": "y", "args": {}}',
    'text {"name": "w", "args": {"content": "abc\\',
    '{"a": {"name": "inner", "args": {}}} {{{"name"',
    "{ [ { [",
]


# random texts made of the format's fragments (markers, cut markers, quotes, brackets...)
FRAGMENTS = [
    "{",
    "}",
    "[",
    "]",
    '"',
    ":",
    ",",
    '"name"',
    '"args"',
    '"tool"',
    '"function"',
    '"tool_calls"',
    '"arguments"',
    '"x"',
    "\\",
    '\\"',
    " ",
    "\n",
    "```json\n",
    "```",
    "1",
    '{"name": "f", "args": {}}',
    '{"tool": {"function": "g"',
    '[{"name": "h", "args": ',
    "x",
    '{"name":',
]

(
    test_chunking_never_changes_meaning,
    test_random_fragments_chunking_never_changes_meaning,
) = chunking_tests("json", JSON_EXAMPLES, FRAGMENTS)
