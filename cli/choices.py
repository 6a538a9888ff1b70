"""The values of options that take a name from a known set: their completion and their check.

Every option whose value is one of a known set (a parser, a converter, an API, a quirk id, a
severity, a column) completes that set in bash, zsh and fish (``autocompletion=``, typer's
public hook), and a value outside it is refused at parse time with exit code 2 and the nearest
valid value ("did you mean ...?"). Nothing here imports a converter or a handler: the names come
from the registries and the model's vocabularies (quirk ids, severities, error kinds).
"""

import difflib
from collections.abc import Callable, Iterable

import typer


def did_you_mean(value: str, valid: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the valid name nearest ``value``, else ``""``."""
    close = difflib.get_close_matches(value, list(valid), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def refuse(value: str, what: str, valid: Iterable[str], listing: str | None = None) -> str:
    """The one-line message for ``value`` that is not a ``what``."""
    names = list(valid)
    hint = did_you_mean(value, names)
    if not hint:
        hint = f"; valid: {listing}" if listing else f"; valid: {', '.join(names)}"
    return f"{value!r} is not {what}{hint}"


def quirk_ids() -> list[str]:
    from streamtool.core.model.quirk_ids import QuirkId

    return [q.value for q in QuirkId.members()]


def severities() -> list[str]:
    from streamtool.core.model.quirks import Severity

    return [s.value for s in Severity]


def error_kinds() -> list[str]:
    """The error kinds a replay reports (``errors[].kind``)."""
    from streamtool.core.model.vocabulary import ErrorKind

    return [k.value for k in ErrorKind]


def parser_names() -> list[str]:
    from streamtool.core.handlers import parser_names as names

    return list(names())


def converter_names() -> list[str]:
    from streamtool.core.converters import converter_names as names

    return ["auto", *names()]


def _complete(names: Callable[[], Iterable[str]]) -> Callable[[str], list[str]]:
    def complete(incomplete: str) -> list[str]:
        return [n for n in names() if n.startswith(incomplete)]

    return complete


def _complete_list(names: Callable[[], Iterable[str]]) -> Callable[[str], list[str]]:
    """Completion of a comma-separated list: the last item completes, the others are kept."""

    def complete(incomplete: str) -> list[str]:
        done, _, last = incomplete.rpartition(",")
        prefix = f"{done}," if done else ""
        given = set(done.split(",")) if done else set()
        return [prefix + n for n in names() if n.startswith(last) and n not in given]

    return complete


def checked_by(parse: Callable[[str], object]) -> Callable[[str | None], str | None]:
    """An option's check: a value that ``parse`` refuses (its ``ValueError``'s sentence) is
    refused at parse time; the option keeps its text."""

    def check(value: str | None) -> str | None:
        if value is not None:
            try:
                parse(value)
            except ValueError as exc:
                raise typer.BadParameter(str(exc)) from None
        return value

    return check


def fail_on_names() -> list[str]:
    return [*severities(), *quirk_ids(), *error_kinds()]


complete_parser = _complete(parser_names)
complete_converter = _complete(converter_names)
complete_quirk_id = _complete(quirk_ids)
complete_fail_on = _complete_list(fail_on_names)


def check_fail_on(value: str | None) -> set[str]:
    """``--fail-on``: severities, quirk ids and error kinds, comma-separated; exit 2 otherwise."""
    if value is None:
        return set()
    items = {v.strip() for v in value.split(",") if v.strip()}
    if not items:
        raise typer.BadParameter("give error, warn, info, or quirk ids separated by commas")
    valid = set(fail_on_names())
    for item in sorted(items):
        if item not in valid:
            raise typer.BadParameter(
                refuse(
                    item,
                    "a severity, a quirk id or an error kind",
                    fail_on_names(),
                    listing="error, warn, info, a quirk id (docs/quirks.md) or an error kind",
                )
            )
    return items


def validate_fail_on(value: str | None) -> str | None:
    """``--fail-on``'s parse-time check (the option keeps its text)."""
    check_fail_on(value)
    return value


def check_quirk_id(value: str | None) -> str | None:
    """A quirk id of the catalogue (exit 2 otherwise)."""
    if value is None or value in quirk_ids():
        return value
    raise typer.BadParameter(
        refuse(value, "a quirk id", quirk_ids(), listing="the ids of docs/quirks.md")
    )


# -- the other sets, each read where it is defined (imported when a shell asks) ------------------
def sort_columns() -> list[str]:
    from streamtool.core.drive.listing import COLUMNS

    return list(COLUMNS)


def record_providers() -> list[str]:
    from streamtool.core.exchange.requests import APIS

    return list(APIS)


def conform_apis() -> list[str]:
    from streamtool.core.converters import BUILTIN_CONVERTERS

    return list(BUILTIN_CONVERTERS)


def sample_names() -> list[str]:
    from streamtool.core.samples import SAMPLES

    return list(SAMPLES)


def record_views() -> list[str]:
    return ["auto", "tree", "progress", "none"]


def proxy_views() -> list[str]:
    return ["journal", "tree", "none"]


def proxy_transforms() -> list[str]:
    from streamtool.core.plugins.registry import TRANSFORMS

    return TRANSFORMS.names()


def tool_choices() -> list[str]:
    from streamtool.core.exchange.requests import TOOL_CHOICES

    return list(TOOL_CHOICES)


def mutation_ids() -> list[str]:
    """The quirk ids ``mutate --quirk`` and ``--mutate`` take: the generatable ones."""
    from streamtool.core.mutations import generatable

    return [info.id for info in generatable()]


def complete_mutate(incomplete: str) -> list[str]:
    """``--mutate``: ``all``, or generatable quirk ids separated by commas."""
    offered = _complete_list(mutation_ids)(incomplete)
    return ["all", *offered] if "all".startswith(incomplete) else offered


complete_sort = _complete(sort_columns)
complete_provider = _complete(record_providers)
complete_api = _complete_list(conform_apis)
complete_sample = _complete(sample_names)
complete_record_view = _complete(record_views)
complete_proxy_view = _complete(proxy_views)
complete_transform = _complete(proxy_transforms)
complete_tool_choice = _complete(tool_choices)
complete_mutation = _complete_list(mutation_ids)


def check_sort(value: str) -> str:
    """``ls --sort``: a column (exit 2 otherwise)."""
    if value in sort_columns():
        return value
    raise typer.BadParameter(refuse(value, "a column", sort_columns()))


def check_apis(values: list[str] | None) -> list[str] | None:
    """``conform --api``: API names, repeatable or comma-separated (exit 2 otherwise)."""
    for item in values or []:
        for name in (a.strip() for a in item.split(",")):
            if name and name not in conform_apis():
                raise typer.BadParameter(refuse(name, "an API", conform_apis()))
    return values
