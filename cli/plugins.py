"""``streamtool converters``: the converters and parsers installed, built-in or from plugins."""

import sys

from streamtool.core.converters import CONVERTERS
from streamtool.core.handlers import PARSERS
from streamtool.core.plugins.registry import Plugin

from .main import app


def _table(title: str, group: str, rows: list[Plugin]) -> list[str]:
    lines = [f"{title} (entry points {group!r})"]
    width = max(len(p.name) for p in rows)
    for p in rows:
        origin = f"{p.distribution} {p.version}"
        note = "  (shadowed by the built-in of that name)" if p.shadowed else ""
        lines.append(f"  {p.name:<{width}}  {origin:<20}  {p.target}{note}")
    return lines


@app.command()
def converters() -> None:
    """List the converters (--converter) and parsers (--parser) installed, and where from.

    Both are plugins: a package registers its own under the entry-point groups
    'streamtool.converters' and 'streamtool.handlers'.
    """
    lines = [
        *_table("converters", CONVERTERS.group, CONVERTERS.plugins()),
        "",
        *_table("parsers", PARSERS.group, PARSERS.plugins()),
    ]
    from streamtool.core.plugins.table import SKIPPED, plugin_apis

    plugin_apis()  # loads the plugins' APIs: any that cannot be loaded is noted
    if SKIPPED:
        lines += ["", "APIs that could not be loaded (left out):"]
        lines += [f"  {name}  {why}" for name, why in sorted(SKIPPED.items())]
    sys.stdout.write("\n".join(lines) + "\n")
