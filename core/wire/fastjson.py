"""``loads``: ``json.loads`` without its two Python wrapper layers (the hot path of replay).

The C scanner does the parsing; any input it does not take whole (leading whitespace, trailing
data, invalid JSON) is handed to ``json.loads``, so results and error messages are identical.
"""

from __future__ import annotations

import json
import json.scanner
from typing import Any

_scan = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]
_slow = json.loads


def loads(text: str) -> Any:
    try:
        obj, end = _scan(text, 0)
    except StopIteration:
        return _slow(text)
    if end != len(text) and text[end:].strip():
        return _slow(text)  # raises "Extra data" with the usual message
    return obj
