"""The arguments of an XML tool call: ``parse_xml_arguments(body) -> dict``.

The body is what lies between ``<tool name="...">`` and ``</tool>``:

- ``<arguments><arg name="path">/a</arg></arguments>``: named arguments;
- ``<path>/a</path>``: bare child tags, the tag name is the argument name;
- ``<arg name="tasks"><item>..</item><item>..</item></arg>``: repeated ``<item>`` form a list;
- ``<arg name="a"><arg name="b">1</arg></arg>``: nested arguments form an object.

Values are strings (XML has no other type). The parser is lenient with model output: a ``<``
or ``&`` that does not start a tag or an entity is text (``n <= 0 && m > 1``); inside a value,
tags other than ``<arg>``/``<item>`` are kept as text; ``<![CDATA[...]]>`` is literal text.
It raises ``ValueError`` when the body is not arguments (text outside any argument, text mixed
with nested arguments), so that a caller reports it instead of inventing ``{}``.
"""

from __future__ import annotations

import re
from typing import Any

_ENTITY = re.compile(r"&(#[0-9]+|#[xX][0-9a-fA-F]+|lt|gt|amp|quot|apos);")
_NAMED = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "apos": "'"}


def _entity(m: re.Match[str]) -> str:
    body = m.group(1)
    if body[0] == "#":
        try:
            code = int(body[2:], 16) if body[1] in "xX" else int(body[1:])
            return chr(code)
        except (ValueError, OverflowError):
            return m.group(0)
    return _NAMED[body]


def unescape_xml(text: str) -> str:
    """Decode the five XML entities and character references; a stray ``&`` stays as it is."""
    if "&" not in text:
        return text
    return _ENTITY.sub(_entity, text)


_TOKEN = re.compile(
    r"<!\[CDATA\[(?P<cdata>[\s\S]*?)\]\]>"
    r"|<(?P<close>/)?(?P<name>[A-Za-z_][\w.\-:]*)"
    r"(?P<attrs>(?:\s+[A-Za-z_][\w.\-:]*\s*=\s*(?:\"[^\"]*\"|'[^']*'))*)\s*(?P<selfclose>/)?>"
)
_ATTR = re.compile(r"([A-Za-z_][\w.\-:]*)\s*=\s*(?:\"([^\"]*)\"|'([^']*)')")


class _Element:
    __slots__ = ("tag", "key", "parts", "children", "structural")

    def __init__(self, tag: str, key: str | None, structural: frozenset[str] | None) -> None:
        self.tag = tag  # the tag name, to match the close tag
        self.key = key  # argument name (None for <arguments>, <item> and the root)
        self.parts: list[str] = []  # text (decoded) and literal non-structural markup
        self.children: list[_Element] = []
        # tags that open child elements here; None means every tag (argument containers)
        self.structural = structural


_IN_VALUE = frozenset({"arg", "item"})


def _attrs(raw: str) -> dict[str, str]:
    return {m.group(1): unescape_xml(m.group(2) or m.group(3) or "") for m in _ATTR.finditer(raw)}


# the common case, flat named arguments with plain values, in one regex match
_FLAT = re.compile(
    r'\s*(?:<arguments>\s*)?((?:<arg name="[^"<>&]*">[^<]*</arg>\s*)*)(?:</arguments>\s*)?'
)
_FLAT_ARG = re.compile(r'<arg name="([^"<>&]*)">([^<]*)</arg>')


def parse_xml_arguments(body: str) -> dict[str, Any]:
    flat = _FLAT.fullmatch(body)
    if flat is not None:
        out: dict[str, Any] = {}
        for key, value in _FLAT_ARG.findall(flat.group(1)):
            _put(out, key, unescape_xml(value))
        return out
    return parse_xml_arguments_tree(body)


def parse_xml_arguments_tree(body: str) -> dict[str, Any]:
    """The general parser (``parse_xml_arguments`` takes a shortcut for flat arguments)."""
    root = _Element("", None, None)
    stack = [root]
    pos = 0
    for m in _TOKEN.finditer(body):
        if m.start() > pos:
            stack[-1].parts.append(unescape_xml(body[pos : m.start()]))
        pos = m.end()
        top = stack[-1]
        cdata = m.group("cdata")
        if cdata is not None:
            top.parts.append(cdata)
            continue
        tag = m.group("name")
        low = tag.lower()
        if m.group("close"):
            depth = _open_depth(stack, low)
            if depth is None:
                top.parts.append(m.group(0))  # a close tag nothing opened: text
            else:
                del stack[depth:]
            continue
        if top.structural is not None and low not in top.structural:
            top.parts.append(m.group(0))  # markup inside a value: text
            continue
        attrs = _attrs(m.group("attrs") or "")
        if low == "arguments" and top.structural is None:
            element = _Element(low, None, None)
        elif low == "item":
            element = _Element(low, None, _IN_VALUE)
        elif low == "arg":
            key = attrs.get("name")
            if key is None:
                raise ValueError("<arg> without a name attribute")
            element = _Element(low, key, _IN_VALUE)
        else:
            element = _Element(low, tag, _IN_VALUE)
        top.children.append(element)
        if not m.group("selfclose"):
            stack.append(element)
    if pos < len(body):
        stack[-1].parts.append(unescape_xml(body[pos:]))
    value = _container_value(root)
    if not isinstance(value, dict):
        raise ValueError("the tool body holds no arguments")
    return value


def _open_depth(stack: list[_Element], low: str) -> int | None:
    for depth in range(len(stack) - 1, 0, -1):
        if stack[depth].tag == low:
            return depth
    return None


def _container_value(element: _Element) -> dict[str, Any]:
    """Arguments of the root or of ``<arguments>``: every child element is one argument."""
    if any(p.strip() for p in element.parts):
        raise ValueError("text outside any argument")
    out: dict[str, Any] = {}
    for child in element.children:
        if child.key is None and child.tag == "arguments":
            for key, value in _container_value(child).items():
                _put(out, key, value)
        elif child.key is None:
            raise ValueError("<item> outside an argument")
        else:
            _put(out, child.key, _value(child))
    return out


def _value(element: _Element) -> Any:
    if not element.children:
        return "".join(element.parts)
    if any(p.strip() for p in element.parts):
        raise ValueError(f"argument {element.key or element.tag!r} mixes text and arguments")
    items = [c for c in element.children if c.tag == "item"]
    if items:
        if len(items) != len(element.children):
            raise ValueError(f"argument {element.key!r} mixes <item> and <arg>")
        return [_value(item) for item in items]
    out: dict[str, Any] = {}
    for child in element.children:
        assert child.key is not None
        _put(out, child.key, _value(child))
    return out


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    """A repeated argument name keeps every value (as a list) rather than the last one."""
    if key in out:
        previous = out[key]
        if isinstance(previous, _Repeated):
            previous.append(value)
        else:
            out[key] = _Repeated([previous, value])
    else:
        out[key] = value


class _Repeated(list[Any]):
    """A list made from a repeated argument name (a plain list to callers)."""
