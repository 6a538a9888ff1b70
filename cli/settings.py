"""``[tool.streamtool]`` in the nearest ``pyproject.toml``: a project's own option defaults.

The table is looked for in the ``pyproject.toml`` of the current folder, else of the nearest
folder above it that has one (the first found is the project's, whether it has the table or
not). Its keys, and the options they give a default to:

========================  ===================================================================
``parser``                ``--parser`` of replay, inspect, report, record and diff
``converter``             ``--converter`` of replay, inspect, report, record and diff
``speed``                 ``--speed`` of replay, serve and demo (``max``, ``1``, ``2.5``...)
``match-ignore``          ``--match-ignore`` of serve (a field path, or a list of them)
``tape``                  ``--out`` of proxy: the tape folder it records into
========================  ===================================================================

A table ``[tool.streamtool.COMMAND]`` (``[tool.streamtool.serve]``) gives the same keys for one
command, over the top level's. An option given on the command line wins; so does the parser of
``STREAMTOOL_PARSER`` / ``AUTOBYTEUS_STREAM_PARSER``, over the file's ``parser``. A key the table
does not know, a value of the wrong kind and a file that is not TOML are one line naming the file
and the key, exit code 2, when a command starts (``streamtool --help`` and ``--version`` read
nothing).

The defaults reach the commands through click's ``default_map`` (the public way to give a
command's options defaults from a configuration file): :class:`ProjectDefaults` hands each
command the defaults of the keys it has, read and checked when that command is run.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

TABLE = "tool.streamtool"
PARSER_ENV = ("STREAMTOOL_PARSER", "AUTOBYTEUS_STREAM_PARSER")


class SettingsError(ValueError):
    """An unusable ``[tool.streamtool]``: the message names the file and the key."""


def _text(value: Any) -> str:
    if isinstance(value, str) and value.strip():
        return value
    raise ValueError("must be a non-empty string")


def _parser(value: Any) -> str:
    from streamtool.core.handlers import UnknownParser, check_parser_name

    return _known(value, check_parser_name, UnknownParser)


def _converter(value: Any) -> str:
    from streamtool.core.converters import UnknownConverter, check_converter_name

    return _known(value, check_converter_name, UnknownConverter)


def _known(value: Any, check: Callable[[str], Any], unknown: type[Exception]) -> str:
    """``value``, a name that ``check`` knows (else ``ValueError`` saying so)."""
    try:
        check(_text(value))
    except unknown as exc:
        raise ValueError(str(exc)) from None
    return value


def _speed(value: Any) -> str:
    from streamtool.core.model.speed import parse_speed

    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError("must be a number > 0 or 'max'")
    text = str(value)
    try:
        parse_speed(text)
    except ValueError:
        raise ValueError(f"must be a number > 0 or 'max', not {value!r}") from None
    return text


def _match_ignore(value: Any) -> list[str]:
    from streamtool.core.exchange.tape_match import parse_ignore_path

    paths = [value] if isinstance(value, str) else value
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise ValueError("must be a field path or a list of them (e.g. metadata.request_id)")
    for path in paths:
        try:
            parse_ignore_path(path)
        except ValueError:
            raise ValueError(f"{path!r} is not a field path (e.g. metadata.request_id)") from None
    return list(paths)


class Setting:
    """A key of the table: the commands whose option it sets, the option's parameter name, and
    its check (the value as the option takes it, or ``ValueError`` saying why not). (A plain
    class: every command imports this module, ``--help`` included.)"""

    __slots__ = ("commands", "param", "check")

    def __init__(self, commands: frozenset[str], param: str, check: Callable[[Any], Any]) -> None:
        self.commands = commands
        self.param = param
        self.check = check


_VIEWERS = frozenset({"replay", "inspect", "report", "record", "diff"})
SETTINGS: dict[str, Setting] = {
    "parser": Setting(_VIEWERS, "parser", _parser),
    "converter": Setting(_VIEWERS, "converter", _converter),
    "speed": Setting(frozenset({"replay", "serve", "demo"}), "speed", _speed),
    "match-ignore": Setting(frozenset({"serve"}), "match_ignore", _match_ignore),
    "tape": Setting(frozenset({"proxy"}), "out", _text),
}


def read_table(path: Path) -> dict[str, Any]:
    """The ``[tool.streamtool]`` table of ``path`` (empty when it has none)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SettingsError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if not _may_hold_table(data):
        return {}  # no table: the file is not parsed (a command starts faster)
    import tomllib

    try:
        document = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{path}: not valid TOML ({exc})") from None
    table = document.get("tool", {}).get("streamtool", {})
    if not isinstance(table, dict):
        raise SettingsError(f"{path}: [{TABLE}] must be a table")
    return table


# (compiled when first used, by ``re``'s own cache: a command run where no pyproject.toml is
# found never compiles them)
_TABLE_HEAD = rb'(?m)^[ \t]*(\[[ \t]*)?"?tool"?[ \t]*\.[ \t]*"?streamtool\b'
_TOOL_HEAD = rb'(?m)^[ \t]*\[[ \t]*"?tool"?[ \t]*\]'
_KEY = rb'(?m)^[ \t]*"?streamtool"?[ \t]*[.=]'


def _may_hold_table(data: bytes) -> bool:
    """Whether a TOML text may define ``tool.streamtool``: as a table (``[tool.streamtool]``,
    ``[tool.streamtool.serve]``), a dotted key (``tool.streamtool.speed = 2``), or a key of a
    ``[tool]`` table. False only when it cannot."""
    if re.search(_TABLE_HEAD, data):
        return True
    return bool(re.search(_TOOL_HEAD, data) and re.search(_KEY, data))


def command_defaults(
    table: dict[str, Any], command: str, path: Path, commands: Collection[str]
) -> dict[str, Any]:
    """The option defaults ``table`` gives ``command`` (parameter name -> value): the top
    level's, then the command's own table's. Every key of every table is checked, whichever
    command runs (``commands``: the names a sub-table may have): :class:`SettingsError` names
    ``path`` and the key."""
    known = ", ".join(SETTINGS)
    top = {k: v for k, v in table.items() if not isinstance(v, dict)}
    scopes: list[tuple[str | None, dict[str, Any]]] = [(None, top)]
    for key, value in table.items():
        if isinstance(value, dict):
            if key not in commands:
                raise SettingsError(f"{path}: [{TABLE}.{key}]: not a streamtool command")
            scopes.append((key, value))
    out: dict[str, Any] = {}
    for scope, values in scopes:
        for key, value in values.items():
            name = f"[{TABLE}{'.' + scope if scope else ''}] {key}"
            setting = SETTINGS.get(key)
            if setting is None:
                raise SettingsError(f"{path}: {name}: not a setting (known: {known})")
            if scope is not None and scope not in setting.commands:
                where = ", ".join(sorted(setting.commands))
                raise SettingsError(f"{path}: {name}: {scope} has no such option (only {where})")
            try:
                checked = setting.check(value)
            except ValueError as exc:
                raise SettingsError(f"{path}: {name}: {exc}") from None
            if command not in setting.commands or scope not in (None, command):
                continue
            if key == "parser" and any(os.environ.get(v) for v in PARSER_ENV):
                continue  # the environment's parser wins over the file's
            out[setting.param] = checked
    return out


class ProjectDefaults(dict[str, Any]):
    """The root ``default_map``: each command's defaults from the project's ``pyproject.toml``,
    read and checked when click creates that command's context (``commands``: the command
    names; ``path``: the project's ``pyproject.toml``, found by
    :func:`streamtool.cli.main.find_pyproject`). An unusable table is one line on standard
    error and exit code 2."""

    def __init__(self, commands: Collection[str], path: str | Path) -> None:
        super().__init__()
        self.commands = commands
        self.path = Path(path)

    def get(self, command: str, default: Any = None) -> Any:
        if command not in self.commands:
            return default  # the root's own options (--version) have none
        if command not in self:
            self[command] = self._read(command)
        return super().get(command, default)

    def _read(self, command: str) -> dict[str, Any]:
        path = self.path
        try:
            return command_defaults(read_table(path), command, path, self.commands)
        except SettingsError as exc:
            from .errors import fail

            fail(str(exc))
