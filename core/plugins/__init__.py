"""The plugin registries and the table of wire APIs.

:mod:`.registry` finds what is registered in the entry-point groups (``streamtool.apis``,
``streamtool.converters``, ``streamtool.handlers``), streamtool's own the same way;
:mod:`.wire_api` is one API's row; :mod:`.table` is the table of APIs and its lookups.
"""

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
from .wire_api import WireApi

__all__ = [
    "ApiError",
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
