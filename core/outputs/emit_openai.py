"""A recording's identity for the encoders: the seed every id of an emitted stream is derived
from, and its ``created`` time. Sans-IO, deterministic.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime

from ..records import Header


def stream_identity(header: Header | None) -> tuple[str, int]:
    """A deterministic completion id and ``created`` time for a recording.

    The id hashes the header (the same recording always gets the same id); ``created`` is the
    header's ``recorded_at`` as Unix seconds, or 0 when unknown.
    """
    record = header.to_record() if header is not None else {}
    digest = hashlib.sha256(
        json.dumps(record, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8")
    ).hexdigest()
    created = 0
    recorded_at = header.recorded_at if header is not None else None
    if isinstance(recorded_at, str):
        try:
            created = int(datetime.fromisoformat(recorded_at.replace("Z", "+00:00")).timestamp())
        except ValueError:
            created = 0
    return f"chatcmpl-st{digest[:24]}", created
