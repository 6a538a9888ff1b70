"""streamtool's library.

The sans-IO pipeline (``wire`` → ``converters`` → ``handlers``/``parsers`` → the adapter, driven
by :class:`ReplayEngine`) never touches a file or a socket; ``recording`` is the file edge,
``net`` the network edge and ``outputs`` what a replay produces. Quick use::

    from streamtool.core import replay_file

    engine = replay_file("recordings/openai-chat-write-file.jsonl")
    print(engine.summary()["invocations"])

Every name below is importable from ``streamtool.core``; each is loaded on first use (the
HTTP server and SDK capture are the heavier ones), so importing this package stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# name -> module (relative to this package) that defines it, imported when first asked for
# (the data model too: ``streamtool --help`` loads the converters' registry, not the model)
_LAZY = {
    "ChunkResponse": ".model",
    "Quirk": ".model",
    "SegmentEvent": ".model",
    "SegmentEventType": ".model",
    "SegmentType": ".model",
    "StreamError": ".model",
    "ToolCallDelta": ".model",
    "ToolInvocation": ".model",
    "ReplayEngine": ".engine.replay",
    "DetectionError": ".engine.replay",
    "replay_file": ".drive.replay_file",
    "Source": ".recording.reader",
    "RecordingWriter": ".recording.writer",
    "RecordingError": ".model.records",
    "Header": ".model.records",
    "Chunk": ".model.records",
    "End": ".model.records",
    "check_paths": ".drive.check",
    "build_transcript": ".outputs.transcript",
    "diff_streams": ".outputs.diff",
    "OpenAISSEEmitter": ".apis.openai_chat.encoder",
    "Capture": ".net.capture",
    "serving": ".net.server",
    "serving_script": ".net.emitting",
    "serving_translated": ".net.emitting",
    "Playback": ".exchange.playback",
    "make_converter": ".converters",
    "make_handler": ".handlers",
}

__all__ = [
    "__version__",
    "ChunkResponse",
    "Quirk",
    "SegmentEvent",
    "SegmentEventType",
    "SegmentType",
    "StreamError",
    "ToolCallDelta",
    "ToolInvocation",
    "ReplayEngine",
    "DetectionError",
    "replay_file",
    "Source",
    "RecordingWriter",
    "RecordingError",
    "Header",
    "Chunk",
    "End",
    "check_paths",
    "build_transcript",
    "diff_streams",
    "OpenAISSEEmitter",
    "Capture",
    "serving",
    "serving_script",
    "serving_translated",
    "Playback",
    "make_converter",
    "make_handler",
]

if TYPE_CHECKING:
    from .apis.openai_chat.encoder import OpenAISSEEmitter
    from .converters import make_converter
    from .drive.check import check_paths
    from .drive.replay_file import replay_file
    from .engine.replay import DetectionError, ReplayEngine
    from .exchange.playback import Playback
    from .handlers import make_handler
    from .model import (
        ChunkResponse,
        Quirk,
        SegmentEvent,
        SegmentEventType,
        SegmentType,
        StreamError,
        ToolCallDelta,
        ToolInvocation,
    )
    from .model.records import Chunk, End, Header, RecordingError
    from .net.capture import Capture
    from .net.server import serving
    from .outputs.diff import diff_streams
    from .outputs.transcript import build_transcript
    from .recording.reader import Source
    from .recording.writer import RecordingWriter


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
