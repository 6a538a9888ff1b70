"""``--parser sentinel``: ``[[SEG_START {header}]]body[[SEG_END]]`` blocks."""

from __future__ import annotations

import pytest

from .parsing_support import chunking_tests, invocations, outcome, text_of

WRITE = '[[SEG_START {"type":"write_file","path":"/a.py"}]]print("hi")\n[[SEG_END]]'


def test_write_file_block() -> None:
    segs, invs = outcome("sentinel", f"Writing.\n{WRITE}\nDone.")
    assert [s["type"] for s in segs] == ["text", "write_file", "text"]
    assert segs[1]["start"] == {"path": "/a.py"}
    assert segs[1]["content"] == 'print("hi")\n'
    assert invs == [
        {
            "id": segs[1]["id"],
            "name": "write_file",
            "arguments": {"path": "/a.py", "content": 'print("hi")\n'},
        }
    ]
    assert text_of(segs) == "Writing.\n\nDone."


def test_tool_with_header_arguments_and_tool_call_alias() -> None:
    text = (
        '[[SEG_START {"type":"tool","tool_name":"create_tasks","arguments":{"tasks":[]}}]]'
        "[[SEG_END]]"
        '[[SEG_START {"type": "tool_call", "name": "read_file"}]]{"path": "/x"}[[SEG_END]]'
        '[[SEG_START {"type":"tool","tool_name":"grep"}]]<arg name="pattern">a&b</arg>[[SEG_END]]'
    )
    segs, invs = outcome("sentinel", text)
    assert [(i["name"], i["arguments"]) for i in invs] == [
        ("create_tasks", {"tasks": []}),
        ("read_file", {"path": "/x"}),
        ("grep", {"pattern": "a&b"}),
    ]
    assert segs[0]["start"] == {"tool_name": "create_tasks", "arguments": {"tasks": []}}
    assert segs[1]["start"] == {"tool_name": "read_file"}


def test_patch_file_run_bash_and_text_blocks() -> None:
    text = (
        'a[[SEG_START {"type":"text"}]]b[[SEG_END]]c'
        '[[SEG_START {"type":"patch_file","path":"x.py"}]]-a\n+b\n[[SEG_END]]'
        '[[SEG_START {"type":"run_bash"}]]ls -la[[SEG_END]]'
    )
    segs, invs = outcome("sentinel", text)
    assert [s["type"] for s in segs] == ["text", "patch_file", "run_bash"]
    assert segs[0]["content"] == "abc"
    assert [(i["name"], i["arguments"]) for i in invs] == [
        ("patch_file", {"path": "x.py", "patch": "-a\n+b\n"}),
        ("run_bash", {"command": "ls -la"}),
    ]


def test_brackets_inside_header_strings_do_not_cut_it() -> None:
    """Reference bug 4: ``]]`` inside the header's JSON cut the header."""
    text = (
        '[[SEG_START {"type":"tool","tool_name":"note","arguments":{"text":"a]]b [[SEG_END]] '
        '}{ \\" ]]"}}]]body[[SEG_END]]'
    )
    invs = invocations("sentinel", text)
    assert invs[0]["arguments"] == {"text": 'a]]b [[SEG_END]] }{ " ]]'}


@pytest.mark.parametrize("split", range(1, len("[[SEG_START")))
def test_start_marker_split_across_chunks(split: int) -> None:
    """Reference bug 1: a ``[[SEG_START`` split across chunks was not recognised."""
    text = "before " + WRITE
    at = len("before ") + split
    segs, invs = outcome("sentinel", [text[:at], text[at:]])
    assert [s["type"] for s in segs] == ["text", "write_file"]
    assert invs[0]["arguments"] == {"path": "/a.py", "content": 'print("hi")\n'}


@pytest.mark.parametrize(
    "header",
    [
        "not json",
        '{"type":"unknown"}',
        '{"type":"tool"}',
        '["write_file"]',
        '{"type":"write_file", "path": "/a"',
        '{"type":"write_file"} x',
    ],
)
def test_invalid_header_is_text(header: str) -> None:
    text = f"x [[SEG_START {header}]]body[[SEG_END]] y"
    segs, invs = outcome("sentinel", text)
    assert invs == []
    assert [s["type"] for s in segs] == ["text"]
    assert segs[0]["content"] == text


def test_a_block_after_an_unfinished_header_is_found() -> None:
    text = '[[SEG_START {"type": "text" [[SEG_START {"type":"run_bash"}]]ls[[SEG_END]]'
    segs, invs = outcome("sentinel", text)
    assert [(i["name"], i["arguments"]) for i in invs] == [("run_bash", {"command": "ls"})]
    assert text_of(segs) == '[[SEG_START {"type": "text" '


@pytest.mark.parametrize("tail", ["", "x", "[", "[[SEG_", "[[SEG_END]"])
def test_unterminated_block_keeps_its_content(tail: str) -> None:
    text = '[[SEG_START {"type":"write_file","path":"/a.py"}]]line 1\n' + tail
    for pieces in ([text], list(text)):
        segs, invs = outcome("sentinel", pieces)
        assert invs == []
        assert segs[0]["content"] == "line 1\n" + tail
        assert segs[0]["end"]["incomplete"] is True
        assert "unterminated write_file block" in segs[0]["end"]["error"]


def test_write_file_without_path_is_reported() -> None:
    segs, _ = outcome("sentinel", '[[SEG_START {"type":"write_file"}]]x[[SEG_END]]')
    assert "has no path" in segs[0]["end"]["error"]


def test_unparsable_body_arguments_are_reported() -> None:
    segs, invs = outcome("sentinel", '[[SEG_START {"type":"tool","tool_name":"t"}]]{bad[[SEG_END]]')
    assert segs[0]["end"]["arguments"] is None and "error" in segs[0]["end"]
    assert invs[0]["arguments"] is None and invs[0]["raw_arguments"] == "{bad"


SENTINEL_EXAMPLES = [
    f"Writing.\n{WRITE}\nDone.",
    '[[SEG_START {"type":"tool","tool_name":"n","arguments":{"t":"a]]b \\" }"}}]]'
    '[[SEG_END]][[SEG_START  \n{"type":"run_bash"}  ]]ls[[SEG_END]]',
    'a[[SEG_START {"type":"text"}]]b[[SEG_END]]c[[SEG_START bad]]d[[SEG_START {"type":"x"}]]',
    '[[SEG_START {"type": "text" [[SEG_START {"type":"run_bash"}]]ls[[SEG_END]]',
    '[[SEG_START {"type":"write_file","path":"/a"}]]x [[SEG_END] [[SEG_EN',
    "[[SEG_STAR [[ [[SEG_START",
]


# random texts made of the format's fragments (markers, cut markers, quotes, brackets...)
FRAGMENTS = [
    "[[SEG_START",
    " ",
    "{",
    "}",
    '"type"',
    ":",
    '"tool"',
    '"write_file"',
    '"text"',
    '"run_bash"',
    ",",
    '"tool_name"',
    '"t"',
    '"path"',
    '"a]]b"',
    "]]",
    "]",
    "[",
    "[[SEG_END]]",
    "[[SEG_",
    "x",
    "\n",
    '"',
    "\\",
    '[[SEG_START {"type":"write_file","path":"/a"}]]',
    '[[SEG_START {"type":"tool","tool_name":"t"}]]',
]

(
    test_chunking_never_changes_meaning,
    test_random_fragments_chunking_never_changes_meaning,
) = chunking_tests("sentinel", SENTINEL_EXAMPLES, FRAGMENTS)
