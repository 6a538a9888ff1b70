"""Code with line numbers drawn straight from a pygments lexer's tokens, as rich segments.

The tree shows file contents the way rich's ``Syntax`` draws them (theme ``ansi_dark``, line
numbers, the terminal's own background, tabs of 4 columns), and when every line fits it draws
them here instead, segment for segment the same, without the ``Text`` that ``Syntax`` builds,
splits into lines and renders again line by line.

What ``Syntax`` draws, for code whose lines all fit (no wrapping, no cropping):

- the code gets a final line end if it has none, then its tabs are expanded; the lexer sees that
  (and itself drops a leading BOM and turns CR LF and CR into LF);
- each token's text loses the control characters rich never prints (``strip_control_codes``);
  a token whose theme style is empty gets no style of its own, so neighbouring tokens of that
  kind make one segment, while every styled token is a segment of its own (rich draws each
  segment with its own escape codes, so the boundaries show in the bytes);
- every piece of text is drawn as ``on default`` over the token's style, and a line with no
  text is one empty segment;
- a line is two spaces, its number (dim) right-aligned to the widest number of the code (counted
  from the line ends of the code as given) and a space, then the code and a line end. The line
  after the last line end is shown only when the code itself ended with one.

Importing this module imports neither ``rich.syntax`` nor pygments: the lexer comes from the
caller. ``tests/test_code_view.py`` holds the drawing to ``Syntax``'s bytes and the theme below
to rich's own.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.cells import cell_len
from rich.control import strip_control_codes
from rich.measure import Measurement
from rich.segment import Segment
from rich.style import Style

__all__ = ["ANSI_DARK", "code_segments", "measure_code", "token_style"]

# rich's ``ansi_dark`` theme (``rich.syntax.ANSI_DARK``): pygments token type, as the tuple of its
# names (pygments' ``String`` is ``Literal.String``, its ``Whitespace`` is ``Text.Whitespace``), ->
# style. A token takes the style of its nearest listed ancestor (``Name.Function.Magic`` ->
# ``Name.Function``); the root (``Token``) is never looked up: a token with no listed ancestor
# has no style.
ANSI_DARK: dict[tuple[str, ...], str] = {
    (): "",
    ("Text", "Whitespace"): "bright_black",
    ("Comment",): "dim",
    ("Comment", "Preproc"): "bright_cyan",
    ("Keyword",): "bright_blue",
    ("Keyword", "Type"): "bright_cyan",
    ("Operator", "Word"): "bright_magenta",
    ("Name", "Builtin"): "bright_cyan",
    ("Name", "Function"): "bright_green",
    ("Name", "Namespace"): "underline bright_cyan",
    ("Name", "Class"): "underline bright_green",
    ("Name", "Exception"): "bright_cyan",
    ("Name", "Decorator"): "bold bright_magenta",
    ("Name", "Variable"): "bright_red",
    ("Name", "Constant"): "bright_red",
    ("Name", "Attribute"): "bright_cyan",
    ("Name", "Tag"): "bright_blue",
    ("Literal", "String"): "yellow",
    ("Literal", "Number"): "bright_blue",
    ("Generic", "Deleted"): "bright_red",
    ("Generic", "Inserted"): "bright_green",
    ("Generic", "Heading"): "bold",
    ("Generic", "Subheading"): "bold bright_magenta",
    ("Generic", "Prompt"): "bold",
    ("Generic", "Error"): "bright_red",
    ("Error",): "underline red",
}

# the code's background: the terminal's own (``Syntax(background_color="default")``), set both
# as the text's style and over every token
_BACKGROUND = Style(bgcolor="default")
_ON_DEFAULT = Style.parse("on default")
_UNSTYLED = _BACKGROUND + _ON_DEFAULT
_NUMBER = Style(dim=True)
_GUTTER = Segment("  ", Style.null())
_LINE_END = Segment("\n")
_EMPTY = Segment("")
# characters that strip_control_codes removes (a quick test before stripping every token)
_CONTROL = ("\x07", "\x08", "\x0b", "\x0c", "\r")

# token type -> the style its text is drawn with, ``None`` for a token with no style of its own
_drawn: dict[Any, Style | None] = {}


def token_style(token_type: tuple[str, ...]) -> Style:
    """The theme's style for a pygments token type (a null style when the theme has none)."""
    token = tuple(token_type)
    while token:
        definition = ANSI_DARK.get(token)
        if definition is not None:
            return Style.parse(definition)
        token = token[:-1]
    return Style.null()


def _drawn_style(token_type: Any) -> Style | None:
    style = token_style(token_type)
    drawn = _BACKGROUND + style + _ON_DEFAULT if style else None
    _drawn[token_type] = drawn
    return drawn


def code_segments(code: str, lexer: Any, start_line: int, tab_size: int) -> list[Segment]:
    """The segments of ``code`` highlighted by ``lexer``, each line numbered from
    ``start_line``: what ``Syntax`` draws when no line needs wrapping or cropping."""
    ends_on_nl = code.endswith("\n")
    source = (code if ends_on_nl else code + "\n").expandtabs(tab_size)
    strip = any(c in source for c in _CONTROL)
    number_width = len(str(start_line + code.count("\n")))
    drawn = _drawn
    unstyled = _UNSTYLED
    out: list[Segment] = []
    append = out.append
    line_no = start_line
    line: list[Segment] = []  # the current line's segments, but for ``run``
    run = ""  # unstyled text not yet a segment: unstyled neighbours make one segment

    def end_line() -> None:
        nonlocal line, run, line_no
        if run:
            line.append(Segment(run, unstyled))
            run = ""
        append(_GUTTER)
        append(Segment(str(line_no).rjust(number_width) + " ", _NUMBER))
        out.extend(line or (_EMPTY,))
        append(_LINE_END)
        line = []
        line_no += 1

    ended = False  # the last text seen was a line end
    for token_type, value in lexer.get_tokens(source):
        if strip:
            value = strip_control_codes(value)
        if not value:
            continue
        try:
            style = drawn[token_type]
        except KeyError:
            style = _drawn_style(token_type)
        pieces: Iterable[str] = value.split("\n") if "\n" in value else (value,)
        first = True
        for piece in pieces:
            if not first:
                end_line()
            first = False
            if not piece:
                continue
            if style is None:
                run += piece
            else:
                if run:
                    line.append(Segment(run, unstyled))
                    run = ""
                line.append(Segment(piece, style))
        ended = value.endswith("\n")
    if not (ended and not ends_on_nl):
        # the line after the last line end is drawn when the code ended with one (rich keeps a
        # final blank line then) or when text follows it
        end_line()
    return out


def measure_code(code: str, start_line: int) -> Measurement:
    """What ``Syntax`` measures for ``code`` with line numbers: the number column at least, the
    numbers, a space and the widest line at most (lines as ``str.splitlines`` cuts them)."""
    numbers = len(str(start_line + code.count("\n"))) + 2
    lines = code.splitlines()
    widest = max(map(cell_len, lines)) if lines else 0
    return Measurement(numbers, numbers + widest + 1)
