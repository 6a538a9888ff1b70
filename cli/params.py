"""How every command's parameters are parsed and shown.

typer converts each value with a pydantic ``TypeAdapter``; importing pydantic and building the
adapters costs more than the rest of a small replay. The parameters of streamtool's commands are
plain (text, whole numbers, numbers, paths, choices, lists of them), so :func:`plain_params`
gives them a converter of their own: no pydantic on the way, and a bad value is one plain
sentence ("'x' is not a whole number."). Help shows no Python types: ``TEXT``, ``INTEGER``,
``NUMBER``, ``PATH``, choices as ``[a|b|c]``, arguments by name (``FILE``, ``PATHS...``).
A parameter of any other kind keeps typer's own handling.

This goes through public methods of typer's parameter classes (``get_runtime_param``,
``display_type``, ``get_usage_pieces``), none of their private names. typer's documented
``parser=`` would not do: it wraps the parser in a pydantic adapter, which is what costs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, get_args, get_origin

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption
from typer.models import OptionInfo

from .choices import complete_converter, complete_parser

# annotation -> the word help shows for it
_LABELS: dict[Any, str] = {str: "TEXT", int: "INTEGER", float: "NUMBER", Path: "PATH"}


def choices(names: Iterable[str]) -> str:
    """A metavar listing the values a text option takes: ``[a|b|c]``."""
    return "[" + "|".join(names) + "]"


class LazyChoiceInfo(OptionInfo):
    """An option whose choices are found when they are first shown (``--help``), not when the
    command is defined: finding them costs more than a small replay can spare."""

    choices_of: Callable[[], Iterable[str]]


def choice_option(
    *flags: str,
    names: Iterable[str] | Callable[[], Iterable[str]],
    complete: Callable[[str], list[str]],
    help: str,
    callback: Callable[[Any], Any] | None = None,
) -> Any:
    """An option that takes one of ``names``: they are its metavar (``[a|b|c]``), and
    ``complete`` completes its value. ``names`` may be a function that gives them: it is called
    when help shows them."""
    info = typer.Option(
        *flags,
        metavar=None if callable(names) else choices(names),
        autocompletion=complete,
        callback=callback,
        help=help,
    )
    if callable(names):
        info.__class__ = LazyChoiceInfo
        info.choices_of = names
    return info


def _registry_choices() -> tuple[str, str]:
    # the built-ins only: listing the plugins means reading every installed package's entry
    # points, which ``--help`` need not pay for (``streamtool converters`` lists them all)
    from streamtool.core.converters import BUILTIN_CONVERTERS
    from streamtool.core.handlers import BUILTIN_PARSERS

    return choices(BUILTIN_PARSERS), choices(["auto", *BUILTIN_CONVERTERS])


# metavars of --parser and --converter: the built-in names
PARSERS, CONVERTERS = _registry_choices()


def converter_option(help: str, flag: str = "--converter") -> Any:
    """A command's ``--converter`` (a converter's name, or ``auto``): the built-ins as its metavar,
    every registered name completed. Each command says what it converts; ``flag`` names an
    option of the same kind for one side (diff's ``--converter-a``)."""
    return typer.Option(flag, metavar=CONVERTERS, autocompletion=complete_converter, help=help)


def parser_option(help: str, flag: str = "--parser") -> Any:
    """A command's ``--parser`` (a handler's name): as :func:`converter_option`, for handlers."""
    return typer.Option(flag, metavar=PARSERS, autocompletion=complete_parser, help=help)


# the --converter and --parser of a command that shows one stream as it was recorded
ConverterOption = Annotated[str, converter_option("Wire API converter: auto, or a converter name.")]
HandlerOption = Annotated[
    str | None, parser_option("Handler (default: $STREAMTOOL_PARSER, else api_tool_call).")
]


def no_color_option() -> Any:
    """``--no-color``, the same on every command that colours its output."""
    return typer.Option("--no-color", help="No colour (NO_COLOR is honoured too).")


def _one_of(values: list[str]) -> str:
    if len(values) == 1:
        return values[0]
    return ", ".join(values[:-1]) + " or " + values[-1]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


_TRUE = ("1", "true", "yes", "y", "on")
_FALSE = ("0", "false", "no", "n", "off", "")


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise ValueError(f"{value!r} is not true or false.")


def _integer(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    try:
        return int(str(value).strip())
    except ValueError:
        raise ValueError(f"{value!r} is not a whole number.") from None


def _number(value: Any) -> float:
    if isinstance(value, float):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    try:
        number = float(str(value).strip())
    except ValueError:
        raise ValueError(f"{value!r} is not a number.") from None
    if math.isnan(number):
        raise ValueError(f"{value!r} is not a number.")
    return number


def _path(value: Any) -> Path:
    return value if isinstance(value, Path) else Path(value)


def _choice(enum: type[Enum], case_sensitive: bool) -> Callable[[Any], Any]:
    members = list(enum)

    def convert(value: Any) -> Any:
        if isinstance(value, enum):
            return value
        text = str(value)
        for member in members:
            name = str(member.value)
            if name == text or (not case_sensitive and name.lower() == text.lower()):
                return member
        valid = [str(m.value) for m in members]
        raise ValueError(f"{text!r} is not one of {_one_of(valid)}.")

    return convert


def _path_checks(info: Any) -> bool:
    """True when the parameter asks typer for path checks (exists, writable, ...)."""
    return bool(
        getattr(info, "exists", False)
        or getattr(info, "writable", False)
        or getattr(info, "resolve_path", False)
        or getattr(info, "allow_dash", False)
        or getattr(info, "path_type", None) is not None
        or not getattr(info, "file_okay", True)
        or not getattr(info, "dir_okay", True)
    )


def _converter(annotation: Any, info: Any) -> Callable[[Any], Any] | None:
    """A converter for one value of ``annotation``, or None to leave it to typer."""
    if getattr(info, "parser", None) is not None:
        return None
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return _choice(annotation, bool(getattr(info, "case_sensitive", True)))
    if getattr(info, "min", None) is not None or getattr(info, "max", None) is not None:
        return None
    if annotation is bool:
        return _flag
    if annotation is str:
        return _text
    if annotation is int:
        return _integer
    if annotation is float:
        return _number
    if annotation is Path and not _path_checks(info):
        return _path
    return None


class _PlainRuntime:
    """What typer asks of a parameter's runtime converter: ``coerce(value, param, ctx)``."""

    def __init__(self, convert: Callable[[Any], Any], many: bool) -> None:
        self.convert = convert
        self.many = many

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        multi = param.multiple or param.nargs == -1
        if value is None:
            return () if multi else None
        try:
            if self.many or multi:
                if isinstance(value, str):
                    value = [value]
                return [self.convert(item) for item in value]
            return self.convert(value)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), ctx=ctx, param=param) from None


def _runtime(param: Any) -> _PlainRuntime | None:
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is None:
        return None
    annotation = descriptor.annotation
    info = descriptor.parameter_info
    many = False
    if get_origin(annotation) is list:
        (annotation,) = get_args(annotation) or (None,)
        many = True
    convert = _converter(annotation, info)
    return None if convert is None else _PlainRuntime(convert, many)


_UNSET: Any = object()


def _runtime_of(param: Any) -> _PlainRuntime | None:
    """The parameter's plain converter (None: typer's own), made when first asked for."""
    runtime = param.plain_runtime
    if runtime is _UNSET:
        runtime = param.plain_runtime = _runtime(param)
    return runtime


def _label(param: Any) -> str | None:
    """``[a|b]`` for choices, else ``TEXT``/``INTEGER``/``NUMBER``/``PATH``; None: typer's."""
    descriptor = param.type_descriptor
    if isinstance(descriptor.parameter_info, LazyChoiceInfo):
        return choices(descriptor.parameter_info.choices_of())
    annotation = descriptor.annotation
    if get_origin(annotation) is list:
        (annotation,) = get_args(annotation) or (None,)
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return choices(str(m.value) for m in annotation)
    return _LABELS.get(annotation)


class PlainOption(TyperOption):
    plain_runtime: _PlainRuntime | None = _UNSET

    def get_runtime_param(self) -> Any:
        return _runtime_of(self) or super().get_runtime_param()

    def display_type(self, ctx: Any) -> str:
        return _label(self) or super().display_type(ctx)


class PlainArgument(TyperArgument):
    plain_runtime: _PlainRuntime | None = _UNSET

    def get_runtime_param(self) -> Any:
        return _runtime_of(self) or super().get_runtime_param()

    @property
    def display_name_raw(self) -> str:
        return self.metavar or (self.name or "").upper()

    def display_type(self, ctx: Any) -> str:
        label = _label(self)
        # an argument is shown by its name; only its choices are worth adding
        if label is not None and label.startswith("["):
            return label
        return ""

    def display_type_rich(self, ctx: Any) -> str | None:
        return self.display_type(ctx) or None

    def get_usage_pieces(self, ctx: Any) -> list[str]:
        name = self.display_name_raw
        if self.nargs != 1:
            name += "..."
        return [name if self.required else f"[{name}]"]


def plain_help_option(option: Any) -> Any:
    """The help option a command makes for itself (-h/--help), made plain as well."""
    if type(option) is TyperOption:
        option.__class__ = PlainOption
    return option


class PlainCommand(TyperCommand):
    def get_help_option(self, ctx: Any) -> Any:
        return plain_help_option(super().get_help_option(ctx))


def plain_params(command: Any) -> Any:
    """Give ``command``'s parameters (a group's: its commands' too) plain parsing and help."""
    if type(command) is TyperCommand:
        command.__class__ = PlainCommand
    for param in command.params:
        if type(param) is TyperOption:
            param.__class__ = PlainOption
        elif type(param) is TyperArgument:
            param.__class__ = PlainArgument
    if isinstance(command, TyperGroup):
        for sub in command.commands.values():
            plain_params(sub)
    return command
