"""``--parser xml``: generic tools, write_file / patch_file / run_bash, shorthands, chunking."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamtool.core.parsers.xml import XmlParser
from streamtool.core.parsers.xml_args import parse_xml_arguments, parse_xml_arguments_tree

from .parsing_support import (
    chunking_tests,
    invocations,
    outcome,
    segments,
    text_of,
)

WRITE_MARKED = (
    'Creating it now.\n<tool name="write_file">\n  <arguments>\n'
    '    <arg name="path">/path/to/hello.py</arg>\n    <arg name="content">\n'
    "__START_CONTENT__\n"
    'def hello():\n    print("Hello, World!")\n'
    "__END_CONTENT__\n    </arg>\n  </arguments>\n</tool>\nDone."
)
HELLO = 'def hello():\n    print("Hello, World!")\n'


# -- generic tools -------------------------------------------------------------------------


def test_generic_tool_with_arguments_block() -> None:
    text = (
        'Let me look. <tool name="read_file"><arguments><arg name="path">/src/main.py</arg>'
        "</arguments></tool> ok"
    )
    segs, invs = outcome("xml", text)
    assert [s["type"] for s in segs] == ["text", "tool_call", "text"]
    tool = segs[1]
    assert tool["start"] == {"tool_name": "read_file"}
    assert tool["content"] == '<arguments><arg name="path">/src/main.py</arg></arguments>'
    assert tool["end"]["arguments"] == {"path": "/src/main.py"}
    assert invs == [{"id": tool["id"], "name": "read_file", "arguments": {"path": "/src/main.py"}}]
    assert text_of(segs) == "Let me look.  ok"


def test_bare_child_tags() -> None:
    invs = invocations("xml", '<tool name="read_file"><path>/src/main.py</path></tool>')
    assert invs[0]["arguments"] == {"path": "/src/main.py"}


def test_item_lists_and_nested_args() -> None:
    text = (
        '<tool name="create_tasks"><arguments><arg name="tasks">'
        '<item><arg name="task_name">x</arg></item><item><arg name="task_name">y</arg></item>'
        '</arg><arg name="options"><arg name="depth">2</arg><arg name="tags"><item>a</item>'
        "<item>b</item></arg></arg></arguments></tool>"
    )
    assert invocations("xml", text)[0]["arguments"] == {
        "tasks": [{"task_name": "x"}, {"task_name": "y"}],
        "options": {"depth": "2", "tags": ["a", "b"]},
    }


def test_stray_ampersand_and_less_than_in_values() -> None:
    text = (
        '<tool name="run_query"><arguments><arg name="where">n <= 0 && m > 1 &amp; a<b</arg>'
        '<arg name="note">R&D &lt;ok&gt; &#65;&#x42;</arg></arguments></tool>'
    )
    assert invocations("xml", text)[0]["arguments"] == {
        "where": "n <= 0 && m > 1 & a<b",
        "note": "R&D <ok> AB",
    }


def test_cdata_hides_a_closing_tool_tag() -> None:
    text = (
        '<tool name="save_note"><arguments><arg name="body"><![CDATA[use </tool> to close '
        "& <arg> stays]]></arg></arguments></tool>after"
    )
    segs, invs = outcome("xml", text)
    assert invs[0]["arguments"] == {"body": "use </tool> to close & <arg> stays"}
    assert text_of(segs) == "after"


def test_a_second_tool_right_after_the_first() -> None:
    text = (
        '<tool name="a"><arguments><arg name="x">1</arg></arguments></tool>'
        '<tool name="b"><arguments><arg name="y">2</arg></arguments></tool>'
    )
    invs = invocations("xml", text)
    assert [(i["name"], i["arguments"]) for i in invs] == [("a", {"x": "1"}), ("b", {"y": "2"})]
    assert invs[0]["id"] != invs[1]["id"]


def test_other_tags_and_comparisons_are_text() -> None:
    text = (
        "Use <b>bold</b>, a < b, x<y, <tools>, <toolbox>, <tool> (no name), "
        "<write_file> (no path), <Tool>, <tool_call> and </tool> here."
    )
    segs, invs = outcome("xml", text)
    assert invs == []
    assert [s["type"] for s in segs] == ["text"]
    assert segs[0]["content"] == text


def test_tag_names_are_case_insensitive_and_self_closing_tool() -> None:
    text = '<TOOL NAME="list_files"/> and <Tool name="ping"></TOOL>'
    invs = invocations("xml", text)
    assert [(i["name"], i["arguments"]) for i in invs] == [("list_files", {}), ("ping", {})]


def test_json_body_in_a_tool_tag() -> None:
    invs = invocations("xml", '<tool name="search">{"query": "streamtool", "limit": 3}</tool>')
    assert invs[0]["arguments"] == {"query": "streamtool", "limit": 3}


def test_unparsable_arguments_are_reported_not_replaced() -> None:
    handler_text = '<tool name="x">just some words</tool>'
    segs, invs = outcome("xml", handler_text)
    end = segs[0]["end"]
    assert end["arguments"] is None
    assert "error" in end and "tool call x" in end["error"]
    assert invs == [
        {"id": segs[0]["id"], "name": "x", "arguments": None, "raw_arguments": "just some words"}
    ]


# -- write_file / patch_file / run_bash ----------------------------------------------------


def test_write_file_with_markers_path_first() -> None:
    segs, invs = outcome("xml", WRITE_MARKED)
    assert [s["type"] for s in segs] == ["text", "write_file", "text"]
    wf = segs[1]
    assert wf["start"] == {"path": "/path/to/hello.py"}
    assert wf["content"] == HELLO  # only the file: no tags, no markers, first newline dropped
    assert wf["end"] == {"path": "/path/to/hello.py"}
    assert invs == [
        {
            "id": wf["id"],
            "name": "write_file",
            "arguments": {"path": "/path/to/hello.py", "content": HELLO},
        }
    ]
    assert text_of(segs) == "Creating it now.\n\nDone."


def test_write_file_path_after_content_arrives_in_end_metadata() -> None:
    text = (
        '<tool name="write_file"><arguments><arg name="content">__START_CONTENT__\nx = 1\n'
        '__END_CONTENT__</arg><arg name="path">/late.py</arg></arguments></tool>'
    )
    segs, invs = outcome("xml", text)
    assert segs[0]["start"] == {}
    assert segs[0]["end"] == {"path": "/late.py"}
    assert invs[0]["arguments"] == {"path": "/late.py", "content": "x = 1\n"}


def test_write_file_without_markers_runs_to_the_first_closing_arg() -> None:
    text = (
        '<tool name="write_file"><arguments><arg name="path">a.txt</arg>'
        '<arg name="content">line 1\nif a < b: pass\n</arg></arguments></tool>'
    )
    assert invocations("xml", text)[0]["arguments"] == {
        "path": "a.txt",
        "content": "line 1\nif a < b: pass\n",
    }


def test_end_marker_counts_only_before_the_closing_tag() -> None:
    body = 'MARK = "__END_CONTENT__"\nprint(MARK)\n'
    text = (
        '<tool name="write_file"><arg name="path">m.py</arg><arg name="content">'
        f"__START_CONTENT__\n{body}__END_CONTENT__ \n </arg></tool>"
    )
    assert invocations("xml", text)[0]["arguments"]["content"] == body


def test_bare_path_and_content_tags() -> None:
    text = '<tool name="write_file"><path>b.md</path><content># Title\n</content></tool>'
    assert invocations("xml", text)[0]["arguments"] == {"path": "b.md", "content": "# Title\n"}


def test_cdata_content_is_unwrapped() -> None:
    text = (
        '<tool name="write_file"><arg name="path">c.html</arg><arg name="content">'
        "<![CDATA[<p>a</arg></p>]]></arg></tool>"
    )
    assert invocations("xml", text)[0]["arguments"]["content"] == "<p>a</arg></p>"


def test_crlf_after_the_start_marker_is_one_newline() -> None:
    text = (
        '<tool name="write_file"><arg name="path">w.bat</arg><arg name="content">'
        "__START_CONTENT__\r\n\r\necho hi\r\n__END_CONTENT__</arg></tool>"
    )
    assert invocations("xml", text)[0]["arguments"]["content"] == "\r\necho hi\r\n"


def test_patch_file_with_and_without_markers() -> None:
    patch = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"
    marked = (
        '<tool name="patch_file"><arguments><arg name="path">x.py</arg><arg name="patch">'
        f"__START_PATCH__\n{patch}__END_PATCH__</arg></arguments></tool>"
    )
    plain = (
        '<tool name="patch_file"><arguments><arg name="patch">'
        f'{patch}</arg><arg name="path">x.py</arg></arguments></tool>'
    )
    for text in (marked, plain):
        segs, invs = outcome("xml", text)
        assert segs[0]["type"] == "patch_file"
        assert segs[0]["content"] == patch
        assert invs[0]["name"] == "patch_file"
        assert invs[0]["arguments"] == {"path": "x.py", "patch": patch}


def test_run_bash_streams_only_the_command() -> None:
    text = (
        'Listing: <tool name="run_bash"><arguments><arg name="command">ls -la && pwd</arg>'
        "</arguments></tool>"
    )
    segs, invs = outcome("xml", text)
    assert segs[1]["type"] == "run_bash"
    assert segs[1]["content"] == "ls -la && pwd"
    assert invs[0]["name"] == "run_bash"
    assert invs[0]["arguments"] == {"command": "ls -la && pwd"}


def test_shorthands() -> None:
    text = (
        'A <write_file path="/a.py">__START_CONTENT__\nprint(1)\n__END_CONTENT__</write_file>'
        ' B <write_file path="/b.txt">plain</write_file> C <run_bash>git status</run_bash> D'
    )
    segs, invs = outcome("xml", text)
    assert [s["type"] for s in segs] == [
        "text",
        "write_file",
        "text",
        "write_file",
        "text",
        "run_bash",
        "text",
    ]
    assert [(i["name"], i["arguments"]) for i in invs] == [
        ("write_file", {"path": "/a.py", "content": "print(1)\n"}),
        ("write_file", {"path": "/b.txt", "content": "plain"}),
        ("run_bash", {"command": "git status"}),
    ]
    assert text_of(segs) == "A  B  C  D"


def test_write_file_without_a_path_is_reported() -> None:
    segs, _ = outcome("xml", '<tool name="write_file"><arg name="content">x</arg></tool>')
    assert "has no path" in segs[0]["end"]["error"]


# -- unterminated calls ----------------------------------------------------------------------


def test_unterminated_generic_tool_is_incomplete_and_not_invoked() -> None:
    text = 'Reading <tool name="read_file"><arguments><arg name="path">/src/ma'
    segs, invs = outcome("xml", text)
    assert invs == []
    tool = segs[1]
    assert tool["content"] == '<arguments><arg name="path">/src/ma'
    assert tool["end"]["incomplete"] is True
    assert "unterminated tool call read_file" in tool["end"]["error"]


@pytest.mark.parametrize(
    "tail",
    [
        "", "x", "__END", "__END_CONTENT_", "__END_CONTENT__", "__END_CONTENT__\n  </ar", "\r",
    ],
)  # fmt: skip
def test_stream_ending_inside_marker_content_loses_nothing(tail: str) -> None:
    """Reference bug 3: an end inside marker content lost up to 35 characters, yet ran."""
    head = (
        '<tool name="write_file"><arguments><arg name="path">/p.py</arg><arg name="content">'
        "__START_CONTENT__\n"
    )
    body = "def f():\n    return 1\n" + tail
    for pieces in ([head + body], list(head + body)):
        segs, invs = outcome("xml", pieces)
        assert invs == []
        wf = segs[0]
        assert wf["type"] == "write_file"
        assert wf["content"] == body
        assert wf["end"]["incomplete"] is True and "error" in wf["end"]


def test_stream_ending_before_content_starts() -> None:
    segs, invs = outcome("xml", '<tool name="write_file"><arguments><arg name="path">/q')
    assert invs == []
    assert segs[0]["type"] == "write_file" and segs[0]["end"]["incomplete"] is True


def test_unterminated_shorthand() -> None:
    segs, invs = outcome("xml", "<run_bash>make te")
    assert invs == []
    assert segs[0]["content"] == "make te" and segs[0]["end"]["incomplete"] is True


def test_cut_opening_tag_is_text() -> None:
    segs, invs = outcome("xml", 'see <tool name="read_fi')
    assert invs == [] and text_of(segs) == 'see <tool name="read_fi'


# -- reference bug 2 and chunking ----------------------------------------------------------


@pytest.mark.parametrize("split", range(1, 40))
def test_newline_after_start_marker_does_not_depend_on_chunking(split: int) -> None:
    """Reference bug 2: dropping the newline after __START_CONTENT__ depended on chunking."""
    text = '<write_file path="/n.txt">  __START_CONTENT__\nline\n__END_CONTENT__</write_file>'
    at = text.index("__START_CONTENT__") - 20 + split
    assert invocations("xml", [text[:at], text[at:]])[0]["arguments"]["content"] == "line\n"


XML_EXAMPLES = [
    WRITE_MARKED,
    'Let me look. <tool name="read_file"><arguments><arg name="path">/src/main.py</arg>'
    '</arguments></tool> ok <tool name="read_file"><path>/x</path></tool>',
    '<tool name="create_tasks"><arguments><arg name="tasks"><item><arg name="task_name">x'
    '</arg></item><item><arg name="task_name">y</arg></item></arg></arguments></tool>',
    '<tool name="q"><arguments><arg name="w">n <= 0 && m > 1</arg></arguments></tool>',
    '<tool name="save"><arg name="b"><![CDATA[a </tool> b]]></arg></tool>tail',
    '<tool name="write_file"><arguments><arg name="content">__START_CONTENT__\r\nx\n'
    '__END_CONTENT__ marker __END_CONTENT__\n</arg><arg name="path">/late.py</arg>'
    "</arguments></tool>",
    '<tool name="patch_file"><arg name="path">p</arg><arg name="patch">__START_PATCH__\n-a\n+b\n'
    "__END_PATCH__</arg></tool>",
    '<tool name="write_file"><arg name="path">c</arg><arg name="content"><![CDATA[<a>]]>'
    "z</arg></tool>",
    '<TOOL name="run_bash"><arguments><arg name="command">ls -la</arg></arguments></TOOL>'
    "<run_bash>pwd</run_bash>",
    'a<write_file path="/a.py">__START_CONTENT__\nprint(1)\n__END_CONTENT__</write_file>b',
    "<b>x</b> a < b <tools> <tool> <write_file> <Tool name='t'/> </tool> < tool",
    'prefix <tool name="write_file"><arguments><arg name="path">/p.py</arg>'
    '<arg name="content">__START_CONTENT__\ndef f():\n    return 1\n__END_CON',
    'x <tool name="read_file"><arguments><arg name="path">/src/ma',
    "<run_bash>make te",
]


# -- the sans-IO parser and the argument parser on their own -------------------------------


def test_parser_alone_feed_finish() -> None:
    parser = XmlParser()
    events = parser.feed('hi <tool name="a">') + parser.feed("<x>1</x></tool>") + parser.finish()
    assert [e.segment_id for e in events if e.event_type.value == "SEGMENT_START"] == [
        "seg_1",
        "seg_2",
    ]
    assert events[-1].metadata == {"tool_name": "a", "arguments": {"x": "1"}}
    with pytest.raises(RuntimeError):
        parser.feed("more")


def test_xml_argument_parser_errors() -> None:
    assert parse_xml_arguments('<arg name="a"><b>bold</b></arg>') == {"a": "<b>bold</b>"}
    assert parse_xml_arguments('<arg name="a">1</arg><arg name="a">2</arg>') == {"a": ["1", "2"]}
    assert parse_xml_arguments('<arg name="e"/>') == {"e": ""}
    with pytest.raises(ValueError):
        parse_xml_arguments("plain words")
    with pytest.raises(ValueError):
        parse_xml_arguments('<arg name="a">text<arg name="b">1</arg></arg>')
    with pytest.raises(ValueError):
        parse_xml_arguments("<arg>no name</arg>")
    with pytest.raises(ValueError):
        parse_xml_arguments('<arg name="l"><item>1</item><arg name="x">2</arg></arg>')


def test_a_less_than_at_every_chunk_end_is_still_one_text_segment() -> None:
    segs = segments("xml", ["a <", "b <", "c"])
    assert segs == [{"id": "seg_1", "type": "text", "start": {}, "end": {}, "content": "a <b <c"}]


def test_text_between_file_arguments_is_reported() -> None:
    """Without markers, ``</arg>`` inside the content ends it: the rest is not silently lost."""
    text = (
        '<tool name="write_file"><arg name="path">t.xml</arg><arg name="content"><a></arg>'
        "<b/></a></arg></tool>"
    )
    segs, invs = outcome("xml", text)
    assert invs[0]["arguments"] == {"path": "t.xml", "content": "<a>"}
    assert segs[0]["end"]["error"] == (
        f"write_file call ({segs[0]['id']}) holds text outside its arguments, which was ignored"
    )


_NAMES = st.text(alphabet="abcxyz_-. ", min_size=1, max_size=6)
_VALUES = st.text(alphabet="ab &;>'\"\n\t\u00e9", max_size=12) | st.sampled_from(
    ["&amp;", "&lt;x&gt;", "R&D", "&#65;", "a && b"]
)


@settings(max_examples=60, deadline=None)
@given(
    args=st.lists(st.tuples(_NAMES, _VALUES), max_size=5),
    wrap=st.booleans(),
    space=st.sampled_from(["", "\n", "  \n  "]),
)
def test_flat_shortcut_agrees_with_the_tree_parser(
    args: list[tuple[str, str]], wrap: bool, space: str
) -> None:
    body = space.join(f'<arg name="{k}">{v}</arg>' for k, v in args)
    if wrap:
        body = f"<arguments>{space}{body}{space}</arguments>"
    assert parse_xml_arguments(body) == parse_xml_arguments_tree(body)
    for key, _ in args:
        assert key in parse_xml_arguments(body)


# random texts made of the format's fragments (markers, cut markers, quotes, brackets...)
FRAGMENTS = [
    '<tool name="a">',
    '<tool name="write_file">',
    '<tool name="patch_file">',
    '<tool name="run_bash">',
    "</tool>",
    "<arguments>",
    "</arguments>",
    '<arg name="path">',
    '<arg name="content">',
    '<arg name="patch">',
    '<arg name="command">',
    "</arg>",
    "__START_CONTENT__",
    "__END_CONTENT__",
    "__START_PATCH__",
    "__END_PATCH__",
    "<![CDATA[",
    "]]>",
    '<write_file path="/p">',
    "</write_file>",
    "<run_bash>",
    "</run_bash>",
    "<",
    ">",
    "\n",
    "\r",
    " ",
    "x",
    "<item>",
    "</item>",
    "<path>",
    "</path>",
    "<to",
    "ol",
    "&amp;",
    "&",
    '"',
    "<TOOL name='b'>",
    "/>",
]

(
    test_chunking_never_changes_meaning,
    test_random_fragments_chunking_never_changes_meaning,
) = chunking_tests("xml", XML_EXAMPLES, FRAGMENTS)


@pytest.mark.parametrize("quote", ['"', "'"])
def test_an_empty_arg_name_is_ordinary_model_output(quote) -> None:
    # name="" used to reach unescape_xml(None) inside a file tool
    text = (
        f'<tool name="write_file"><arguments><arg name={quote}{quote}>x</arg>'
        '<arg name="path">a.py</arg><arg name="content">hi</arg></arguments></tool>'
    )
    invs = invocations("xml", text)
    assert invs == [
        {"id": invs[0]["id"], "name": "write_file", "arguments": {"path": "a.py", "content": "hi"}}
    ]
    generic = invocations(
        "xml", f'<tool name="f"><arguments><arg name={quote}{quote}>x</arg></arguments></tool>'
    )
    assert generic[0]["arguments"] == {"": "x"}
