"""The plugin registries and the table of wire APIs.

:mod:`.registry` finds what is registered in the entry-point groups (``streamtool.apis``,
``streamtool.converters``, ``streamtool.handlers``), streamtool's own the same way;
:mod:`.wire_api` is one API's row; :mod:`.table` is the table of APIs and its lookups.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .table import (
        ApiError,
        api_for_converter,
        api_for_path,
        api_for_provider,
        api_table,
        builtin_apis,
        converter_named,
        error_body,
        find_api,
        model_in_path,
        official_hosts,
        official_origins,
        part,
        served_api,
    )
    from .wire_api import ManifestError, WireApi

# loaded when first asked for: the converters' and handlers' registries (every command's start)
# import this package without the table of APIs
__all__ = [
    "ApiError",
    "ManifestError",
    "WireApi",
    "api_for_converter",
    "api_for_path",
    "api_for_provider",
    "api_table",
    "builtin_apis",
    "converter_named",
    "error_body",
    "find_api",
    "model_in_path",
    "official_hosts",
    "official_origins",
    "part",
    "served_api",
]
_LAZY = {
    name: ".wire_api" if name in ("ManifestError", "WireApi") else ".table" for name in __all__
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
